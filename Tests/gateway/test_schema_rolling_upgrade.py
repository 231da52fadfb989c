"""Rolling schema upgrades on one PostgreSQL database: nodes announce their schema to each other
(metadata `node:<id>` in `jetstream.metadata`, refreshed every 2 s, removed on a graceful stop),
and a node whose schema cannot run beside an OLDER live node's answers `/readyz` 503 naming the
conflict (log: `not ready: schema conflict`) until that node is gone.

- An additive upgrade under writes: three nodes on schema A, a writer posting keyed change sets to
  them in turn and an SSE client following the scope; the nodes restarted one by one on B (A plus a
  property with a default), each taken out of the writer's rotation first and put back once ready.
  Every write is answered 200, every node in rotation stays ready, the stream's ids have no gap and
  no duplicate (a `reset` only on a reconnection), and at the end every node serves the same log and
  state, with the new property's default on the objects written under A.
- A node started on C (one property's `max` changed) beside two nodes on A is not ready and names
  the property; the two stay ready; restarted on A it becomes ready.
- The younger node yields: node 1 on A stays ready while node 2, started later on C, is not; once
  node 1 stops (its entry removed at once), node 2 becomes ready.
"""
from __future__ import annotations

import bisect
import collections
import contextlib
import copy
import json
import pathlib
import threading
import time

import httpx
import pytest
import yaml

from cluster_helpers import (SETTLE_TIMEOUT, Budget, Cluster, Subscriber, Write, barrier, settle,
                             shape_set, start_subscribers, wait_until)
from gateway_helpers import assert_problem, new_uuid, objects_of, shapes_of
from gateway_server import GatewayServer

pytestmark = pytest.mark.cluster

# Schema A: the demo canvas, with a `max` on Shape.width that schema C changes.
SCHEMA_A = {
    "models": {
        "Canvas": {"name": "String?", "shapes": ["Shape"]},
        "Shape": {
            "x": "Float",
            "y": "Float",
            "width": {"type": "Float", "default": 100, "min": 0, "max": 10000},
            "height": {"type": "Float", "default": 100, "min": 0},
            "color": "Color?",
            "label": {"type": "String", "maxLength": 200, "default": ""},
            "kind": {"enum": ["rect", "oval"], "default": "rect"},
        },
    },
    "scopes": {"canvas-*": {"root": "Canvas"}},
}
NEW_PROPERTY, NEW_DEFAULT = "rank", 3
SCHEMA_B = copy.deepcopy(SCHEMA_A)   # additive: a new property with a default
SCHEMA_B["models"]["Shape"][NEW_PROPERTY] = {"type": "Int16", "default": NEW_DEFAULT}
SCHEMA_C = copy.deepcopy(SCHEMA_A)   # a conflict: the max of a property both have
SCHEMA_C["models"]["Shape"]["width"]["max"] = 5000
CONFLICTING = "Shape.width"

WRITES = 2500            # the writer's bound in count …
WRITE_SECONDS = 300      # … and in time
WRITES_PER_STEP = 15     # acknowledged through the restarted node before the next step
READY_TIMEOUT = 60.0
YIELD_TIMEOUT = 15.0     # an older node gone: its entry withdrawn, or expired after 10 s
ENTRY_ROUNDS = 2         # refreshes of a node's entry that prove it compared once more


@pytest.fixture
def schemas(tmp_path) -> dict[str, pathlib.Path]:
    files = {}
    for label, schema in (("A", SCHEMA_A), ("B", SCHEMA_B), ("C", SCHEMA_C)):
        files[label] = tmp_path / f"schema-{label}.yaml"
        files[label].write_text(yaml.safe_dump(schema, sort_keys=False))
    return files


@pytest.fixture
def clusters(jetstream_bin, postgres, tmp_path):
    """Makes clusters (one database each) on the session's PostgreSQL; stops them at the end."""
    made: list[Cluster] = []

    def make(schema: pathlib.Path) -> Cluster:
        cluster = Cluster(jetstream_bin, tmp_path / f"cluster-{len(made)}", postgres,
                          ("--schema", str(schema)))
        made.append(cluster)
        return cluster
    yield make
    for cluster in made:
        cluster.stop()


