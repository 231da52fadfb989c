"""--max-buffered-body-bytes bounds the request-body bytes all connections hold at once: with a
150 kB budget, two uploads that have each sent 80 kB of a 100 kB body do not both fit — the one
that would overflow it is answered 503 and closed — the first completes, and once it has, a new
upload fits again. Bounded waits only."""
from __future__ import annotations

import socket
import time

BOUND = 20.0


def start_upload(address, sent: int, total: int = 100_000) -> socket.socket:
    sock = socket.create_connection(address, timeout=BOUND)
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % total + b"a" * sent)
    return sock


def answer(sock: socket.socket) -> bytes:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_uploads_beyond_the_body_budget_are_refused_with_503(start_server):
    server = start_server("--max-body", "1000000", "--max-buffered-body-bytes", "150000", "--loops", "1")
    first = start_upload(server.address, 80_000)
    time.sleep(0.3)  # the server has taken the first 80 kB
    second = start_upload(server.address, 80_000)
    try:
        refused = answer(second)
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        # The first upload goes on and completes.
        first.sendall(b"a" * 20_000)
        assert answer(first).startswith(b"HTTP/1.1 200")
    finally:
        first.close()
        second.close()
    # Its bytes were handed out: a new upload fits the budget again.
    deadline = time.monotonic() + BOUND
    while True:
        with start_upload(server.address, 100_000) as third:
            if answer(third).startswith(b"HTTP/1.1 200"):
                break
        assert time.monotonic() < deadline, "the budget never came free"
        time.sleep(0.1)
