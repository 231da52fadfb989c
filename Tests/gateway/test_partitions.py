"""Partitions between machines: three gateway nodes and one PostgreSQL, each in a network
namespace of its own (netns_hosts.py), the test process playing the clients on a client network
and reaching PostgreSQL on a database network. Writers post to every node, subscribers follow
every scope on every node and resume on another node with Last-Event-ID when a stream ends.

- A node partitioned from PostgreSQL for 10 s (its database link drops every frame, silently: no
  RST, no FIN, no ICMP). Checked: its first 503 comes within 9 s of the cut, and no write sent to
  it during the cut goes unanswered (the client waits up to 12 s) — before `--database-timeout`
  the first waiting write got its 503 after 10 s and the writes queued behind it hung until the
  heal, and `/readyz` with them; its
  `/readyz` turns 503; its streams end with `closing` (store-unavailable) and resume on the other
  nodes; the others keep accepting writes; after the heal it is ready and accepts writes again by
  itself.
- A node partitioned from its clients (its client link drops every frame) for 8 s. Nothing tells
  the clients: its subscribers notice only that the heartbeats (`--heartbeat-interval 1`) stopped,
  give up after IDLE_TIMEOUT and resume on another node; writes sent to it get no answer within the
  client's timeout and keyed ones are retried on another node. After the heal it accepts writes
  and opens streams again.

After each: every write answered 200 is in the log once, whole, at its version; versions are
contiguous; nothing unacknowledged is half there (keyed writes without a 200 are sent again with
their key first, `settle_retries`); every subscriber converges to the log (`converge`).

Two things the partition leaves behind are waited out before the last write (`converge`'s barrier
must be the scope's last version): bytes the node sent PostgreSQL into the cut are delivered by
TCP after the heal (a batch whose `COMMIT` was in flight may commit then: the "outcome unknown"
of docs/store.md), so the node's sockets to PostgreSQL are let drain first; and the writers' clients
abort (SO_LINGER 0) a connection they give up on, so that no request abandoned in the cut reaches
a node after the heal.
"""
from __future__ import annotations

import dataclasses
import json
import socket
import struct
import time

import httpx
import pytest

import netns_hosts
from cluster_helpers import (Budget, Subscriber, Write, Writer, acknowledged_count, join_writers,
                             settle_retries, shape_set, start_subscribers, statuses,
                             unexpected_tries, wait_until)
from gateway_helpers import new_uuid
from netns_hosts import Lab, NetnsCluster, NetnsPostgres
from sse_stream import SSEStream
from test_cluster_faults import canvases, converge

REASON = netns_hosts.unavailable()
pytestmark = pytest.mark.cluster


@pytest.fixture(autouse=True)
def lab_can_be_built():
    # Failed, not skipped: a suite that quietly skips here would pass CI having tested nothing.
    if REASON is not None:
        pytest.fail(f"these tests build network namespaces and cannot here: {REASON} "
                    f"(scripts/test runs as root; scripts/install-deps installs iproute2)")


NODES = 3
WRITERS = 4
SEED = 31
DATABASE_CUT_SECONDS = 10.0
CLIENT_CUT_SECONDS = 8.0
# From the cut to the node's first 503: --database-timeout is 5 s (5.3 s seen here), the rest is
# for a loaded machine. Not 12 s: the build before answered the first waiting write 503 after its
# 10 s round-trip deadline (so does this build with JETSTREAM_DATABASE_TIMEOUT=30: 10.2 s).
FIRST_503_BOUND = 9.0
CLIENT_TIMEOUT = 12.0     # a write to the cut-off node unanswered this long fails the test
IDLE_TIMEOUT = 4.0        # a subscriber that hears nothing (not even a heartbeat) this long leaves
HEARTBEAT = "1"

# Seen in the last run, for the report (`pytest -s` prints it).
OBSERVED: dict[str, float | int | str] = {}


