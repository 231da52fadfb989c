"""Several gateway nodes on one PostgreSQL database, for test_cluster.py and test_cluster_faults.py.

- `Cluster`: N `jetstream serve --database-url` nodes, each with its own data directory, started
  at once (the schema migration must be safe then); `backend_ports(node)` maps a node to its
  PostgreSQL connections through /proc, so a test can terminate that node's LISTEN connection.
- `Writer`: a thread that POSTs change sets (two new shapes inserted into the canvas) to random
  nodes, some with an `Idempotency-Key`, and records every try of every write.
- `Subscriber`: a thread that follows `GET /v1/scopes/{name}/events` and records every event; with
  `resume=` it reconnects with `Last-Event-ID` to another node when its stream ends.
- `history()` reads the whole log of a scope as the *bytes* of each change set (the history
  endpoint and the `changeset` events carry the same payloads); `settle()` waits until every node
  serves the same log; `check_log()` and `check_stream()` are the invariants.

Every wait has a deadline and every load loop a bound in count and time.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import random
import re
import signal
import threading
import time

import httpx

from gateway_helpers import add, change, new_uuid, objects_of, scope_name, shapes_of
from gateway_server import GatewayServer
from postgres_cluster import PostgresCluster
from sse_stream import SSEStream, StreamClosed

SETTLE_TIMEOUT = 90.0      # nodes agreeing on a log, subscribers catching up
REQUEST_TIMEOUT = 60.0
SHAPES_PER_SET = 2


def wait_until(predicate, timeout: float, describe, interval: float = 0.1):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` passes; then
    fails with `describe()` (a callable, so that the message shows the latest state)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {describe()}")
        time.sleep(interval)


# -- nodes ---------------------------------------------------------------------------------------
class Cluster:
    """Gateway nodes sharing one database of a `PostgresCluster`."""

    def __init__(self, binary: pathlib.Path, base: pathlib.Path, postgres: PostgresCluster,
                 args: tuple[str, ...] = ()):
        self.binary, self.base, self.postgres = binary, base, postgres
        self.dbname = postgres.create_database()
        self.url = postgres.url(self.dbname)
        self.args = list(args)
        self.nodes: list[GatewayServer] = []
        self._clients: dict[str, httpx.Client] = {}

    def start(self, count: int) -> "Cluster":
        """Starts `count` more nodes at once."""
        new = [GatewayServer(self.binary, self.base / f"node-{len(self.nodes) + i}",
                             ["--database-url", self.url, *self.args], log_dir=self.base)
               for i in range(count)]
        self.nodes += new
        errors: list[BaseException] = []

        def start(node: GatewayServer) -> None:
            try:
                node.start()
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=start, args=(node,), daemon=True) for node in new]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert not any(t.is_alive() for t in threads), "a node did not start within 180s"
        assert not errors, f"nodes started at once on one database: {errors}"
        return self

    def assert_none_crashed(self) -> None:
        """Fails at once when a node exited by itself (anything but a SIGKILL of the test)."""
        crashed = [f"{node.url} exited with {node.process.returncode}"
                   for node in self.nodes if node.process is not None
                   and node.process.poll() not in (None, -signal.SIGKILL)]
        assert not crashed, f"nodes crashed: {crashed}{self.logs(60)}"

    def live(self) -> list[GatewayServer]:
        return [node for node in self.nodes if node.running]

    def live_urls(self) -> list[str]:
        return [node.url for node in self.live()]

    def http(self, node: GatewayServer | str) -> httpx.Client:
        """A client for the main thread (writers and subscribers have their own)."""
        url = node if isinstance(node, str) else node.url
        if url not in self._clients:
            self._clients[url] = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)
        return self._clients[url]

    def logs(self, lines: int = 25) -> str:
        """The tail of every node's log (without a crash report's thread and register dumps,
        so that the crash's reason shows) and of PostgreSQL's."""
        tails = [f"--- node {i} ({node.data_dir.name}, {'running' if node.running else 'down'}):"
                 f"\n{useful_tail(node, lines)}" for i, node in enumerate(self.nodes)]
        tails.append(f"--- postgres:\n{self.postgres.log_tail(lines)}")
        return "\n" + "\n".join(tails)

    def stop(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        for node in self.nodes:
            if node.running:
                try:
                    node.stop()
                except AssertionError:
                    node.kill()

    def readiness(self) -> dict[str, int | str]:
        """`GET /readyz` on every live node: its status (or the transport error)."""
        answers: dict[str, int | str] = {}
        for url in self.live_urls():
            try:
                answers[url] = self.http(url).get("/readyz", timeout=10).status_code
            except httpx.TransportError as error:
                answers[url] = repr(error)
        return answers

    def wait_ready(self, status: int, timeout: float = SETTLE_TIMEOUT) -> None:
        seen: dict[str, int | str] = {}

        def all_at() -> bool:
            self.assert_none_crashed()
            seen.clear()
            seen.update(self.readiness())
            return set(seen.values()) == {status}
        wait_until(all_at, timeout, lambda: f"/readyz {status} on every node: {seen}{self.logs()}",
                   interval=0.1)

    # -- scopes ------------------------------------------------------------------------------
    def create_canvas(self, node: GatewayServer, name: str | None = None) -> tuple[str, dict]:
        """A canvas scope created on `node`, once every live node serves it: (name, state)."""
        name = name or scope_name("canvas-cluster")
        response = self.http(node).put(f"/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}})
        assert response.status_code == 201, f"PUT {name} on {node.url}: {response.status_code} " \
                                            f"{response.text}{self.logs()}"
        self.wait_visible(name)
        return name, response.json()

    def wait_visible(self, name: str, timeout: float = SETTLE_TIMEOUT) -> None:
        statuses: dict[str, int] = {}

        def visible() -> bool:
            for url in self.live_urls():
                statuses[url] = self.http(url).get(f"/v1/scopes/{name}").status_code
            return all(status == 200 for status in statuses.values())
        wait_until(visible, timeout, lambda: f"GET {name} per node: {statuses}{self.logs()}")

    # -- PostgreSQL connections of a node ----------------------------------------------------
    def backend_ports(self, node: GatewayServer) -> set[int]:
        """The local ports of the node's TCP connections to PostgreSQL (pg_stat_activity's
        client_port), read from /proc: the node's socket inodes in /proc/net/tcp."""
        assert node.process is not None and node.running
        pid = node.process.pid
        inodes = set()
        for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:["):-1])
        ports = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = pathlib.Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == self.postgres.port:
                    ports.add(int(local.rsplit(":", 1)[1], 16))
        return ports

    def node_backends(self, node: GatewayServer) -> list[dict[str, str]]:
        ports = self.backend_ports(node)
        if not ports:
            return []
        rows = self.postgres.query(
            "SELECT pid, client_port, application_name, state, "
            "replace(replace(query, E'\\n', ' '), '|', '/') FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND client_port IN ("
            + ",".join(str(p) for p in sorted(ports)) + ")")
        return [dict(zip(["pid", "client_port", "application_name", "state", "query"], row))
                for row in rows]

    # The LISTEN connection: its last statement was LISTEN, or (once it has probed the
    # connection with another statement) its application_name says so (`jetstream-listener`).
    LISTENER = "(query ILIKE 'LISTEN%' OR application_name LIKE '%-listener')"

    def listener_pids(self, node: GatewayServer) -> set[int]:
        """The backends serving the node's LISTEN connection."""
        return {int(b["pid"]) for b in self.node_backends(node)
                if b["query"].strip().upper().startswith("LISTEN")
                or b["application_name"].endswith("-listener")}

    def terminate_listener(self, node: GatewayServer) -> list[int]:
        """`pg_terminate_backend` on the node's LISTEN connection; fails when there is none."""
        ports = self.backend_ports(node)
        pids = self.postgres.terminate_backends(
            dbname=self.dbname, where=self.LISTENER + " AND client_port IN ("
            + ",".join(str(p) for p in sorted(ports) or [0]) + ")")
        assert pids, (f"no LISTEN connection of node {node.url} found; its backends: "
                      f"{self.node_backends(node)}; all: {self.postgres.backends(self.dbname)}")
        return pids


BACKTRACE_NOISE = re.compile(r"^\s*$|^\s*(r\w+|rip|rflags|cs|fs|gs) 0x|^\s*\d+\s+(\[\w+\]\s+)*0x|"
                             r"^Thread \d+|^\.\.\.$|^Images|^0x[0-9a-f]+|^Registers:|^Backtrace took")


def useful_tail(node: GatewayServer, lines: int) -> str:
    try:
        text = node.log_path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join([line for line in text.splitlines()
                      if not BACKTRACE_NOISE.search(line)][-lines:])


# -- change sets -----------------------------------------------------------------------------------
def shape_set(root: str, label: str) -> tuple[list[str], bytes]:
    """A change set adding SHAPES_PER_SET shapes and inserting them at the canvas' end:
    (their uuids, the request body). Collection operations, so concurrent sets never conflict."""
    uuids = [new_uuid() for _ in range(SHAPES_PER_SET)]
    fragments = [add(u, "Shape", x=1, y=2, label=label) for u in uuids]
    fragments.append(change(root, "Canvas", shapes={"insert": uuids}))
    return uuids, json.dumps({"fragments": fragments}).encode()


@dataclasses.dataclass
class Try:
    url: str
    sent: float                    # time.monotonic() before sending
    answered: float                # … after the answer (or the transport error)
    status: int | None = None      # None: a transport error (no answer)
    replayed: bool = False
    retry_after: str | None = None
    body: str = ""
    error: str | None = None


@dataclasses.dataclass
class Write:
    scope: str
    uuids: list[str]
    body: bytes
    key: str | None
    tries: list[Try] = dataclasses.field(default_factory=list)

    @property
    def accepted(self) -> Try | None:
        return next((t for t in self.tries if t.status == 200), None)

    @property
    def version(self) -> int | None:
        accepted = self.accepted
        return json.loads(accepted.body)["version"] if accepted else None

    def post(self, http: httpx.Client) -> Try:
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Idempotency-Key"] = self.key
        sent = time.monotonic()
        try:
            response = http.post(f"/v1/scopes/{self.scope}/changesets", content=self.body,
                                 headers=headers)
        except httpx.TransportError as error:
            attempt = Try(str(http.base_url), sent, time.monotonic(), error=repr(error))
        else:
            attempt = Try(str(http.base_url), sent, time.monotonic(), response.status_code,
                          response.headers.get("idempotent-replayed") == "true",
                          response.headers.get("retry-after"), response.text)
        self.tries.append(attempt)
        return attempt


class Budget:
    """A bounded number of writes shared by writer threads, and a time bound."""

    def __init__(self, count: int, seconds: float):
        self.left, self.deadline = count, time.monotonic() + seconds
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.left <= 0 or self.stop.is_set() or time.monotonic() > self.deadline:
                return False
            self.left -= 1
            return True


class Writer(threading.Thread):
    """Writes shape sets to random scopes on random live nodes until the budget runs out.

    A keyed write (probability `key_ratio`) that gets a 503 or no answer is retried with the same
    key and body on another node when `retry` (at most `max_tries` tries, honouring Retry-After up
    to a second); an unkeyed one is never retried. Any other status ends the write."""

    def __init__(self, targets, scopes: dict[str, str], budget: Budget, seed: int,
                 key_ratio: float = 0.5, retry: bool = True, max_tries: int = 10,
                 pause_after_failure: float = 0.05, interval: float = 0.0):
        super().__init__(daemon=True)
        self.targets, self.scopes, self.budget = targets, scopes, budget
        self.rng = random.Random(seed)
        self.key_ratio, self.retry, self.max_tries = key_ratio, retry, max_tries
        self.pause, self.interval = pause_after_failure, interval
        self.writes: list[Write] = []
        self.crashed: BaseException | None = None
        self._clients: dict[str, httpx.Client] = {}

    def client(self, url: str) -> httpx.Client:
        if url not in self._clients:
            self._clients[url] = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)
        return self._clients[url]

    def run(self) -> None:
        try:
            while self.budget.take():
                scope = self.rng.choice(sorted(self.scopes))
                uuids, body = shape_set(self.scopes[scope], f"{self.name}:{len(self.writes)}")
                key = new_uuid() if self.rng.random() < self.key_ratio else None
                write = Write(scope, uuids, body, key)
                self.writes.append(write)
                self.send(write)
                if self.interval:
                    time.sleep(self.interval)
        except BaseException as error:  # noqa: BLE001 - the test reports it
            self.crashed = error
        finally:
            for client in self._clients.values():
                client.close()

    def send(self, write: Write) -> None:
        for _ in range(self.max_tries):
            urls = self.targets()
            if not urls:
                return
            previous = write.tries[-1].url.rstrip("/") if write.tries else None
            others = [u for u in urls if u.rstrip("/") != previous] or urls
            attempt = write.post(self.client(self.rng.choice(others)))
            if attempt.status == 200:
                return
            if attempt.status not in (None, 503):
                return
            if not (self.retry and write.key) or self.budget.stop.is_set():
                time.sleep(self.pause)
                return
            time.sleep(min(retry_after_seconds(attempt.retry_after), 1.0))


