"""Presence across nodes on one PostgreSQL database (docs/store.md, "Presence across nodes"): a
member set through one node is on every node's `GET …/presence` and on every node's streams
(`GET /v1/events?scope=…`): join, update, leave and expiry. Presence is not stored: a restarted
node forgets its own members, and a node knows another node's members only from the notices it
received while running, so a member set before it started appears there at its next refresh.

Every wait polls with a bound; nothing here measures time."""
from __future__ import annotations

import json

import pytest

from cluster_helpers import Cluster, wait_until
from sse_stream import SSEStream

pytestmark = pytest.mark.cluster

NODES = 2
BOUND = 60.0          # a notice from one node to another: milliseconds, waited for generously
EXPIRY_BOUND = 15.0   # ttl=1: the leave is due within ttl + 2 s on every node


@pytest.fixture(scope="module")
def cluster(jetstream_bin, postgres, tmp_path_factory):
    nodes = Cluster(jetstream_bin, tmp_path_factory.mktemp("presence-cluster"), postgres).start(NODES)
    try:
        wait_listening(nodes)
        yield nodes
    finally:
        nodes.stop()


# -- helpers ------------------------------------------------------------------------------------
def path(name: str, client: str | None = None) -> str:
    return f"/v1/scopes/{name}/presence" + (f"/{client}" if client is not None else "")


def put(cluster: Cluster, node, name: str, client: str, data: dict, ttl: int | None = None) -> None:
    response = cluster.http(node).put(path(name, client), content=json.dumps(data).encode(),
                                      params={"ttl": ttl} if ttl is not None else None,
                                      headers={"Content-Type": "application/json"})
    assert response.status_code == 204, f"PUT presence on {node.url}: {response.status_code} {response.text}"


def members(cluster: Cluster, node, name: str) -> dict[str, dict]:
    response = cluster.http(node).get(path(name))
    assert response.status_code == 200, response.text
    return {member["client"]: member for member in response.json()["members"]}


def wait_members(cluster: Cluster, node, name: str, predicate, timeout: float = BOUND) -> dict[str, dict]:
    seen: dict[str, dict] = {}

    def holds():
        seen.clear()
        seen.update(members(cluster, node, name))
        return predicate(seen)
    wait_until(holds, timeout, lambda: f"members on {node.url}: {seen}{cluster.logs()}", interval=0.05)
    return seen


def wait_listening(cluster: Cluster) -> None:
    """A node that does not LISTEN yet misses notices: until a member set on each node shows on
    every other (set again meanwhile, as a client refreshes), the tests would race the start."""
    name, _ = cluster.create_canvas(cluster.nodes[0])
    for index, node in enumerate(cluster.nodes):
        client = f"probe-{index}"
        for other in cluster.nodes:
            if other is node:
                continue

            def arrived() -> bool:
                put(cluster, node, name, client, {"probe": True})
                return client in members(cluster, other, name)
            wait_until(arrived, BOUND, lambda: f"{client} from {node.url} on {other.url}{cluster.logs()}",
                       interval=0.2)


def presence_stream(node, name: str) -> SSEStream:
    """`GET /v1/events?scope=name` on `node`, past its snapshot and the joins of current members."""
    stream = SSEStream(node.url, f"/v1/events?scope={name}")
    assert stream.status == 200, stream.body
    first = stream.expect_event(timeout=BOUND)
    assert first.type == "snapshot", (first.type, first.data)
    return stream


def next_presence(stream: SSEStream, timeout: float = BOUND) -> dict:
    """The next event, which must be `event: presence` (no id); its data."""
    event = stream.expect_event(timeout=timeout)
    assert event.type == "presence", (event.type, event.data)
    assert event.id is None, event.id
    return event.json()


# -- tests --------------------------------------------------------------------------------------
def test_a_member_set_through_one_node_joins_updates_and_leaves_on_the_other(cluster):
    a, b = cluster.nodes
    name, _ = cluster.create_canvas(a)
    stream = presence_stream(b, name)
    try:
        put(cluster, a, name, "window-1", {"x": 1}, ttl=60)
        assert next_presence(stream) == {"scope": name, "client": "window-1", "subject": None,
                                         "state": "join", "data": {"x": 1}}
        there = wait_members(cluster, b, name, lambda seen: "window-1" in seen)
        # The same member on both nodes, expiry instant included.
        assert there == members(cluster, a, name)

        put(cluster, a, name, "window-1", {"x": 2}, ttl=60)
        assert next_presence(stream) == {"scope": name, "client": "window-1", "subject": None,
                                         "state": "update", "data": {"x": 2}}
        assert members(cluster, b, name)["window-1"]["data"] == {"x": 2}

        # And the other way round: B's member is on A.
        put(cluster, b, name, "window-2", {"y": 1}, ttl=60)
        assert next_presence(stream)["client"] == "window-2"   # its join on B's own stream
        wait_members(cluster, a, name, lambda seen: set(seen) == {"window-1", "window-2"})

        response = cluster.http(a).delete(path(name, "window-1"))
        assert response.status_code == 204, response.text
        assert next_presence(stream) == {"scope": name, "client": "window-1", "subject": None,
                                         "state": "leave"}
        assert set(members(cluster, b, name)) == {"window-2"}
        # Gone on B too: B's DELETE of it is a 404, as on the node that made it.
        assert cluster.http(b).delete(path(name, "window-1")).status_code == 404
    finally:
        stream.close()


