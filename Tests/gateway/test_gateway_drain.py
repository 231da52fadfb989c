"""Readiness and drain on SIGTERM, black box, in the documented order:
1. readiness turns false at once and every open event stream gets `event: closing` and ends;
2. for --drain-delay the listener still accepts: /readyz answers 503, a new stream is told
   `closing` at once;
3. then the listener closes, a request in flight still finishes (answered, Connection: close);
4. the process exits 0."""
from __future__ import annotations

import json
import signal
import socket
import time

from gateway_helpers import Api, assert_problem, change
from sse_stream import SSEStream


def connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return None


def read_response(sock: socket.socket, timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed inside the body"
        body += chunk
    return status, headers, body


def test_readiness_is_200_while_serving(api):
    response = api.http.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_sigterm_drains_streams_first_then_finishes_requests_in_flight(start_server):
    server = start_server("--drain-delay", "3", "--grace-period", "30")
    api = Api(server.url)
    name, state = api.create_canvas()
    body = json.dumps({"fragments": [change(state["rootUUID"], "Canvas", name="in flight")]}).encode()

    stream = SSEStream(server.url, f"/v1/scopes/{name}/events")
    assert stream.expect_event().type == "snapshot"
    # A request in flight: its head and half of its body are sent before SIGTERM.
    pending = connect(server.port)
    assert pending is not None
    pending.sendall((f"POST /v1/scopes/{name}/changesets HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
                    .encode() + body[:10])
    api.close()

    server.process.send_signal(signal.SIGTERM)

    # 1. The open stream is told to go and ends.
    rest = stream.read_to_end(timeout=30)
    assert [event.type for event in rest] == ["closing"]
    assert rest[0].id is None and rest[0].json() == {"reason": "shutdown"}
    stream.close()

    # 2. During the drain delay: not ready, and a new stream is closed at once.
    during = Api(server.url)
    assert_problem(during.http.get("/readyz"), 503, "not-ready")
    during.close()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as late:
        assert [event.type for event in late.read_to_end(timeout=30)] == ["closing"]

    # 3. The listener closes; the request in flight is still answered.
    deadline = time.monotonic() + 60
    while (probe := connect(server.port)) is not None:
        probe.close()
        assert time.monotonic() < deadline, "the listener never closed"
        time.sleep(0.1)
    pending.sendall(body[10:])
    status, headers, answer = read_response(pending)
    assert status == 200, answer
    assert headers.get("connection") == "close"
    assert json.loads(answer)["version"] == state["version"] + 1
    pending.close()

    # 4. A clean exit, and the change set answered in flight is durable.
    assert server.stop() == 0
    server.start()
    restarted = Api(server.url)
    assert restarted.state(name)["version"] == state["version"] + 1
    restarted.close()