def retry_after_seconds(value: str | None) -> float:
    try:
        return max(0.05, float(value)) if value is not None else 0.2
    except ValueError:
        return 0.2


def run_writers(writers: list[Writer], timeout: float) -> list[Write]:
    for writer in writers:
        writer.start()
    return join_writers(writers, timeout)


def join_writers(writers: list[Writer], timeout: float) -> list[Write]:
    deadline = time.monotonic() + timeout
    for writer in writers:
        writer.join(timeout=max(0.1, deadline - time.monotonic()))
    assert not any(w.is_alive() for w in writers), f"a writer did not finish within {timeout}s"
    crashed = [w.crashed for w in writers if w.crashed]
    assert not crashed, crashed
    return [write for writer in writers for write in writer.writes]


def acknowledged_count(writers: list[Writer], after: float = 0.0) -> int:
    """Writes answered 200 so far (while the writers run), by tries sent after `after`."""
    return sum(1 for writer in writers for write in list(writer.writes)
               for attempt in list(write.tries) if attempt.status == 200 and attempt.sent >= after)


def settle_retries(cluster: "Cluster", writes: list[Write], timeout: float = SETTLE_TIMEOUT) -> None:
    """Retries every keyed write that has no 200 yet with its key and body on the live nodes
    until it has one (a replay when an earlier try was placed after all)."""
    deadline = time.monotonic() + timeout
    for write in writes:
        if not write.key or write.accepted:
            continue
        while True:
            attempt = write.post(cluster.http(random.choice(cluster.live_urls())))
            if attempt.status == 200:
                break
            assert attempt.status in (None, 503) and time.monotonic() < deadline, (
                f"retrying a keyed write: {attempt}{cluster.logs()}")
            time.sleep(min(retry_after_seconds(attempt.retry_after), 1.0))


