#!/usr/bin/env python3
"""Where the CPU of a durable write goes: one gateway node, `jetstream bench write` with 32
writers, and the CPU time the gateway (and, on PostgreSQL, every PostgreSQL process) spent over
the run, per change set.

  Benchmarks/cluster/write_cpu_split.py --jetstream .build/release/jetstream [--store sqlite|postgres]
                                        [--scopes 1,32] [--duration 8]

With `--store postgres` (the default) it starts PostgreSQL 15 with Tests/gateway/postgres_cluster.py
(initdb in a temp dir, fsync and synchronous_commit on); with `--store sqlite` the gateway uses its
embedded store in a fresh data directory. The gateway listens on a free loopback port; the load
generator, the gateway and PostgreSQL share the machine's cores. CPU is read from /proc (user + system ticks) before and after
the timed run, after one second of warm-up that also creates the scopes. Prints one line per
scope count. Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
from postgres_cluster import PostgresCluster  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def postgres_pids(postmaster: int) -> list[int]:
    """The processes of one PostgreSQL cluster: its postmaster and the children named `postgres`.
    By the command name (`comm`), not the command line: the gateway's names PostgreSQL in its
    `--database-url`, and counting it made PostgreSQL look twice as costly as it is. Other
    clusters on the machine (a test run's) are not counted."""
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 1:].split()
        pid, parent = int(entry.name), int(rest[1])
        if name == "postgres" and (pid == postmaster or parent == postmaster):
            pids.append(pid)
    return pids


def postgres_ticks(postmaster: int) -> int:
    """User + system ticks of one cluster's live processes."""
    total = 0
    for pid in postgres_pids(postmaster):
        try:
            total += cpu_ticks(pid)
        except (OSError, IndexError, ValueError):
            pass  # it ended meanwhile
    return total


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench(binary: str, url: str, scopes: int, duration: float) -> dict:
    out = subprocess.run(
        [binary, "bench", "write", "--url", url, "-c", "32", "-d", str(duration), "--scopes", str(scopes),
         "--json", "--timeout", str(duration + 60)],
        capture_output=True, text=True, timeout=duration + 90)
    return json.loads(out.stdout)


def run(binary: str, postgres: PostgresCluster | None, scopes: int, duration: float, base: pathlib.Path) -> str:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [binary, "serve", "--port", str(port), "--data-dir", str(base / f"node-{scopes}"), "--no-access-log"]
    if postgres:
        command += ["--database-url", postgres.url(postgres.create_database())]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["curl", "-sf", f"{url}/readyz"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the gateway did not become ready")
            time.sleep(0.1)
        bench(binary, url, scopes, 1)  # warm-up; creates the scopes
        postmaster = int((postgres.data / "postmaster.pid").read_text().split()[0]) if postgres else 0
        gateway_before, postgres_before = cpu_ticks(server.pid), postgres_ticks(postmaster) if postgres else 0
        result = bench(binary, url, scopes, duration)
        gateway_after, postgres_after = cpu_ticks(server.pid), postgres_ticks(postmaster) if postgres else 0
    finally:
        server.terminate()
        server.wait(timeout=60)
    count = max(1, result["requests"])
    per_set = 1_000_000 / TICKS / count
    database = f", PostgreSQL {(postgres_after - postgres_before) * per_set:.1f} µs" if postgres else ""
    return (f"{'PostgreSQL' if postgres else 'SQLite'}, {scopes} scope(s): "
            f"{result['requestsPerSecond']:,.0f} sets/s, p99 {result['latencyMs']['p99']:.2f} ms; "
            f"CPU per change set: gateway {(gateway_after - gateway_before) * per_set:.1f} µs{database}; "
            f"statuses {result['statuses']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--scopes", default="1,32", help="scope counts, comma-separated")
    parser.add_argument("--duration", type=float, default=8.0)
    args = parser.parse_args()
    base = pathlib.Path(tempfile.mkdtemp(prefix="write-cpu-split-"))
    os.chmod(base, 0o755)  # initdb runs as the postgres user when we are root
    postgres = PostgresCluster(base / "pg").start() if args.store == "postgres" else None
    try:
        for scopes in (int(part) for part in args.scopes.split(",")):
            print(run(args.jetstream, postgres, scopes, args.duration, base), flush=True)
    finally:
        if postgres:
            postgres.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