def start_node(cluster: Cluster, schema: pathlib.Path) -> GatewayServer:
    """One more node on the cluster's database, on `schema`."""
    cluster.args = ["--schema", str(schema)]
    cluster.start(1)
    return cluster.nodes[-1]


def restart_on(cluster: Cluster, node: GatewayServer, schema: pathlib.Path) -> None:
    """Graceful stop (exit 0), then the same node (data directory) started on `schema`."""
    rc = node.stop()
    assert rc == 0, f"{node.url} stopped with {rc}{cluster.logs()}"
    node.args = ["--database-url", cluster.url, "--schema", str(schema)]
    node.start()


def readyz(node: GatewayServer) -> httpx.Response:
    return httpx.get(f"{node.url}/readyz", timeout=10)


def wait_readyz(cluster: Cluster, node: GatewayServer, status: int,
                timeout: float = READY_TIMEOUT) -> httpx.Response:
    """Polls the node's `/readyz` until it answers `status`; returns that answer."""
    seen: list[httpx.Response] = []

    def at_status():
        assert node.running, f"{node.url} exited with {node.process.returncode}{cluster.logs()}"
        seen[:] = [readyz(node)]
        return seen[0] if seen[0].status_code == status else None
    return wait_until(at_status, timeout, lambda: (
        f"/readyz {status} on {node.url}; last: "
        f"{seen[0].status_code if seen else None} {seen[0].text[:500] if seen else ''}"
        f"{cluster.logs()}"), interval=0.2)


def schema_tag(node: GatewayServer) -> str:
    """The node's schema fingerprint (`GET /v1/schema`'s ETag), as its metadata entry names it."""
    response = httpx.get(f"{node.url}/v1/schema", timeout=10)
    assert response.status_code == 200, response.text
    return response.headers["etag"].strip('"')


def node_entries(cluster: Cluster) -> dict[str, dict]:
    """The `node:<id>` metadata entries on the cluster's database: key → the entry's members
    (fingerprint, startedAt, seenAt)."""
    rows = cluster.postgres.query(
        "SELECT key, convert_from(value, 'UTF8')::json->>'fingerprint', "
        "convert_from(value, 'UTF8')::json->>'startedAt', "
        "convert_from(value, 'UTF8')::json->>'seenAt' "
        "FROM jetstream.metadata WHERE key LIKE 'node:%'", cluster.dbname)
    return {key: {"fingerprint": fingerprint, "startedAt": int(started), "seenAt": int(seen)}
            for key, fingerprint, started, seen in rows}


def wait_entries_refreshed(cluster: Cluster, fingerprint: str, count: int) -> None:
    """Waits until each of the `count` entries with `fingerprint` has been refreshed ENTRY_ROUNDS
    times from now on: each of those nodes has then read the others' entries as they are now."""
    first = {k: e["seenAt"] for k, e in node_entries(cluster).items()
             if e["fingerprint"] == fingerprint}
    assert len(first) == count, f"{count} entries with {fingerprint}: {node_entries(cluster)}"
    changes = {key: 0 for key in first}
    last = dict(first)

    def refreshed() -> bool:
        entries = node_entries(cluster)
        for key in first:
            assert key in entries, f"entry {key} vanished: {entries}{cluster.logs()}"
            if entries[key]["seenAt"] != last[key]:
                changes[key] += 1
                last[key] = entries[key]["seenAt"]
        return all(n >= ENTRY_ROUNDS for n in changes.values())
    wait_until(refreshed, READY_TIMEOUT, lambda: f"entries refreshed {changes}: "
               f"{node_entries(cluster)}{cluster.logs()}", interval=0.2)


def log_text(node: GatewayServer) -> str:
    return node.log_path.read_text(errors="replace")