def statuses(writes: list[Write]) -> dict[str, int]:
    """How many tries ended how: {"200": n, "503": n, "transport": n, …}."""
    counts: dict[str, int] = {}
    for write in writes:
        for attempt in write.tries:
            label = "transport" if attempt.status is None else str(attempt.status)
            counts[label] = counts.get(label, 0) + 1
    return counts


def unexpected_tries(writes: list[Write], allowed=(200, 503)) -> list[str]:
    return [f"{w.scope} on {t.url}: {t.status} {t.body[:300]}"
            for w in writes for t in w.tries if t.status is not None and t.status not in allowed]


def check_refusals(writes: list[Write], logs: dict[str, list[str]], share: float = 0.1) -> None:
    """Without faults a write is answered 200, or 503 with Retry-After when its node lost the
    version race on every retry: rare (at most `share` of the writes), and then the write is
    not in the log (a 503 is an answer, the client may send it again)."""
    refused = [t for w in writes for t in w.tries if t.status == 503]
    assert len(refused) <= share * len(writes), (
        f"{len(refused)} of {len(writes)} writes refused: {statuses(writes)}")
    for attempt in refused:
        assert attempt.retry_after, f"503 without Retry-After: {attempt}"
    placed = {json.loads(p)["fragments"][0]["uuid"] for log in logs.values() for p in log}
    unplaced = [w for w in writes if w.accepted is None]
    assert all(t.status == 503 for w in unplaced for t in w.tries), statuses(writes)
    assert not [w for w in unplaced if w.uuids[0] in placed], "a write answered 503 was placed"


