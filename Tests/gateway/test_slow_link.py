"""Three nodes, each reaching PostgreSQL through a slow link that also drops connections: the tests'
fault proxy (`fault_proxy.FaultProxy`) between every node and the database adds 100 ms ± 50 ms to
every chunk in each direction (about 200 ms more per round trip), and resets connections at random
(a connection it accepts is, with probability DROP_PROBABILITY, reset within DROP_WITHIN seconds;
the node's reconnection draws again; at most DROP_AT_MOST drops per link, so the damage is
bounded). Writers post to all three nodes, subscribers on every node resume on the others when a
stream ends.

A slow link raises latency but loses nothing: the nodes keep accepting writes during the faults,
and after the heal every write answered 200 is in the log once and whole, versions are contiguous,
nothing unacknowledged is half there, and every subscriber converges to the log. A dropped writer
connection can lose the answer to a batch already committed; such writes are answered 503, keyed
ones are sent again with their key (`settle_retries`), unkeyed ones are in the log whole or not at
all. A dropped listener connection makes its node refuse writes (503) and end its streams until it
has listened again."""
from __future__ import annotations

import collections
import json
import statistics
import threading
import time

import pytest

from cluster_helpers import (Budget, Cluster, Writer, acknowledged_count, join_writers,
                             settle_retries, statuses, unexpected_tries, wait_until)
from fault_proxy import FaultProxy
from gateway_server import GatewayServer
from test_cluster_faults import canvases, converge, subscribe_everywhere

pytestmark = pytest.mark.cluster

NODES = 3
WRITERS = 6
SCOPES = 2
LATENCY, JITTER = 0.100, 0.050       # seconds, each direction
DROP_PROBABILITY = 0.4
DROP_WITHIN = 8.0                    # seconds after a connection is accepted
DROP_AT_MOST = 6                     # per proxy
# Each proxy's drop seed makes the first connection it accepts a victim (random.Random(seed)
# draws 0.238, 0.236, 0.324 first), so every node loses a connection within DROP_WITHIN.
DROP_SEEDS = (3, 4, 7)
ACKNOWLEDGED = 100                   # writes accepted during the faults before the load stops
LOAD_SECONDS = 45.0
SEED = 31


@pytest.fixture
def slow_cluster(jetstream_bin, postgres, tmp_path):
    """(cluster, proxies): node i reaches the cluster's database through proxies[i]."""
    cluster = Cluster(jetstream_bin, tmp_path, postgres)
    proxies: list[FaultProxy] = []
    try:
        for index in range(NODES):
            proxy = FaultProxy(upstream=("127.0.0.1", postgres.port)).start()
            proxies.append(proxy)
            url = f"postgresql://{postgres.user}@127.0.0.1:{proxy.port}/{cluster.dbname}"
            cluster.nodes.append(GatewayServer(jetstream_bin, tmp_path / f"node-{index}",
                                               ["--database-url", url], log_dir=tmp_path))
        start_all(cluster.nodes)
        yield cluster, proxies
    finally:
        cluster.stop()
        for proxy in proxies:
            proxy.close()


def start_all(nodes: list[GatewayServer]) -> None:
    errors: list[BaseException] = []

    def start(node: GatewayServer) -> None:
        try:
            node.start()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
    threads = [threading.Thread(target=start, args=(node,), daemon=True) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert not any(t.is_alive() for t in threads), "a node did not start within 180s"
    assert not errors, errors


def refusal(attempt) -> str:
    """What a try that got no 200 was told: the problem's detail, or the transport error."""
    if attempt.status is None:
        return f"transport {attempt.error[:60]}"
    try:
        return f"{attempt.status} {json.loads(attempt.body).get('detail', '')[:70]}"
    except ValueError:
        return f"{attempt.status} {attempt.body[:70]}"


def test_a_slow_lossy_link_raises_latency_but_loses_nothing(slow_cluster):
    cluster, proxies = slow_cluster
    created, roots = canvases(cluster, SCOPES)
    subscribers = subscribe_everywhere(cluster, created)
    try:
        for index, proxy in enumerate(proxies):
            proxy.set_latency(LATENCY, jitter=JITTER, seed=SEED + index)
            proxy.drop_randomly(DROP_PROBABILITY, seed=DROP_SEEDS[index], within=DROP_WITHIN,
                               at_most=DROP_AT_MOST)
        # The nodes' connections were accepted before the drops were chosen; reset them once, so
        # that every connection of the load is made over the lossy link and may be dropped.
        for proxy in proxies:
            proxy.reset_all()
        before = [proxy.stats for proxy in proxies]
        faulty = time.monotonic()

        budget = Budget(count=5000, seconds=LOAD_SECONDS)
        writers = [Writer(cluster.live_urls, roots, budget, seed=SEED + i) for i in range(WRITERS)]
        for writer in writers:
            writer.start()

        def dropped() -> list[int]:
            return [proxy.stats.dropped - base.dropped for proxy, base in zip(proxies, before)]

        def enough() -> bool:
            return (min(dropped()) >= 1 and acknowledged_count(writers, faulty) >= ACKNOWLEDGED
                    or budget.left == 0 or time.monotonic() > budget.deadline)

        wait_until(enough, LOAD_SECONDS + 30,
                   lambda: f"drops per proxy {dropped()}, {acknowledged_count(writers, faulty)} "
                           f"writes acknowledged{cluster.logs()}")
        budget.stop.set()
        writes = join_writers(writers, timeout=60)
        drops = dropped()
        carried = [(proxy.stats.bytes_up - base.bytes_up, proxy.stats.bytes_down - base.bytes_down)
                   for proxy, base in zip(proxies, before)]
        for proxy in proxies:
            proxy.heal()
        cluster.wait_ready(200)
    except BaseException:
        for subscriber in subscribers:
            subscriber.stop()
        raise

    counts = statuses(writes)
    accepted = [t for w in writes for t in w.tries if t.status == 200]
    waits = sorted(t.answered - t.sent for t in accepted)
    refusals = collections.Counter(refusal(t) for w in writes for t in w.tries if t.status != 200)
    print(f"\nslow link: {counts}; drops per proxy {drops}; 200 answers: median "
          f"{statistics.median(waits) * 1000:.0f} ms, max {waits[-1] * 1000:.0f} ms; "
          f"refusals {dict(refusals)}" if waits else "")
    assert not unexpected_tries(writes), unexpected_tries(writes)
    # Not vacuous: every node's database traffic went through its proxy, every proxy dropped
    # connections under the load, and every node kept accepting writes meanwhile.
    assert all(up > 0 and down > 0 for up, down in carried), carried
    assert min(drops) >= 1, f"connections dropped per proxy: {drops}"
    assert acknowledged_count(writers, faulty) >= ACKNOWLEDGED, counts
    by_node = {node.url: sum(1 for t in accepted if t.url.rstrip("/") == node.url)
               for node in cluster.nodes}
    assert all(by_node.values()), f"writes accepted per node during the faults: {by_node}"

    # A keyed write refused or cut off with its connection is sent again with its key.
    settle_retries(cluster, writes)
    converge(cluster, created, roots, writes, subscribers)
