"""Three gateway nodes on one PostgreSQL database behind real nginx running the shipped
deploy/nginx/jetstream-cluster.conf (only its `server` lines and listen port substituted): every
request of a scope reaches one node, so a hot scope's writers never race another node for a
version; when that node dies its scopes move to the next node on the ring, and a client that
retries its unanswered writes with their Idempotency-Key finds each of them in the log once.

Which node served a request is read from the nodes themselves: each node's /metrics
(`jetstream_http_requests_total` on every route but /metrics, `jetstream_sse_streams_open`)."""
from __future__ import annotations

import json
import random
import time

import httpx
import pytest

from cluster_helpers import (Budget, Cluster, Writer, acknowledged_count, check_log, join_writers,
                             retry_after_seconds, settle, statuses, wait_until)
from cluster_nginx import ClusterNginx, conflict_retries, node_counters, route_count
from gateway_helpers import scope_name
from sse_stream import SSEStream

pytestmark = pytest.mark.cluster

NODES = 3
HOT_WRITERS = 32
HOT_WRITES_EACH = 100
FAILOVER_WRITERS = 16
FAILOVER_WRITES = 1200
KILL_AFTER = 300            # acknowledged writes before the owner is killed
WRITE_SECONDS = 240
RETRY_SECONDS = 120         # how long a client keeps retrying one unanswered write
SEED = 20261128
CHANGESETS = "/v1/scopes/{name}/changesets"


