#!/usr/bin/env python3
"""CPU a server spends on request heads that arrive a few bytes at a time (issue: a parser that
re-scans the head from byte 0 on every read costs the square of the head's length).

Starts `jetstream serve` (--binary), opens --connections connections, and on each sends a
--head-bytes request head in --piece-bytes pieces (TCP_NODELAY, one send per piece, round-robin
over the connections so each read the server makes sees one new piece), then reads the answer.
Prints the server's CPU seconds (utime+stime from /proc/<pid>/stat) spent meanwhile, per head.

    .venv/bin/python Benchmarks/http1/dribbled_head.py --binary .build/release/jetstream
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import socket
import subprocess
import tempfile
import time


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/jetstream")
    parser.add_argument("--head-bytes", type=int, default=16000)
    parser.add_argument("--piece-bytes", type=int, default=1)
    parser.add_argument("--connections", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen(
            [args.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data,
             "--no-access-log", "--header-timeout", "120"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            line = server.stdout.readline().decode()
            port = int(re.search(r":(\d+)", line).group(1))
            prefix = b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Padding: "
            head = prefix + b"v" * (args.head_bytes - len(prefix) - 4) + b"\r\n\r\n"
            sockets = []
            for _ in range(args.connections):
                connection = socket.create_connection(("127.0.0.1", port))
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sockets.append(connection)
            before = cpu_seconds(server.pid)
            started = time.monotonic()
            for offset in range(0, len(head), args.piece_bytes):
                piece = head[offset:offset + args.piece_bytes]
                for connection in sockets:
                    connection.sendall(piece)
            answers = []
            for connection in sockets:
                connection.settimeout(30)
                answers.append(connection.recv(64).split(b"\r\n", 1)[0].decode())
            spent = cpu_seconds(server.pid) - before
            elapsed = time.monotonic() - started
            assert all(answer.endswith("200 OK") for answer in answers), answers
            print(f"{args.connections} heads of {len(head)} bytes in {args.piece_bytes}-byte pieces: "
                  f"server CPU {spent:.2f} s ({spent / args.connections * 1000:.1f} ms per head), "
                  f"wall {elapsed:.1f} s, answers {answers[0]!r}")
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
