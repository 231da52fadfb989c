"""The engine with real clients: curl, httpx, SSE consumers, many subscribers, slow subscribers and
graceful shutdown. HTTP/2 clients are in test_http2_clients.py and test_h2_frames.py."""
from __future__ import annotations

import json
import selectors
import subprocess
import threading
import time
import urllib.request

import httpx
import httpx_sse
import pytest

from rawhttp import RawConnection
from sse import SSEConnection

CURL_TIMEOUT = ["--max-time", "30"]


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", *CURL_TIMEOUT, *args], capture_output=True, text=True, timeout=60)


def publish(server, body: bytes) -> int:
    """POSTs `body` to /publish; returns how many subscribers the server says it reached."""
    request = urllib.request.Request(server.url + "/publish", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        return json.loads(response.read())["subscribers"]


def subscribers(stats: dict) -> int:
    return stats["subscribers"]


# --------------------------------------------------------------------------------------------
# curl and httpx over HTTP/1.1


def test_curl_reuses_one_connection_for_several_urls(server):
    result = curl("-v", server.url + "/health", server.url + "/static", server.url + "/bytes/10")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
    assert len(result.stdout) == 2 + 2560 + 10
    assert result.stderr.count("Connected to") == 1
    assert "Re-using existing connection" in result.stderr


def test_curl_head_and_post(server):
    head = curl("-I", server.url + "/static")
    assert head.returncode == 0
    assert "content-length: 2560" in head.stdout.lower()
    post = curl("-d", "payload=1", server.url + "/echo")
    assert post.returncode == 0
    assert json.loads(post.stdout)["body"] == "payload=1"


def test_curl_chunked_upload_is_echoed(server):
    body = "z" * 20000
    result = subprocess.run(
        ["curl", "-sS", *CURL_TIMEOUT, "-H", "Transfer-Encoding: chunked", "--data-binary", "@-",
         server.url + "/echo"],
        input=body, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    echoed = json.loads(result.stdout)
    assert echoed["bodyLength"] == 20000
    assert echoed["body"] == body


def test_httpx_http1_keep_alive(server):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for n in (0, 7, 4096):
            response = client.get(f"/bytes/{n}")
            assert response.http_version == "HTTP/1.1"
            assert response.status_code == 200
            assert len(response.content) == n
        echoed = client.post("/echo", content=b"abc", headers={"X-Test": "1"}).json()
        assert echoed["method"] == "POST"
        assert ["x-test", "1"] in [[n.lower(), v] for n, v in echoed["headers"]]


def test_delayed_responses_complete_concurrently(server):
    # 20 requests answered later from another thread, all in flight together.
    results = []

    def fetch(i):
        with httpx.Client(timeout=30) as client:
            results.append(client.get(f"{server.url}/delayed?ms=200").status_code)

    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [200] * 20


# --------------------------------------------------------------------------------------------
# SSE


def test_sse_with_curl_streams_events_in_order(server):
    result = curl("-N", server.url + "/sse?count=5&interval_ms=20")
    assert result.returncode == 0, result.stderr
    blocks = [b for b in result.stdout.split("\n\n") if b.strip()]
    events = [dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":")) for block in blocks]
    events = [e for e in events if e]
    assert [e["event"] for e in events] == ["tick"] * 5
    ids = [int(e["id"]) for e in events]
    assert ids == list(range(ids[0], ids[0] + 5))
    assert [json.loads(e["data"])["i"] for e in events] == ids


def test_sse_with_httpx_sse(server):
    with httpx.Client(timeout=30) as client:
        with httpx_sse.connect_sse(client, "GET", server.url + "/sse?count=20&interval_ms=5") as source:
            assert source.response.headers["content-type"].startswith("text/event-stream")
            events = list(source.iter_sse())
    assert len(events) == 20
    assert all(event.event == "tick" for event in events)
    ids = [int(event.id) for event in events]
    assert ids == sorted(ids) and len(set(ids)) == 20
    assert [json.loads(event.data)["i"] for event in events] == ids


def test_sse_response_headers(server):
    stream = SSEConnection(*server.address, target="/sse?count=1&interval_ms=1")
    try:
        head = stream.read_head()
        assert head.status == 200
        assert head.header("content-type").startswith("text/event-stream")
        assert "no-cache" in (head.header("cache-control") or "")
        assert head.header("content-length") is None
    finally:
        stream.close()


def test_subscriber_gets_heartbeats(start_server):
    server = start_server("--heartbeat-interval", "0.2")
    stream = SSEConnection(*server.address)
    try:
        stream.read_head()
        deadline = time.monotonic() + 20
        while stream.parser.comments < 2 and time.monotonic() < deadline:
            stream.sock.settimeout(max(0.01, deadline - time.monotonic()))
            assert stream.on_readable()
        assert stream.parser.comments >= 2
    finally:
        stream.close()