def assert_conflict_named(cluster: Cluster, node: GatewayServer, answer: httpx.Response) -> None:
    body = assert_problem(answer, 503, "not-ready")
    assert CONFLICTING in body.get("detail", ""), f"detail does not name {CONFLICTING}: {body}"
    wait_until(lambda: "not ready: schema conflict" in log_text(node), 30,
               lambda: f"no 'not ready: schema conflict' in {node.url}'s log{cluster.logs()}")


# -- the writer's rotation, the writer and a readiness watcher ------------------------------------
class Rotation:
    """The nodes taking traffic, as a load balancer would keep them: a node is taken out before
    it is stopped (once no request to it is in flight) and put back once ready."""

    def __init__(self, urls: list[str]):
        self._urls = list(urls)
        self._next = 0
        self._in_flight: collections.Counter[str] = collections.Counter()
        self._changed = threading.Condition()

    def urls(self) -> list[str]:
        with self._changed:
            return list(self._urls)

    @contextlib.contextmanager
    def next(self):
        """The next node in turn (None when none is in rotation), held while the block runs."""
        with self._changed:
            url = self._urls[self._next % len(self._urls)] if self._urls else None
            self._next += 1
            if url:
                self._in_flight[url] += 1
        try:
            yield url
        finally:
            if url:
                self._release([url])

    @contextlib.contextmanager
    def all(self):
        """Every node in rotation, held while the block runs."""
        with self._changed:
            urls = list(self._urls)
            self._in_flight.update(urls)
        try:
            yield urls
        finally:
            self._release(urls)

    def _release(self, urls: list[str]) -> None:
        with self._changed:
            self._in_flight.subtract(urls)
            self._changed.notify_all()

    def take_out(self, url: str, timeout: float = SETTLE_TIMEOUT) -> None:
        with self._changed:
            self._urls.remove(url)
            drained = self._changed.wait_for(lambda: self._in_flight[url] == 0, timeout)
        assert drained, f"requests to {url} still in flight after {timeout}s"

    def put_in(self, url: str) -> None:
        with self._changed:
            self._urls.append(url)


class RotatingWriter(threading.Thread):
    """Posts shape sets to one scope through the nodes in rotation, in turn, one at a time (so no
    two nodes race for a version and nothing is refused for that). Every write has an
    Idempotency-Key; a try without an answer is sent again with it to the next node."""

    MAX_TRIES = 10

    def __init__(self, rotation: Rotation, scope: str, root: str, budget: Budget):
        super().__init__(daemon=True)
        self.rotation, self.scope, self.root, self.budget = rotation, scope, root, budget
        self.writes: list[Write] = []
        self.acknowledged: collections.Counter[str] = collections.Counter()  # url → 200s
        self.crashed: BaseException | None = None
        self._clients: dict[str, httpx.Client] = {}

    def run(self) -> None:
        try:
            while self.budget.take():
                uuids, body = shape_set(self.root, f"rolling:{len(self.writes)}")
                write = Write(self.scope, uuids, body, new_uuid())
                self.writes.append(write)
                self.send(write)
        except BaseException as error:  # noqa: BLE001 - the test reports it
            self.crashed = error
        finally:
            for client in self._clients.values():
                client.close()

    def send(self, write: Write) -> None:
        for _ in range(self.MAX_TRIES):
            with self.rotation.next() as url:
                if url is None:
                    time.sleep(0.05)
                    continue
                if url not in self._clients:
                    self._clients[url] = httpx.Client(base_url=url, timeout=60)
                attempt = write.post(self._clients[url])
            if attempt.status == 200:
                self.acknowledged[url] += 1
                return
            if attempt.status is not None:
                return          # an answer other than 200: the test reports it
            time.sleep(0.05)

    def acknowledged_by(self, url: str) -> int:
        return self.acknowledged[url]

    def finish(self, timeout: float = 120.0) -> list[Write]:
        self.budget.stop.set()
        self.join(timeout=timeout)
        assert not self.is_alive(), f"the writer did not finish within {timeout}s"
        assert self.crashed is None, repr(self.crashed)
        return self.writes


