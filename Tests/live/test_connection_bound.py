"""--max-connections bounds open connections: beyond it a new connection is closed as it is
accepted (nothing read, nothing answered), counted, and the server stays usable for connections
within the bound; once one closes, a new one is served. Bounded waits only."""
from __future__ import annotations

import socket
import time

BOUND = 20.0


def served(address) -> bool:
    """Opens a connection, sends a request, returns whether an answer came."""
    with socket.create_connection(address, timeout=BOUND) as sock:
        try:
            sock.sendall(b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
            return sock.recv(65536).startswith(b"HTTP/1.1 200")
        except (ConnectionResetError, BrokenPipeError):
            return False


def test_connections_beyond_the_bound_are_closed_as_they_are_accepted(start_server):
    server = start_server("--max-connections", "4", "--loops", "1")
    held = [socket.create_connection(server.address, timeout=BOUND) for _ in range(4)]
    try:
        # Each held connection is accepted (proved by an answer on it).
        for sock in held:
            sock.sendall(b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        # The fifth is closed at once.
        assert not served(server.address)
    finally:
        held.pop().close()
    # One slot is free again (the server sees the close within a moment).
    deadline = time.monotonic() + BOUND
    while not served(server.address):
        assert time.monotonic() < deadline, "no slot came free after a connection closed"
        time.sleep(0.1)
    for sock in held:
        sock.close()