# -- the log -----------------------------------------------------------------------------------
def split_history(text: str) -> tuple[int, list[str]]:
    """`{"version":C,"changesets":[…]}` → (C, the exact text of each change set)."""
    document = json.loads(text)
    decoder = json.JSONDecoder()
    position = text.index("[", text.index('"changesets"')) + 1
    payloads: list[str] = []

    def skip_space(i: int) -> int:
        while text[i] in " \t\r\n":
            i += 1
        return i

    position = skip_space(position)
    while text[position] != "]":
        _, end = decoder.raw_decode(text, position)
        payloads.append(text[position:end])
        position = skip_space(end)
        if text[position] == ",":
            position = skip_space(position + 1)
    assert [json.loads(p) for p in payloads] == document["changesets"]
    return document["version"], payloads


def history(http: httpx.Client, name: str, since: int) -> tuple[int, list[str]]:
    """Every change set of `name` after `since`, following the pages: (the node's current
    version, the payloads in order)."""
    payloads: list[str] = []
    current = since
    for _ in range(10_000):
        response = http.get(f"/v1/scopes/{name}/changesets", params={"since": since})
        assert response.status_code == 200, (
            f"GET {response.request.url}: {response.status_code} {response.text[:500]}")
        current, page = split_history(response.content.decode("utf-8"))
        if not page:
            return current, payloads
        payloads += page
        since = json.loads(page[-1])["version"]
    raise AssertionError(f"history of {name} did not end")