def read_all(streams, want_events: int, timeout: float) -> None:
    """Reads every stream until each holds `want_events` events (or the timeout passes)."""
    selector = selectors.DefaultSelector()
    for stream in streams:
        stream.sock.setblocking(False)
        if len(stream.events) < want_events:
            selector.register(stream.sock, selectors.EVENT_READ, stream)
    deadline = time.monotonic() + timeout
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            stream = key.data
            alive = stream.on_readable()
            if not alive or len(stream.events) >= want_events:
                selector.unregister(stream.sock)
    selector.close()


def test_broadcast_reaches_every_subscriber_exactly_once(server):
    count, messages = 200, 5
    streams = [SSEConnection(*server.address) for _ in range(count)]
    try:
        for stream in streams:
            assert stream.read_head().status == 200
        server.wait_for_stats(lambda s: subscribers(s) >= count)
        for n in range(messages):
            assert publish(server, json.dumps({"n": n}).encode()) == count
        read_all(streams, messages, timeout=60)
        for stream in streams:
            got = [json.loads(event.data)["n"] for event in stream.events]
            assert got == list(range(messages))
    finally:
        for stream in streams:
            stream.close()
    server.wait_for_stats(lambda s: subscribers(s) == 0)


def test_slow_subscriber_is_dropped_and_others_keep_every_event(start_server):
    pending_cap = 256 * 1024
    server = start_server("--max-pending-bytes", str(pending_cap), "--max-body", str(1 << 20),
                          "--heartbeat-interval", "60")
    slow = SSEConnection(*server.address, rcvbuf=4096)
    fast = SSEConnection(*server.address)
    try:
        assert slow.read_head().status == 200
        assert fast.read_head().status == 200
        server.wait_for_stats(lambda s: subscribers(s) == 2)

        # The fast subscriber reads in a thread; the slow one never reads while we publish.
        messages, pad = 200, "x" * 65536
        reader = threading.Thread(target=read_all, args=([fast], messages, 120))
        reader.start()
        reached = [publish(server, json.dumps({"n": n, "pad": pad}).encode()) for n in range(messages)]
        reader.join(150)

        stats = server.wait_for_stats(lambda s: s["droppedSlowSubscribers"] >= 1 and subscribers(s) == 1)
        assert stats["droppedSlowSubscribers"] == 1
        assert reached[0] == 2 and reached[-1] == 1
        assert [json.loads(e.data)["n"] for e in fast.events] == list(range(messages))

        # The slow one gets what was already buffered, then (if it reads again within the linger
        # timeout) the farewell `event: error`, then the end of the stream.
        slow.sock.settimeout(30)
        while slow.on_readable():
            pass
        events = list(slow.events)
        if events and events[-1].event == "error":
            assert json.loads(events.pop().data)["title"] == "Subscriber too slow"
        assert all(e.event == "message" for e in events)
        received = [json.loads(e.data)["n"] for e in events]
        assert received == list(range(len(received)))
        assert len(received) < messages
    finally:
        slow.close()
        fast.close()


# --------------------------------------------------------------------------------------------
# Graceful shutdown


def test_sigterm_drains_in_flight_requests_and_ends_streams(start_server):
    server = start_server("--grace-period", "10")
    stream = SSEConnection(*server.address)
    delayed = RawConnection(*server.address, timeout=30)
    try:
        assert stream.read_head().status == 200
        server.wait_for_stats(lambda s: subscribers(s) == 1)
        # The /health answer proves the server has read the bytes holding the /delayed request too.
        delayed.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\nGET /delayed?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n")
        assert delayed.read_response().status == 200

        server.proc.send_signal(15)
        response = delayed.read_response(timeout=30)
        assert response.status == 200
        assert delayed.closed_by_server(timeout=30)

        stream.sock.settimeout(30)
        while stream.on_readable():
            pass
        assert stream.ended
        assert server.proc.wait(timeout=30) == 0
    finally:
        stream.close()
        delayed.close()


def test_sigterm_with_idle_server_exits_zero(start_server):
    server = start_server()
    with RawConnection(*server.address) as idle:
        idle.request(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        server.proc.send_signal(15)
        assert idle.closed_by_server(timeout=30)
    assert server.proc.wait(timeout=30) == 0


def test_sigint_exits_zero(start_server):
    server = start_server()
    with RawConnection(*server.address) as conn:
        assert conn.request(b"GET /stats HTTP/1.1\r\nHost: t\r\n\r\n").status == 200
        server.proc.send_signal(2)
        assert conn.closed_by_server(timeout=30)
    assert server.proc.wait(timeout=30) == 0


@pytest.mark.parametrize("loops", ["1", "2", "4"])
def test_multiple_loops_serve_many_connections(start_server, loops):
    server = start_server("--loops", loops)
    connections = [RawConnection(*server.address) for _ in range(40)]
    try:
        for conn in connections:
            conn.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        for conn in connections:
            assert conn.read_response().body == b"ok"
        assert server.stats()["openConnections"] >= 40
    finally:
        for conn in connections:
            conn.close()


def test_unix_socket_serves_alongside_tcp(start_server, tmp_path):
    path = tmp_path / "engine.sock"
    server = start_server("--unix-socket", str(path))
    result = curl("--unix-socket", str(path), "http://localhost/static")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) == 2560
    assert curl(server.url + "/health").stdout == "ok"
