"""A node whose link to PostgreSQL goes silent: a black hole between it and the database (no
error, no FIN, just no bytes — `fault_proxy.FaultProxy`), while a second node reaches the database
directly. Before `--database-timeout`, every write sent to the cut-off node hung until the link
healed and its `/readyz` hung too (docs/store.md, "When the database stops answering").

Checked here: each write to the cut-off node is answered `503 store-unavailable` with
`Retry-After` (none hangs: a client timeout far above the bound would fail the test), its
`/readyz` says 503 and why, its streams end with `closing` and new ones are refused with 503, the
other node keeps accepting writes, and once the link heals the node is ready again by itself; keyed writes then retried are each in the log once, nothing
unacknowledged is half there, and subscribers on both nodes converge on the log."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from cluster_helpers import (Budget, Cluster, Subscriber, Write, Writer, join_writers, settle_retries,
                             shape_set, start_subscribers, wait_until)
from cluster_nginx import ClusterNginx, node_counters
from fault_proxy import FaultProxy
from gateway_helpers import new_uuid
from gateway_server import GatewayServer
from sse_stream import SSEStream
from test_cluster_faults import converge

pytestmark = pytest.mark.cluster

# The default --database-timeout is 5 s; a write still unanswered after this fails the test (the
# slack is for a loaded machine). Before the bound, writes queued behind a batch lost in the black
# hole waited for its 10 s deadline and then for a connection attempt as long: about 20 s.
CLIENT_TIMEOUT = 12.0
WRITES_PER_WAVE = 3


@pytest.fixture
def two_nodes(jetstream_bin, postgres, tmp_path):
    """(cluster, the node behind the proxy, the direct node, the proxy)."""
    cluster = Cluster(jetstream_bin, tmp_path, postgres).start(1)
    proxy = FaultProxy(upstream=("127.0.0.1", postgres.port)).start()
    proxied_url = f"postgresql://{postgres.user}@127.0.0.1:{proxy.port}/{cluster.dbname}"
    cut = GatewayServer(jetstream_bin, tmp_path / "node-cut", ["--database-url", proxied_url],
                        log_dir=tmp_path)
    try:
        cut.start()
        cluster.nodes.insert(0, cut)
        yield cluster, cut, cluster.nodes[1], proxy
    finally:
        cluster.stop()
        proxy.close()


def post_all(node: GatewayServer, writes: list[Write]) -> None:
    """Each write once to `node`, all at once, each on its own client with CLIENT_TIMEOUT."""
    def post(write: Write) -> None:
        with httpx.Client(base_url=node.url, timeout=CLIENT_TIMEOUT) as http:
            write.post(http)
    threads = [threading.Thread(target=post, args=(write,), daemon=True) for write in writes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CLIENT_TIMEOUT + 10)
    assert not any(thread.is_alive() for thread in threads)


def stream_status(url: str, name: str) -> int:
    with SSEStream(url, f"/v1/scopes/{name}/events", timeout=CLIENT_TIMEOUT) as opened:
        return opened.status


def readiness(node: GatewayServer) -> httpx.Response:
    return httpx.get(f"{node.url}/readyz", timeout=CLIENT_TIMEOUT)


def test_a_node_cut_off_from_postgres_answers_503_and_heals_by_itself(two_nodes):
    cluster, cut, direct, proxy = two_nodes
    name, state = cluster.create_canvas(direct)
    created, root = state["version"], state["rootUUID"]
    before = [Write(name, *shape_set(root, f"before {i}"), new_uuid()) for i in range(2)]
    post_all(cut, before)
    assert [w.tries[-1].status for w in before] == [200, 200], [w.tries for w in before]
    subscribers = [Subscriber(node.url, name, last_event_id=created, resume=cluster.live_urls)
                   for node in (cut, direct)]
    start_subscribers(subscribers)

    # Writes keep going to the direct node throughout the cut.
    budget = Budget(count=400, seconds=120)
    writer = Writer(lambda: [direct.url], {name: root}, budget, seed=11, interval=0.02)
    writer.start()

    proxy.black_hole()
    during = [Write(name, *shape_set(root, f"during {i}"), new_uuid() if i % 2 else None)
              for i in range(2 * WRITES_PER_WAVE)]
    # The first wave goes into the black hole; the second is sent once the node's batch is being
    # swallowed, so it queues behind that batch.
    swallowed = proxy.stats.swallowed
    first = threading.Thread(target=post_all, args=(cut, during[:WRITES_PER_WAVE]), daemon=True)
    first.start()
    wait_until(lambda: proxy.stats.swallowed > swallowed, 10,
               lambda: f"the node's writes reach the black hole: {proxy.stats}")
    post_all(cut, during[WRITES_PER_WAVE:])
    first.join(timeout=CLIENT_TIMEOUT + 10)
    assert not first.is_alive()
    answers = [w.tries[-1] for w in during]
    assert all(a.status == 503 for a in answers), (
        f"writes to the cut-off node: {[(a.status, a.error, a.body[:120]) for a in answers]}{cluster.logs()}")
    assert all(a.retry_after for a in answers), answers
    assert all("/problems/store-unavailable" in a.body for a in answers), [a.body for a in answers]

    # Not ready, with the reason, and a write now is refused at once (still a 503).
    seen: list[httpx.Response] = []
    wait_until(lambda: seen.append(readiness(cut)) or seen[-1].status_code == 503, 30,
               lambda: f"/readyz of the cut-off node: {seen[-1].text if seen else None}")
    assert "database" in seen[-1].json()["detail"], seen[-1].text
    late = Write(name, *shape_set(root, "late"), new_uuid())
    post_all(cut, [late])
    assert late.tries[-1].status == 503, late.tries
    during.append(late)

    # Its stream was closed with `closing` (reason store-unavailable) and resumed on the direct
    # node; a new stream is refused with a 503 the proxy would pass on to another node.
    on_cut = subscribers[0]
    wait_until(lambda: any(e.type == "closing" and "store-unavailable" in e.data for e in list(on_cut.events))
               and on_cut.connections[-1] == direct.url, 30, on_cut.describe)
    refused = httpx.get(f"{cut.url}/v1/scopes/{name}/events", headers={"Accept": "text/event-stream"},
                        timeout=CLIENT_TIMEOUT)
    assert refused.status_code == 503 and "/problems/store-unavailable" in refused.text, refused.text
    assert refused.headers.get("retry-after"), refused.headers
    many = httpx.get(f"{cut.url}/v1/events", params={"scope": name}, headers={"Accept": "text/event-stream"},
                     timeout=CLIENT_TIMEOUT)
    assert many.status_code == 503, many.text

    # The other node served writes while this one was cut off.
    wait_until(lambda: sum(1 for w in list(writer.writes) if w.accepted) >= 5, 60,
               lambda: f"writes accepted by the direct node: {[w.tries for w in writer.writes][-3:]}")
    assert readiness(direct).status_code == 200

    proxy.heal()
    wait_until(lambda: readiness(cut).status_code == 200, 60,
               lambda: f"/readyz after the heal: {readiness(cut).text}{cluster.logs()}")
    again = Write(name, *shape_set(root, "after the heal"), new_uuid())
    wait_until(lambda: again.post(cluster.http(cut)).status == 200, 30, lambda: f"{again.tries[-3:]}")

    budget.stop.set()
    writes = before + during + [again] + join_writers([writer], 120)
    # Keyed writes refused during the cut are sent again with their keys: each lands once.
    settle_retries(cluster, writes)
    converge(cluster, {name: created}, {name: root}, writes, subscribers)


def test_behind_the_shipped_nginx_a_cut_off_nodes_scopes_go_to_the_other_node(two_nodes, tmp_path):
    """deploy/nginx/jetstream-cluster.conf: a scope routed to the node that lost its database is
    served by the other node, streams and writes, until the link heals."""
    cluster, cut, direct, proxy = two_nodes
    nginx = ClusterNginx(tmp_path / "nginx", [cut.port, direct.port]).start()
    client = httpx.Client(base_url=nginx.url, timeout=CLIENT_TIMEOUT)
    try:
        # A scope that the hash on its name sends to the cut-off node (half of them are).
        routed = None
        for _ in range(24):
            name, state = cluster.create_canvas(direct)
            before = node_counters(cut.url)[0]
            assert client.get(f"/v1/scopes/{name}").status_code == 200
            if node_counters(cut.url)[0] > before:
                routed = (name, state["rootUUID"])
                break
        assert routed, "no scope of 24 was routed to the first node"
        name, root = routed

        proxy.black_hole()
        # Once the node counts its database unavailable, it refuses new streams.
        wait_until(lambda: stream_status(cut.url, name) == 503, 30, lambda: readiness(cut).text)
        # Through nginx, the stream's request is passed on to the other node (the 503 is not the
        # answer), and the node counts as failed for fail_timeout: the scope's writes follow.
        with SSEStream(nginx.url, f"/v1/scopes/{name}/events", timeout=CLIENT_TIMEOUT) as opened:
            assert opened.status == 200, opened.body
        # A keyed write, retried after a 503 as a client does, lands on the other node.
        write = Write(name, *shape_set(root, "through nginx"), new_uuid())
        wait_until(lambda: write.post(client).status == 200, 30,
                   lambda: f"{write.tries[-3:]}; requests per node {node_counters(cut.url)} "
                           f"{node_counters(direct.url)}{cluster.logs(15)}")
        assert all(t.status in (200, 503) for t in write.tries), write.tries
        shapes = cluster.http(direct).get(f"/v1/scopes/{name}").json()
        assert all(uuid in json.dumps(shapes) for uuid in write.uuids), shapes
    finally:
        client.close()
        nginx.stop()