def settle(cluster: Cluster, name: str, since: int, version: int,
           timeout: float = SETTLE_TIMEOUT) -> list[str]:
    """Waits until every live node is at `version` for `name` and serves the same log after
    `since`, byte for byte; returns it."""
    seen: dict[str, object] = {}

    def agreed():
        cluster.assert_none_crashed()
        logs = {}
        for url in cluster.live_urls():
            state = cluster.http(url).get(f"/v1/scopes/{name}")
            if state.status_code != 200 or state.json()["version"] != version:
                seen[url] = f"state {state.status_code} {state.text[:200]}"
                return None
            current, payloads = history(cluster.http(url), name, since)
            seen[url] = f"history at {current}, {len(payloads)} change sets"
            if current != version:
                return None
            logs[url] = payloads
        distinct = {tuple(p) for p in logs.values()}
        if len(distinct) != 1:
            seen["logs"] = "the nodes serve different logs"
            return None
        return (next(iter(logs.values())),)   # a tuple: truthy also for an empty log
    (log,) = wait_until(agreed, timeout, lambda: f"{name} at version {version} on every node: "
                                                 f"{seen}{cluster.logs()}", interval=0.25)
    return log


def barrier(cluster: Cluster, node: GatewayServer, name: str, root: str) -> Write:
    """One more write after all the others: its version is the scope's last one."""
    uuids, body = shape_set(root, "barrier")
    write = Write(name, uuids, body, None)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        attempt = write.post(cluster.http(node))
        if attempt.status == 200:
            return write
        assert attempt.status == 503 and time.monotonic() < deadline, (
            f"barrier write on {node.url}: {attempt.status} {attempt.body[:300]} "
            f"{attempt.error}{cluster.logs()}")
        time.sleep(min(retry_after_seconds(attempt.retry_after), 1.0))
        write.tries.clear()


