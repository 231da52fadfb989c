#!/usr/bin/env python3
"""One hot scope written through the shipped nginx cluster config (deploy/nginx/
jetstream-cluster.conf) in front of three gateway nodes on one PostgreSQL, against one node on
PostgreSQL written directly, in the same run.

  Benchmarks/cluster/bench_cluster_proxy.py [--jetstream .build/release/jetstream] [--duration 10]
        [--connections 32] [--nodes 3] [--nginx-workers 1] [--rounds 1] [--site-from REV]
        [--one-behind]

Starts its own PostgreSQL cluster (Tests/gateway/postgres_cluster.py: fsync and synchronous_commit
on), one database per configuration, fresh gateways on free loopback ports, and real nginx
(Tests/gateway/cluster_nginx.py: the shipped site file with only its `server` lines and listen
port substituted, main config deploy/nginx/nginx-test.conf.template). The load is `jetstream bench
write -c C --scopes 1` (C keep-alive connections POSTing change sets back-to-back to one scope).
After each proxied run it reads every node's /metrics: the change-set POSTs each node answered and
its version races retried (`jetstream_cluster_conflict_retries_total`). Change sets/s are the
acknowledged ones over the duration asked for (a run that ended early because its connections
were closed counts its whole window). `--site-from REV` adds the same proxied run with the site
file of git revision REV (e.g. the config before a change), `--one-behind` one node behind the
same nginx (the cost of the proxy hop alone), and `--rounds N` repeats the configurations in turn.
Prints a Markdown table. Load generator, nginx, gateways and PostgreSQL share the machine's cores.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
sys.path.insert(0, str(ROOT / "Benchmarks" / "suite"))

from cluster_nginx import ClusterNginx, conflict_retries, route_count  # noqa: E402
from gateway_server import GatewayServer  # noqa: E402
from postgres_cluster import PostgresCluster  # noqa: E402
import suite  # noqa: E402

BENCH_TIMEOUT = 300
CHANGESETS = "/v1/scopes/{name}/changesets"


def bench_write(binary: pathlib.Path, url: str, connections: int, duration: float) -> dict:
    command = [str(binary), "bench", "write", "--url", url, "-c", str(connections),
               "-d", str(duration), "--scopes", "1", "--scope-prefix", "canvas-hot-",
               "--threads", "1", "--json", "--timeout", str(BENCH_TIMEOUT - 10)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BENCH_TIMEOUT)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-800:]}")


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (0 once it is gone)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(parent: int) -> list[int]:
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


class CPU:
    """CPU seconds used during a run by the load generator (reaped children), nginx (its workers),
    each gateway and PostgreSQL (the postmaster's children, connections included)."""

    def __init__(self, postgres: PostgresCluster, nodes: list[GatewayServer], nginx=None):
        self.postgres, self.nodes, self.nginx = postgres, nodes, nginx

    def sample(self) -> dict[str, float]:
        postmaster = int((self.postgres.data / "postmaster.pid").read_text().split()[0])
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        sample = {"load generator": usage.ru_utime + usage.ru_stime,
                  "PostgreSQL": sum(cpu_seconds(p) for p in [postmaster, *children(postmaster)])}
        if self.nginx is not None:
            sample["nginx"] = sum(cpu_seconds(p) for p in children(self.nginx.process.pid))
        for index, node in enumerate(self.nodes):
            sample[f"node {index}"] = cpu_seconds(node.process.pid)
        return sample

    @staticmethod
    def used(before: dict[str, float], after: dict[str, float], seconds: float) -> str:
        return ", ".join(f"{name} {(after[name] - before[name]) / seconds:.2f}"
                         for name in after if after[name] - before[name] >= 0.05 * seconds)


def start_nodes(binary: pathlib.Path, base: pathlib.Path, count: int, url: str) -> list[GatewayServer]:
    return [GatewayServer(binary, base / f"node-{i}", ["--no-access-log", "--log-level", "warning",
                                                        "--database-url", url], log_dir=base).start()
            for i in range(count)]


def row(result: dict, duration: float, nodes: list[GatewayServer] | None = None,
        before: dict | None = None) -> dict:
    # Over the whole run asked for: a run whose connections were all closed early (nginx's
    # keepalive_requests; the load generator does not reconnect) ends early, and its own
    # requestsPerSecond counts only the time it ran.
    ran = max(result["durationSeconds"], duration)
    summary = {"rate": result["succeeded"] / ran, "ran": result["durationSeconds"],
               "p50": result["latencyMs"]["p50"],
               "p99": result["latencyMs"]["p99"], "statuses": result["statuses"],
               "errors": result.get("errorReasons") or result.get("errors"), "posts": "",
               "races": ""}
    if nodes:
        posts = [route_count(n.url, CHANGESETS) - before[n.url][0] for n in nodes]
        races = [conflict_retries(n.url) - before[n.url][1] for n in nodes]
        summary["posts"] = " / ".join(f"{p:,}" for p in posts)
        summary["races"] = " / ".join(str(r) for r in races)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--nginx-workers", default="1")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--site-from", help="also run the site file of this git revision")
    parser.add_argument("--one-behind", action="store_true",
                        help="also one node behind nginx: the cost of the proxy hop alone")
    options = parser.parse_args()
    binary = pathlib.Path(options.jetstream)
    sites: list[tuple[str, str | None]] = [("shipped", None)]
    if options.site_from:
        old = subprocess.run(["git", "-C", str(ROOT), "show",
                              f"{options.site_from}:deploy/nginx/jetstream-cluster.conf"],
                             capture_output=True, text=True, check=True).stdout
        sites.append((f"at {options.site_from}", old))
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = suite.machine(load_before, {"swift": ["swift", "--version"],
                                          "postgres": ["psql", "--version"],
                                          "nginx": ["nginx", "-v"]})
    c, d = options.connections, options.duration
    rows: list[tuple[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="jetstream-proxy-bench-") as temp:
        base = pathlib.Path(temp)
        os.chmod(base, 0o755)  # PostgreSQL runs as its own user when we are root
        postgres = PostgresCluster(base / "pg").start()
        try:
            for round_index in range(options.rounds):
                url = postgres.url(postgres.create_database())
                nodes = start_nodes(binary, base / f"single-{round_index}", 1, url)
                try:
                    cpu = CPU(postgres, nodes)
                    start = cpu.sample()
                    result = bench_write(binary, nodes[0].url, c, d)
                    rows.append(("1 node, direct", row(result, d)))
                    rows[-1][1]["cpu"] = CPU.used(start, cpu.sample(), result["durationSeconds"])
                finally:
                    nodes[0].stop()
                runs = [(label, text, options.nodes) for label, text in sites]
                if options.one_behind:
                    runs.insert(0, ("shipped", None, 1))
                for label, text, count in runs:
                    url = postgres.url(postgres.create_database())
                    nodes = start_nodes(binary, base / f"{label.replace(' ', '-')}-{count}-{round_index}",
                                        count, url)
                    nginx = ClusterNginx(base / f"nginx-{round_index}-{len(rows)}",
                                         [n.port for n in nodes], options.nginx_workers, text)
                    nginx.start()
                    try:
                        before = {n.url: (route_count(n.url, CHANGESETS), conflict_retries(n.url))
                                  for n in nodes}
                        cpu = CPU(postgres, nodes, nginx)
                        start = cpu.sample()
                        result = bench_write(binary, nginx.url, c, d)
                        used = CPU.used(start, cpu.sample(), result["durationSeconds"])
                        print(label, json.dumps(result), file=sys.stderr)
                        plural = "node" if count == 1 else "nodes"
                        rows.append((f"{count} {plural} behind nginx ({label} config)",
                                     row(result, d, nodes, before)))
                        rows[-1][1]["cpu"] = used
                    finally:
                        nginx.stop()
                        for node in nodes:
                            node.stop()
        finally:
            postgres.stop()
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    table = ["| setup | change sets/s | load ran s | p50 ms | p99 ms | statuses | POSTs per node | "
             "version races retried |", "|---|---:|---:|---:|---:|---|---|---|"]
    for label, r in rows:
        statuses = ", ".join(f"{s}: {n:,}" for s, n in sorted(r["statuses"].items()))
        errors = r["errors"]
        if errors:
            statuses += "; errors: " + (", ".join(f"{e}: {n}" for e, n in errors.items())
                                        if isinstance(errors, dict) else str(errors))
        table.append(f"| {label} | {r['rate']:,.0f} | {r['ran']:.1f} | {r['p50']:.2f} | {r['p99']:.2f} | "
                     f"{statuses} | {r['posts']} | {r['races']} |")
    command = (f"Benchmarks/cluster/bench_cluster_proxy.py --duration {d:g} --connections {c} "
               f"--nodes {options.nodes} --nginx-workers {options.nginx_workers} "
               f"--rounds {options.rounds}"
               + (f" --site-from {options.site_from}" if options.site_from else "")
               + (" --one-behind" if options.one_behind else ""))
    table += ["", "CPU cores used while the load ran (CPU seconds / seconds of load; below 5 % left out):", ""]
    table += [f"- {label}: {r['cpu']}" for label, r in rows]
    print(f"Command: `{command}`\n\n" + suite.machine_text(machine, started, finished, load_after)
          + f"\n- {machine['postgres']}, fsync and synchronous_commit on; {machine['nginx']}"
          + "\n\n" + "\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