@dataclasses.dataclass
class Net:
    lab: Lab
    clients: netns_hosts.Network
    database: netns_hosts.Network
    postgres: NetnsPostgres
    node_hosts: list[netns_hosts.Host]


@pytest.fixture(scope="module")
def net():
    """The lab: a client and a database network, PostgreSQL on the database network, three node
    hosts on both. Torn down whatever happens (and by an atexit hook if even that fails)."""
    with Lab() as lab:
        clients, database = lab.network("client"), lab.network("db")
        postgres_host = lab.host("postgres", database)
        node_hosts = [lab.host(f"node{i}", clients, database) for i in range(NODES)]
        postgres = NetnsPostgres(postgres_host, database)
        try:
            postgres.start()
            yield Net(lab, clients, database, postgres, node_hosts)
        finally:
            postgres.stop(mode="immediate")


@pytest.fixture(autouse=True)
def report():
    """What the last test saw (times from the cut or the heal), printed with `pytest -s`."""
    OBSERVED.clear()
    yield
    print("\n" + "\n".join(f"  {key}: {value}" for key, value in OBSERVED.items()))


@pytest.fixture
def cluster(jetstream_bin, net, tmp_path):
    nodes = NetnsCluster(jetstream_bin, tmp_path, net.postgres, net.node_hosts, net.clients,
                         args=("--heartbeat-interval", HEARTBEAT)).start(NODES)
    yield nodes
    nodes.stop()


