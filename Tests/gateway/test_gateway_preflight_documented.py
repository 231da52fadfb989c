"""The CORS preflights openapi.yaml documents are the ones the server answers: with
`--cors-origin`, every path whose item has an `options` operation answers a preflight with 204,
and every other concrete path refuses `OPTIONS` with 405 (docs/gateway.md, "CORS")."""
from __future__ import annotations

import pathlib

import httpx
import pytest
import yaml

from conftest import ServerPool

OPENAPI = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
ORIGIN = "https://app.example"
EXAMPLE = {"{name}": "canvas-1", "{uuid}": "00000000-0000-4000-8000-000000000001", "{version}": "1", "{client}": "window-1",
           "{method}": "arrange"}


def concrete(path: str) -> str:
    for placeholder, value in EXAMPLE.items():
        path = path.replace(placeholder, value)
    return path


PATHS = sorted(OPENAPI["paths"])


@pytest.fixture(scope="module")
def cors_server(jetstream_bin, tmp_path_factory):
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("cors"))
    yield pool("--cors-origin", ORIGIN)
    pool.stop_all()


@pytest.mark.parametrize("path", PATHS)
def test_a_preflight_is_answered_exactly_where_documented(cors_server, path):
    response = httpx.request("OPTIONS", cors_server.url + concrete(path), timeout=30.0, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
    documented = OPENAPI["paths"][path].get("options")
    if documented is not None:
        assert response.status_code == 204, response.text
        assert response.status_code in {int(code) for code in documented["responses"]}
        assert "GET" in response.headers["access-control-allow-methods"]
    else:
        assert response.status_code == 405, f"{path}: OPTIONS answered {response.status_code}, but openapi.yaml documents no preflight"


def test_a_preflight_from_another_origin_is_a_documented_403(cors_server):
    response = httpx.request("OPTIONS", cors_server.url + "/v1/schema", timeout=30.0, headers={
        "Origin": "https://elsewhere.example", "Access-Control-Request-Method": "GET"})
    assert response.status_code == 403
    assert 403 in {int(code) for code in OPENAPI["paths"]["/v1/schema"]["options"]["responses"]}


def test_without_cors_a_preflight_is_the_documented_405(server):
    response = httpx.request("OPTIONS", server.url + "/v1/schema", timeout=30.0, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
    assert response.status_code == 405
    assert 405 in {int(code) for code in OPENAPI["paths"]["/v1/schema"]["options"]["responses"]}
