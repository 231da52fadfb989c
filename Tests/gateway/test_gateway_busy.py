"""The gateway's own bounds answer in its error format: a request refused at the body budget or
the unsent-bytes budget gets `503` `/problems/server-busy` with `Retry-After`, and a request the
HTTP/2 session refuses itself (a header list over the limit) gets the same problem+json as over
HTTP/1.1, logged and counted as a refusal. Raw sockets and the `h2` package; bounded waits."""
from __future__ import annotations

import json
import socket
import time

from gateway_helpers import Api, add, assert_problem, change, new_uuid

TIMEOUT = 30.0


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head and the body (by Content-Length) of one HTTP/1.1 response."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {received[:200]!r}"
        received += chunk
    head, body = received.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head, body


def test_an_upload_over_the_body_budget_gets_server_busy_with_retry_after(start_server):
    server = start_server("--max-buffered-body-bytes", "150000")
    first = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    second = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    try:
        for sock in (first, second):
            sock.sendall(b"POST /v1/scopes/demo/changesets HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100000\r\n\r\n" + b" " * 80_000)
            time.sleep(0.3)  # the server has taken these 80 kB
        head, body = read_response(second)
        assert head.startswith(b"HTTP/1.1 503"), head
        assert b"\r\nretry-after: 1" in head.lower()
        assert json.loads(body)["type"] == "/problems/server-busy"
    finally:
        first.close()
        second.close()


def test_a_history_page_over_the_unsent_budget_gets_server_busy_and_a_write_is_still_answered(start_server):
    server = start_server("--max-unsent-bytes", "20000")
    api = Api(server.url)
    try:
        name, state = api.create_canvas()
        uuids = [new_uuid() for _ in range(100)]
        fragments = [add(uuid, "Shape", x=i, y=0, label="L" * 200) for i, uuid in enumerate(uuids)]
        fragments.append(change(state["rootUUID"], "Canvas", shapes={"insert": uuids}))
        # The write's answer (over 20 kB: every fragment is answered) is charged, never refused.
        answer = api.post(name, fragments)
        assert answer.status_code == 200 and len(answer.content) > 20_000, answer.status_code
        # A GET whose page does not fit is refused, in the gateway's format.
        page = api.history(name, since=0)
        body = assert_problem(page, 503, "server-busy")
        assert page.headers["retry-after"] == "1"
        assert "--max-unsent-bytes" in body["detail"]
        # A small page still fits.
        assert api.history(name, since=1).status_code == 200
    finally:
        api.close()


def test_over_http2_a_header_list_over_the_limit_gets_the_gateways_problem_and_is_counted(server):
    import h2.config
    import h2.connection
    import h2.events

    api = Api(server.url)
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        connection.send_headers(1, [(":method", "GET"), (":path", "/v1/scopes/demo"), (":scheme", "http"),
                                    (":authority", "t"), ("x-big", "b" * 20_000)], end_stream=True)
        sock.sendall(connection.data_to_send())
        headers, body, ended = {}, b"", False
        try:
            while not ended:
                data = sock.recv(65536)
                assert data, "the server closed the connection"
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        headers = {k.decode(): v.decode() for k, v in event.headers}
                    elif isinstance(event, h2.events.DataReceived):
                        body += event.data
                    elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                        ended = True
                sock.sendall(connection.data_to_send())
        finally:
            sock.close()
        assert headers[":status"] == "431"
        assert headers["content-type"].startswith("application/problem+json")
        assert json.loads(body)["type"] == "/problems/headers-too-large"
        metrics = api.http.get("/metrics").text
        assert 'jetstream_http_rejected_total{reason="request header section too large",status="431"}' in metrics \
            or 'jetstream_http_rejected_total{status="431",reason="request header section too large"}' in metrics, \
            [line for line in metrics.splitlines() if "rejected" in line]
    finally:
        api.close()
