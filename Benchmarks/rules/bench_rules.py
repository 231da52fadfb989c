#!/usr/bin/env python3
"""What the schema's write rules cost on the POST hot path (docs/model.md, "Ownership and write
rules"), against release `jetstream serve` processes it starts.

    swift build -c release --product jetstream
    .venv/bin/python Benchmarks/rules/bench_rules.py [--binary .build/release/jetstream] \\
        [--baseline /path/to/an/older/jetstream] [--rounds 3] [--seconds 10]

`jetstream bench write` with 32 connections POSTing a change set of the canvas's `name` to one
scope, against:

- `demo schema`: the binary with the demo schema (no rules: nothing is checked);
- `demo schema + rules`: the same binary with the demo schema plus `rules: {write: owner, delete:
  owner}` on `Canvas` and `Shape` and `write: owner` on the canvas's `name`: every POST runs the
  class check and the property check (and passes: the root has no owner, so it is open);
- with `--baseline`, an older binary (built before the rules) with the demo schema.

Rounds alternate the servers (idle ones cost nothing), so drift hits them alike. Prints a
Markdown table; figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import httpx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def start(binary: str, data: pathlib.Path, *extra: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [binary, "serve", "--port", "0", "--data-dir", str(data), "--no-access-log", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        match = re.search(r"listening on .*:(\d+)", line) or re.search(r"port (\d+)", line)
        if match:
            return process, f"http://127.0.0.1:{match.group(1)}"
    process.kill()
    raise SystemExit(f"{binary} did not start")


def ruled(schema: dict) -> dict:
    """The demo schema with owner rules on Canvas and Shape, and `write: owner` on `Canvas.name`."""
    models = schema["models"]
    for name in ("Canvas", "Shape"):
        models[name] = {"rules": {"write": "owner", "delete": "owner"}, **models[name]}
    models["Canvas"]["name"] = {**models["Canvas"]["name"], "write": "owner"}
    return schema


def bench(binary: str, url: str, seconds: float) -> dict:
    done = subprocess.run([binary, "bench", "write", "--url", url, "--json", "-c", "32", "-d", str(seconds),
                           "--scope-prefix", "canvas-rules-"], capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/jetstream"))
    parser.add_argument("--baseline", help="an older jetstream binary to compare with (demo schema)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    options = parser.parse_args()
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as directory:
        base = pathlib.Path(directory)
        servers: list[tuple[str, subprocess.Popen, str]] = []
        try:
            if options.baseline:
                process, url = start(options.baseline, base / "baseline")
                servers.append(("baseline binary, demo schema", process, url))
            process, url = start(options.binary, base / "plain")
            servers.append(("demo schema", process, url))
            schema = ruled(httpx.get(f"{url}/v1/schema").json())
            (base / "rules.json").write_text(json.dumps(schema))
            process, url = start(options.binary, base / "rules", "--schema", str(base / "rules.json"))
            served = httpx.get(f"{url}/v1/schema").json()["models"]["Canvas"]
            assert served["rules"] == {"write": "owner", "delete": "owner"}, served
            servers.append(("demo schema + rules", process, url))
            for _ in range(options.rounds):
                for name, _, url in servers:
                    results.setdefault(name, []).append(bench(options.binary, url, options.seconds))
        finally:
            for _, process, _ in servers:
                process.terminate()
                process.wait(30)
    print("| server | round | change sets/s | p50 ms | p99 ms | statuses |")
    print("|---|---:|---:|---:|---:|---|")
    for name, runs in results.items():
        for index, result in enumerate(runs):
            latency = result["latencyMs"]
            statuses = ", ".join(f"{k}: {v}" for k, v in sorted(result["statuses"].items()))
            print(f"| {name} | {index + 1} | {result['requestsPerSecond']:,.0f} | {latency.get('p50', 0):.2f} | "
                  f"{latency.get('p99', 0):.2f} | {statuses} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
