"""A request body must average a minimum rate once past its grace (HTTPTestServer with
--header-timeout 1, --idle-timeout 30, --min-body-rate 1000): one byte every half second arrives
well inside the idle timeout, yet the request is cut off (HTTP/1.1: 408; HTTP/2: the stream reset)
soon after the grace — not after minutes. A body at a healthy rate is served. Bounded waits only."""
from __future__ import annotations

import socket
import time

import pytest

from h2raw import CANCEL, ConnectionEnded, DataFrame, H2Connection, RstStreamFrame

BOUND = 20.0


@pytest.fixture
def strict(start_server):
    return start_server("--header-timeout", "1", "--idle-timeout", "30", "--min-body-rate", "1000")


def test_an_http1_body_trickling_below_the_rate_gets_408(strict):
    with socket.create_connection(strict.address, timeout=BOUND) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n")
        deadline = time.monotonic() + BOUND
        received = b""
        sock.settimeout(0.5)
        while time.monotonic() < deadline and b"\r\n\r\n" not in received:
            try:
                sock.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                break
            try:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            except socket.timeout:
                continue
        assert received.startswith(b"HTTP/1.1 408"), received[:200]


def test_an_http1_body_at_a_healthy_rate_is_served(strict):
    body = b"y" * 20_000
    with socket.create_connection(strict.address, timeout=BOUND) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 5_000):  # 20 KB over about 1.5 s: 13 KB/s
            sock.sendall(body[start : start + 5_000])
            time.sleep(0.4)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
        assert received.startswith(b"HTTP/1.1 200"), received[:200]


def test_an_http2_body_trickling_below_the_rate_is_reset(strict):
    with H2Connection(*strict.address, timeout=BOUND) as conn:
        conn.handshake()
        conn.send(conn.headers_frame(1, "/echo", method="POST", end_stream=False))
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            conn.send(DataFrame(1, data=b"x"))
            try:
                frame = conn.read_frame(timeout=0.5)
            except TimeoutError:
                continue
            except ConnectionEnded:
                break
            if isinstance(frame, RstStreamFrame) and frame.stream_id == 1:
                assert frame.error_code == CANCEL
                return
        raise AssertionError(f"a trickling HTTP/2 body was not reset within {BOUND}s")
