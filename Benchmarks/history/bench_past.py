#!/usr/bin/env python3
"""The past of a scope, measured (docs/history.md): reads at a version, an object's history, and
an online backup while writers run.

  Benchmarks/history/bench_past.py --jetstream .build/release/jetstream [--sets 100000]
        [--objects 10000] [--reads 200] [--backup-mb 1024] [--skip-backup | --only-backup]

1. Reads at a version. A server (`--history-limit` above --sets, `--snapshot-interval 1000`)
   holds one canvas of --objects shapes, then takes --sets change sets, each moving one random
   shape (8 keep-alive writers). `GET ?version=N` is timed --reads times for N near the head, in
   the middle and near the oldest version (each N drawn within ±500 of its point), beside
   `GET` of the current state: p50/p99 in ms, measured by the client over loopback.
2. An object's history. `GET …/objects/{uuid}/history?limit=100` for 20 random shapes, each
   touched about sets/objects times: p50/p99 per page (each page scans the retained log back to
   the object's add).
3. Backup. A second data directory is filled to about --backup-mb MB (16 scopes, change sets of
   400 labels of 190 bytes, 4 writers), then `jetstream bench write -c 8` runs 20 s, `jetstream backup`
   starting 5 s in: the backup's duration and size, and the writers' p99 over that run against a
   20 s run without a backup.

Prints a Markdown table per part. Loopback only; every phase is bounded in count and time.
"""
from __future__ import annotations

import argparse
import http.client
import json
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

TIMEOUT = 600


