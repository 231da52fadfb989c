"""How fast a node notices that its database went silent, and how fast it serves again once the
link heals (docs/store.md, "When the database stops answering").

  Benchmarks/cluster/bench_database_cut_off.py [--jetstream .build/release/jetstream] [--rounds 3]
        [--writers 4] [--database-timeout 5]

Starts its own PostgreSQL cluster (Tests/gateway/postgres_cluster.py), the tests' fault proxy
(Tests/gateway/fault_proxy.py) in front of it, and one gateway node that reaches the database
through the proxy. Each round: W writer threads POST change sets back-to-back to one scope; the
proxy turns into a black hole (no error, no FIN, just no bytes); then the link heals. Measured,
from the moment of the cut: the first 503, the last answer to a write sent before the cut plus
its slowest answer (how long a write could wait), and `/readyz` turning 503. From the heal: `/readyz`
200 again and the first accepted write. `/readyz` is polled back-to-back (20 ms apart; each poll
waits for its answer, which takes up to 3 s while the store is being asked), so its times are late
by up to one poll.
Prints a Markdown table. Load, proxy, gateway and PostgreSQL share the machine's cores.
"""
from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time

import httpx

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))

from cluster_helpers import shape_set  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from gateway_server import GatewayServer  # noqa: E402
from postgres_cluster import PostgresCluster  # noqa: E402

PHASE_LIMIT = 60.0      # no phase of a round may take longer: the bench fails rather than hangs
CLIENT_TIMEOUT = 60.0


class Writers:
    """W threads POSTing to one scope back-to-back; every answer recorded as (sent, answered,
    status, thread), status None for a transport error."""

    def __init__(self, url: str, name: str, root: str, count: int):
        self.answers: list[tuple[float, float, int | None, int]] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(url, name, root, index), daemon=True)
                        for index in range(count)]

    def run(self, url: str, name: str, root: str, index: int) -> None:
        with httpx.Client(base_url=url, timeout=CLIENT_TIMEOUT) as http:
            while not self.stop.is_set():
                _, body = shape_set(root, "bench")
                sent = time.monotonic()
                try:
                    status = http.post(f"/v1/scopes/{name}/changesets", content=body,
                                       headers={"Content-Type": "application/json"}).status_code
                except httpx.TransportError:
                    status = None
                with self.lock:
                    self.answers.append((sent, time.monotonic(), status, index))
                if status != 200:
                    time.sleep(0.01)   # a refused write is retried soon, as a client would

    def start(self) -> "Writers":
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=CLIENT_TIMEOUT + 5)

    def snapshot(self) -> list[tuple[float, float, int | None, int]]:
        with self.lock:
            return list(self.answers)


def wait_for(predicate, what: str) -> float:
    deadline = time.monotonic() + PHASE_LIMIT
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {PHASE_LIMIT} s: {what}")
        time.sleep(0.02)
    return time.monotonic()


def ready(url: str) -> int:
    try:
        return httpx.get(f"{url}/readyz", timeout=CLIENT_TIMEOUT).status_code
    except httpx.TransportError:
        return 0


def one_round(node: GatewayServer, proxy: FaultProxy, name: str, root: str, writers: int) -> dict:
    load = Writers(node.url, name, root, writers).start()
    wait_for(lambda: sum(1 for a in load.snapshot() if a[2] == 200) >= 50, "writes accepted before the cut")
    cut = time.monotonic()
    proxy.black_hole()
    first_503 = wait_for(lambda: any(a[2] == 503 and a[1] >= cut for a in load.snapshot()), "a 503")
    not_ready = wait_for(lambda: ready(node.url) == 503, "/readyz 503")
    # Every write in flight at the cut has its answer (none hangs): each writer, sending one at a
    # time, has sent another since.
    wait_for(lambda: {a[3] for a in load.snapshot() if a[0] >= cut} == set(range(writers)),
             "the writes in flight at the cut")
    waits = [a[1] - a[0] for a in load.snapshot() if a[1] >= cut]
    healed = time.monotonic()
    proxy.heal()
    ready_again = wait_for(lambda: ready(node.url) == 200, "/readyz 200 after the heal")
    accepted = wait_for(lambda: any(a[2] == 200 and a[0] >= healed for a in load.snapshot()),
                        "a write accepted after the heal")
    load.finish()
    return {"first_503": first_503 - cut, "not_ready": not_ready - cut, "longest_wait": max(waits),
            "ready_again": ready_again - healed, "accepted_again": accepted - healed,
            "statuses": sorted({str(a[2]) for a in load.snapshot()})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", type=pathlib.Path, default=ROOT / ".build" / "release" / "jetstream")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--database-timeout", type=float, default=5.0)
    options = parser.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    with tempfile.TemporaryDirectory(prefix="jetstream-cut-off-bench-") as scratch:
        base = pathlib.Path(scratch)
        os.chmod(base, 0o755)  # PostgreSQL runs as its own user when we are root
        postgres = PostgresCluster(base / "pg").start()
        try:
            with FaultProxy(upstream=("127.0.0.1", postgres.port)).start() as proxy:
                url = f"postgresql://{postgres.user}@127.0.0.1:{proxy.port}/{postgres.create_database()}"
                node = GatewayServer(options.jetstream, base / "node", [
                    "--no-access-log", "--log-level", "warning", "--database-url", url,
                    "--database-timeout", str(options.database_timeout)], log_dir=base).start()
                try:
                    for index in range(options.rounds):
                        name = f"canvas-cut-{index}"
                        created = httpx.put(f"{node.url}/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}},
                                            timeout=CLIENT_TIMEOUT)
                        assert created.status_code == 201, created.text
                        rows.append(one_round(node, proxy, name, created.json()["rootUUID"], options.writers))
                finally:
                    node.stop()
        finally:
            postgres.stop()
    print(f"- {options.jetstream}, `--database-timeout {options.database_timeout:g}`, {options.writers} writers; "
          f"run {started:%Y-%m-%d %H:%M} UTC")
    print("| round | first 503 after the cut | `/readyz` 503 after the cut | longest answer to a write "
          "| `/readyz` 200 after the heal | first write accepted after the heal | statuses |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for index, row in enumerate(rows, 1):
        print(f"| {index} | {row['first_503']:.2f} s | {row['not_ready']:.2f} s | {row['longest_wait']:.2f} s "
              f"| {row['ready_again']:.2f} s | {row['accepted_again']:.2f} s | {', '.join(row['statuses'])} |")
    for key in ("first_503", "not_ready", "longest_wait", "ready_again", "accepted_again"):
        values = [row[key] for row in rows]
        print(f"- {key}: median {statistics.median(values):.2f} s, max {max(values):.2f} s")


if __name__ == "__main__":
    main()
