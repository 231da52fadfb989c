#!/usr/bin/env python3
"""An insert into a large collection, fanned out: a canvas of N shapes (default 10,000), S SSE
subscribers (default 1,000), M change sets at R/s (default 1,000 at 100/s), each adding a shape and
inserting it at the end of `shapes` (`jetstream bench fanout --insert-into shapes`).

Prints, per server binary: bytes of one delivered event (its `data:` payload, measured from the
history page of the last version plus the SSE framing), server CPU per delivery (utime + stime
of the server process over the fan-out, from /proc), p50/p99 delivery latency and deliveries/s.

    Benchmarks/collections/insert_fanout.py --jetstream /tmp/jetstream-before --jetstream /tmp/jetstream-after
    Benchmarks/collections/insert_fanout.py --jetstream .build/release/jetstream --elements 10000 --runs 2

The load generator is `--bench` (default: the last --jetstream), so an older server can be
measured with a newer `jetstream bench`. Loopback only; every run is bounded by --timeout.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

TICKS = os.sysconf("SC_CLK_TCK")


def request(base: str, method: str, path: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_server(binary: str, data: pathlib.Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(data), "--no-access-log",
         "--max-pending-bytes", "16777216", "--max-streams-per-client", "100000", "--max-streams", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    for line in process.stdout:
        match = re.search(r"listening on (?:http://)?127\.0\.0\.1:(\d+)", line)
        if match:
            return process, f"http://127.0.0.1:{match.group(1)}"
        if time.monotonic() > deadline:
            break
    process.kill()
    raise SystemExit(f"{binary} did not say where it listens")


def fill(base: str, scope: str, elements: int) -> None:
    """Creates `scope` with `elements` shapes, in sets of 500 (under --max-fragments)."""
    state = request(base, "PUT", f"/v1/scopes/{scope}", {"root": {"clsName": "Canvas"}})
    root = state["rootUUID"]
    for start in range(0, elements, 500):
        shapes = [str(uuid.uuid4()) for _ in range(min(500, elements - start))]
        fragments = [{"type": "add", "uuid": u, "clsName": "Shape", "properties": {"x": 1, "y": 2}} for u in shapes]
        fragments.append({"type": "change", "uuid": root, "clsName": "Canvas",
                          "properties": {"shapes": {"insert": shapes, "before": None}}})
        request(base, "POST", f"/v1/scopes/{scope}/changesets", {"fragments": fragments})


def run_once(server: str, bench: str, a: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="insert-fanout-") as work:
        process, base = start_server(server, pathlib.Path(work))
        try:
            scope_prefix = "canvas-insert-"
            fill(base, scope_prefix + "0", a.elements)
            cpu_before = cpu_seconds(process.pid)
            result = subprocess.run(
                [bench, "bench", "fanout", "--url", base, "--json", "--scope-prefix", scope_prefix,
                 "--subscribers", str(a.subscribers), "--change-sets", str(a.change_sets), "--rate", str(a.rate),
                 "--writers", "4", "--source-addresses", "4", "--insert-into", "shapes", "--timeout", str(a.timeout)],
                capture_output=True, text=True, timeout=a.timeout + 30)
            cpu = cpu_seconds(process.pid) - cpu_before
            if result.returncode != 0:
                raise SystemExit(f"bench failed ({result.returncode}): {result.stderr[-2000:]}")
            report = json.loads(result.stdout)
            last = request(base, "GET", f"/v1/scopes/{scope_prefix}0")["version"]
            page = request(base, "GET", f"/v1/scopes/{scope_prefix}0/changesets?since={last - 1}")
            payload = json.dumps(page["changesets"][0], separators=(",", ":")).encode()
            framing = len(f"event: changeset\nid: {last}\ndata: \n\n".encode())
        finally:
            process.terminate()
            process.wait(30)
    deliveries = report["deliveries"]["received"]
    return {"event_bytes": len(payload) + framing, "cpu_us_per_delivery": cpu / max(1, deliveries) * 1e6,
            "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", action="append", required=True, help="server binary (repeatable)")
    parser.add_argument("--bench", help="load generator binary (default: the last --jetstream)")
    parser.add_argument("--elements", type=int, default=10000)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--change-sets", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--runs", type=int, default=1, help="alternated runs per binary")
    parser.add_argument("--timeout", type=float, default=300.0)
    a = parser.parse_args()
    bench = a.bench or a.jetstream[-1]
    for run in range(a.runs):
        for server in a.jetstream:
            outcome = run_once(server, bench, a)
            report = outcome["report"]
            print(f"{server} run {run + 1}: {outcome['event_bytes']} B per delivery, "
                  f"{outcome['cpu_us_per_delivery']:.2f} µs server CPU per delivery, "
                  f"{report['deliveries']['received']} of {report['deliveries']['expected']} deliveries "
                  f"({report['deliveriesPerSecond']:.0f}/s), p50 {report['latencyMs']['p50']:.1f} / "
                  f"p99 {report['latencyMs']['p99']:.1f} ms", flush=True)


if __name__ == "__main__":
    sys.exit(main())
