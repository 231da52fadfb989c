"""Faults in a cluster of nodes on one PostgreSQL database: a node killed under load, a node's
LISTEN connection terminated, PostgreSQL itself restarted in immediate mode under load. After
each, nothing acknowledged is missing, nothing unacknowledged is half there, versions stay
contiguous and every subscriber converges to the log (resuming with Last-Event-ID where its
stream ended)."""
from __future__ import annotations

import random
import time

import pytest

from cluster_helpers import (Budget, Cluster, Subscriber, Writer, acknowledged_count, barrier,
                             check_log, check_stream, join_writers, resume_matches, settle,
                             settle_retries, start_subscribers, statuses, unexpected_tries,
                             wait_until)

pytestmark = pytest.mark.cluster

NODES = 3
WRITERS = 6
LOAD_SECONDS = 240
SEED = 7


@pytest.fixture
def cluster(jetstream_bin, postgres, tmp_path):
    nodes = Cluster(jetstream_bin, tmp_path, postgres).start(NODES)
    yield nodes
    nodes.stop()


def canvases(cluster: Cluster, count: int) -> tuple[dict[str, int], dict[str, str]]:
    """`count` canvas scopes created on the first node: (name → creation version, name → root)."""
    created, roots = {}, {}
    for _ in range(count):
        name, state = cluster.create_canvas(cluster.nodes[0])
        created[name], roots[name] = state["version"], state["rootUUID"]
    return created, roots


def subscribe_everywhere(cluster: Cluster, created: dict[str, int]) -> list[Subscriber]:
    """On every node, for every scope, a subscriber from the creation on that resumes on a live
    node when its stream ends."""
    subscribers = [Subscriber(node.url, name, last_event_id=version, resume=cluster.live_urls)
                   for node in cluster.nodes for name, version in created.items()]
    start_subscribers(subscribers)
    return subscribers


def converge(cluster: Cluster, created: dict[str, int], roots: dict[str, str], writes,
             subscribers: list[Subscriber]) -> dict[str, list[str]]:
    """A last write per scope, the same log on every live node, the log's invariants, and every
    subscriber at its end with exactly the log's change sets."""
    logs = {}
    for name in created:
        last = barrier(cluster, cluster.live()[0], name, roots[name])
        writes.append(last)
        logs[name] = settle(cluster, name, created[name], last.version)
        state = cluster.http(cluster.live()[-1]).get(f"/v1/scopes/{name}").json()
        check_log(logs[name], created[name], [w for w in writes if w.scope == name], state)
    try:
        for subscriber in subscribers:
            subscriber.wait_for(created[subscriber.scope] + len(logs[subscriber.scope]))
    finally:
        for subscriber in subscribers:
            subscriber.stop()
    for subscriber in subscribers:
        check_stream(subscriber, logs[subscriber.scope], created[subscriber.scope],
                     allow_problems=True)
    return logs


def test_a_node_killed_under_load_loses_nothing_acknowledged(cluster):
    victim = cluster.nodes[1]
    created, roots = canvases(cluster, 2)
    subscribers = subscribe_everywhere(cluster, created)
    try:
        budget = Budget(240, LOAD_SECONDS)
        writers = [Writer(cluster.live_urls, roots, budget, seed=SEED + i) for i in range(WRITERS)]
        for writer in writers:
            writer.start()
        wait_until(lambda: acknowledged_count(writers) >= 60 or budget.left == 0, 120,
                   lambda: f"{acknowledged_count(writers)} writes acknowledged{cluster.logs()}")
        victim.kill()   # SIGKILL while the writers post to it and to the others
        writes = join_writers(writers, timeout=LOAD_SECONDS + 120)
    except BaseException:
        for subscriber in subscribers:
            subscriber.stop()
        raise
    assert not unexpected_tries(writes), unexpected_tries(writes)
    assert any(t.url.rstrip("/") == victim.url for w in writes for t in w.tries), statuses(writes)
    # A keyed write that lost its answer with the node was retried on another one.
    settle_retries(cluster, writes)
    logs = converge(cluster, created, roots, writes, subscribers)
    for subscriber in subscribers:
        if subscriber.url == victim.url:
            assert len(subscriber.connections) >= 2, subscriber.describe()

    # The killed node, started again, serves the same log and resumes any id.
    victim.start()
    for name, version in created.items():
        final = version + len(logs[name])
        assert settle(cluster, name, version, final) == logs[name]
        resume_matches(victim.url, name, version, logs[name], version)


