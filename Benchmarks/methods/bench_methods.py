#!/usr/bin/env python3
"""What server methods cost (docs/methods.md), against a release `jetstream serve` it starts.

    swift build -c release --product jetstream
    .venv/bin/python Benchmarks/methods/bench_methods.py [--binary .build/release/jetstream] [--rounds 2]

1. **A Swift method vs the equivalent POST**: `jetstream bench write` with 32 connections on one
   scope for `--seconds`, POSTing a change set of the canvas's name, against
   `bench write --method rename` (the demo's Swift method making the same change). Alternated.
2. **A method over HTTP**: a small local service (Python, threaded) answers `hookrename` with the
   same fragment; `bench write --method hookrename`: one connection; 8 connections on 8 scopes;
   8 connections on one scope, where each call's change set moves the scope the others planned on
   (they are planned again, and 503 after 5 tries). Calls/s and latency.
3. **POST p99 while a slow method runs**: 8 connections POST to one scope alone, then the same
   while 4 threads call `slowrename` on that scope (its service waits 50 ms before answering, so
   most calls find the scope moved and are planned again, then answered 503): the POSTs' p99 must
   not grow with it, since the scope's lock is never held while a service thinks.

Prints a Markdown table. Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Service:
    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: without this, Nagle's algorithm holds the body
            # until the gateway's delayed ACK (40 ms) — the service's cost, not the gateway's.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/slow"):
                    time.sleep(0.05)
                root = body["state"]["rootUUID"]
                answer = json.dumps({"fragments": [{"type": "change", "uuid": root, "clsName": "Canvas",
                                                    "properties": {"name": body["args"].get("name")}}],
                                     "result": None}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def start(binary: str, data: pathlib.Path, service: Service) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [binary, "serve", "--port", "0", "--data-dir", str(data), "--no-access-log",
         "--method", f"hookrename={service.url}/rename", "--method", f"slowrename={service.url}/slow"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        match = re.search(r"listening on .*:(\d+)", line) or re.search(r"port (\d+)", line)
        if match:
            return process, f"http://127.0.0.1:{match.group(1)}"
    process.kill()
    raise SystemExit("the server did not start")


def bench(binary: str, url: str, *args: str) -> dict:
    done = subprocess.run([binary, "bench", "write", "--url", url, "--json", *args],
                          capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout)


def row(name: str, result: dict) -> str:
    latency = result["latencyMs"]
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(result["statuses"].items()))
    return (f"| {name} | {result['requestsPerSecond']:,.0f} | {latency.get('p50', 0):.2f} | "
            f"{latency.get('p99', 0):.2f} | {statuses} |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/jetstream"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10)
    options = parser.parse_args()
    service = Service()
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        process, url = start(options.binary, pathlib.Path(directory) / "data", service)
        try:
            seconds = str(options.seconds)
            for round_number in range(options.rounds):
                rows.append(row(f"POST change set, 32 connections (round {round_number + 1})",
                                bench(options.binary, url, "-c", "32", "-d", seconds, "--scope-prefix", "canvas-m-")))
                rows.append(row(f"Swift method `rename`, 32 connections (round {round_number + 1})",
                                bench(options.binary, url, "-c", "32", "-d", seconds, "--scope-prefix", "canvas-m-",
                                      "--method", "rename")))
            rows.append(row("HTTP method `hookrename` (Python service), 1 connection",
                            bench(options.binary, url, "-c", "1", "-d", seconds, "--scope-prefix", "canvas-h1-",
                                  "--method", "hookrename")))
            rows.append(row("HTTP method `hookrename`, 8 connections on 8 scopes",
                            bench(options.binary, url, "-c", "8", "-d", seconds, "--scopes", "8",
                                  "--scope-prefix", "canvas-h8-", "--method", "hookrename")))
            rows.append(row("HTTP method `hookrename`, 8 connections on one scope (they move it for each other)",
                            bench(options.binary, url, "-c", "8", "-d", seconds, "--scope-prefix", "canvas-h-",
                                  "--method", "hookrename")))
            rows.append(row("POST, 8 connections, scope alone",
                            bench(options.binary, url, "-c", "8", "-d", seconds, "--scope-prefix", "canvas-s-")))
            stop = threading.Event()
            outcomes: dict[int, int] = {}
            lock = threading.Lock()

            def slow_caller() -> None:
                with httpx.Client(base_url=url, timeout=60) as client:
                    while not stop.is_set():
                        status = client.post("/v1/scopes/canvas-s-0/methods/slowrename",
                                             json={"args": {"name": "slow"}}).status_code
                        with lock:
                            outcomes[status] = outcomes.get(status, 0) + 1

            callers = [threading.Thread(target=slow_caller) for _ in range(4)]
            for caller in callers:
                caller.start()
            during = bench(options.binary, url, "-c", "8", "-d", seconds, "--scope-prefix", "canvas-s-")
            stop.set()
            for caller in callers:
                caller.join(120)
            rows.append(row("POST, 8 connections, same scope while 4 callers run the 50 ms `slowrename`", during))
            slow = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
        finally:
            process.terminate()
            process.wait(30)
    print("| run | req/s (2xx) | p50 ms | p99 ms | statuses |")
    print("|---|---:|---:|---:|---|")
    for line in rows:
        print(line)
    print(f"\n`slowrename` calls during the last row: {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
