"""A PostgreSQL primary fails over to its standby under writes (postgres_replication.py: two
local clusters, synchronous streaming replication, `pg_ctl stop -m immediate` on the primary and
`pg_ctl promote` on the standby).

Three nodes name both servers in their `--database-url` with `target_session_attrs=read-write`,
as docs/operations.md tells operators to. While the primary is gone and the standby not yet
promoted, libpq finds no writable server: every node answers writes 503 `store-unavailable`,
never 200 and never a hang. After the promotion each node reconnects to the new primary by itself
and accepts writes again. Checked afterwards, on the promoted server: every write that got a 200
is in the log exactly once and whole, versions are contiguous, nothing unacknowledged is half
there, keyed writes retried land once, and every subscriber (on every node, resuming elsewhere
when its stream ends) converges to the log. Without `target_session_attrs=read-write` a node
could connect to the standby first (the hosts are listed standby first here) and never write at all."""
from __future__ import annotations

import time

import pytest

from cluster_helpers import (Budget, Cluster, Writer, acknowledged_count, join_writers, settle_retries,
                             statuses, unexpected_tries, wait_until)
from gateway_server import GatewayServer, ServerStartError
from postgres_replication import ReplicatedPostgres
from test_cluster_faults import canvases, converge, subscribe_everywhere

pytestmark = pytest.mark.cluster

NODES = 3
WRITERS = 4
SEED = 31


@pytest.fixture
def replicated():
    # In a directory of its own under /tmp: pytest's tmp_path is closed to the postgres OS user.
    servers = ReplicatedPostgres().start()
    try:
        yield servers
    finally:
        servers.stop()


@pytest.fixture
def cluster(jetstream_bin, replicated, tmp_path):
    nodes = Cluster(jetstream_bin, tmp_path, replicated).start(NODES)
    try:
        yield nodes
    finally:
        nodes.stop()


def test_a_primary_failover_under_writes_keeps_every_acknowledged_write(cluster, replicated):
    assert "target_session_attrs=read-write" in cluster.url and "," in cluster.url, cluster.url
    created, roots = canvases(cluster, 2)
    subscribers = subscribe_everywhere(cluster, created)
    try:
        # Paced, so that the count bound outlasts the failover whatever the machine's speed.
        budget = Budget(4000, 180)
        writers = [Writer(cluster.live_urls, roots, budget, seed=SEED + i, pause_after_failure=0.1,
                          interval=0.05) for i in range(WRITERS)]
        for writer in writers:
            writer.start()
        wait_until(lambda: acknowledged_count(writers) >= 30 or budget.left == 0, 120,
                   lambda: f"{acknowledged_count(writers)} writes acknowledged{cluster.logs()}")

        # From when the primary is gone (not when the stop was asked: a write answered before it
        # stopped may be a 200) to when the promotion starts.
        window: dict[str, float] = {}

        def while_no_primary() -> None:
            window["crashed"] = time.monotonic()
            # Until a write sent since is refused: the nodes see that no server can write.
            wait_until(lambda: any(t.sent >= window["crashed"] and t.status == 503
                                   for w in writers for write in list(w.writes) for t in list(write.tries)),
                       60, lambda: f"no 503 while there is no primary{cluster.logs()}")
            window["promoting"] = time.monotonic()

        replicated.fail_over(between=while_no_primary)
        crashed, promoting = window["crashed"], window["promoting"]
        promoted = time.monotonic()
        cluster.wait_ready(200, timeout=90)
        wait_until(lambda: acknowledged_count(writers, after=promoted) >= 30 or budget.left == 0, 120,
                   lambda: f"{acknowledged_count(writers, promoted)} writes acknowledged after the "
                           f"promotion{cluster.logs()}")
        budget.stop.set()
        writes = join_writers(writers, timeout=120)
    except BaseException:
        for subscriber in subscribers:
            subscriber.stop()
        raise
    counts = statuses(writes)
    assert not unexpected_tries(writes), unexpected_tries(writes)
    assert counts.get("transport", 0) == 0, f"a node stopped answering: {counts}{cluster.logs()}"
    assert acknowledged_count(writers, after=promoted) >= 30, counts
    # Sent once the primary was gone and answered before the promotion began: the nodes had no
    # writable server, so none of these may be a 200 (and there is at least one).
    between = [t for w in writes for t in w.tries if t.sent >= crashed and t.answered <= promoting]
    assert between and all(t.status == 503 for t in between), sorted({t.status for t in between})
    # The nodes now write to the promoted standby; the old primary is gone.
    assert replicated.primary is replicated.second and not replicated.second.in_recovery
    settle_retries(cluster, writes)
    converge(cluster, created, roots, writes, subscribers)


def test_a_node_pointed_at_a_standby_says_how_to_fix_its_database_url(jetstream_bin, replicated, tmp_path):
    """A read-only server is not a broken one: the node says what to change, not just that
    CREATE SCHEMA failed."""
    name = replicated.create_database()
    wait_until(lambda: replicated.second.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'"
                                              ).stdout.strip() == "1", 60, lambda: f"{name} on the standby")
    standby_only = f"postgresql://{replicated.user}@127.0.0.1:{replicated.second.port}/{name}"
    node = GatewayServer(jetstream_bin, tmp_path / "on-standby", ["--database-url", standby_only],
                         log_dir=tmp_path)
    with pytest.raises(ServerStartError):
        node.start()
    node.stop()
    log = node.log_tail()
    assert "read-only" in log and "target_session_attrs=read-write" in log, log
