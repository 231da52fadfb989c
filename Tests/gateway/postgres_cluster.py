"""A private PostgreSQL 15 cluster for the gateway suites.

`PostgresCluster` runs `initdb` into a temporary directory (as the `postgres` OS user when the
tests run as root: initdb and postgres refuse root), trust authentication, listening on 127.0.0.1
at a free port and on a Unix socket inside that directory, fsync on, and is driven with
`pg_ctl` (start -w, restart -m immediate, stop -m immediate). Databases are created on demand;
SQL runs through `psql -At` over TCP as the `postgres` role.

Optional, for the network-namespace tests (netns_hosts.py): `command_prefix` runs every server
tool under a prefix (`ip netns exec NS`), and `host` is the address it listens on and `url()` names
instead of 127.0.0.1.

`shared()` is the one cluster of a test session, started lazily by whatever needs it first (the
`postgres` fixture, or `GatewayServer` when `JETSTREAM_TEST_STORE=postgres`); conftest calls
`stop_shared()` when the session ends, and an atexit hook stops it if that never happens.
`database_url_for(data_dir)` maps a gateway's data directory to a database of its own, the same
one on every start, so a restart "on the same data directory" reaches the same store.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid as uuidlib

DEFAULT_BINDIR = pathlib.Path("/usr/lib/postgresql/15/bin")
COMMAND_TIMEOUT = 120.0   # pg_ctl -t and subprocess bounds: a loaded 2-core machine
PSQL_TIMEOUT = 60.0
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "300",       # several gateway nodes, each with a pool, at once
    "shared_buffers": "32MB",
    "fsync": "on",
    "synchronous_commit": "on",
    "log_min_messages": "warning",
    "log_line_prefix": "'%m [%p] %a '",
}


class PostgresError(AssertionError):
    pass


def find_bindir() -> pathlib.Path:
    """The server binaries: `pg_config --bindir` when it names a directory with initdb, else
    the Debian path of PostgreSQL 15."""
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                             timeout=30, check=True).stdout.strip()
        if out and (pathlib.Path(out) / "initdb").exists():
            return pathlib.Path(out)
    except (OSError, subprocess.SubprocessError):
        pass
    if (DEFAULT_BINDIR / "initdb").exists():
        return DEFAULT_BINDIR
    raise PostgresError("PostgreSQL server binaries not found (install `postgresql`; "
                        "scripts/install-deps does)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class PostgresCluster:
    """One private cluster in a temporary directory; `start()` … `stop()`."""

    def __init__(self, base: pathlib.Path | None = None, user: str = "postgres",
                 command_prefix: list[str] | tuple[str, ...] = (), host: str = "127.0.0.1"):
        self.bindir = find_bindir()
        self._owned_base = base is None
        self.base = pathlib.Path(base or tempfile.mkdtemp(prefix="jetstream-pg-"))
        self.data = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.logfile = self.base / "postgres.log"
        self.user = user            # the database role (initdb -U)
        self.port: int | None = None
        self.databases: set[str] = set()
        self._lock = threading.Lock()
        self._as_postgres = os.geteuid() == 0
        self.command_prefix = list(command_prefix)
        self.host = host

    # -- running the server's tools -----------------------------------------------------------
    def _tool(self, name: str, *args: str, timeout: float = COMMAND_TIMEOUT,
              check: bool = True) -> subprocess.CompletedProcess:
        """Runs a server tool (initdb, pg_ctl), as the `postgres` OS user when we are root."""
        command = [str(self.bindir / name), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        command = [*self.command_prefix, *command]
        try:
            result = subprocess.run(command, cwd=self.base, capture_output=True, text=True,
                                    stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            raise PostgresError(f"{name} {' '.join(args)} did not finish within {timeout}s; "
                                f"log:\n{self.log_tail()}") from expired
        if check and result.returncode != 0:
            raise PostgresError(f"{name} {' '.join(args)} exited with {result.returncode}:\n"
                                f"{result.stdout}{result.stderr}\nlog:\n{self.log_tail()}")
        return result

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- life cycle ---------------------------------------------------------------------------
    def start(self, attempts: int = 5) -> "PostgresCluster":
        self.base.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self._as_postgres:
            shutil.chown(self.base, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
        if not (self.data / "PG_VERSION").exists():
            # --no-sync only skips initdb's own flush of the new files; the server runs fsync=on.
            self._tool("initdb", "-D", str(self.data), "-A", "trust", "-U", self.user,
                       "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
        for attempt in range(attempts):
            # A free port can be taken between probing and binding: then try another one.
            self.port = free_port()
            self._write_settings()
            result = self._tool("pg_ctl", "start", "-w", "-t", str(int(COMMAND_TIMEOUT)),
                                "-D", str(self.data), "-l", str(self.logfile), check=False)
            if result.returncode == 0:
                self.wait_ready()
                return self
            if attempt == attempts - 1:
                raise PostgresError(f"pg_ctl start failed:\n{result.stdout}{result.stderr}\n"
                                    f"log:\n{self.log_tail()}")
        return self

    def _write_settings(self) -> None:
        settings = dict(SERVER_SETTINGS, listen_addresses=quote_literal(self.host),
                        port=str(self.port),
                        unix_socket_directories=quote_literal(str(self.socket_dir)))
        text = "".join(f"{key} = {value}\n" for key, value in settings.items())
        # postgresql.conf includes postgresql.auto.conf last: its values win over initdb's.
        target = self.data / "postgresql.auto.conf"
        target.write_text("# written by Tests/gateway/postgres_cluster.py\n" + text)
        if self._as_postgres:
            shutil.chown(target, "postgres", "postgres")

    @property
    def running(self) -> bool:
        return self.port is not None and (self.data / "postmaster.pid").exists()

    def wait_ready(self, timeout: float = COMMAND_TIMEOUT) -> None:
        """Until a query answers (after start or restart the server may still be recovering)."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.psql("SELECT 1", check=False, timeout=10)
            if result.returncode == 0 and result.stdout.strip() == "1":
                return
            if time.monotonic() > deadline:
                raise PostgresError(f"PostgreSQL not ready within {timeout}s: {result.stderr}\n"
                                    f"log:\n{self.log_tail()}")
            time.sleep(0.2)

    def restart(self, mode: str = "immediate", while_down=None) -> None:
        """`pg_ctl restart -m MODE -w`: with `immediate`, every connection drops at once and the
        server recovers from its WAL, like a crash. With `while_down` (a callable), the restart
        is a `pg_ctl stop -m MODE` and a `pg_ctl start` with that call in between, so that a test
        can watch the outage (it runs even when it raises; then the error is raised after)."""
        timeout = str(int(COMMAND_TIMEOUT))
        if while_down is None:
            self._tool("pg_ctl", "restart", "-m", mode, "-w", "-t", timeout,
                       "-D", str(self.data), "-l", str(self.logfile))
        else:
            self._tool("pg_ctl", "stop", "-m", mode, "-w", "-t", timeout, "-D", str(self.data))
            try:
                while_down()
            finally:
                self._tool("pg_ctl", "start", "-w", "-t", timeout,
                           "-D", str(self.data), "-l", str(self.logfile))
        self.wait_ready()

    def stop(self, mode: str = "fast") -> None:
        """Stops the server (`pg_ctl stop`; `immediate` when `fast` does not finish) and removes
        the temporary directory this cluster created. Safe to call more than once."""
        if (self.data / "postmaster.pid").exists():
            result = self._tool("pg_ctl", "stop", "-m", mode, "-w", "-t", "30",
                                "-D", str(self.data), check=False)
            if result.returncode != 0 and mode != "immediate":
                result = self._tool("pg_ctl", "stop", "-m", "immediate", "-w", "-t", "30",
                                    "-D", str(self.data), check=False)
            if result.returncode != 0:
                self._kill_postmaster()
        self.port = None
        if self._owned_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def _kill_postmaster(self) -> None:
        """Last resort: SIGKILL the postmaster named in postmaster.pid (its children follow)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass

    # -- databases and SQL --------------------------------------------------------------------
    def url(self, dbname: str = "postgres") -> str:
        assert self.port is not None, "the cluster is not running"
        return f"postgresql://{self.user}@{self.host}:{self.port}/{dbname}"

    def psql(self, sql: str, dbname: str = "postgres", check: bool = True,
             timeout: float = PSQL_TIMEOUT) -> subprocess.CompletedProcess:
        """`psql -At` over TCP: unaligned, tuples only, one row a line, `|` between columns."""
        command = ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.url(dbname),
                   "-c", sql]
        env = dict(os.environ, PGAPPNAME="jetstream-tests", PGCONNECT_TIMEOUT="10")
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=env,
                                    stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            if not check:
                return subprocess.CompletedProcess(command, -1, "", f"timed out: {sql}")
            raise PostgresError(f"psql did not finish within {timeout}s: {sql}") from expired
        if check and result.returncode != 0:
            raise PostgresError(f"psql {sql!r} on {dbname} failed: {result.stderr}")
        return result

    def query(self, sql: str, dbname: str = "postgres") -> list[list[str]]:
        """The rows of a query, each a list of column texts."""
        out = self.psql(sql, dbname).stdout
        return [line.split("|") for line in out.splitlines() if line != ""]

    def scalar(self, sql: str, dbname: str = "postgres") -> str:
        rows = self.query(sql, dbname)
        assert len(rows) == 1 and len(rows[0]) == 1, f"{sql}: expected one value, got {rows}"
        return rows[0][0]

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database (a fresh name unless given); returns its name."""
        name = name or f"jetstream_{uuidlib.uuid4().hex[:16]}"
        with self._lock:
            self.psql(f"CREATE DATABASE {quote_ident(name)}")
            self.databases.add(name)
        return name

    def ensure_database(self, name: str) -> str:
        """The database `name`, created when it does not exist yet."""
        with self._lock:
            if name in self.databases:
                return name
            exists = self.psql(f"SELECT 1 FROM pg_database WHERE datname = {quote_literal(name)}"
                               ).stdout.strip() == "1"
            if not exists:
                self.psql(f"CREATE DATABASE {quote_ident(name)}")
            self.databases.add(name)
        return name

    def terminate_backends(self, application_name: str | None = None,
                           query_like: str | None = None, dbname: str | None = None,
                           where: str | None = None) -> list[int]:
        """`pg_terminate_backend` on every client backend matching all the given filters
        (`query_like` is an ILIKE pattern on the backend's current or last query; `where` is
        raw SQL over pg_stat_activity). Never this session's own backend. Returns the pids."""
        conditions = ["pid <> pg_backend_pid()", "backend_type = 'client backend'"]
        if application_name is not None:
            conditions.append(f"application_name = {quote_literal(application_name)}")
        if query_like is not None:
            conditions.append(f"query ILIKE {quote_literal(query_like)}")
        if dbname is not None:
            conditions.append(f"datname = {quote_literal(dbname)}")
        if where is not None:
            conditions.append(f"({where})")
        # Materialized first: the filters must hold before anything is terminated.
        rows = self.query("WITH victims AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE "
                          + " AND ".join(conditions)
                          + ") SELECT pid FROM victims WHERE pg_terminate_backend(pid)")
        return [int(row[0]) for row in rows]

    def backends(self, dbname: str | None = None) -> list[dict[str, str]]:
        """Client backends: pid, database, application_name, state and query (for messages)."""
        condition = f" AND datname = {quote_literal(dbname)}" if dbname else ""
        rows = self.query("SELECT pid, datname, application_name, state, "
                          "replace(replace(query, E'\\n', ' '), '|', '/') FROM pg_stat_activity "
                          "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                          + condition)
        keys = ["pid", "datname", "application_name", "state", "query"]
        return [dict(zip(keys, row)) for row in rows]


# -- the session's cluster ---------------------------------------------------------------------
_shared: PostgresCluster | None = None
_shared_lock = threading.Lock()


def shared() -> PostgresCluster:
    """The session's cluster, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            cluster = PostgresCluster()
            try:
                cluster.start()
            except BaseException:
                cluster.stop(mode="immediate")
                raise
            _shared = cluster
            atexit.register(stop_shared)
        return _shared


def stop_shared() -> None:
    global _shared
    with _shared_lock:
        cluster, _shared = _shared, None
    if cluster is not None:
        cluster.stop(mode="immediate")


def database_name_for(data_dir: pathlib.Path) -> str:
    """A database name derived from a data directory: the same directory, the same database."""
    digest = hashlib.sha256(str(pathlib.Path(data_dir).resolve()).encode()).hexdigest()
    return f"jetstream_{digest[:24]}"


def database_url_for(data_dir: pathlib.Path) -> str:
    """The URL of the database of a gateway's data directory (created on first use)."""
    cluster = shared()
    return cluster.url(cluster.ensure_database(database_name_for(data_dir)))


def store_is_postgres() -> bool:
    """Whether the suites run every gateway on PostgreSQL (`JETSTREAM_TEST_STORE=postgres`)."""
    store = os.environ.get("JETSTREAM_TEST_STORE", "").strip().lower()
    if store not in ("", "sqlite", "embedded", "postgres"):
        raise ValueError(f"JETSTREAM_TEST_STORE={store!r}: expected postgres or sqlite")
    return store == "postgres"
