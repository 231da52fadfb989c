"""Unsent response bytes are bounded for every response, and a response nobody reads is let go.

HTTPTestServer's `/bytes/{n}` makes a fresh n-byte body per request (like a history page): each
one is held until its client reads it. `--max-unsent-bytes` bounds what all connections hold;
a response that does not fit is answered 503 (`Retry-After`) instead. Over HTTP/2, a stream at a
zero flow-control window that takes nothing for the idle timeout is reset (CANCEL), and a
connection holding more than `--max-pending-bytes` of responses takes no new request until its
client reads. Memory is measured through /proc/<pid>/status with a generous margin; waits are
bounded; nothing asserts a duration."""
from __future__ import annotations

import socket
import time

from h2raw import CANCEL, H2Connection, HeadersFrame, RstStreamFrame

BOUND = 30.0
MIB = 1 << 20
SETTINGS_INITIAL_WINDOW_SIZE = 0x4


def rss_mib(server) -> float:
    with open(f"/proc/{server.proc.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def slow_reader(server, request: bytes, receive_buffer: int = 4096) -> socket.socket:
    """A client with a small receive window (set before connecting) that has sent `request`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(BOUND)
    sock.connect(server.address)
    sock.sendall(request)
    return sock


def status_line(sock: socket.socket) -> bytes:
    received = b""
    while b"\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received.split(b"\r\n", 1)[0]


def test_http1_clients_that_never_read_hold_at_most_the_budget(start_server):
    # 40 clients × 4 MB unread would be 160 MB; the budget is 32 MiB.
    server = start_server("--max-unsent-bytes", str(32 * MIB), "--loops", "1")
    before = rss_mib(server)
    clients = []
    try:
        for _ in range(40):
            sock = slow_reader(server, b"GET /bytes/4000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            clients.append(sock)
        statuses = [status_line(sock) for sock in clients]
        grown = rss_mib(server) - before
        ok = sum(b" 200 " in line for line in statuses)
        busy = sum(b" 503 " in line for line in statuses)
        print(f"RSS {before:.0f} MiB -> +{grown:.0f} MiB; 200: {ok}, 503: {busy}")
        assert ok >= 1 and busy >= 20, statuses
        assert ok + busy == len(clients), statuses
        # Without the bound this grows by ~160 MB (40 copies); allow the budget plus slack.
        assert grown < 100, f"RSS grew by {grown:.0f} MiB"
    finally:
        for sock in clients:
            sock.close()
    # Closing the readers frees the budget: a new large response fits again.
    deadline = time.monotonic() + BOUND
    while True:
        with socket.create_connection(server.address, timeout=BOUND) as sock:
            sock.sendall(b"GET /bytes/4000000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            if b" 200 " in status_line(sock):
                break
        assert time.monotonic() < deadline, "the unsent budget never came free"
        time.sleep(0.2)


def test_an_answer_to_a_write_is_never_refused_for_the_budget(start_server):
    # A POST has acted by the time it answers (a committed change set): its answer is charged past
    # the bound instead of becoming a 503 the client might retry. A GET is refused.
    server = start_server("--max-unsent-bytes", str(8 * MIB), "--loops", "1")
    holders = []
    try:
        for _ in range(3):
            sock = slow_reader(server, b"GET /bytes/4000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            holders.append(sock)
        assert [b" 200 " in status_line(sock) for sock in holders].count(True) == 2
        with socket.create_connection(server.address, timeout=BOUND) as sock:
            sock.sendall(b"POST /bytes/4000000 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            assert b" 200 " in status_line(sock)
        with socket.create_connection(server.address, timeout=BOUND) as sock:
            sock.sendall(b"GET /bytes/4000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            assert b" 503 " in status_line(sock)
    finally:
        for sock in holders:
            sock.close()


def test_http1_a_reader_that_takes_nothing_is_closed_after_the_idle_timeout(start_server):
    server = start_server("--idle-timeout", "2", "--loops", "1")
    # `Connection: close` used to keep such a response queued for as long as the client lived.
    sock = slow_reader(server, b"GET /bytes/10000000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    time.sleep(5)  # take nothing for longer than the idle timeout
    received = 0
    deadline = time.monotonic() + BOUND
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    assert received < 10_000_000, "the whole response was kept for a client that read nothing"


def test_http1_a_slow_reader_still_gets_a_response_that_outlasts_the_idle_timeout(start_server):
    # 10 MB: more than the kernel's send buffers take, so most of it waits in the server while
    # the client reads; before, the idle deadline closed the connection 2 s after the answer.
    server = start_server("--idle-timeout", "2", "--loops", "1")
    sock = slow_reader(server, b"GET /bytes/10000000 HTTP/1.1\r\nHost: t\r\n\r\n", receive_buffer=16384)
    received = bytearray()
    body_start = -1
    started = time.monotonic()
    try:
        while body_start < 0 or len(received) - body_start < 10_000_000:
            chunk = sock.recv(65536)
            assert chunk, f"closed after {len(received)} bytes ({time.monotonic() - started:.1f}s)"
            received += chunk
            if body_start < 0 and b"\r\n\r\n" in received:
                body_start = received.index(b"\r\n\r\n") + 4
            # A small window and a pause per read: the response takes longer than the 2 s idle timeout.
            time.sleep(0.01)
            assert time.monotonic() - started < BOUND * 2
    finally:
        sock.close()
    assert received.startswith(b"HTTP/1.1 200")


def test_http2_a_stream_at_a_zero_window_is_reset_after_the_idle_timeout(start_server):
    server = start_server("--idle-timeout", "2")
    with H2Connection(*server.address, settings={SETTINGS_INITIAL_WINDOW_SIZE: 0}) as conn:
        conn.handshake()
        conn.request(1, "/bytes/1000000")
        reset = conn.read_until(lambda f: isinstance(f, RstStreamFrame) and f.stream_id == 1, timeout=BOUND)
        assert reset.error_code == CANCEL


def test_http2_a_backed_up_connection_takes_its_next_request_once_the_first_lets_go(start_server):
    server = start_server("--idle-timeout", "2")
    with H2Connection(*server.address, settings={SETTINGS_INITIAL_WINDOW_SIZE: 0}) as conn:
        conn.handshake()
        conn.request(1, "/bytes/2000000")
        conn.read_until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == 1, timeout=BOUND)
        conn.request(3, "/health")
        # Stream 3 waits behind 2 MB nobody takes (over --max-pending-bytes); stream 1 is reset
        # at the send deadline, and then stream 3 is answered.
        seen = []
        frame = None
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            frame = conn.read_frame(timeout=BOUND)
            seen.append(frame)
            if isinstance(frame, HeadersFrame) and frame.stream_id == 3:
                break
        resets = [f for f in seen if isinstance(f, RstStreamFrame) and f.stream_id == 1]
        assert resets, f"stream 3 was answered before stream 1 let go: {seen}"
        assert isinstance(frame, HeadersFrame) and dict(frame.decoded)[":status"] == "200"


def test_http2_streams_that_never_read_hold_at_most_the_budget(start_server):
    server = start_server("--max-unsent-bytes", str(32 * MIB), "--idle-timeout", "60")
    before = rss_mib(server)
    connections = []
    try:
        for _ in range(40):
            conn = H2Connection(*server.address, settings={SETTINGS_INITIAL_WINDOW_SIZE: 0})
            connections.append(conn)
            conn.handshake()
            conn.request(1, "/bytes/4000000")
        statuses = []
        for conn in connections:
            head = conn.read_until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == 1, timeout=BOUND)
            statuses.append(dict(head.decoded)[":status"])
        grown = rss_mib(server) - before
        print(f"RSS {before:.0f} MiB -> +{grown:.0f} MiB; statuses {sorted(set(statuses))}")
        assert statuses.count("503") >= 20 and "200" in statuses, statuses
        assert grown < 100, f"RSS grew by {grown:.0f} MiB"
    finally:
        for conn in connections:
            conn.close()
