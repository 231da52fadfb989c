"""HTTP/2 requests get the HTTP/1.1 deadlines (HTTPTestServer with --header-timeout 1 and
--idle-timeout 2): a header block or a connection preface that never completes ends the connection,
and a body that stops arriving (or a GET sent without END_STREAM) resets its stream. Every wait is
bounded; nothing asserts a duration beyond "within a generous bound"."""
from __future__ import annotations

import socket
import time

import pytest
from hyperframe.frame import ContinuationFrame, HeadersFrame as RawHeaders

from h2raw import CANCEL, ENHANCE_YOUR_CALM, PREFACE, ConnectionEnded, DataFrame, GoAwayFrame, H2Connection, RstStreamFrame

BOUND = 20.0  # seconds: far above the 1 s / 2 s deadlines, for a loaded machine


@pytest.fixture
def quick(start_server):
    return start_server("--header-timeout", "1", "--idle-timeout", "2")


def ends_within(conn: H2Connection, seconds: float) -> list:
    """Reads until the server ends the connection; returns the frames seen. Fails past `seconds`."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            seen.append(conn.read_frame(timeout=max(0.05, deadline - time.monotonic())))
        except ConnectionEnded:
            return seen
        except TimeoutError:
            break
    raise AssertionError(f"the connection was still open after {seconds}s; frames: {seen}")


def test_a_header_block_that_never_ends_ends_the_connection(quick):
    with H2Connection(*quick.address) as conn:
        conn.handshake()
        block = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"),
                                     (":path", "/echo"), ("x-a", "b" * 100)])
        conn.send(RawHeaders(1, data=block[:20], flags=["END_STREAM"]))  # no END_HEADERS, no CONTINUATION
        frames = ends_within(conn, BOUND)
        goaways = [f for f in frames if isinstance(f, GoAwayFrame)]
        assert goaways and goaways[-1].error_code == ENHANCE_YOUR_CALM


def test_a_body_that_stops_arriving_resets_its_stream_and_the_connection_goes_on(quick):
    with H2Connection(*quick.address) as conn:
        conn.handshake()
        conn.send(conn.headers_frame(1, "/echo", method="POST", end_stream=False), DataFrame(1, data=b"0123456789"))
        reset = conn.read_until(lambda f: isinstance(f, RstStreamFrame) and f.stream_id == 1, timeout=BOUND)
        assert reset.error_code == CANCEL
        conn.request(3, "/echo")
        headers, _ = conn.response(3)
        assert headers[":status"] == "200"


def test_a_get_without_end_stream_is_reset(quick):
    with H2Connection(*quick.address) as conn:
        conn.handshake()
        conn.send(conn.headers_frame(1, "/echo", end_stream=False))
        reset = conn.read_until(lambda f: isinstance(f, RstStreamFrame) and f.stream_id == 1, timeout=BOUND)
        assert reset.error_code == CANCEL


def test_a_partial_connection_preface_is_closed_like_a_slow_request_head(start_server):
    # The idle timeout is long here: the header timeout, not the idle one, must close it.
    server = start_server("--header-timeout", "1", "--idle-timeout", "60")
    with socket.create_connection(server.address, timeout=BOUND) as sock:
        sock.sendall(PREFACE[:20])  # "PRI * HTTP/2.0\r\n\r\nSM" and no more
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                return
            if not data:
                return
        raise AssertionError(f"a partial preface kept the connection open for {BOUND}s")


def test_a_continued_header_block_in_time_is_served(quick):
    with H2Connection(*quick.address) as conn:
        conn.handshake()
        block = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"),
                                     (":path", "/echo"), ("x-a", "b" * 100)])
        conn.send(RawHeaders(1, data=block[:20], flags=["END_STREAM"]))
        time.sleep(0.3)
        conn.send(ContinuationFrame(1, data=block[20:], flags=["END_HEADERS"]))
        headers, _ = conn.response(1)
        assert headers[":status"] == "200"
