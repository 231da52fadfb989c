"""Bodies only after they are wanted: a write the gateway will refuse anyway — unknown route or
method, no token where anonymous clients may not write, a wrong media type, a scope that does not
exist — is answered from its head alone. `100 Continue` is sent only to requests that may succeed,
the refused body is never read, and the connection closes after the refusal. Raw sockets, so what
the client sees first is exact; every wait is bounded."""
from __future__ import annotations

import socket

import pytest

from gateway_helpers import scope_name

TIMEOUT = 30.0
SECRET = "0123456789abcdef0123456789abcdef-body-admission"


def exchange(server, head: bytes) -> tuple[bytes, socket.socket]:
    """Sends a request head that announces a 1 MB body (but not the body) and returns the first
    answer's status line and head, with the socket."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    sock.sendall(head)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received, sock


def head(method: str, path: str, content_type: str = "application/json", extra: str = "",
         expect: bool = True) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: t", f"Content-Type: {content_type}", "Content-Length: 1000000"]
    if expect:
        lines.append("Expect: 100-continue")
    if extra:
        lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def closed_after(sock: socket.socket) -> bool:
    """True when the server closes the connection (the unread body is not waited for)."""
    sock.settimeout(TIMEOUT)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    finally:
        sock.close()


@pytest.mark.parametrize("case", ["unknown scope", "wrong media type", "unknown route", "wrong method"])
def test_a_write_refused_anyway_gets_its_answer_without_100_continue(server, case):
    path = {"unknown scope": f"/v1/scopes/{scope_name()}/changesets", "unknown route": "/v1/nothing-here",
            "wrong media type": "/v1/scopes/demo/changesets", "wrong method": "/v1/scopes/demo/events"}[case]
    content_type = "text/plain" if case == "wrong media type" else "application/json"
    received, sock = exchange(server, head("POST", path, content_type))
    status = received.split(b"\r\n", 1)[0]
    expected = {"unknown scope": b"404", "unknown route": b"404", "wrong media type": b"415",
                "wrong method": b"405"}[case]
    assert expected in status, received[:300]
    assert b"100 Continue" not in received
    assert closed_after(sock)


def test_a_write_that_may_succeed_gets_100_continue_then_its_answer(api, server):
    name, state = api.create_canvas()
    body = ('{"fragments":[{"type":"change","uuid":"%s","clsName":"Canvas","properties":{"name":"ok"}}]}'
            % state["rootUUID"]).encode()
    request = (f"POST /v1/scopes/{name}/changesets HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n").encode()
    received, sock = exchange(server, request)
    assert received.startswith(b"HTTP/1.1 100 Continue"), received[:200]
    sock.sendall(body)
    answer = received.split(b"\r\n\r\n", 1)[1]
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def test_a_patch_with_the_wrong_media_type_is_refused_from_its_head(server):
    received, sock = exchange(server, head("PATCH", "/v1/scopes/demo/objects/00000000-0000-0000-0000-000000000001",
                                           "text/plain"))
    assert b" 415 " in received.split(b"\r\n", 1)[0] and b"100 Continue" not in received
    assert closed_after(sock)


@pytest.fixture(scope="module")
def auth_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("body-admission-auth")
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    pool = ServerPool(jetstream_bin, base)
    yield pool("--jwt-secret-file", str(secret), "--anonymous-write", "canvas-open-*")
    pool.stop_all()


def test_a_write_without_a_token_is_refused_before_its_body(auth_server):
    received, sock = exchange(auth_server, head("POST", "/v1/scopes/canvas-secret/changesets"))
    status = received.split(b"\r\n", 1)[0]
    assert b" 401 " in status and b"100 Continue" not in received, received[:300]
    assert b"www-authenticate" in received.lower()
    assert closed_after(sock)


def test_a_malformed_token_is_refused_before_its_body(auth_server):
    received, sock = exchange(auth_server, head("POST", "/v1/scopes/canvas-secret/changesets",
                                                extra="Authorization: Basic abc"))
    assert b" 401 " in received.split(b"\r\n", 1)[0] and b"100 Continue" not in received, received[:300]
    assert closed_after(sock)


def test_an_anonymous_write_where_anonymous_writes_are_open_gets_100_continue(auth_server):
    import httpx
    name = scope_name("canvas-open")
    created = httpx.put(f"{auth_server.url}/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}}, timeout=TIMEOUT)
    assert created.status_code == 201, created.text
    received, sock = exchange(auth_server, head("POST", f"/v1/scopes/{name}/changesets"))
    assert received.startswith(b"HTTP/1.1 100 Continue"), received[:300]
    sock.close()
    # The same open pattern, a scope that does not exist: refused from the head (404).
    received, sock = exchange(auth_server, head("POST", f"/v1/scopes/{scope_name('canvas-open')}/changesets"))
    assert b" 404 " in received.split(b"\r\n", 1)[0] and b"100 Continue" not in received, received[:300]
    sock.close()


def test_without_expect_the_refusal_still_reaches_a_client_whose_body_is_in_flight(server):
    # The client sends its head and the start of a 1 MB body at once; the server refuses from the
    # head, never reads the rest, and closes with a linger, so the answer is not lost to a reset.
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    sock.sendall(head("POST", f"/v1/scopes/{scope_name()}/changesets", expect=False) + b"x" * 65536)
    received = b""
    try:
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    finally:
        sock.close()
    assert received.split(b"\r\n", 1)[0].startswith(b"HTTP/1.1 404"), received[:300]


def h2_answer_before_body(server, path: str, content_type: str = "application/json",
                          extra: list[tuple[str, str]] | None = None) -> tuple[str, bool]:
    """Over HTTP/2 (h2c, prior knowledge): sends a POST head announcing a 1 MB body and none of
    the body; returns the status answered and whether the stream was then reset (the client is
    told to stop sending)."""
    import h2.config
    import h2.connection
    import h2.events

    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    connection.send_headers(1, [(":method", "POST"), (":path", path), (":scheme", "http"),
                                (":authority", "t"), ("content-type", content_type),
                                ("content-length", "1000000"), *(extra or [])])
    sock.sendall(connection.data_to_send())
    status, reset = None, False
    try:
        while not reset:
            data = sock.recv(65536)
            if not data:
                break
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"].decode()
                elif isinstance(event, h2.events.StreamReset):
                    reset = True
            sock.sendall(connection.data_to_send())
    except socket.timeout:
        pass
    finally:
        sock.close()
    return status, reset


@pytest.mark.parametrize("case", ["unknown scope", "wrong media type", "unknown route"])
def test_over_http2_a_write_refused_anyway_is_answered_from_its_head(server, case):
    # Before, the stream waited for a body that never came until its deadline reset it.
    path = {"unknown scope": f"/v1/scopes/{scope_name()}/changesets", "unknown route": "/v1/nothing-here",
            "wrong media type": "/v1/scopes/demo/changesets"}[case]
    content_type = "text/plain" if case == "wrong media type" else "application/json"
    status, reset = h2_answer_before_body(server, path, content_type)
    assert status == {"unknown scope": "404", "unknown route": "404", "wrong media type": "415"}[case]
    assert reset, "the client was not told to stop sending its body"


def test_over_http2_a_write_without_a_token_is_refused_before_its_body(auth_server):
    status, reset = h2_answer_before_body(auth_server, "/v1/scopes/canvas-secret/changesets")
    assert status == "401" and reset
