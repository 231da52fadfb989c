"""Several nodes on one PostgreSQL database (docs/store.md, "PostgreSQL implementation"): three
`jetstream serve --database-url` processes, each with its own data directory, behave as one
gateway. Writes on any node form one contiguous log per scope; every subscriber on every node
sees that log, byte for byte; any node resumes any Last-Event-ID and replays any Idempotency-Key;
creation and deletion reach every node."""
from __future__ import annotations

import json
import random

import pytest

from cluster_helpers import (Budget, Cluster, Subscriber, Writer, barrier, check_log,
                             check_refusals, check_stream, resume_matches, run_writers, settle,
                             start_subscribers, statuses, unexpected_tries, wait_until)
from sse_stream import SSEStream

pytestmark = pytest.mark.cluster

NODES = 3
SCOPES = 3
WRITERS = 8
WRITES = 300
WRITE_SECONDS = 300
SEED = 20240611


@pytest.fixture(scope="module")
def cluster(jetstream_bin, postgres, tmp_path_factory):
    nodes = Cluster(jetstream_bin, tmp_path_factory.mktemp("cluster"), postgres).start(NODES)
    yield nodes
    nodes.stop()


def test_writes_on_every_node_form_one_log_that_every_subscriber_sees(cluster):
    rng = random.Random(SEED)
    nodes = cluster.nodes
    created: dict[str, int] = {}
    roots: dict[str, str] = {}
    for i in range(SCOPES):
        name, state = cluster.create_canvas(nodes[i % NODES])
        created[name], roots[name] = state["version"], state["rootUUID"]

    # On every node and for every scope, one subscriber from the creation on, one from a snapshot.
    subscribers = [Subscriber(node.url, name, last_event_id=start)
                   for node in nodes for name in created for start in (created[name], None)]
    start_subscribers(subscribers)
    try:
        budget = Budget(WRITES, WRITE_SECONDS)
        writers = [Writer(cluster.live_urls, roots, budget, seed=rng.randrange(1 << 30))
                   for _ in range(WRITERS)]
        writes = run_writers(writers, timeout=WRITE_SECONDS + 120)
        assert not unexpected_tries(writes), unexpected_tries(writes)
        assert statuses(writes).get("transport", 0) == 0, statuses(writes)

        logs: dict[str, list[str]] = {}
        for name in created:
            last = barrier(cluster, nodes[0], name, roots[name])
            writes.append(last)
            logs[name] = settle(cluster, name, created[name], last.version)
            state = cluster.http(nodes[1]).get(f"/v1/scopes/{name}").json()
            check_log(logs[name], created[name], [w for w in writes if w.scope == name], state)
        check_refusals(writes, logs)

        for subscriber in subscribers:
            subscriber.wait_for(created[subscriber.scope] + len(logs[subscriber.scope]))
    finally:
        for subscriber in subscribers:
            subscriber.stop()
    for subscriber in subscribers:
        check_stream(subscriber, logs[subscriber.scope], created[subscriber.scope])

    # Any node resumes any id, with the same bytes, whoever took the writes.
    for name in created:
        final = created[name] + len(logs[name])
        for since in [created[name], *rng.sample(range(created[name] + 1, final), 3), final]:
            resume_matches(rng.choice(nodes).url, name, since, logs[name], created[name])

    # A keyed retry on another node replays the first answer and writes nothing.
    keyed = [w for w in writes if w.key and w.accepted]
    assert len(keyed) >= WRITES // 4, f"only {len(keyed)} keyed writes"
    for write in rng.sample(keyed, 12):
        first = write.accepted
        other = rng.choice([n for n in nodes if n.url.rstrip("/") != first.url.rstrip("/")])
        again = write.post(cluster.http(other))
        assert again.status == 200, f"replay on {other.url}: {again.status} {again.body[:300]}"
        assert again.replayed, f"no Idempotent-Replayed: true on {other.url}: {again}"
        assert json.loads(again.body) == json.loads(first.body)
    for name in created:
        assert settle(cluster, name, created[name], created[name] + len(logs[name])) == logs[name]


