"""Server RSS per HTTP/2 connection holding one SSE stream (not a test: a benchmark helper).

Usage: .venv/bin/python Tests/live/bench_h2_memory.py PORT COUNT identity|gzip SERVER_PID
Opens COUNT h2c connections to HTTPTestServer, each with one open /subscribe stream, and prints
the server's RSS growth per connection. Loopback only; COUNT is bounded by the fd limit."""
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    port, count, coding, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    if count > 5000:
        raise SystemExit("COUNT is limited to 5000")
    before = rss_kib(pid)
    connections = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        headers = [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/subscribe")]
        if coding == "gzip":
            headers.append(("accept-encoding", "gzip"))
        conn.send_headers(1, headers, end_stream=True)
        sock.sendall(conn.data_to_send())
        answered = False
        while not answered:
            for event in conn.receive_data(sock.recv(65536)):
                answered = answered or isinstance(event, h2.events.ResponseReceived)
            sock.sendall(conn.data_to_send())
        connections.append((sock, conn))
    time.sleep(0.5)
    after = rss_kib(pid)
    print(f"{count} h2c connections, one /subscribe stream each ({coding}): RSS {before} -> {after} KiB, "
          f"{(after - before) * 1024 / count:.0f} bytes per connection")


if __name__ == "__main__":
    main()