def check_log(payloads: list[str], created: int, writes: list[Write], state: dict) -> None:
    """The invariants of one scope's log after `created` (the creation's version), given every
    write sent to it and its final state:

    - versions are contiguous from created + 1, and every entry is one of the writes, whole;
    - every acknowledged write is there once, at the version it was answered, as answered
      (fragments, removed, idempotency key), and two writes never share a version;
    - an unacknowledged write is there whole or not at all;
    - the state's canvas holds exactly the added shapes, in log order."""
    entries = [json.loads(p) for p in payloads]
    versions = [e["version"] for e in entries]
    assert versions == list(range(created + 1, created + 1 + len(entries))), (
        f"versions not contiguous after {created}: {versions}")
    by_uuid = {u: w for w in writes for u in w.uuids}
    added_at: dict[str, int] = {}
    for entry in entries:
        added = [f["uuid"] for f in entry["fragments"] if f["type"] == "add"]
        assert added and added[0] in by_uuid, f"version {entry['version']} is no write: {entry}"
        write = by_uuid[added[0]]
        assert added == write.uuids, f"version {entry['version']} is not whole: {entry}"
        for uuid in added:
            assert uuid not in added_at, f"{uuid} added at {added_at[uuid]} and {entry['version']}"
            added_at[uuid] = entry["version"]
        assert entry.get("idempotencyKey") == write.key, (
            f"version {entry['version']}: idempotencyKey {entry.get('idempotencyKey')!r}, "
            f"sent {write.key!r}")
    answered_at: dict[int, Write] = {}
    for write in writes:
        places = {added_at.get(u) for u in write.uuids}
        accepted = write.accepted
        if accepted is None:
            assert len(places) == 1, f"an unacknowledged write is half there: {places}"
            continue
        answer = json.loads(accepted.body)
        version = answer["version"]
        assert places == {version}, (
            f"acknowledged at {version} ({accepted.url}), in the log at {places}")
        for other in write.tries:
            if other.status == 200:
                assert json.loads(other.body)["version"] == version, "a retry got another version"
        assert version not in answered_at, f"two writes answered with version {version}"
        answered_at[version] = write
        entry = entries[version - created - 1]
        assert {k: answer.get(k) for k in ("version", "fragments", "removed")} == \
               {k: entry.get(k) for k in ("version", "fragments", "removed")}, (
            f"answer {answer} differs from the log's {entry}")
    assert state["version"] == created + len(entries)
    in_order = [u for e in entries for f in e["fragments"] if f["type"] == "add" for u in [f["uuid"]]]
    assert shapes_of(state) == in_order, "the canvas is not the log's shapes in order"
    assert set(objects_of(state)) == set(in_order) | {state["rootUUID"]}


# -- subscribers -------------------------------------------------------------------------------
class Subscriber(threading.Thread):
    """Follows one scope's events. `last_event_id=None` starts with a snapshot. With `resume`
    (a callable giving the live node URLs) a stream that ends is resumed with Last-Event-ID on
    another node; without, the subscriber stops there."""

    def __init__(self, url: str, name: str, last_event_id: int | None = None, resume=None,
                 timeout: float = 600.0):
        super().__init__(daemon=True)
        self.url, self.scope, self.resume = url, name, resume
        self.start_id = last_event_id
        self.last_id: int | None = last_event_id
        self.events = []                 # every event, across connections
        self.connections: list[str] = []  # the node of each connection
        self.problems: list[str] = []    # refused connections, error/reset events
        self.ended: str | None = None    # "deleted", "closed" (without resume) or "stopped"
        self.opened = threading.Event()
        self.halt = threading.Event()
        self.deadline = time.monotonic() + timeout
        self._stream: SSEStream | None = None

    def run(self) -> None:
        url = self.url
        while not self.halt.is_set() and time.monotonic() < self.deadline:
            headers = {"Last-Event-ID": str(self.last_id)} if self.last_id is not None else None
            try:
                stream = SSEStream(url, f"/v1/scopes/{self.scope}/events", headers, timeout=30)
            except (OSError, StreamClosed, TimeoutError) as error:
                self.problems.append(f"connect {url}: {error!r}")
                if not self.resume:
                    self.ended = "closed"
                    return
                url = self.next_url(url)
                time.sleep(0.2)
                continue
            if stream.status != 200:
                self.problems.append(f"{url}: {stream.status} {stream.body[:200]!r}")
                if not self.resume:
                    self.ended = "closed"
                    return
                url = self.next_url(url)
                time.sleep(0.2)
                continue
            self._stream = stream
            self.connections.append(url)
            self.opened.set()
            try:
                if self.follow(stream):
                    return
            finally:
                stream.close()
            if not self.resume:
                self.ended = "closed"
                return
            url = self.next_url(url)
        self.ended = self.ended or "stopped"

    def follow(self, stream: SSEStream) -> bool:
        """Reads until the stream ends (False) or the subscriber is done (True)."""
        while not self.halt.is_set():
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

    def next_url(self, current: str) -> str:
        urls = self.resume() if self.resume else [current]
        others = [u for u in urls if u != current]
        return random.choice(others or urls or [current])

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=10)

    def describe(self) -> str:
        return (f"subscriber of {self.scope} (first node {self.url}, from {self.start_id}): "
                f"last id {self.last_id}, {len(self.events)} events, connections "
                f"{self.connections}, ended {self.ended}, problems {self.problems}")

    def wait_for(self, version: int, timeout: float = SETTLE_TIMEOUT) -> None:
        wait_until(lambda: (self.last_id or 0) >= version or not self.is_alive(), timeout,
                   self.describe, interval=0.1)
        assert (self.last_id or 0) >= version, f"never reached {version}: {self.describe()}"