def test_a_node_whose_listen_connection_is_terminated_still_delivers(cluster):
    x, y, z = cluster.nodes
    name, state = cluster.create_canvas(y)
    created, roots = {name: state["version"]}, {name: state["rootUUID"]}
    # Without resume: the stream on X must stay open and get everything.
    subscriber = Subscriber(x.url, name, last_event_id=state["version"])
    start_subscribers([subscriber])
    writes = []
    try:
        for _ in range(2):
            writes.append(barrier(cluster, y, name, state["rootUUID"]))
            subscriber.wait_for(writes[-1].version)
            terminated = set(cluster.terminate_listener(x))
            for node in (y, z, y):
                writes.append(barrier(cluster, node, name, state["rootUUID"]))
            subscriber.wait_for(writes[-1].version)
            # X listens again on a new connection (so the second round can terminate it again).
            wait_until(lambda: cluster.listener_pids(x) - terminated, 90,
                       lambda: f"no new LISTEN connection of {x.url}: "
                               f"{cluster.node_backends(x)}{cluster.logs()}")
        cluster.wait_ready(200)
    except BaseException:
        subscriber.stop()
        raise
    converge(cluster, created, roots, writes, [subscriber])
    assert subscriber.connections == [x.url] and not subscriber.problems, subscriber.describe()


def test_an_immediate_postgres_restart_under_load(cluster, postgres):
    created, roots = canvases(cluster, 2)
    subscribers = subscribe_everywhere(cluster, created)
    outage: dict[str, float] = {}
    try:
        # Paced (at most ~20 writes a second per writer), so that the count bound outlasts the
        # outage whatever the machine's speed; LOAD_SECONDS bounds the time.
        budget = Budget(6000, LOAD_SECONDS)
        writers = [Writer(cluster.live_urls, roots, budget, seed=SEED + i, retry=False,
                          pause_after_failure=0.1, interval=0.05) for i in range(WRITERS)]
        for writer in writers:
            writer.start()
        wait_until(lambda: acknowledged_count(writers) >= 40 or budget.left == 0, 120,
                   lambda: f"{acknowledged_count(writers)} writes acknowledged{cluster.logs()}")

        def refused_on_every_node() -> bool:
            refused = {t.url.rstrip("/") for w in writers for write in list(w.writes)
                       for t in list(write.tries) if t.sent >= outage["down"] and t.status == 503}
            return refused >= set(cluster.live_urls())

        def while_down() -> None:
            outage["down"] = time.monotonic()
            cluster.wait_ready(503, timeout=90)
            wait_until(refused_on_every_node, 90,
                       lambda: f"no 503 from every node while PostgreSQL is down: "
                               f"{statuses([w for x in writers for w in x.writes])}")
            outage["up"] = time.monotonic()

        postgres.restart("immediate", while_down=while_down)
        restarted = time.monotonic()
        cluster.wait_ready(200, timeout=120)
        wait_until(lambda: acknowledged_count(writers, after=restarted) >= 40 or budget.left == 0,
                   120, lambda: f"{acknowledged_count(writers, restarted)} writes acknowledged "
                                f"after the restart{cluster.logs()}")
        budget.stop.set()
        writes = join_writers(writers, timeout=120)
    except BaseException:
        for subscriber in subscribers:
            subscriber.stop()
        raise
    counts = statuses(writes)
    assert not unexpected_tries(writes), unexpected_tries(writes)
    assert counts.get("transport", 0) == 0, f"a node stopped answering: {counts}{cluster.logs()}"
    assert acknowledged_count(writers, after=restarted) >= 40, counts
    # Sent after PostgreSQL was down and answered before it was started again: never a 200.
    during = [t for w in writes for t in w.tries
              if t.sent >= outage["down"] and t.answered <= outage["up"]]
    assert during and all(t.status == 503 for t in during), (
        f"answers during the outage: {sorted({t.status for t in during})}")
    # A keyed write refused or cut off is safe to retry with its key: now it is placed, once.
    settle_retries(cluster, writes)
    converge(cluster, created, roots, writes, subscribers)
    rng = random.Random(SEED)
    for name, version in created.items():
        log = settle(cluster, name, version, cluster.http(cluster.nodes[0])
                     .get(f"/v1/scopes/{name}").json()["version"])
        since = rng.randrange(version, version + len(log))
        resume_matches(rng.choice(cluster.nodes).url, name, since, log, version)
