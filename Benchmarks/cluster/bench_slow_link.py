#!/usr/bin/env python3
"""Three gateway nodes whose link to PostgreSQL is 20 ms long, against the same three nodes on
plain loopback: durable POST throughput and latency, and delivery of a change set POSTed on one
node to a subscriber on another.

  Benchmarks/cluster/bench_slow_link.py [--jetstream .build/release/jetstream] [--duration 10]
        [--rounds 1] [--latency 0.020] [--connections 48] [--scopes 48] [--write-docs]

Starts its own PostgreSQL cluster (Tests/gateway/postgres_cluster.py: fsync and synchronous_commit
on) and, for every configuration, a fresh database and three fresh nodes on free loopback ports.
The configurations, in turn, `--rounds` times:

- loopback: each node connects to PostgreSQL directly;
- proxy, 0 ms: each node reaches PostgreSQL through its own fault proxy
  (Tests/gateway/fault_proxy.py, run in a process of its own per node) that adds nothing: the
  proxy's own cost, a user-space hop in Python;
- proxy, 20 ms: the same proxies holding every chunk `--latency` seconds in each direction
  (`FaultProxy.set_latency`), so a round trip to PostgreSQL is 2 × latency longer.

The workloads are those of bench_cluster.py (imported from it): `jetstream bench write` with the
connections and scopes split over the nodes (node i writes scopes of its own, as nginx's
`hash $scope` would route them), and `jetstream bench fanout` with 10 subscribers on the first node
and the change sets POSTed on the last one, 100 sets/s for --duration seconds (16 writer
connections, so that a slow link does not hold the rate below 100/s). Load generator, proxies,
gateways and PostgreSQL share the machine's cores. Prints a Markdown table; --write-docs also
replaces the section between the slow-link markers in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
sys.path.insert(0, str(ROOT / "Benchmarks" / "suite"))
sys.path.insert(0, str(ROOT / "Benchmarks" / "cluster"))

from bench_cluster import bench, parallel_writes  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from gateway_server import GatewayServer  # noqa: E402
from postgres_cluster import PostgresCluster  # noqa: E402
import suite  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- slow-link:begin -->", "<!-- slow-link:end -->"
NODES = 3
FANOUT_RATE = 100
PROXY_TIMEOUT = 30.0


def serve_proxy(upstream: int, latency: float, pipe) -> None:
    """A child process: one FaultProxy in front of PostgreSQL with `latency` each way; sends its
    port, then its stats when the parent says stop."""
    with FaultProxy(upstream=("127.0.0.1", upstream)).start() as proxy:
        if latency:
            proxy.set_latency(latency)
        pipe.send(proxy.port)
        pipe.recv()
        pipe.send(proxy.stats)


class ProxyProcess:
    """A fault proxy in a process of its own: the three proxies (and this script) do not share
    one interpreter lock, as three links would not share one machine's."""

    def __init__(self, upstream: int, latency: float):
        self.pipe, child = multiprocessing.Pipe()
        self.process = multiprocessing.get_context("spawn").Process(
            target=serve_proxy, args=(upstream, latency, child), daemon=True)
        self.process.start()
        if not self.pipe.poll(PROXY_TIMEOUT):
            self.process.kill()
            raise SystemExit("a fault proxy did not start")
        self.port = self.pipe.recv()

    def stop(self):
        """Stops the proxy; returns its stats (None if it did not answer)."""
        stats = None
        try:
            self.pipe.send("stop")
            if self.pipe.poll(PROXY_TIMEOUT):
                stats = self.pipe.recv()
        except (OSError, EOFError):
            pass
        self.process.join(PROXY_TIMEOUT)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        return stats


def start_nodes(binary: pathlib.Path, base: pathlib.Path, urls: list[str]) -> list[GatewayServer]:
    nodes: list[GatewayServer] = []
    try:
        for index, url in enumerate(urls):
            node = GatewayServer(binary, base / f"node-{index}", [
                "--no-access-log", "--log-level", "warning", "--database-url", url], log_dir=base)
            nodes.append(node.start())
    except BaseException:
        stop_nodes(nodes)
        raise
    return nodes


def stop_nodes(nodes: list[GatewayServer]) -> None:
    for node in nodes:
        try:
            node.stop()
        except AssertionError:
            node.kill()