def start_server(binary: str, data: pathlib.Path, *flags: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(data), "--no-access-log", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    for line in process.stdout:
        match = re.search(r"listening on (?:http://)?127\.0\.0\.1:(\d+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, int(match.group(1))
        if time.monotonic() > deadline:
            break
    process.kill()
    raise SystemExit(f"{binary} did not say where it listens")


class Client:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def json(self, method: str, path: str, body: dict | None = None) -> dict:
        status, payload = self.call(method, path, body)
        if status != 200 and status != 201:
            raise SystemExit(f"{method} {path}: {status} {payload[:300]!r}")
        return json.loads(payload)


def create_canvas(client: Client, scope: str, shapes: list[str], properties: dict) -> str:
    root = client.json("PUT", f"/v1/scopes/{scope}", {"root": {"clsName": "Canvas"}})["rootUUID"]
    for start in range(0, len(shapes), 500):
        chunk = shapes[start:start + 500]
        fragments = [{"type": "add", "uuid": u, "clsName": "Shape", "properties": properties} for u in chunk]
        fragments.append({"type": "change", "uuid": root, "clsName": "Canvas",
                          "properties": {"shapes": {"insert": chunk, "before": None}}})
        client.json("POST", f"/v1/scopes/{scope}/changesets", {"fragments": fragments})
    return root


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(client: Client, path: str) -> float:
    started = time.perf_counter()
    status, _ = client.call("GET", path)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        raise SystemExit(f"GET {path}: {status}")
    return elapsed


def reads_and_history(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-past-") as work:
        process, port = start_server(
            a.jetstream, pathlib.Path(work), "--history-limit", str(a.sets + 1000), "--snapshot-interval", "1000")
        try:
            client = Client(port)
            scope = "canvas-past"
            shapes = [str(uuid.uuid4()) for _ in range(a.objects)]
            create_canvas(client, scope, shapes, {"x": 0, "y": 0})
            first = client.json("GET", f"/v1/scopes/{scope}")["version"]
            started = time.monotonic()
            per_writer = a.sets // 8

            def write(seed: int) -> None:
                writer, rng = Client(port), random.Random(seed)
                for index in range(per_writer):
                    if time.monotonic() - started > TIMEOUT:
                        return
                    shape = shapes[rng.randrange(len(shapes))]
                    writer.json("POST", f"/v1/scopes/{scope}/changesets", {"fragments": [
                        {"type": "change", "uuid": shape, "clsName": "Shape", "properties": {"x": index}}]})

            writers = [threading.Thread(target=write, args=(seed,)) for seed in range(8)]
            for writer in writers:
                writer.start()
            for writer in writers:
                writer.join()
            filled = time.monotonic() - started
            head = client.json("GET", f"/v1/scopes/{scope}")["version"]
            print(f"\n{head - first:,} change sets written in {filled:.1f} s; {a.objects:,} shapes; "
                  f"versions {first}…{head}\n")
            rng = random.Random(7)
            points = {"current (no version)": None, "near the head": head - 500, "middle": (first + head) // 2,
                      "near the oldest": first + 500}
            print("| read | p50 ms | p99 ms |\n|---|---:|---:|")
            for label, point in points.items():
                samples = []
                for _ in range(a.reads):
                    if point is None:
                        samples.append(timed(client, f"/v1/scopes/{scope}"))
                    else:
                        version = max(first, min(head, point + rng.randint(-500, 500)))
                        samples.append(timed(client, f"/v1/scopes/{scope}?version={version}"))
                p50, p99 = percentiles(samples)
                print(f"| `GET` {label} | {p50:.2f} | {p99:.2f} |")
            pages = [timed(client, f"/v1/scopes/{scope}/objects/{shape}/history?limit=100")
                     for shape in rng.sample(shapes, 20)]
            p50, p99 = percentiles(pages)
            print(f"\n| object history page (limit 100, 20 objects) | p50 ms | p99 ms |\n|---|---:|---:|\n"
                  f"| scans {head - first:,} change sets | {p50:.1f} | {p99:.1f} |")
        finally:
            process.terminate()
            process.wait(timeout=60)


def bench_write(a: argparse.Namespace, port: int, duration: float) -> dict:
    done = subprocess.run(
        [a.jetstream, "bench", "write", "--url", f"http://127.0.0.1:{port}", "-c", "8", "-d", str(duration),
         "--scopes", "4", "--scope-prefix", "canvas-bw-", "--threads", "1", "--json"],
        capture_output=True, text=True, timeout=TIMEOUT)
    return json.loads(done.stdout)


def backup(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as work:
        data = pathlib.Path(work) / "data"
        process, port = start_server(a.jetstream, data, "--history-limit", "100000")
        try:
            client = Client(port)
            label = "x" * 190
            scopes = []
            for index in range(16):
                shapes = [str(uuid.uuid4()) for _ in range(400)]
                create_canvas(client, f"canvas-big-{index}", shapes, {"x": 0, "y": 0})
                scopes.append(shapes)
            store = data / "jetstream.sqlite"
            started = time.monotonic()

            def fill(first: int) -> None:
                writer = Client(port)
                round_index = 0
                while store.stat().st_size < a.backup_mb * 1024 * 1024 and time.monotonic() - started < TIMEOUT:
                    for index in range(first, len(scopes), 4):
                        writer.json("POST", f"/v1/scopes/canvas-big-{index}/changesets", {"fragments": [
                            {"type": "change", "uuid": u, "clsName": "Shape",
                             "properties": {"label": f"{round_index}{label}"[:190]}} for u in scopes[index]]})
                    round_index += 1

            fillers = [threading.Thread(target=fill, args=(first,)) for first in range(4)]
            for filler in fillers:
                filler.start()
            for filler in fillers:
                filler.join()
            size_mb = store.stat().st_size / 1024 / 1024
            print(f"\nstore filled to {size_mb:,.0f} MB in {time.monotonic() - started:.0f} s\n")
            quiet = bench_write(a, port, 20)
            result: dict = {}

            def run_backup() -> None:
                time.sleep(5)
                target = pathlib.Path(work) / "copy.sqlite"
                begun = time.monotonic()
                done = subprocess.run([a.jetstream, "backup", "--data-dir", str(data), str(target), "--json"],
                                      capture_output=True, text=True, timeout=TIMEOUT)
                result.update(seconds=time.monotonic() - begun, status=done.returncode,
                              mb=target.stat().st_size / 1024 / 1024 if target.exists() else 0,
                              scopes=len(json.loads(done.stdout)["scopes"]) if done.returncode == 0 else 0,
                              error=done.stderr[-300:])

            thread = threading.Thread(target=run_backup)
            thread.start()
            loaded = bench_write(a, port, 20)
            thread.join()
            print("| run (8 writers, 20 s) | change sets/s | p50 ms | p99 ms |\n|---|---:|---:|---:|")
            for name, run in (("without a backup", quiet), ("with a backup from 5 s", loaded)):
                latency = run["latencyMs"]
                print(f"| {name} | {run['requestsPerSecond']:,.0f} | {latency['p50']:.2f} | {latency['p99']:.2f} |")
            print(f"\nbackup: exit {result['status']}, {result['seconds']:.1f} s, {result['mb']:,.0f} MB, "
                  f"{result['scopes']} scopes {result['error'] if result['status'] else ''}")
        finally:
            process.terminate()
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=".build/release/jetstream")
    parser.add_argument("--sets", type=int, default=100_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--backup-mb", type=int, default=1024)
    parser.add_argument("--skip-backup", action="store_true")
    parser.add_argument("--only-backup", action="store_true")
    a = parser.parse_args()
    if not a.only_backup:
        reads_and_history(a)
    if not a.skip_backup:
        backup(a)


if __name__ == "__main__":
    sys.exit(main())