def test_a_member_that_expires_leaves_on_the_other_node(cluster):
    a, b = cluster.nodes
    name, _ = cluster.create_canvas(a)
    stream = presence_stream(b, name)
    try:
        put(cluster, a, name, "brief", {"on": True}, ttl=1)
        assert next_presence(stream)["state"] == "join"
        assert next_presence(stream, timeout=EXPIRY_BOUND) == {
            "scope": name, "client": "brief", "subject": None, "state": "leave"}
        assert members(cluster, b, name) == {}
        wait_members(cluster, a, name, lambda seen: seen == {}, timeout=EXPIRY_BOUND)
    finally:
        stream.close()


def test_a_restarted_node_forgets_its_members_and_learns_others_at_their_next_refresh(cluster):
    a, b = cluster.nodes
    name, _ = cluster.create_canvas(a)
    put(cluster, a, name, "on-a", {"n": 1}, ttl=300)
    put(cluster, b, name, "on-b", {"n": 2}, ttl=300)
    wait_members(cluster, a, name, lambda seen: set(seen) == {"on-a", "on-b"})
    wait_members(cluster, b, name, lambda seen: set(seen) == {"on-a", "on-b"})

    a.restart(same_port=True)
    cluster.wait_visible(name)
    # A forgot everything: its own member and the one it had heard of. B keeps A's member until
    # its expiry or its next refresh (a restart sends no leave).
    assert members(cluster, a, name) == {}
    assert set(members(cluster, b, name)) == {"on-a", "on-b"}

    # B's member refreshes, as a client does before its ttl runs out: then A knows it again
    # (refreshed until A listens, which a just-started node may not do yet).
    def refreshed_on_a() -> bool:
        put(cluster, b, name, "on-b", {"n": 3}, ttl=300)
        return "on-b" in members(cluster, a, name)
    wait_until(refreshed_on_a, BOUND, lambda: f"on A: {members(cluster, a, name)}{cluster.logs()}",
               interval=0.2)
    assert members(cluster, a, name)["on-b"]["data"] == {"n": 3}

    # A's member set again through A: back on A, an update on B.
    stream = presence_stream(b, name)
    try:
        joins = {next_presence(stream)["client"] for _ in range(2)}   # one join per current member
        assert joins == {"on-a", "on-b"}
        put(cluster, a, name, "on-a", {"n": 4}, ttl=300)
        assert next_presence(stream) == {"scope": name, "client": "on-a", "subject": None,
                                         "state": "update", "data": {"n": 4}}
        assert set(members(cluster, a, name)) == {"on-a", "on-b"}
    finally:
        stream.close()


@pytest.fixture(scope="module")
def three_nodes(jetstream_bin, postgres, tmp_path_factory):
    nodes = Cluster(jetstream_bin, tmp_path_factory.mktemp("presence-three"), postgres).start(3)
    try:
        wait_listening(nodes)
        yield nodes
    finally:
        nodes.stop()


def test_three_nodes_each_see_a_member_set_through_any_other(three_nodes):
    """Three nodes: a member set through node 0 is on nodes 1 and 2 (GET and stream); its update
    through node 0 and its leave through node 0 reach both; a member set through node 2 is on 0."""
    first, second, third = three_nodes.nodes
    name, _ = three_nodes.create_canvas(first)
    streams = [presence_stream(node, name) for node in (second, third)]
    try:
        put(three_nodes, first, name, "pointer", {"x": 1}, ttl=60)
        for stream in streams:
            assert next_presence(stream)["state"] == "join"
        for node in (second, third):
            wait_members(three_nodes, node, name, lambda seen: seen.get("pointer", {}).get("data") == {"x": 1})
        put(three_nodes, first, name, "pointer", {"x": 2}, ttl=60)
        for stream in streams:
            assert next_presence(stream) == {"scope": name, "client": "pointer", "subject": None,
                                             "state": "update", "data": {"x": 2}}
        put(three_nodes, third, name, "other", {"y": 1}, ttl=60)
        wait_members(three_nodes, first, name, lambda seen: set(seen) == {"pointer", "other"})
        assert three_nodes.http(first).delete(path(name, "pointer")).status_code == 204
        for node in (second, third):
            wait_members(three_nodes, node, name, lambda seen: set(seen) == {"other"})
    finally:
        for stream in streams:
            stream.close()
