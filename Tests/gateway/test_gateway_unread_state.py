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


def test_over_http2_an_unread_state_does_not_hold_back_the_connections_next_request(api, server):
    """The cached state costs a connection nothing, so it does not count toward the connection's
    back-pressure (`--max-pending-bytes`, 1 MiB): with a 1.3 MB state left unread at the client's
    window, the next request on the same connection is answered at once. (A per-request body
    that large would hold it back until the client reads.)"""
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings

    name, state = api.create_canvas()
    root = state["rootUUID"]
    for batch in range(0, 4000, 500):
        uuids = [new_uuid() for _ in range(500)]
        fragments = [add(uuid, "Shape", x=batch + i, y=0, label=chr(65 + i % 26) * LABEL)
                     for i, uuid in enumerate(uuids)]
        fragments.append(change(root, "Canvas", shapes={"insert": uuids}))
        api.apply(name, fragments)

    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    connection.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384})
    authority = f"127.0.0.1:{server.port}"
    connection.send_headers(1, [(":method", "GET"), (":path", f"/v1/scopes/{name}"), (":scheme", "http"),
                                (":authority", authority)], end_stream=True)
    connection.send_headers(3, [(":method", "GET"), (":path", "/healthz"), (":scheme", "http"),
                                (":authority", authority)], end_stream=True)
    sock.sendall(connection.data_to_send())
    statuses: dict[int, str] = {}
    try:
        while 3 not in statuses:
            data = sock.recv(65536)
            assert data, "the server closed the connection"
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = dict(event.headers)[b":status"].decode()
            # Never acknowledge the state's DATA: its stream stays at a closed window.
            sock.sendall(connection.data_to_send())
    finally:
        sock.close()
    assert statuses == {1: "200", 3: "200"}
