"""Strict answers where leniency misled (docs/gateway.md): an unknown method is 501 without
repeating it, a compressed request body is 415 with the reason, and HEAD on an event stream
answers the stream's headers and ends."""
from __future__ import annotations

import gzip
import json

import pytest

from gateway_helpers import Api


@pytest.mark.parametrize("method", ["BREW", "FOOBARBAZ", "PROPFIND"])
def test_an_unknown_method_is_501_and_not_echoed(server, method):
    api = Api(server.url)
    response = api.http.request(method, "/v1/scopes")
    assert response.status_code == 501
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/not-implemented"
    assert method not in response.text
    api.close()


@pytest.mark.parametrize("method", ["DELETE", "QUERY"])
def test_a_known_method_a_route_does_not_take_is_still_405_with_allow(server, method):
    api = Api(server.url)
    response = api.http.request(method, "/healthz")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    api.close()


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_compressed_request_body_is_415_and_nothing_is_applied(server, coding):
    api = Api(server.url)
    name, state = api.create_canvas()
    body = json.dumps({"fragments": [{"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas",
                                      "properties": {"name": "zipped"}}]}).encode()
    for path, content_type in ((f"/v1/scopes/{name}/changesets", "application/json"),
                               (f"/v1/scopes/{name}/objects/{state['rootUUID']}", "application/merge-patch+json")):
        method = "POST" if path.endswith("changesets") else "PATCH"
        response = api.http.request(method, path, content=gzip.compress(body) if method == "POST" else b'{"name":"z"}',
                                    headers={"Content-Type": content_type, "Content-Encoding": coding})
        assert response.status_code == 415, response.text
        assert response.json()["type"] == "/problems/unsupported-media-type"
        assert "Content-Encoding" in response.json()["detail"]
    assert api.state(name)["version"] == state["version"]
    api.close()


def test_identity_content_encoding_is_accepted(server):
    api = Api(server.url)
    name, state = api.create_canvas()
    response = api.http.post(
        f"/v1/scopes/{name}/changesets",
        content=json.dumps({"fragments": [{"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas",
                                           "properties": {"name": "plain"}}]}),
        headers={"Content-Type": "application/json", "Content-Encoding": "identity"})
    assert response.status_code == 200, response.text
    api.close()


def test_head_on_an_event_stream_answers_its_headers_and_ends(server):
    api = Api(server.url)
    name, _ = api.create_canvas()
    response = api.http.head(f"/v1/scopes/{name}/events", headers={"Accept": "text/event-stream"}, timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.content == b""
    api.close()


@pytest.mark.parametrize("settings", [b"!!!notbase64$$", b"AAMAAABkAAQ", b"AAIAAAAC"])
def test_an_unusable_http2_settings_upgrade_is_400_before_switching(server, settings):
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                           b"Upgrade: h2c\r\nHTTP2-Settings: " + settings + b"\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"HTTP2-Settings" in answer or b"SETTINGS" in answer or answer.endswith(b"\r\n\r\n")
