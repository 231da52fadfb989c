"""The browser client and the demo served by the real binary (docs/gateway.md, "The browser
client and the demo"): `/client/jetstream.mjs`, `/client/jetstream.d.ts` with every schema,
`/demo/…` only with the built-in demo schema; the bytes of Clients/js, validators, HEAD, gzip,
CORS, auth."""
from __future__ import annotations

import gzip
import json
import pathlib
import re

import httpx
import pytest

from conftest import TYPES_SCHEMA
from gateway_helpers import assert_problem

CLIENTS = pathlib.Path(__file__).resolve().parents[2] / "Clients" / "js"
FILE_ETAG = re.compile(r'^"[0-9a-f]{16}"$')
ASSETS = [
    ("/client/jetstream.mjs", "jetstream.mjs", "text/javascript; charset=utf-8"),
    ("/client/jetstream.d.ts", "jetstream.d.ts", "application/typescript; charset=utf-8"),
    ("/demo/", "demo/index.html", "text/html; charset=utf-8"),
    ("/demo/demo.css", "demo/demo.css", "text/css; charset=utf-8"),
    ("/demo/demo.mjs", "demo/demo.mjs", "text/javascript; charset=utf-8"),
]
# Bodies smaller than this are sent as they are (HTTPCompression's CompressionPolicy).
GZIP_MINIMUM = 1024


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        yield client


@pytest.mark.parametrize("path,file,content_type", ASSETS)
def test_each_file_is_served_as_it_is_on_disk(http, path, file, content_type):
    response = http.get(path, headers={"Accept-Encoding": "identity"})
    assert response.status_code == 200, response.text[:300]
    assert response.content == (CLIENTS / file).read_bytes(), (
        f"{path} differs from Clients/js/{file}: rebuild the binary after editing it")
    assert response.headers["content-type"] == content_type
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert FILE_ETAG.match(response.headers["etag"]), response.headers["etag"]


@pytest.mark.parametrize("path,file,content_type", ASSETS)
def test_if_none_match_is_304_and_head_has_no_body(http, path, file, content_type):
    tag = http.get(path).headers["etag"]
    for condition in (tag, f"W/{tag}", f'"0000000000000000", {tag}', "*"):
        response = http.get(path, headers={"If-None-Match": condition})
        assert response.status_code == 304, (condition, response.status_code)
        assert response.headers["etag"] == tag
        assert response.headers["cache-control"] == "no-cache"
        assert response.content == b""
    assert http.get(path, headers={"If-None-Match": '"0000000000000000"'}).status_code == 200
    head = http.head(path, headers={"Accept-Encoding": "identity"})
    assert head.status_code == 200
    assert head.headers["content-type"] == content_type
    assert head.headers["etag"] == tag
    assert int(head.headers["content-length"]) == len((CLIENTS / file).read_bytes())
    assert head.content == b""


@pytest.mark.parametrize("path,file,content_type", ASSETS)
def test_gzip_when_accepted_and_large_enough(server, path, file, content_type):
    on_disk = (CLIENTS / file).read_bytes()
    # A raw stream, so that httpx does not decode the body before the test sees it.
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
            raw = b"".join(response.iter_raw())
            encoding = response.headers.get("content-encoding")
    if len(on_disk) >= GZIP_MINIMUM:
        assert encoding == "gzip", response.headers
        assert "accept-encoding" in response.headers.get("vary", "").lower()
        assert gzip.decompress(raw) == on_disk
        assert len(raw) < len(on_disk)
    else:
        assert encoding is None, response.headers
        assert raw == on_disk


def test_demo_without_slash_redirects_with_308_keeping_the_query(http):
    response = http.get("/demo", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/demo/"
    response = http.get("/demo?scope=canvas-7", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/demo/?scope=canvas-7"
    followed = http.get("/demo?scope=canvas-7", follow_redirects=True)
    assert followed.status_code == 200 and str(followed.url).endswith("/demo/?scope=canvas-7")


def test_unknown_files_under_demo_and_client_are_404_problems(http):
    for path in ("/demo/nope.js", "/client/nope.mjs", "/demo/index.html/x"):
        assert_problem(http.get(path), 404)


def test_another_schema_has_no_demo_but_serves_the_client(start_server):
    server = start_server("--schema", str(TYPES_SCHEMA))
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        for path in ("/demo/", "/demo", "/demo/demo.css", "/demo/demo.mjs"):
            assert_problem(client.get(path, follow_redirects=False), 404)
        for path, file, content_type in ASSETS[:2]:
            response = client.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"] == content_type
            assert response.content == (CLIENTS / file).read_bytes()


def test_a_schema_file_equal_to_the_demo_schema_serves_the_demo(server, start_server, tmp_path):
    schema = tmp_path / "demo-schema.json"
    schema.write_text(json.dumps(httpx.get(f"{server.url}/v1/schema", timeout=30.0).json()))
    copy = start_server("--schema", str(schema))
    with httpx.Client(base_url=copy.url, timeout=30.0) as client:
        assert client.get("/demo/").status_code == 200
        assert client.get("/demo/demo.mjs").status_code == 200


def test_served_without_a_token_when_auth_is_on(start_server, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a-test-secret-of-more-than-32-bytes!!")
    server = start_server("--jwt-secret-file", str(secret))
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        assert_problem(client.get("/v1/scopes/demo"), 401, "unauthorized")
        for path, _, _ in ASSETS:
            assert client.get(path).status_code == 200, path


def test_another_origin_may_import_the_module_when_cors_allows_it(start_server):
    origin = "http://app.example.test"
    server = start_server("--cors-origin", origin)
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        response = client.get("/client/jetstream.mjs", headers={"Origin": origin})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == origin
        assert "etag" in response.headers["access-control-expose-headers"].lower()
        preflight = client.options("/client/jetstream.mjs", headers={
            "Origin": origin, "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "If-None-Match"})
        assert preflight.status_code == 204, preflight.text
        assert "GET" in preflight.headers["access-control-allow-methods"]
        other = client.get("/client/jetstream.mjs", headers={"Origin": "http://elsewhere.test"})
        assert "access-control-allow-origin" not in other.headers
