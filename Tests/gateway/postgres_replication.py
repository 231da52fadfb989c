"""A PostgreSQL primary with a streaming standby, for the failover tests.

`ReplicatedPostgres` starts two private clusters (postgres_cluster.PostgresCluster) on loopback:
a primary, and a standby made from it with `pg_basebackup -R` that streams its WAL. Replication
is synchronous (`synchronous_standby_names` names the standby, `synchronous_commit = on`): a
commit is acknowledged only once the standby has flushed it, which is what lets a failover keep
every write a gateway acknowledged. `fail_over()` stops the primary in immediate mode (a crash:
no shutdown checkpoint, every connection cut) and promotes the standby with `pg_ctl promote`.

The gateways name both servers in one connection string and let libpq pick the writable one:
`url(dbname)` is `postgresql://postgres@127.0.0.1:STANDBY,127.0.0.1:PRIMARY/DB?target_session_attrs=read-write`.
Everything else a `Cluster` (cluster_helpers.py) asks of its database — `create_database`,
`url`, `psql` — goes to whichever server is the primary now.
"""
from __future__ import annotations

import pathlib
import shutil
import tempfile
import time

from postgres_cluster import COMMAND_TIMEOUT, PostgresCluster, PostgresError, quote_literal

STANDBY_NAME = "jetstream_standby"


class StandbyCluster(PostgresCluster):
    """A cluster whose data directory is a base backup of `primary`, started as its standby."""

    def __init__(self, primary: PostgresCluster, base: pathlib.Path):
        super().__init__(base=base, user=primary.user)
        self.primary = primary

    def start(self, attempts: int = 5) -> "StandbyCluster":
        self.base.mkdir(parents=True, exist_ok=True)
        if self._as_postgres:
            shutil.chown(self.base, "postgres", "postgres")
        if not (self.data / "PG_VERSION").exists():
            # -R writes standby.signal and the primary's address; -X stream copies the WAL the
            # backup needs. The address is written again by _write_settings, which owns
            # postgresql.auto.conf.
            self._tool("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary.port),
                       "-U", self.user, "-D", str(self.data), "-R", "-X", "stream", "--no-sync",
                       "-c", "fast")
        return super().start(attempts)

    def _write_settings(self) -> None:
        super()._write_settings()
        target = self.data / "postgresql.auto.conf"
        conninfo = (f"host=127.0.0.1 port={self.primary.port} user={self.user} "
                    f"application_name={STANDBY_NAME}")
        with target.open("a") as settings:
            settings.write(f"primary_conninfo = {quote_literal(conninfo)}\n")

    def promote(self) -> None:
        self._tool("pg_ctl", "promote", "-w", "-t", str(int(COMMAND_TIMEOUT)), "-D", str(self.data))

    @property
    def in_recovery(self) -> bool:
        return self.scalar("SELECT pg_is_in_recovery()") == "t"


class ReplicatedPostgres:
    """A primary and its synchronous standby; after `fail_over()` the standby is the primary."""

    def __init__(self, base: pathlib.Path | None = None):
        self._owned_base = base is None
        self.base = pathlib.Path(base or tempfile.mkdtemp(prefix="jetstream-pg-replicated-"))
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)   # the postgres OS user walks into both data directories
        self.first = PostgresCluster(base=self.base / "first")
        self.second = StandbyCluster(self.first, self.base / "second")
        self.primary: PostgresCluster = self.first
        self.user = self.first.user
        self.ports: tuple[int, int] | None = None

    def start(self) -> "ReplicatedPostgres":
        try:
            self.first.start()
            self.second.start()
            self.ports = (self.first.port, self.second.port)
            self.wait_streaming()
            # Only now: with no standby connected, every commit on the primary would wait.
            self.first.psql(f"ALTER SYSTEM SET synchronous_standby_names = {quote_literal(STANDBY_NAME)}")
            self.first.psql("SELECT pg_reload_conf()")
            self.wait_streaming(sync=True)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_streaming(self, sync: bool = False, timeout: float = COMMAND_TIMEOUT) -> None:
        """Until the primary reports the standby streaming (and, with `sync`, synchronous)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.first.psql(
                "SELECT state || '/' || sync_state FROM pg_stat_replication "
                f"WHERE application_name = {quote_literal(STANDBY_NAME)}", check=False).stdout.strip()
            if state.startswith("streaming/") and (not sync or state == "streaming/sync"):
                return
            if time.monotonic() > deadline:
                raise PostgresError(f"the standby is not streaming{' synchronously' if sync else ''} "
                                    f"within {timeout}s (state {state!r}); standby log:\n"
                                    f"{self.second.log_tail()}")
            time.sleep(0.1)

    def fail_over(self, between=None) -> float:
        """Crashes the primary (`pg_ctl stop -m immediate`) and promotes the standby, calling
        `between()` once the primary is gone and before the promotion; returns how long the
        promotion took, in seconds."""
        self.first.stop(mode="immediate")
        if between is not None:
            between()
        started = time.monotonic()
        self.second.promote()
        self.primary = self.second
        self.second.wait_ready()
        if self.second.in_recovery:
            raise PostgresError("the standby is still in recovery after pg_ctl promote")
        return time.monotonic() - started

    # -- what a Cluster asks of its database -------------------------------------------------
    def url(self, dbname: str = "postgres") -> str:
        assert self.ports is not None, "not started"
        # The standby first: libpq tries the hosts in order, and only target_session_attrs makes
        # it pass over a server that cannot write (after a failover, the order says nothing).
        hosts = ",".join(f"127.0.0.1:{port}" for port in reversed(self.ports))
        return f"postgresql://{self.user}@{hosts}/{dbname}?target_session_attrs=read-write"

    def create_database(self, name: str | None = None) -> str:
        return self.primary.create_database(name)

    def psql(self, sql: str, dbname: str = "postgres", **options):
        return self.primary.psql(sql, dbname, **options)

    def stop(self) -> None:
        self.second.stop(mode="immediate")
        self.first.stop(mode="immediate")
        if self._owned_base:
            shutil.rmtree(self.base, ignore_errors=True)