# -- clients that notice silence ---------------------------------------------------------------
ABORT_ON_CLOSE = (socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class AbortingWriter(Writer):
    """A Writer whose clients have `timeout` and abort (RST, unsent bytes discarded) the
    connection of a request they give up on, instead of leaving TCP to deliver it later."""

    def __init__(self, *args, timeout: httpx.Timeout, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout = timeout

    def client(self, url: str) -> httpx.Client:
        if url not in self._clients:
            transport = httpx.HTTPTransport(socket_options=[ABORT_ON_CLOSE])
            self._clients[url] = httpx.Client(base_url=url, timeout=self.timeout,
                                              transport=transport)
        return self._clients[url]


class WatchfulSubscriber(Subscriber):
    """A Subscriber that leaves a stream (and resumes on another node) when nothing at all —
    no event, no heartbeat comment — arrived for `idle_timeout`."""

    def __init__(self, *args, idle_timeout: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.idle_timeout = idle_timeout
        self.idled: list[str] = []

    def follow(self, stream: SSEStream) -> bool:
        heard, progress = time.monotonic(), -1
        while not self.halt.is_set():
            seen = len(stream.received) + len(stream.comments)
            if seen != progress:
                heard, progress = time.monotonic(), seen
            elif time.monotonic() - heard > self.idle_timeout:
                self.idled.append(f"http://{stream.host}:{stream.port}")
                self.problems.append(f"nothing for {self.idle_timeout}s from {self.idled[-1]}")
                return False
            try:
                event = stream.next_event(timeout=0.5)
            except TimeoutError:
                continue
            except OSError as error:
                self.problems.append(f"read: {error!r}")
                return False
            if event is None:
                return False
            self.events.append(event)
            if event.type in ("error", "reset"):
                self.problems.append(f"event {event.type} {event.id} {event.data!r:.200}")
            if event.id is not None and event.id.isdigit():
                self.last_id = int(event.id)
            if event.type == "deleted":
                self.ended = "deleted"
                return True
        self.ended = "stopped"
        return True


# -- helpers -----------------------------------------------------------------------------------
def all_writes(writers: list[Writer]) -> list[Write]:
    return [write for writer in writers for write in list(writer.writes)]


def tries_on(writers: list[Writer], url: str):
    """Every try sent to `url` so far (while the writers run)."""
    return [t for write in all_writes(writers) for t in list(write.tries)
            if t.url.rstrip("/") == url]


def last_tries(writers: list[Writer], url: str) -> list:
    return [(t.status, t.error) for t in tries_on(writers, url)][-8:]


def accepted_on(writers: list[Writer], urls: list[str], after: float) -> int:
    return sum(1 for url in urls for t in tries_on(writers, url)
               if t.status == 200 and t.sent >= after)


def readiness(url: str) -> httpx.Response | str:
    try:
        return httpx.get(f"{url}/readyz", timeout=CLIENT_TIMEOUT)
    except httpx.TransportError as error:
        return repr(error)


def wait_drained_to_postgres(net: Net, cluster: NetnsCluster, node) -> None:
    """Until nothing the node sent PostgreSQL is still in flight (no socket of its host to
    PostgreSQL with unacknowledged bytes or a FIN on its way) and PostgreSQL is busy with nothing
    from it (no backend of its address running a statement or inside a transaction)."""
    host = cluster.host_of(node)
    peer = f"{net.postgres.host}:{net.postgres.port}"
    address = host.address(net.database)
    seen: dict[str, object] = {}

    def drained() -> bool:
        sockets = host.tcp_sockets(peer)
        seen["in flight"] = [s for s in sockets if int(s["send_q"]) > 0
                             or s["state"] in ("SYN-SENT", "FIN-WAIT-1", "CLOSING", "LAST-ACK")]
        seen["busy backends"] = net.postgres.query(
            "SELECT pid, state, left(query, 60) FROM pg_stat_activity "
            f"WHERE client_addr = '{address}' AND backend_type = 'client backend' "
            "AND (state IN ('idle in transaction', 'idle in transaction (aborted)') "
            "     OR (state = 'active' AND query NOT ILIKE 'LISTEN%'))")
        return not seen["in flight"] and not seen["busy backends"]
    wait_until(drained, 60, lambda: f"{node.url} to PostgreSQL: {seen}{cluster.logs()}", 0.1)


def placed_without_answer(writes: list[Write], logs: dict[str, list[str]]) -> int:
    """Writes in the log that no try placed with a 200: never acknowledged, or acknowledged only
    as a replay (an earlier try, answered 503 or not at all, had been placed)."""
    placed = {json.loads(p)["fragments"][0]["uuid"] for log in logs.values() for p in log}
    return sum(1 for w in writes if w.uuids[0] in placed
               and (w.accepted is None or w.accepted.replayed))


def start_writers(cluster: NetnsCluster, roots: dict[str, str], budget: Budget,
                  timeout: httpx.Timeout) -> list[AbortingWriter]:
    writers = [AbortingWriter(cluster.live_urls, roots, budget, seed=SEED + i, timeout=timeout,
                              interval=0.1, pause_after_failure=0.1) for i in range(WRITERS)]
    for writer in writers:
        writer.start()
    wait_until(lambda: acknowledged_count(writers) >= 20 or budget.left == 0, 60,
               lambda: f"{acknowledged_count(writers)} writes acknowledged{cluster.logs()}")
    return writers


def stop_all(subscribers: list[Subscriber]) -> None:
    for subscriber in subscribers:
        subscriber.stop()


# -- the faults --------------------------------------------------------------------------------
def test_a_node_partitioned_from_postgres_answers_503_and_heals_by_itself(cluster, net):
    x = cluster.nodes[0]
    others = [node.url for node in cluster.nodes[1:]]
    created, roots = canvases(cluster, 2)
    subscribers = [Subscriber(node.url, name, last_event_id=version, resume=cluster.live_urls)
                   for node in cluster.nodes for name, version in created.items()]
    start_subscribers(subscribers)
    on_x = [s for s in subscribers if s.url == x.url]
    budget = Budget(count=3000, seconds=120)
    try:
        writers = start_writers(cluster, roots, budget, httpx.Timeout(CLIENT_TIMEOUT))
        with net.lab.partition(cluster.host_of(x).link(net.database),
                               max_seconds=DATABASE_CUT_SECONDS + 30) as fault:
            cut = fault.cut_at

            def first_503():
                answered = [t.answered for t in tries_on(writers, x.url)
                            if t.status == 503 and t.answered >= cut]
                return min(answered) if answered else None
            first = wait_until(first_503, FIRST_503_BOUND + 10,
                               lambda: f"no 503 from {x.url}: {last_tries(writers, x.url)}"
                                       f"{cluster.logs()}")
            OBSERVED["database cut: first 503 after (s)"] = round(first - cut, 2)
            OBSERVED["database cut: first 503"] = next(
                f"{t.body[:160]} (sent {t.sent - cut:+.2f}s)" for t in tries_on(writers, x.url)
                if t.status == 503 and t.answered == first)
            assert first - cut <= FIRST_503_BOUND, f"first 503 {first - cut:.1f}s after the cut"

            ready: list = []
            wait_until(lambda: ready.append(readiness(x.url)) or (
                isinstance(ready[-1], httpx.Response) and ready[-1].status_code == 503), 30,
                lambda: f"/readyz of {x.url}: {ready[-1] if ready else None}")
            OBSERVED["database cut: /readyz 503 after (s)"] = round(time.monotonic() - cut, 2)
            assert "database" in ready[-1].json()["detail"], ready[-1].text

            def moved() -> bool:
                return all(any(e.type == "closing" and "store-unavailable" in (e.data or "")
                               for e in list(s.events)) and s.connections[-1] != x.url
                           for s in on_x)
            wait_until(moved, 30, lambda: "\n".join(s.describe() for s in on_x))
            OBSERVED["database cut: streams moved after (s)"] = round(time.monotonic() - cut, 2)
            wait_until(lambda: accepted_on(writers, others, after=cut) >= 10, 30,
                       lambda: f"writes on the other nodes: {statuses(all_writes(writers))}")
            fault.hold(DATABASE_CUT_SECONDS)
        healed = fault.healed_at

        wait_until(lambda: isinstance(r := readiness(x.url), httpx.Response)
                   and r.status_code == 200, 60,
                   lambda: f"/readyz of {x.url} after the heal: {readiness(x.url)}{cluster.logs()}")
        OBSERVED["database cut: ready again after the heal (s)"] = round(
            time.monotonic() - healed, 2)
        wait_until(lambda: any(t.status == 200 and t.sent >= healed
                               for t in tries_on(writers, x.url)) or budget.left == 0, 60,
                   lambda: f"no write accepted by {x.url} after the heal{cluster.logs()}")
        budget.stop.set()
        writes = join_writers(writers, timeout=60)

        assert not unexpected_tries(writes), unexpected_tries(writes)
        on_node = [t for w in writes for t in w.tries if t.url.rstrip("/") == x.url]
        # None hung: every write sent to the cut-off node was answered within CLIENT_TIMEOUT.
        unanswered = [(round(t.sent - cut, 1), t.error) for t in on_node if t.status is None]
        assert not unanswered, (f"writes to {x.url} unanswered within {CLIENT_TIMEOUT}s "
                                f"(sent s after the cut, error): {unanswered}{cluster.logs()}")
        during = [t for t in on_node if t.sent >= cut and t.answered <= healed]
        assert during and all(t.status == 503 and t.retry_after and "store-unavailable" in t.body
                              for t in during), [(t.status, t.body[:100]) for t in during]
        OBSERVED["database cut: writes answered 503 by the node"] = len(during)
        OBSERVED["database cut: slowest answer during the cut (s)"] = round(
            max(t.answered - t.sent for t in during), 2)

        wait_drained_to_postgres(net, cluster, x)
        settle_retries(cluster, writes)
        logs = converge(cluster, created, roots, writes, subscribers)
        OBSERVED["database cut: unanswered writes found in the log"] = placed_without_answer(
            writes, logs)
        for subscriber in on_x:
            assert len(subscriber.connections) >= 2, subscriber.describe()
    finally:
        budget.stop.set()
        stop_all(subscribers)


def test_a_node_partitioned_from_its_clients_is_left_and_serves_again_after(cluster, net):
    x = cluster.nodes[0]
    others = [node.url for node in cluster.nodes[1:]]
    created, roots = canvases(cluster, 2)
    # Subscribers resume where a health check would send them: not to a node known cut off.
    cut_off: set[str] = set()
    subscribers = [WatchfulSubscriber(node.url, name, last_event_id=version,
                                      resume=lambda: [u for u in cluster.live_urls()
                                                      if u not in cut_off],
                                      idle_timeout=IDLE_TIMEOUT)
                   for node in cluster.nodes for name, version in created.items()]
    start_subscribers(subscribers)
    on_x = [s for s in subscribers if s.url == x.url]
    budget = Budget(count=3000, seconds=120)
    try:
        writers = start_writers(cluster, roots, budget, httpx.Timeout(4.0, connect=2.0))
        with net.lab.partition(cluster.host_of(x).link(net.clients),
                               max_seconds=CLIENT_CUT_SECONDS + 30) as fault:
            cut = fault.cut_at
            cut_off.add(x.url)
            # Its subscribers hear nothing, leave, and resume on another node.
            wait_until(lambda: all(s.idled and s.connections[-1] != x.url for s in on_x), 30,
                       lambda: "\n".join(s.describe() for s in on_x))
            OBSERVED["client cut: streams moved after (s)"] = round(time.monotonic() - cut, 2)
            # Writes sent to it get no answer; the writers go on with the other nodes.
            wait_until(lambda: any(t.status is None and t.sent >= cut
                                   for t in tries_on(writers, x.url)), 30,
                       lambda: f"no write to {x.url} went unanswered: "
                               f"{last_tries(writers, x.url)}")
            wait_until(lambda: accepted_on(writers, others, after=cut) >= 10, 30,
                       lambda: f"writes on the other nodes: {statuses(all_writes(writers))}")
            fault.hold(CLIENT_CUT_SECONDS)
        healed = fault.healed_at
        cut_off.clear()
        # Nothing came back from it while it was cut off.
        assert not [t for t in tries_on(writers, x.url)
                    if t.status is not None and cut + 1.0 < t.answered < healed], (
            "answers from the cut-off node during the cut")

        # It serves again: writes (from the writers, and one of the test's) and new streams.
        again = Write(next(iter(roots)), *shape_set(roots[next(iter(roots))], "after the heal"),
                      new_uuid())
        with httpx.Client(base_url=x.url, timeout=10) as http:
            wait_until(lambda: again.post(http).status == 200, 60,
                       lambda: f"{again.tries[-3:]}{cluster.logs()}")
        OBSERVED["client cut: first write accepted after the heal (s)"] = round(
            again.accepted.answered - healed, 2)
        with SSEStream(x.url, f"/v1/scopes/{again.scope}/events",
                       {"Last-Event-ID": str(again.version - 1)}, timeout=10) as stream:
            assert stream.status == 200, stream.body
            event = stream.expect_event(timeout=30)
            assert (event.type, int(event.id)) == ("changeset", again.version)
        wait_until(lambda: any(t.status == 200 and t.sent >= healed
                               for t in tries_on(writers, x.url)) or budget.left == 0, 60,
                   lambda: f"no writer's write accepted by {x.url} after the heal")
        budget.stop.set()
        writes = join_writers(writers, timeout=60) + [again]

        assert not unexpected_tries(writes), unexpected_tries(writes)
        OBSERVED["client cut: writes to the node unanswered"] = sum(
            1 for w in writes for t in w.tries if t.url.rstrip("/") == x.url and t.status is None)
        wait_drained_to_postgres(net, cluster, x)
        settle_retries(cluster, writes)
        logs = converge(cluster, created, roots, writes, subscribers)
        OBSERVED["client cut: unanswered writes found in the log"] = placed_without_answer(
            writes, logs)
        for subscriber in on_x:
            assert len(subscriber.connections) >= 2, subscriber.describe()
        for subscriber in subscribers:
            if subscriber not in on_x:
                assert not subscriber.idled, subscriber.describe()
    finally:
        budget.stop.set()
        stop_all(subscribers)
