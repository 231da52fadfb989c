"""A refusal is judged at the store's latest version (docs/store.md, "A refusal is judged at the
store's latest version"): three `jetstream serve --database-url` nodes on one database, with a
writer loading another scope through every node; a client adds a shape on one node and, once it has
answered 200, asks the next node to change it at once. That node's follower may
not have applied A's version yet; B must catch up before it refuses, so none of these requests is
refused (a 422 or 412 is final for a client: it rolls the change back). A change that is invalid at
the store's latest version is still refused."""
from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from cluster_helpers import Cluster
from gateway_helpers import MERGE_PATCH, add, assert_problem, assert_rejected, change, new_uuid

pytestmark = pytest.mark.cluster

ROUNDS = 300
ROUNDS_SECONDS = 240   # each loop's bound in time; on loopback 300 rounds take a few seconds


@pytest.fixture(scope="module")
def cluster(jetstream_bin, postgres, tmp_path_factory):
    nodes = Cluster(jetstream_bin, tmp_path_factory.mktemp("cluster-stale"), postgres).start(3)
    yield nodes
    nodes.stop()


def add_on(cluster: Cluster, node, name: str, root: str, label: str) -> tuple[str, int]:
    """Adds a shape through `node` (appended to the canvas); returns it and the version answered."""
    shape = new_uuid()
    response = cluster.http(node).post(
        f"/v1/scopes/{name}/changesets",
        json={"fragments": [add(shape, "Shape", x=0, y=0, label=label),
                            change(root, "Canvas", shapes={"insert": [shape]})]})
    assert response.status_code == 200, f"add on {node.url}: {response.status_code} {response.text}"
    return shape, response.json()["version"]


def rounds(cluster: Cluster, ask) -> list[str]:
    """ROUNDS times: a shape added on node i % 3, then `ask(node, shape, version)` on the next node
    at once, while a writer loads another scope through every node; returns the refusals answered
    ("round i: status body")."""
    name, state = cluster.create_canvas(cluster.nodes[0])
    root = state["rootUUID"]
    busy, busy_state = cluster.create_canvas(cluster.nodes[0])
    refused: list[str] = []
    deadline = time.monotonic() + ROUNDS_SECONDS
    done = threading.Event()

    def load():
        # Bounded by the rounds' deadline: change sets to another scope, through each node in turn,
        # on this thread's own connections.
        clients = [httpx.Client(base_url=node.url, timeout=30.0) for node in cluster.nodes]
        count = 0
        try:
            while not done.is_set() and time.monotonic() < deadline:
                fragments = [change(busy_state["rootUUID"], "Canvas", name=f"load {count}")]
                clients[count % len(clients)].post(f"/v1/scopes/{busy}/changesets", json={"fragments": fragments})
                count += 1
        finally:
            for client in clients:
                client.close()

    loader = threading.Thread(target=load)
    loader.start()
    try:
        for index in range(ROUNDS):
            assert time.monotonic() < deadline, f"only {index} of {ROUNDS} rounds in {ROUNDS_SECONDS}s"
            writer = cluster.nodes[index % len(cluster.nodes)]
            asked = cluster.nodes[(index + 1) % len(cluster.nodes)]
            shape, version = add_on(cluster, writer, name, root, f"round {index}")
            response = ask(asked, name, shape, version)
            if response.status_code != 200:
                refused.append(f"round {index}: {response.status_code} {response.text[:300]}")
            else:
                assert response.json()["version"] > version, response.text
    finally:
        done.set()
        loader.join(ROUNDS_SECONDS)
    return refused


def test_a_change_on_another_node_right_after_an_add_is_never_refused(cluster):
    def move(node, name: str, shape: str, version: int):
        return cluster.http(node).post(f"/v1/scopes/{name}/changesets",
                                       json={"fragments": [change(shape, "Shape", x=5)]})
    refused = rounds(cluster, move)
    assert not refused, f"{len(refused)} of {ROUNDS} refused by the next node:\n" + "\n".join(refused[:10])


def test_a_patch_or_an_if_match_on_another_node_right_after_an_add_is_never_refused(cluster):
    """Odd rounds PATCH the new shape (its target unknown to a stale copy: 404); even rounds
    change it with If-Match naming the version A answered (412 on a stale copy)."""
    turn = iter(range(ROUNDS))

    def ask(node, name: str, shape: str, version: int):
        if next(turn) % 2:
            return cluster.http(node).patch(
                f"/v1/scopes/{name}/objects/{shape}", content=json.dumps({"y": 7}).encode(),
                headers={"Content-Type": MERGE_PATCH})
        return cluster.http(node).post(
            f"/v1/scopes/{name}/changesets", json={"fragments": [change(shape, "Shape", x=6)]},
            headers={"If-Match": f'"{version}"'})
    refused = rounds(cluster, ask)
    assert not refused, f"{len(refused)} of {ROUNDS} refused by the next node:\n" + "\n".join(refused[:10])


def test_a_change_invalid_at_the_latest_version_is_still_refused_on_another_node(cluster):
    first, second, _ = cluster.nodes
    name, state = cluster.create_canvas(first)
    _, version = add_on(cluster, first, name, state["rootUUID"], "known")
    response = cluster.http(second).post(f"/v1/scopes/{name}/changesets",
                                         json={"fragments": [change(new_uuid(), "Shape", x=1)]})
    assert_rejected(response, ["unknown-object"])
    # An If-Match of a version the scope has left is still 412, naming the store's version.
    response = cluster.http(second).post(
        f"/v1/scopes/{name}/changesets",
        json={"fragments": [change(state["rootUUID"], "Canvas", name="x")]},
        headers={"If-Match": f'"{state["version"]}"'})
    assert assert_problem(response, 412, "precondition-failed")["version"] == version