class ReadinessWatch(threading.Thread):
    """Asks `/readyz` of every node in rotation, over and over, and keeps every answer but 200."""

    def __init__(self, rotation: Rotation, deadline_seconds: float = 600.0):
        super().__init__(daemon=True)
        self.rotation = rotation
        self.halt = threading.Event()
        self.deadline = time.monotonic() + deadline_seconds
        self.probes = 0
        self.unready: list[str] = []

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.halt.is_set() and time.monotonic() < self.deadline:
                with self.rotation.all() as urls:
                    for url in urls:
                        try:
                            answer = client.get(f"{url}/readyz")
                        except httpx.TransportError as error:
                            self.unready.append(f"{url}: {error!r}")
                            continue
                        self.probes += 1
                        if answer.status_code != 200:
                            self.unready.append(f"{url}: {answer.status_code} {answer.text[:300]}")
                self.halt.wait(0.2)

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)


class ConnectionSubscriber(Subscriber):
    """A `Subscriber` that remembers where each connection's events begin."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.connection_starts: list[int] = []

    def follow(self, stream) -> bool:
        self.connection_starts.append(len(self.events))
        return super().follow(stream)


# -- checks ---------------------------------------------------------------------------------------
def added(changeset: dict) -> list[str]:
    return [f["uuid"] for f in changeset["fragments"] if f["type"] == "add"]


def check_writes_and_log(writes: list[Write], log: list[str], created: int) -> list[str]:
    """Every write was answered 200 (a try without an answer, retried with its key, is allowed);
    the log after `created` is contiguous, holds every write once, at the version it was answered
    with, whole; returns the shapes in log order."""
    refused = [(t.url, t.status, t.body[:300]) for w in writes for t in w.tries
               if t.status not in (200, None)]
    assert not refused, f"writes refused during the rolling upgrade: {refused}"
    unanswered = [[t.error for t in w.tries] for w in writes if w.accepted is None]
    assert not unanswered, f"writes never answered 200: {unanswered}"
    entries = [json.loads(p) for p in log]
    assert [e["version"] for e in entries] == list(range(created + 1, created + 1 + len(entries)))
    by_version = {e["version"]: added(e) for e in entries}
    answered = [w.version for w in writes]
    assert len(set(answered)) == len(answered), "two writes answered with one version"
    for write in writes:
        assert by_version.get(write.version) == write.uuids, (
            f"answered at {write.version}, the log has {by_version.get(write.version)} there: "
            f"{write.uuids}")
    assert len(entries) == len(writes), (
        f"{len(entries)} change sets in the log for {len(writes)} writes")
    return [u for e in entries for u in added(e)]


def check_in_schema(changeset: dict, schema: str | None, where: str) -> None:
    """The shapes a change set adds, as a node on `schema` serves them: without the new property
    on A (a node drops what its schema does not know), with its default on B (the writer never
    sends it)."""
    if schema is None:
        return              # a port used by two processes in turn: which one is unknown
    for fragment in changeset["fragments"]:
        if fragment["type"] != "add" or fragment["clsName"] != "Shape":
            continue
        value = fragment["properties"].get(NEW_PROPERTY, "absent")
        expected = "absent" if schema == "A" else NEW_DEFAULT
        assert value == expected, (
            f"{where} (schema {schema}): {NEW_PROPERTY} {value!r}, expected {expected!r}: "
            f"{fragment}")


def check_stream_ids(subscriber: ConnectionSubscriber, log: list[str], created: int,
                     schemas_of: dict[str, str | None]) -> dict[int, str | None]:
    """The subscriber's events: a snapshot, then change sets whose ids go up by one without a gap
    or a duplicate, each adding what the log's set of that version adds; a connection may begin
    with a `reset` (its stream moved across the schema change), after which ids continue from the
    reset's; `closing` ends a connection whose node stops. Nothing else. Each node streams in its
    own schema (`schemas_of`: url → "A" or "B"), whichever node wrote the set. Returns the schema
    of the node that streamed each change set, by version."""
    entries = {json.loads(p)["version"]: json.loads(p) for p in log}
    in_order = [u for v in sorted(entries) for u in added(entries[v])]
    starts = set(subscriber.connection_starts)
    events = list(subscriber.events)
    describe = subscriber.describe
    assert events and events[0].type == "snapshot", describe()
    last = int(events[0].id)
    assert last >= created, describe()
    streamed_on: dict[int, str | None] = {}
    for index, event in enumerate(events[1:], start=1):
        if event.type == "changeset":
            assert int(event.id) == last + 1, (
                f"event {index}: id {event.id} after {last} (a gap or a duplicate): {describe()}")
            last += 1
            assert added(event.json()) == added(entries[last]), (
                f"change set {last} on the stream adds {added(event.json())}, "
                f"in the log {added(entries[last])}")
            connection = bisect.bisect_right(subscriber.connection_starts, index) - 1
            url = subscriber.connections[connection]
            streamed_on[last] = schemas_of.get(url)
            check_in_schema(event.json(), streamed_on[last], f"change set {last} from {url}")
        elif event.type == "reset":
            assert index in starts, f"a reset in the middle of a connection: {describe()}"
            assert int(event.id) >= last, f"reset {event.id} goes back from {last}: {describe()}"
            last = int(event.id)
            shapes = shapes_of(event.json())
            assert shapes == in_order[:len(shapes)] and len(shapes) == 2 * (last - created), (
                f"the reset at {last} is not the log's state there")
        elif event.type != "closing":
            raise AssertionError(f"unexpected event {event.type} {event.id}: {describe()}")
    assert last == created + len(log), f"the stream ended at {last}: {describe()}"
    return streamed_on


# -- tests ----------------------------------------------------------------------------------------
def test_an_additive_upgrade_rolls_through_the_nodes_under_writes(clusters, schemas):
    cluster = clusters(schemas["A"]).start(3)
    cluster.wait_ready(200)
    nodes = cluster.nodes
    tag_a = schema_tag(nodes[0])
    name, state = cluster.create_canvas(nodes[0])
    created, root = state["version"], state["rootUUID"]

    rotation = Rotation([node.url for node in nodes])
    schemas_of: dict[str, str | None] = {node.url: "A" for node in nodes}
    # On the node restarted last: its stream is open while the others change, then moves.
    subscriber = ConnectionSubscriber(nodes[-1].url, name, resume=rotation.urls)
    start_subscribers([subscriber])
    watch = ReadinessWatch(rotation)
    watch.start()
    writer = RotatingWriter(rotation, name, root, Budget(WRITES, WRITE_SECONDS))
    writer.start()
    try:
        # Objects written under A before any node changes.
        for node in nodes:
            wait_until(lambda url=node.url: writer.acknowledged_by(url) >= WRITES_PER_STEP
                       or not writer.is_alive(), SETTLE_TIMEOUT,
                       lambda: f"writes through each node on A: {writer.acknowledged}")
        assert writer.is_alive(), f"the writer stopped: {writer.crashed!r}"
        before = [u for w in list(writer.writes) if w.accepted for u in w.uuids]

        for step, node in enumerate(nodes):
            rotation.take_out(node.url)
            restart_on(cluster, node, schemas["B"])
            schemas_of[node.url] = "B" if schemas_of.get(node.url, "B") == "B" else None
            wait_readyz(cluster, node, 200)
            cluster.wait_ready(200)
            assert schema_tag(node) != tag_a, f"{node.url} still serves schema A"
            rotation.put_in(node.url)
            # Writes through the node on B, while the others (up to the last step) are on A.
            wait_until(lambda: writer.acknowledged_by(node.url) >= WRITES_PER_STEP
                       or not writer.is_alive(), SETTLE_TIMEOUT,
                       lambda: f"step {step}: writes through {node.url}: {writer.acknowledged}"
                               f"{cluster.logs()}")
            assert writer.is_alive(), (
                f"the writer stopped at step {step} (budget of {WRITES} writes / "
                f"{WRITE_SECONDS}s spent?): {writer.crashed!r}")
        writes = writer.finish()
    finally:
        writer.budget.stop.set()
        watch.stop()

    try:
        last = barrier(cluster, nodes[0], name, root)
        writes.append(last)
        log = settle(cluster, name, created, last.version)
        subscriber.wait_for(last.version)
    finally:
        subscriber.stop()

    in_order = check_writes_and_log(writes, log, created)
    assert not watch.unready, f"nodes in rotation not ready: {watch.unready[:20]}"
    assert watch.probes > 0
    streamed_on = check_stream_ids(subscriber, log, created, schemas_of)
    written_on = {w.version: schemas_of.get(w.accepted.url.rstrip("/")) for w in writes}
    crossed = [v for v, schema in streamed_on.items() if schema == "A" and written_on[v] == "B"]
    assert crossed, "no set written on B reached the stream while it was on a node on A"
    assert len(subscriber.connections) >= 2, f"the stream never moved: {subscriber.describe()}"

    # One schema and one state on every node; what A wrote has B's default.
    tags = {schema_tag(node) for node in nodes}
    assert len(tags) == 1 and tag_a not in tags, tags
    states = [cluster.http(node).get(f"/v1/scopes/{name}").json() for node in nodes]
    assert all(s == states[0] for s in states), "the nodes serve different states"
    objects = objects_of(states[0])
    assert shapes_of(states[0]) == in_order
    assert before and set(before) <= set(objects)
    wrong = {u: objects[u]["properties"].get(NEW_PROPERTY) for u in in_order
             if objects[u]["properties"].get(NEW_PROPERTY) != NEW_DEFAULT}
    assert not wrong, f"{NEW_PROPERTY} is not {NEW_DEFAULT} on {len(wrong)} shapes: " \
                      f"{list(wrong.items())[:5]}"
    for uuid in before[:5]:
        assert objects[uuid]["properties"]["label"].startswith("rolling:"), objects[uuid]


def test_a_node_with_a_conflicting_schema_is_not_ready_until_it_runs_the_same(clusters, schemas):
    cluster = clusters(schemas["A"]).start(2)
    cluster.wait_ready(200)
    first, second = cluster.nodes
    tag_a = schema_tag(first)

    third = start_node(cluster, schemas["C"])
    answer = wait_readyz(cluster, third, 503)
    assert_conflict_named(cluster, third, answer)
    # Both older nodes compared again with the third's entry there: still ready.
    wait_entries_refreshed(cluster, tag_a, 2)
    assert [readyz(n).status_code for n in (first, second)] == [200, 200], cluster.logs()
    assert_problem(readyz(third), 503, "not-ready")

    tag_c = schema_tag(third)
    assert tag_c != tag_a
    assert third.stop() == 0, cluster.logs()
    assert tag_c not in {e["fingerprint"] for e in node_entries(cluster).values()}, (
        f"the stopped node's entry is still there: {node_entries(cluster)}")
    third.args = ["--database-url", cluster.url, "--schema", str(schemas["A"])]
    third.start()
    wait_readyz(cluster, third, 200)
    cluster.wait_ready(200)
    assert schema_tag(third) == tag_a


def test_the_younger_node_yields_and_serves_once_the_older_one_stops(clusters, schemas):
    cluster = clusters(schemas["A"]).start(1)
    cluster.wait_ready(200)
    older = cluster.nodes[0]
    tag_a = schema_tag(older)

    younger = start_node(cluster, schemas["C"])
    answer = wait_readyz(cluster, younger, 503)
    assert_conflict_named(cluster, younger, answer)
    wait_entries_refreshed(cluster, tag_a, 1)
    assert readyz(older).status_code == 200, cluster.logs()
    assert_problem(readyz(younger), 503, "not-ready")

    assert older.stop() == 0, cluster.logs()
    assert tag_a not in {e["fingerprint"] for e in node_entries(cluster).values()}, (
        f"the stopped node's entry is still there: {node_entries(cluster)}")
    wait_readyz(cluster, younger, 200, timeout=YIELD_TIMEOUT)
    wait_until(lambda: "schema conflict resolved" in log_text(younger), 30,
               lambda: f"no 'schema conflict resolved' in the log{cluster.logs()}")
