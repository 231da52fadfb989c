#!/usr/bin/env python3
"""Reproduces the resource attacks the gateway bounds and prints what they cost it: open
descriptors, RSS, and the latency of `/healthz` from an honest client during the attack.

  .venv/bin/python Benchmarks/security/attack_bounds.py [--jetstream .build/release/jetstream]

1. Stalled HTTP/2 requests under `--nofile 256` (`--header-timeout 5 --idle-timeout 10`): 80
   connections leave a header block unfinished, 80 stop in a POST body, 80 ask for a 4 MB history
   page at a zero window. Before the bounds they stayed open and every new client got a reset.
2. 200 HTTP/1.1 clients GET a ~7 MB state and never read it; then 20 clients GET a history
   page of all 40 change sets each and never read it (`--max-unsent-bytes 64 MiB`).
3. 200 HTTP/2 connections POST ~1 MB change sets without a token to an auth-enabled gateway.

Starts its own `jetstream serve` processes on free loopback ports with throwaway data directories.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "live"))

from h2raw import ConnectionEnded, DataFrame, H2Connection, HeadersFrame  # noqa: E402

LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


class Gateway:
    def __init__(self, binary: str, *args: str, nofile: int | None = None):
        self.dir = tempfile.TemporaryDirectory(prefix="attack-bounds-")
        command = [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.dir.name, *args]
        if nofile:
            command = ["prlimit", f"--nofile={nofile}", "--", *command]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            match = LISTENING.search(self.process.stdout.readline())
            if match:
                self.port = int(match.group(1))
                return
        raise RuntimeError("jetstream serve did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.dir.cleanup()

    def descriptors(self) -> int:
        return len(list(pathlib.Path(f"/proc/{self.process.pid}/fd").iterdir()))

    def rss_mib(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024

    def call(self, method: str, path: str, body=None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"{}")

    def healthz(self) -> str:
        began = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=10) as response:
                response.read()
                return f"{response.status} in {1000 * (time.monotonic() - began):.0f} ms"
        except Exception as error:  # noqa: BLE001 - a reset or refusal is the figure
            return f"failed ({type(error).__name__})"

    def canvas(self, shapes: int, per_set: int) -> str:
        name = f"canvas-attack-{uuid.uuid4().hex[:8]}"
        root = self.call("PUT", f"/v1/scopes/{name}", {"root": {"clsName": "Canvas"}})["rootUUID"]
        for batch in range(0, shapes, per_set):
            ids = [str(uuid.uuid4()).upper() for _ in range(per_set)]
            fragments = [{"type": "add", "uuid": i, "clsName": "Shape",
                          "properties": {"x": batch + n, "y": 0, "label": chr(65 + n % 26) * 200}}
                         for n, i in enumerate(ids)]
            fragments.append({"type": "change", "uuid": root, "clsName": "Canvas",
                              "properties": {"shapes": {"insert": ids}}})
            self.call("POST", f"/v1/scopes/{name}/changesets", {"fragments": fragments})
        return name


def stalled_http2(binary: str) -> None:
    gateway = Gateway(binary, "--header-timeout", "5", "--idle-timeout", "10", "--max-connections", "0",
                      nofile=256)
    try:
        name = gateway.canvas(shapes=12_000, per_set=500)
        held = []
        for index in range(240):
            try:
                conn = H2Connection("127.0.0.1", gateway.port, settings={0x4: 0}, timeout=10)
                conn.handshake()
                if index % 3 == 0:
                    block = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"),
                                                 (":path", "/healthz"), ("x-a", "b" * 100)])
                    conn.send(HeadersFrame(1, data=block[:20]))  # no END_HEADERS, ever
                elif index % 3 == 1:
                    conn.send(conn.headers_frame(1, f"/v1/scopes/{name}/changesets", method="POST",
                                                 end_stream=False, extra=[("content-type", "application/json")]),
                              DataFrame(1, data=b'{"fragments":['))
                else:
                    conn.request(1, f"/v1/scopes/{name}/changesets?since=0")
                held.append(conn)
            except (OSError, ConnectionEnded, TimeoutError):
                break  # the server is out of descriptors
        print(f"1. {len(held)} stalled HTTP/2 connections (fd limit 256)")
        started = time.monotonic()
        for wait in (0, 8, 16, 25):
            time.sleep(max(0.0, started + wait - time.monotonic()))
            print(f"   t={wait:>2} s: server descriptors {gateway.descriptors():>3}, /healthz {gateway.healthz()}")
        for conn in held:
            conn.close()
    finally:
        gateway.stop()


def unread_responses(binary: str) -> None:
    gateway = Gateway(binary, "--max-unsent-bytes", str(64 << 20))
    try:
        name = gateway.canvas(shapes=20_000, per_set=500)
        before = gateway.rss_mib()
        clients = []
        for _ in range(200):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", gateway.port))
            sock.sendall(f"GET /v1/scopes/{name} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            clients.append(sock)
        time.sleep(2)
        print(f"2. 200 clients, unread ~7 MB state: RSS {before:.0f} -> {gateway.rss_mib():.0f} MiB, "
              f"/healthz {gateway.healthz()}")
        for sock in clients:
            sock.close()
        history = f"http://127.0.0.1:{gateway.port}/v1/scopes/{name}/changesets?since=0"
        with urllib.request.urlopen(history, timeout=60) as response:
            page = len(response.read())
        time.sleep(1)
        before = gateway.rss_mib()
        pages, statuses = [], []
        for _ in range(20):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(60)
            sock.connect(("127.0.0.1", gateway.port))
            sock.sendall(f"GET /v1/scopes/{name}/changesets?since=0 HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            statuses.append(sock.recv(64).split(b" ")[1].decode())
            pages.append(sock)
        print(f"   20 clients, unread {page / 1e6:.1f} MB history pages: RSS {before:.0f} -> {gateway.rss_mib():.0f} MiB, "
              f"answers {sorted(statuses)}, /healthz {gateway.healthz()}")
        for sock in pages:
            sock.close()
    finally:
        gateway.stop()


def tokenless_uploads(binary: str) -> None:
    secret = tempfile.NamedTemporaryFile("w", suffix=".secret", delete=False)
    secret.write("0123456789abcdef0123456789abcdef-attack\n")
    secret.close()
    gateway = Gateway(binary, "--jwt-secret-file", secret.name)
    try:
        before = gateway.rss_mib()
        held, statuses = [], []
        for _ in range(200):
            conn = H2Connection("127.0.0.1", gateway.port, timeout=30)
            conn.handshake()
            conn.send(conn.headers_frame(1, "/v1/scopes/demo/changesets", method="POST", end_stream=False,
                                         extra=[("content-type", "application/json"),
                                                ("content-length", "1000000")]),
                      *[DataFrame(1, data=b"x" * 16_384) for _ in range(3)])
            head = conn.read_until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == 1)
            statuses.append(dict(head.decoded)[":status"])
            held.append(conn)
        print(f"3. 200 HTTP/2 uploads without a token: answers {sorted(set(statuses))}, "
              f"RSS {before:.0f} -> {gateway.rss_mib():.0f} MiB, /healthz {gateway.healthz()}")
        for conn in held:
            conn.close()
    finally:
        gateway.stop()
        pathlib.Path(secret.name).unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    options = parser.parse_args()
    stalled_http2(options.jetstream)
    unread_responses(options.jetstream)
    tokenless_uploads(options.jetstream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