def delivery(binary: pathlib.Path, subscriber: GatewayServer, writer: GatewayServer, duration: float) -> dict:
    result = bench(binary, ["fanout", "--url", subscriber.url, "--write-url", writer.url, "-s", "10",
                            "-c", str(max(1, round(FANOUT_RATE * duration))), "-r", str(FANOUT_RATE),
                            "-w", "16", "--scope-prefix", "canvas-fan-", "--threads", "1"])
    return {"p50": result["latencyMs"]["p50"], "p99": result["latencyMs"]["p99"],
            "missing": result.get("missing", 0), "clean": result.get("clean")}


def one_configuration(binary: pathlib.Path, base: pathlib.Path, postgres: PostgresCluster,
                      latency: float | None, options: argparse.Namespace) -> dict:
    """Three nodes on a fresh database, through proxies with `latency` (None: no proxy)."""
    dbname = postgres.create_database()
    proxies = [ProxyProcess(postgres.port, latency) for _ in range(NODES)] if latency is not None else []
    try:
        urls = ([f"postgresql://{postgres.user}@127.0.0.1:{p.port}/{dbname}" for p in proxies]
                or [postgres.url(dbname)] * NODES)
        nodes = start_nodes(binary, base, urls)
        try:
            writes = parallel_writes(binary, nodes, options.connections, options.scopes, options.duration,
                                     hot=False)
            delivered = delivery(binary, nodes[0], nodes[-1], options.duration)
        finally:
            stop_nodes(nodes)
    finally:
        stats = [proxy.stop() for proxy in proxies]
    resets = sum(s.resets for s in stats if s is not None)
    return {"writes": writes, "delivery": delivered, "proxy_resets": resets}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.020, help="seconds added each way (default 0.020)")
    parser.add_argument("--connections", type=int, default=48)
    parser.add_argument("--scopes", type=int, default=48)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--docs", type=pathlib.Path, default=DOCS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    binary = pathlib.Path(options.jetstream)
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = suite.machine(load_before, {"swift": ["swift", "--version"], "postgres": ["psql", "--version"]})
    milliseconds = f"{options.latency * 1000:g} ms"
    configurations = [("loopback", None), ("proxy, 0 ms", 0.0), (f"proxy, {milliseconds}", options.latency)]
    rows: list[tuple[str, int, dict]] = []
    with tempfile.TemporaryDirectory(prefix="jetstream-slow-link-bench-") as temp:
        base = pathlib.Path(temp)
        os.chmod(base, 0o755)  # PostgreSQL runs as its own user when we are root
        postgres = PostgresCluster(base / "pg").start()
        try:
            for round_ in range(1, options.rounds + 1):
                for index, (label, latency) in enumerate(configurations):
                    result = one_configuration(binary, base / f"r{round_}-{index}", postgres, latency, options)
                    rows.append((label, round_, result))
                    print(f"round {round_}, {label}: {result}", file=sys.stderr)
        finally:
            postgres.stop()
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    table = ["| link to PostgreSQL | round | change sets/s | p50 ms | p99 ms | statuses "
             "| delivery p50 ms | delivery p99 ms | delivery |",
             "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for label, round_, result in rows:
        writes, delivered = result["writes"], result["delivery"]
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(writes["statuses"].items()))
        table.append(f"| {label} | {round_} | {writes['requestsPerSecond']:,.0f} | {writes['p50']} | {writes['p99']} "
                     f"| {statuses} | {delivered['p50']} | {delivered['p99']} "
                     f"| missing {delivered['missing']}, {'clean' if delivered['clean'] else 'NOT clean'} |")
    command = (f"Benchmarks/cluster/bench_slow_link.py --jetstream {binary} --duration {options.duration:g} "
               f"--rounds {options.rounds} --latency {options.latency:g} --connections {options.connections} "
               f"--scopes {options.scopes}")
    text = (f"Command: `{command}`\n\n"
            + suite.machine_text(machine, started, finished, load_after)
            + f"\n- {machine['postgres']}, fsync and synchronous_commit on"
            + f"\n- {NODES} nodes; writes: {options.connections} connections on {options.scopes} scopes split over "
              f"the nodes, {options.duration:g} s; delivery: 10 subscribers on the first node, change sets "
              f"POSTed on the last, {FANOUT_RATE}/s for {options.duration:g} s"
            + "\n\n" + "\n".join(table) + "\n")
    print(text)
    if options.write_docs:
        docs = options.docs.read_text()
        section = f"{BEGIN}\n{text}{END}"
        if BEGIN in docs and END in docs:
            head, rest = docs.split(BEGIN, 1)
            docs = head + section + rest.split(END, 1)[1]
        else:
            docs += f"\n## Three nodes 20 ms from PostgreSQL\n\n{section}\n"
        options.docs.write_text(docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