def test_a_scope_created_on_one_node_is_seen_and_deleted_on_every_node(cluster):
    a, b, c = cluster.nodes
    name, state = cluster.create_canvas(a)   # waits until B and C serve it
    assert cluster.http(b).get(f"/v1/scopes/{name}").json()["rootUUID"] == state["rootUUID"]
    # A write on B is served by C and A.
    write = barrier(cluster, b, name, state["rootUUID"])
    log = settle(cluster, name, state["version"], write.version)
    check_log(log, state["version"], [write], cluster.http(c).get(f"/v1/scopes/{name}").json())

    streams = [SSEStream(node.url, f"/v1/scopes/{name}/events") for node in (a, b, c)]
    try:
        for stream in streams:
            assert stream.status == 200
            event = stream.expect_event()
            assert (event.type, event.id) == ("snapshot", str(write.version))
        response = cluster.http(a).delete(f"/v1/scopes/{name}")
        assert response.status_code == 204, response.text
        for node, stream in zip((a, b, c), streams):
            rest = stream.read_to_end(timeout=90)
            assert [e.type for e in rest] == ["deleted"], (
                f"stream on {node.url}: {[(e.type, e.id) for e in rest]}{cluster.logs()}")
    finally:
        for stream in streams:
            stream.close()
    gone: dict[str, int] = {}

    def deleted_everywhere() -> bool:
        for node in (a, b, c):
            gone[node.url] = cluster.http(node).get(f"/v1/scopes/{name}").status_code
        return set(gone.values()) == {404}
    wait_until(deleted_everywhere, 90, lambda: f"GET after DELETE: {gone}")

    # Re-created on C: its versions continue after the deleted incarnation's on every node.
    _, again = cluster.create_canvas(c, name)
    assert again["version"] > write.version, again
    for node in (a, b):
        with SSEStream(node.url, f"/v1/scopes/{name}/events",
                       {"Last-Event-ID": str(write.version)}) as stream:
            event = stream.expect_event()
            assert (event.type, event.id) == ("reset", str(again["version"])), (
                f"{node.url}: {event}")


def test_a_version_race_between_two_nodes_resolves(cluster):
    """Two nodes take writes to one scope at once, as fast as they come: every write is placed
    (a 503 when a node loses the race on every retry is allowed but rare), once, in one
    contiguous log."""
    first, second = cluster.nodes[:2]
    name, state = cluster.create_canvas(first)
    roots = {name: state["rootUUID"]}
    subscribers = [Subscriber(node.url, name, last_event_id=state["version"])
                   for node in cluster.nodes]
    start_subscribers(subscribers)
    try:
        budget = Budget(240, WRITE_SECONDS)
        writers = [Writer(lambda url=node.url: [url], roots, budget, seed=SEED + i,
                          key_ratio=0.0, retry=False)
                   for i, node in enumerate([first, second] * 3)]
        writes = run_writers(writers, timeout=WRITE_SECONDS + 120)
        assert not unexpected_tries(writes), unexpected_tries(writes)
        assert statuses(writes).get("transport", 0) == 0, statuses(writes)
        last = barrier(cluster, first, name, state["rootUUID"])
        writes.append(last)
        log = settle(cluster, name, state["version"], last.version)
        check_log(log, state["version"], writes, cluster.http(second).get(f"/v1/scopes/{name}").json())
        check_refusals(writes, {name: log})
        for subscriber in subscribers:
            subscriber.wait_for(last.version)
    finally:
        for subscriber in subscribers:
            subscriber.stop()
    for subscriber in subscribers:
        check_stream(subscriber, log, state["version"])


def metric(text: str, name: str, labels: str = "") -> float:
    """The value of one Prometheus sample (`name{labels} value`), 0 when absent."""
    prefix = f"{name}{{{labels}}} " if labels else f"{name} "
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.split()[-1])
    return 0.0


def test_each_node_reports_its_database_connections_and_what_it_caught_up(cluster):
    nodes = cluster.nodes
    name, state = cluster.create_canvas(nodes[0])
    root = state["rootUUID"]
    before = cluster.http(nodes[1]).get("/metrics").text
    for index in range(5):
        answer = cluster.http(nodes[0]).post(
            f"/v1/scopes/{name}/changesets",
            json={"fragments": [{"type": "change", "uuid": root, "clsName": "Canvas",
                                 "properties": {"name": f"metrics {index}"}}]})
        assert answer.status_code == 200, answer.text
    wait_until(lambda: cluster.http(nodes[1]).get(f"/v1/scopes/{name}").json()["version"] == state["version"] + 5,
               20, lambda: "node 1 did not catch up")
    text = cluster.http(nodes[1]).get("/metrics").text
    assert metric(text, "jetstream_store_connections", 'role="listener"') == 1
    assert metric(text, "jetstream_store_connections", 'role="writer"') >= 1
    assert metric(text, "jetstream_cluster_notifications_total") > metric(before, "jetstream_cluster_notifications_total")
    assert metric(text, "jetstream_cluster_catchup_total") > metric(before, "jetstream_cluster_catchup_total")
    assert "jetstream_cluster_catchup_lag_seconds_bucket" in text
    writer = cluster.http(nodes[0]).get("/metrics").text
    assert metric(writer, "jetstream_store_batch_operations_total") >= 5