def start_subscribers(subscribers: list[Subscriber], timeout: float = 60.0) -> None:
    for subscriber in subscribers:
        subscriber.start()
    for subscriber in subscribers:
        wait_until(lambda: subscriber.opened.is_set() or not subscriber.is_alive(), timeout,
                   subscriber.describe)
        assert subscriber.opened.is_set(), subscriber.describe()


def check_stream(subscriber: Subscriber, payloads: list[str], created: int,
                 allow_problems: bool = False) -> None:
    """The subscriber saw (after a snapshot, when it asked for none) exactly the log's change sets
    from its starting point on, in order, without a gap, each with the log's bytes. With
    `allow_problems`, refused connections, `error` events and `closing` (a node ending its streams,
    e.g. when its database stops answering) may come between them."""
    events = list(subscriber.events)
    if not allow_problems:
        assert not subscriber.problems, subscriber.describe()
    start = subscriber.start_id
    if start is None:
        assert events and events[0].type == "snapshot", subscriber.describe()
        start = int(events[0].id)
        events = events[1:]
    changesets = [e for e in events if e.type == "changeset"]
    tolerated = ("changeset", "error", "closing") if allow_problems else ("changeset", "error")
    others = [(e.type, e.id) for e in events if e.type not in tolerated]
    assert not others, f"unexpected events {others}: {subscriber.describe()}"
    expected = payloads[start - created:]
    got_ids = [int(e.id) for e in changesets]
    assert got_ids == list(range(start + 1, start + 1 + len(expected))), (
        f"ids not the log's versions {start + 1}..{start + len(expected)}: {got_ids}; "
        f"{subscriber.describe()}")
    for event, payload in zip(changesets, expected):
        assert event.data == payload, (
            f"event {event.id} differs from the log:\n{event.data}\n{payload}\n"
            f"{subscriber.describe()}")


def resume_matches(url: str, name: str, since: int, payloads: list[str], created: int) -> None:
    """A new stream on `url` resuming after `since` replays exactly the log after it."""
    expected = payloads[since - created:]
    with SSEStream(url, f"/v1/scopes/{name}/events", {"Last-Event-ID": str(since)}) as stream:
        assert stream.status == 200, stream.body
        events = stream.take(len(expected), timeout=SETTLE_TIMEOUT) if expected else []
        stream.assert_quiet(0.2)
    assert [(e.type, int(e.id)) for e in events] == [
        ("changeset", since + 1 + i) for i in range(len(expected))]
    assert [e.data for e in events] == expected, f"resume after {since} on {url} differs"
