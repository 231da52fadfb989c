"""The engine's HTTP/2 (h2c) with real clients: curl, httpx, SSE over h2."""
from __future__ import annotations

import json
import subprocess

import httpx
import httpx_sse


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "--max-time", "30", *args], capture_output=True, text=True, timeout=60)


def test_curl_http2_prior_knowledge(server):
    # One URL per invocation: curl 7.88.1 fails a reused prior-knowledge connection with
    # "(16) Error in the HTTP2 framing layer" against nginx too, so reuse is checked with nghttp.
    result = curl("--http2-prior-knowledge", "-w", "\n%{http_version}", server.url + "/static")
    assert result.returncode == 0, result.stderr
    body, version = result.stdout.rsplit("\n", 1)
    assert version == "2"
    assert len(body) == 2560


def test_nghttp_several_urls_on_one_connection(server):
    result = subprocess.run(
        ["nghttp", "-nv", "-t", "30", server.url + "/health", server.url + "/static", server.url + "/bytes/70000"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(":status: 200") == 3
    assert result.stdout.count("recv SETTINGS frame") >= 1


def test_curl_http2_upgrade(server):
    # curl --http2 on http:// asks for h2c with Upgrade; the server either switches (101) or
    # answers on HTTP/1.1 — both are conformant (RFC 9113 removed h2c Upgrade), the body must match.
    result = curl("--http2", "-w", "\n%{http_version}", server.url + "/static")
    assert result.returncode == 0, result.stderr
    body, version = result.stdout.rsplit("\n", 1)
    assert version in ("1.1", "2")
    assert len(body) == 2560


def test_curl_http2_post_echo(server):
    result = curl("--http2-prior-knowledge", "-d", "a=1", server.url + "/echo")
    assert result.returncode == 0, result.stderr
    echoed = json.loads(result.stdout)
    assert echoed["method"] == "POST"
    assert echoed["body"] == "a=1"


def test_httpx_http2_many_requests_on_one_connection(server):
    with httpx.Client(http1=False, http2=True, base_url=server.url, timeout=30) as client:
        for n in (0, 1, 100_000):
            response = client.get(f"/bytes/{n}")
            assert response.http_version == "HTTP/2"
            assert response.status_code == 200
            assert len(response.content) == n
        assert client.post("/echo", content=b"xyz").json()["bodyLength"] == 3


def test_httpx_http2_sse(server):
    with httpx.Client(http1=False, http2=True, timeout=30) as client:
        with httpx_sse.connect_sse(client, "GET", server.url + "/sse?count=10&interval_ms=5") as source:
            assert source.response.http_version == "HTTP/2"
            events = list(source.iter_sse())
    assert [json.loads(e.data)["i"] for e in events] == [int(e.id) for e in events]
    assert len(events) == 10


def test_curl_sse_over_h2(server):
    result = curl("-N", "--http2-prior-knowledge", server.url + "/sse?count=3&interval_ms=10")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("event: tick") == 3
