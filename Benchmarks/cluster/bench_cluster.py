#!/usr/bin/env python3
"""Several gateway nodes on one PostgreSQL, beside the embedded SQLite store: durable POST
throughput and latency with 1 and 3 nodes (many scopes; one hot scope), and delivery latency of
a change set POSTed on one node to a subscriber on another, at 100 change sets/s.

  Benchmarks/cluster/bench_cluster.py [--jetstream .build/release/jetstream] [--duration 10]
                                      [--connections 48] [--scopes 48] [--write-docs]

Starts its own PostgreSQL cluster (Tests/gateway/postgres_cluster.py: initdb in a temp dir,
fsync and synchronous_commit on, the defaults otherwise) and fresh gateways on free loopback
ports; every workload is `jetstream bench write` / `jetstream bench fanout`, bounded in time. With
N nodes the connections and scopes are split over the nodes (node i writes scopes of its own,
as nginx's `hash $scope` would route them), so the load offered is the same for 1 and 3 nodes;
the hot-scope rows have every node write the same scope. Load generator, gateways and PostgreSQL
share the machine's cores. Prints a Markdown table; --write-docs also replaces the section
between the cluster markers in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
sys.path.insert(0, str(ROOT / "Benchmarks" / "suite"))

from gateway_server import GatewayServer  # noqa: E402
from postgres_cluster import PostgresCluster  # noqa: E402
import suite  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- cluster:begin -->", "<!-- cluster:end -->"
BENCH_TIMEOUT = 180


def bench(binary: pathlib.Path, args: list[str]) -> dict:
    done = subprocess.run([str(binary), "bench", *args, "--json", "--timeout", str(BENCH_TIMEOUT - 10)],
                          capture_output=True, text=True, timeout=BENCH_TIMEOUT)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"bench {' '.join(args)} failed ({done.returncode}): {done.stderr[-800:]}")


def start_nodes(binary: pathlib.Path, base: pathlib.Path, count: int, database_url: str | None) -> list[GatewayServer]:
    nodes = []
    for index in range(count):
        args = ["--no-access-log", "--log-level", "warning"]
        if database_url:
            args += ["--database-url", database_url]
        node = GatewayServer(binary, base / f"node-{index}", args, log_dir=base)
        nodes.append(node.start())
    return nodes


def parallel_writes(binary: pathlib.Path, nodes: list[GatewayServer], connections: int, scopes: int,
                    duration: float, hot: bool) -> dict:
    """`bench write` against every node at once; returns the summed throughput and the worst p99."""
    results: list[dict] = [{} for _ in nodes]

    def run(index: int) -> None:
        prefix = "canvas-hot-" if hot else f"canvas-n{index}-"
        results[index] = bench(binary, [
            "write", "--url", nodes[index].url, "-c", str(max(1, connections // len(nodes))),
            "-d", str(duration), "--scopes", "1" if hot else str(max(1, scopes // len(nodes))),
            "--scope-prefix", prefix, "--threads", "1"])

    if hot:
        # Create the hot scope once, so that no node races another to create it.
        bench(binary, ["write", "--url", nodes[0].url, "-c", "1", "-d", "0.2", "--scopes", "1",
                       "--scope-prefix", "canvas-hot-", "--threads", "1"])
        time.sleep(0.5)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(nodes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses: dict[str, int] = {}
    for result in results:
        for status, count in result["statuses"].items():
            statuses[status] = statuses.get(status, 0) + count
    return {
        "requestsPerSecond": round(sum(r["requestsPerSecond"] for r in results), 1),
        "succeeded": sum(r["succeeded"] for r in results),
        "p50": round(max(r["latencyMs"]["p50"] for r in results), 2),
        "p99": round(max(r["latencyMs"]["p99"] for r in results), 2),
        "statuses": statuses,
    }


def fanout(binary: pathlib.Path, subscriber_node: GatewayServer, writer_node: GatewayServer, prefix: str) -> dict:
    args = ["fanout", "--url", subscriber_node.url, "-s", "10", "-c", "1000", "-r", "100",
            "--scope-prefix", prefix, "--threads", "1"]
    if writer_node is not subscriber_node:
        args += ["--write-url", writer_node.url]
    result = bench(binary, args)
    return {"p50": result["latencyMs"]["p50"], "p99": result["latencyMs"]["p99"],
            "missing": result.get("missing", 0), "clean": result.get("clean")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=48)
    parser.add_argument("--scopes", type=int, default=48)
    parser.add_argument("--write-docs", action="store_true")
    options = parser.parse_args()
    binary = pathlib.Path(options.jetstream)
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = suite.machine(load_before, {"swift": ["swift", "--version"], "postgres": ["psql", "--version"]})
    rows: list[tuple[str, str, dict]] = []
    d, c, k = options.duration, options.connections, options.scopes
    with tempfile.TemporaryDirectory(prefix="jetstream-cluster-bench-") as temp:
        base = pathlib.Path(temp)
        os.chmod(base, 0o755)  # PostgreSQL runs as its own user when we are root
        nodes = start_nodes(binary, base / "sqlite", 1, None)
        try:
            rows.append(("SQLite, 1 node", f"{k} scopes", parallel_writes(binary, nodes, c, k, d, hot=False)))
            rows.append(("SQLite, 1 node", "1 hot scope", parallel_writes(binary, nodes, c, k, d, hot=True)))
            rows.append(("SQLite, 1 node", "delivery (same node)", fanout(binary, nodes[0], nodes[0], "canvas-fan-")))
        finally:
            for node in nodes:
                node.stop()
        postgres = PostgresCluster(base / "pg").start()
        try:
            for count in (1, 3):
                url = postgres.url(postgres.create_database())
                nodes = start_nodes(binary, base / f"pg{count}", count, url)
                try:
                    label = f"PostgreSQL, {count} node{'s' if count > 1 else ''}"
                    rows.append((label, f"{k} scopes", parallel_writes(binary, nodes, c, k, d, hot=False)))
                    rows.append((label, "1 hot scope", parallel_writes(binary, nodes, c, k, d, hot=True)))
                    writer = nodes[-1]
                    rows.append((label, "delivery (POST on another node)" if count > 1 else "delivery (same node)",
                                 fanout(binary, nodes[0], writer, "canvas-fan-")))
                finally:
                    for node in nodes:
                        node.stop()
        finally:
            postgres.stop()
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    table = ["| store, nodes | workload | change sets/s | p50 ms | p99 ms | statuses / delivery |",
             "|---|---|---:|---:|---:|---|"]
    for label, workload, result in rows:
        if "requestsPerSecond" in result:
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(result["statuses"].items()))
            table.append(f"| {label} | {workload} | {result['requestsPerSecond']:,.0f} | {result['p50']} | "
                         f"{result['p99']} | {statuses} |")
        else:
            table.append(f"| {label} | {workload}, 100 sets/s | | {result['p50']} | {result['p99']} | "
                         f"missing {result['missing']}, {'clean' if result['clean'] else 'NOT clean'} |")
    text = (f"Command: `Benchmarks/cluster/bench_cluster.py --duration {d:g} --connections {c} --scopes {k}`\n\n"
            + suite.machine_text(machine, started, finished, load_after) + f"\n- {machine['postgres']}, fsync and synchronous_commit on"
            + "\n\n" + "\n".join(table) + "\n")
    print(text)
    if options.write_docs:
        docs = DOCS.read_text()
        section = f"{BEGIN}\n{text}{END}"
        if BEGIN in docs:
            head, rest = docs.split(BEGIN, 1)
            docs = head + section + rest.split(END, 1)[1]
        else:
            docs += f"\n## Several nodes on PostgreSQL\n\n{section}\n"
        DOCS.write_text(docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