@pytest.fixture(scope="module")
def proxied(jetstream_bin, postgres, tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster-proxy")
    cluster = Cluster(jetstream_bin, base, postgres,
                      ("--heartbeat-interval", "1", "--drain-delay", "0")).start(NODES)
    nginx = ClusterNginx(base / "nginx", [node.port for node in cluster.nodes]).start()
    client = httpx.Client(base_url=nginx.url, timeout=60.0)
    yield cluster, nginx, client
    client.close()
    nginx.stop()
    cluster.stop()


def create_through(client: httpx.Client, cluster: Cluster) -> tuple[str, dict]:
    name = scope_name("canvas-proxied")
    response = client.put(f"/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}})
    assert response.status_code == 201, response.text
    cluster.wait_visible(name)
    return name, response.json()


def served_by(cluster: Cluster, send, describe: str) -> int:
    """Runs `send()` (one request through nginx; it may return an open SSEStream, closed here)
    and returns the index of the one node that served it: the node whose request count or open
    streams rose. Fails when another node's rose too."""
    urls = [node.url for node in cluster.live()]
    before = {url: node_counters(url) for url in urls}
    opened = send()
    seen: dict[str, tuple[int, int]] = {}

    def moved():
        changed = []
        for url in urls:
            seen[url] = node_counters(url)
            requests, streams = seen[url]
            if requests > before[url][0] or streams > before[url][1]:
                changed.append(url)
        return changed
    try:
        changed = wait_until(moved, 30, lambda: f"{describe}: no node counted it: {before} {seen}")
    finally:
        if opened is not None:
            opened.close()
    assert len(changed) == 1, f"{describe} counted on {changed}: before {before}, after {seen}"
    [url] = changed
    if opened is not None:
        # The stream's request is counted when the node sees it closed (its heartbeat, 1 s):
        # wait for that, so that it does not show up as the next request.
        wait_until(lambda: node_counters(url) == (before[url][0] + 1, before[url][1]), 30,
                   lambda: f"{describe}: the stream did not end on {url}: {node_counters(url)}")
    return [node.url for node in cluster.nodes].index(url)


def stream(nginx, path: str) -> SSEStream:
    opened = SSEStream(nginx.url, path, timeout=30)
    return opened


def test_every_request_of_a_scope_reaches_one_node_and_scopes_spread(proxied):
    """For each of 12 scopes: create, write, PATCH an object, read state, object and history,
    follow the events, the (future) methods path and the multi-scope stream named by its first
    `scope` argument all land on one node; the scopes land on more than one node."""
    cluster, nginx, client = proxied
    scopes = [create_through(client, cluster) for _ in range(12)]
    owners: dict[str, int] = {}
    for name, state in scopes:
        root = state["rootUUID"]
        requests = {
            "POST changesets": lambda: client.post(f"/v1/scopes/{name}/changesets", json={
                "fragments": [{"type": "change", "uuid": root, "clsName": "Canvas",
                               "properties": {"name": "routed"}}]}),
            "PATCH object": lambda: client.patch(
                f"/v1/scopes/{name}/objects/{root}", content=json.dumps({"name": "patched"}),
                headers={"Content-Type": "application/merge-patch+json"}),
            "GET state": lambda: client.get(f"/v1/scopes/{name}"),
            "GET object": lambda: client.get(f"/v1/scopes/{name}/objects/{root}"),
            "GET history": lambda: client.get(f"/v1/scopes/{name}/changesets",
                                              params={"since": 0}),
            "POST methods": lambda: client.post(f"/v1/scopes/{name}/methods/none", json={}),
            "GET events": lambda: stream(nginx, f"/v1/scopes/{name}/events"),
        }
        homes = {}
        for what, send in requests.items():
            def checked(send=send, what=what):
                result = send()
                if isinstance(result, httpx.Response) and what in ("POST changesets",
                                                                   "PATCH object", "GET state",
                                                                   "GET object", "GET history"):
                    assert result.status_code == 200, f"{what} {name}: {result.text}"
                if isinstance(result, SSEStream):
                    assert result.status == 200, result.body
                    assert result.expect_event(timeout=30).type == "snapshot"
                    return result
                return None
            homes[what] = served_by(cluster, checked, f"{what} of {name}")
        assert len(set(homes.values())) == 1, f"{name} served by several nodes: {homes}"
        owners[name] = next(iter(homes.values()))
    assert len(set(owners.values())) > 1, f"every scope on one node: {owners}"

    # The multi-scope stream goes where its first `scope` argument goes, whichever comes next.
    names = list(owners)
    for first in names[:6]:
        other = next(n for n in names if owners[n] != owners[first])
        for query in (f"scope={first}&scope={other}", f"scope={first}"):
            def multi(query=query):
                opened = SSEStream(nginx.url, f"/v1/events?{query}", timeout=30)
                # Not served yet by the gateway (404): then there is no stream to follow.
                return opened if opened.status == 200 else opened.close()
            home = served_by(cluster, multi, f"/v1/events?{query}")
            assert home == owners[first], (
                f"/v1/events?{query} on node {home}, {first} lives on node {owners[first]}")


def test_a_hot_scope_written_through_nginx_meets_no_version_race(proxied):
    """32 writers POST 100 change sets each to one scope through nginx: every POST is answered
    200 by the scope's node (no 503, no 409), the other nodes take none and retry no version
    race, and the log holds every acknowledged write once, at its version."""
    cluster, nginx, client = proxied
    name, state = create_through(client, cluster)
    created, root = state["version"], state["rootUUID"]
    urls = [node.url for node in cluster.nodes]
    posts_before = {url: route_count(url, CHANGESETS) for url in urls}
    races_before = {url: conflict_retries(url) for url in urls}

    budget = Budget(HOT_WRITERS * HOT_WRITES_EACH, WRITE_SECONDS)
    writers = [Writer(lambda: [nginx.url], {name: root}, budget, seed=SEED + i, key_ratio=0.5,
                      retry=False) for i in range(HOT_WRITERS)]
    for writer in writers:
        writer.start()
    writes = join_writers(writers, WRITE_SECONDS + 60)
    assert len(writes) == HOT_WRITERS * HOT_WRITES_EACH, f"only {len(writes)} writes in time"
    assert statuses(writes) == {"200": len(writes)}, statuses(writes)

    posts = {url: route_count(url, CHANGESETS) - posts_before[url] for url in urls}
    assert sorted(posts.values()) == [0, 0, len(writes)], f"POSTs per node: {posts}"
    races = {url: conflict_retries(url) - races_before[url] for url in urls}
    assert set(races.values()) == {0}, f"version races retried per node: {races}"

    log = settle(cluster, name, created, created + len(writes))
    check_log(log, created, writes, client.get(f"/v1/scopes/{name}").json())


class RetryingWriter(Writer):
    """A client of nginx: a write that gets no answer, 502 (its node died after the request was
    sent), 503 or 504 is sent again with the same Idempotency-Key and body until it is answered
    200 (within RETRY_SECONDS); any other answer fails the test."""

    def send(self, write) -> None:
        deadline = time.monotonic() + RETRY_SECONDS
        url = self.targets()[0]
        while True:
            attempt = write.post(self.client(url))
            if attempt.status == 200:
                return
            assert attempt.status in (None, 502, 503, 504) and time.monotonic() < deadline, (
                f"write to {write.scope}: {attempt.status} {attempt.body[:300]} {attempt.error}")
            pause = retry_after_seconds(attempt.retry_after) if attempt.status == 503 else 0.05
            time.sleep(min(pause, 0.5))


def test_writes_move_to_another_node_when_the_scopes_node_is_killed(proxied):
    """Writers keep POSTing to one scope through nginx while its node is SIGKILLed: nginx passes
    the scope to another node, each write that went unanswered is retried with its key, and then
    every write is in the log exactly once, at the version it was answered, and every live node
    serves the state nginx serves."""
    cluster, nginx, client = proxied
    name, state = create_through(client, cluster)
    created, root = state["version"], state["rootUUID"]
    owner = served_by(cluster, lambda: client.post(f"/v1/scopes/{name}/changesets", json={
        "fragments": [{"type": "change", "uuid": root, "clsName": "Canvas",
                       "properties": {"name": "first"}}]}).raise_for_status() and None,
        f"the first POST to {name}")
    created += 1
    survivors = [node.url for i, node in enumerate(cluster.nodes) if i != owner]
    posts_before = {url: route_count(url, CHANGESETS, "200") for url in survivors}

    budget = Budget(FAILOVER_WRITES, WRITE_SECONDS)
    rng = random.Random(SEED)
    writers = [RetryingWriter(lambda: [nginx.url], {name: root}, budget,
                              seed=rng.randrange(1 << 30), key_ratio=1.0)
               for _ in range(FAILOVER_WRITERS)]
    for writer in writers:
        writer.start()
    try:
        wait_until(lambda: acknowledged_count(writers) >= KILL_AFTER
                   or not any(w.is_alive() for w in writers), 120,
                   lambda: f"{acknowledged_count(writers)} acknowledged writes")
        assert any(w.is_alive() for w in writers), "the writers finished before the kill"
        cluster.nodes[owner].kill()
        killed_at = time.monotonic()
    finally:
        writes = join_writers(writers, WRITE_SECONDS + RETRY_SECONDS + 60)

    assert all(write.accepted for write in writes), statuses(writes)
    after_kill = [t for w in writes for t in w.tries if t.status == 200 and t.sent > killed_at]
    assert after_kill, f"no write acknowledged after the kill: {statuses(writes)}"
    moved = {url: route_count(url, CHANGESETS, "200") - posts_before[url] for url in survivors}
    assert sorted(moved.values())[0] == 0 and sorted(moved.values())[1] > 0, (
        f"after the kill the scope's POSTs went to one other node, got {moved}")
    unexpected = [f"{t.status} {t.body[:200]}" for w in writes for t in w.tries
                  if t.status not in (None, 200, 502, 503, 504)]
    assert not unexpected, unexpected

    final = max(write.version for write in writes)
    assert final == created + len(writes), (final, created, len(writes))
    log = settle(cluster, name, created, final)
    through_nginx = client.get(f"/v1/scopes/{name}")
    assert through_nginx.status_code == 200, through_nginx.text
    check_log(log, created, writes, through_nginx.json())
    for url in cluster.live_urls():
        assert cluster.http(url).get(f"/v1/scopes/{name}").json() == through_nginx.json(), url
