#!/usr/bin/env python3
"""What HPACK-amplified header blocks cost the server: 200 connections each send 3 blocks in which
one 4000-byte field is re-referenced 16,000 times (one byte per reference, about 11.7 MB in all);
prints the server's CPU seconds for them and the latency of a plain request afterwards.

  .venv/bin/python Benchmarks/http2/hpack_amplification.py [--server .build/debug/HTTPTestServer]

Starts its own HTTPTestServer on a free loopback port; uses the live suite's raw HTTP/2 client.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "live"))

from h2raw import ConnectionEnded, H2Connection  # noqa: E402
from test_h2_frames import amplified_header_block, send_header_block  # noqa: E402

CONNECTIONS = 200
BLOCKS_PER_CONNECTION = 3
REFERENCES = 16_000


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=str(ROOT / ".build" / "debug" / "HTTPTestServer"))
    options = parser.parse_args()
    server = subprocess.Popen([options.server, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        port = int(server.stdout.readline().split()[1])  # "LISTENING <port>"
        start, sent = cpu_seconds(server.pid), 0
        for _ in range(CONNECTIONS):
            try:
                with H2Connection("127.0.0.1", port, timeout=30) as conn:
                    conn.handshake()
                    for index in range(BLOCKS_PER_CONNECTION):
                        block = amplified_header_block(conn, REFERENCES)
                        send_header_block(conn, 1 + 2 * index, block)
                        sent += len(block)
            except (OSError, ConnectionEnded):
                pass  # the server may end the connection (GOAWAY) before the last block
        used = cpu_seconds(server.pid) - start
        began = time.monotonic()
        urllib.request.urlopen(f"http://127.0.0.1:{port}/echo", timeout=30).read()
        print(f"sent {sent / 1e6:.1f} MB of amplified header blocks on {CONNECTIONS} connections: "
              f"server CPU {used:.2f} s; then GET /echo in {1000 * (time.monotonic() - began):.0f} ms")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
