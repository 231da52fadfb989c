"""A large scope state is one shared buffer, not a copy per connection: 120 clients that GET a
~7 MB state and never read it leave the server's memory roughly where one reader would (measured
through /proc/<pid>/status, with a generous margin — never a timing). Before the state was shared,
each such client held its own copy of what the kernel would not take: up to 120 × 7 MB."""
from __future__ import annotations

import socket
import time

from gateway_helpers import add, change, new_uuid

CLIENTS = 120
LABEL = 200             # the demo schema's longest label
SHAPES = 20_000         # about 6.7 MB of state: more than a socket's send buffer takes


def rss_kib(server) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_many_clients_that_do_not_read_a_large_state_share_one_copy(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    for batch in range(0, SHAPES, 500):
        uuids = [new_uuid() for _ in range(500)]
        fragments = [add(uuid, "Shape", x=batch + i, y=0, label=chr(65 + i % 26) * LABEL)
                     for i, uuid in enumerate(uuids)]
        fragments.append(change(root, "Canvas", shapes={"insert": uuids}))
        api.apply(name, fragments)
    size = len(api.http.get(f"/v1/scopes/{name}").content)
    assert size > 2_000_000

    before = rss_kib(server)
    clients = []
    try:
        for _ in range(CLIENTS):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # A small receive window, set before connecting: the client takes almost nothing.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", server.port))
            sock.sendall(f"GET /v1/scopes/{name} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            clients.append(sock)
        time.sleep(1.0)  # every request answered (queued) by now on loopback
        grown_mib = (rss_kib(server) - before) / 1024
        copies = grown_mib / (size / 2**20)
        print(f"RSS {before >> 10} MiB -> +{grown_mib:.0f} MiB for {CLIENTS} unread {size / 2**20:.1f} MiB states")
        # One copy per client would be ~CLIENTS copies; allow a handful (the shared copy, buffers).
        assert copies < 20, f"memory grew by {grown_mib:.0f} MiB for {CLIENTS} unread {size >> 20} MiB states"
    finally:
        for sock in clients:
            sock.close()
    # The server still answers.
    assert api.http.get("/healthz").status_code == 200
