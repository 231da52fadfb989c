"""`GET /`: a person who opens the server's address lands on a page of links (the demo first when
the server runs the demo schema), and curl gets the same links as JSON (docs/gateway.md, "The
index")."""
from __future__ import annotations

import re

import httpx

from conftest import TYPES_SCHEMA


def links_of_page(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', html)


def test_a_browser_gets_a_page_of_links_that_all_answer(server):
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        response = http.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert response.status_code == 200, response.text[:300]
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        links = links_of_page(response.text)
        assert links[0] == "/demo/"
        assert {"/openapi.yaml", "/client/jetstream.mjs", "/healthz", "/v1/schema"} <= set(links)
        for link in links:
            assert http.get(link).status_code == 200, link


def test_curl_gets_the_links_as_json(server):
    response = httpx.get(server.url + "/", timeout=30.0)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["links"]["demo"] == "/demo/"
    assert body["links"]["api"] == "/openapi.yaml"
    assert body["links"]["client"] == "/client/jetstream.mjs"


def test_without_the_demo_schema_the_index_has_no_demo(start_server):
    server = start_server("--schema", str(TYPES_SCHEMA))
    body = httpx.get(server.url + "/", timeout=30.0).json()
    assert "demo" not in body["links"]
    assert body["links"]["health"] == "/healthz"


def test_other_unknown_paths_are_still_404_problems(server):
    for path in ["/nothing-here", "//", "/index.html"]:
        response = httpx.get(server.url + path, timeout=30.0)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("application/problem+json"), path
