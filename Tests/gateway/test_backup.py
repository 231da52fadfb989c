"""Online backups (docs/backups.md): `jetstream backup --data-dir D FILE` copies the embedded store
of a serving gateway while a writer loads it; `jetstream restore FILE --data-dir D2` and
`jetstream serve --data-dir D2` serve exactly the versions the backup printed, with the original's
log up to them. On PostgreSQL the documented `pg_dump -Fc` / `pg_restore` path, tested the same way.

The writer is one thread posting to the scopes in turn and waiting for each answer, so its
acknowledged change sets form one global order. A backup taken at one instant holds a prefix of
that order, whatever the instant: every scope's version in the copy must be the one that prefix
gives it. A copy of scopes taken at different instants, or of pages from before and after a
commit, breaks that.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import threading
import time

import httpx
import pytest

from cluster_helpers import history, wait_until
from gateway_helpers import Api, add, change, new_uuid, shapes_of

SCOPES = 3
MAX_WRITES = 900            # the writer's bound in change sets …
MAX_WRITE_SECONDS = 240     # … and in time
WRITES_BETWEEN_BACKUPS = 15
BACKUPS_UNDER_LOAD = 3
COMMAND_TIMEOUT = 120


# -- the command line ----------------------------------------------------------------------------
def run(binary: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT)


def backup(binary, data_dir: pathlib.Path, file: pathlib.Path, *flags: str) -> dict[str, int]:
    """`jetstream backup --json`: the scopes and versions it printed."""
    result = run(binary, "backup", "--data-dir", str(data_dir), "--json", *flags, str(file))
    assert result.returncode == 0, f"backup failed ({result.returncode}): {result.stderr}"
    document = json.loads(result.stdout)
    assert document["file"] == str(file), document
    assert [s["name"] for s in document["scopes"]] == sorted(s["name"] for s in document["scopes"])
    return {s["name"]: s["version"] for s in document["scopes"]}


def restore(binary, file: pathlib.Path, data_dir: pathlib.Path) -> dict[str, int]:
    result = run(binary, "restore", "--data-dir", str(data_dir), "--json", str(file))
    assert result.returncode == 0, f"restore failed ({result.returncode}): {result.stderr}"
    return {s["name"]: s["version"] for s in json.loads(result.stdout)["scopes"]}


# -- the writer ----------------------------------------------------------------------------------
class RoundRobinWriter(threading.Thread):
    """Posts one new shape at a time to each scope in turn, waiting for every answer, until
    stopped or MAX_WRITES / MAX_WRITE_SECONDS. `acknowledged` is the global order of the
    answered change sets: (scope, version, the shape's uuid)."""

    def __init__(self, url: str, scopes: dict[str, dict]):
        super().__init__(daemon=True)
        self.url = url
        self.roots = {name: state["rootUUID"] for name, state in scopes.items()}
        self.shapes = {name: list(shapes_of(state)) for name, state in scopes.items()}
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[str, int, str]] = []
        self.failures: list[str] = []

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)

    def run(self) -> None:
        deadline = time.monotonic() + MAX_WRITE_SECONDS
        names = list(self.roots)
        with httpx.Client(base_url=self.url, timeout=60.0) as http:
            for index in range(MAX_WRITES):
                if self.stop_event.is_set() or time.monotonic() > deadline:
                    return
                name = names[index % len(names)]
                uuid = new_uuid()
                fragments = [add(uuid, "Shape", x=index, y=1),
                             change(self.roots[name], "Canvas", shapes=self.shapes[name] + [uuid])]
                response = http.post(f"/v1/scopes/{name}/changesets", json={"fragments": fragments})
                if response.status_code != 200:
                    self.failures.append(f"{name}: {response.status_code} {response.text[:300]}")
                    return
                self.shapes[name].append(uuid)
                with self.lock:
                    self.acknowledged.append((name, response.json()["version"], uuid))

    def wait_for(self, count: int) -> None:
        wait_until(lambda: self.count() >= count or not self.is_alive(), 120,
                   lambda: f"{self.count()} of {count} writes; failures {self.failures}")
        assert not self.failures, self.failures
        assert self.count() >= count, f"the writer stopped after {self.count()} writes"

    def finish(self) -> list[tuple[str, int, str]]:
        self.stop_event.set()
        self.join(timeout=120)
        assert not self.is_alive(), "the writer did not stop"
        assert not self.failures, self.failures
        return list(self.acknowledged)


def create_scopes(api: Api, count: int = SCOPES) -> dict[str, dict]:
    return dict(api.create_canvas() for _ in range(count))


def load_and_capture(server, capture, captures: int = BACKUPS_UNDER_LOAD):
    """Starts the writer on three new scopes and calls `capture()` `captures` times while it
    writes, each after WRITES_BETWEEN_BACKUPS more writes; returns (created, the writer's
    global order, [(writes acknowledged before, capture's result, writes acknowledged after)])."""
    api = Api(server.url)
    scopes = create_scopes(api)
    api.close()
    writer = RoundRobinWriter(server.url, scopes)
    writer.start()
    taken = []
    try:
        for round_ in range(captures):
            writer.wait_for((round_ + 1) * WRITES_BETWEEN_BACKUPS)
            before = writer.count()
            result = capture(round_)
            taken.append((before, result, writer.count()))
        # The writes go on after the last copy: it is not simply the final state.
        writer.wait_for(writer.count() + WRITES_BETWEEN_BACKUPS)
    finally:
        order = writer.finish()
    return {name: state["version"] for name, state in scopes.items()}, order, taken


def check_prefix(versions: dict[str, int], created: dict[str, int],
                 order: list[tuple[str, int, str]], before: int, after: int) -> int:
    """The copy's versions are a prefix of the writer's global order, taken between the copy's
    start and end (at most the one write in flight then beyond `after`); returns its length."""
    taken = sum(versions[name] - created[name] for name in created)
    assert before <= taken <= after + 1, (
        f"the copy holds {taken} writes; {before} were acknowledged before it began and "
        f"{after} when it ended: {versions}")
    assert len(order) >= taken
    for name in created:
        in_prefix = sum(1 for scope, _, _ in order[:taken] if scope == name)
        assert versions[name] == created[name] + in_prefix, (
            f"{name} at {versions[name]} is not where the first {taken} writes of the global "
            f"order leave it ({created[name] + in_prefix}): the copy is not one instant; {versions}")
    return taken


def check_restored(restored_url: str, original: Api, versions: dict[str, int],
                   created: dict[str, int], order: list[tuple[str, int, str]]) -> None:
    """Every scope of the copy serves its version; its log is the original's up to it; its
    state holds exactly the shapes the log added up to it; and it takes the next version."""
    copy = Api(restored_url)
    try:
        for name, version in versions.items():
            state = copy.state(name)
            assert state["version"] == version, f"{name}: serves {state['version']}, not {version}"
        for name in created:
            version = versions[name]
            current, restored_log = history(copy.http, name, created[name])
            assert current == version
            _, original_log = history(original.http, name, created[name])
            assert restored_log == original_log[:version - created[name]], (
                f"{name}: the restored log is not the original's up to {version}")
            added = [uuid for scope, v, uuid in order if scope == name and v <= version]
            assert shapes_of(copy.state(name)) == added
            _, answer = copy.add_shapes(name)
            assert answer["version"] == version + 1
    finally:
        copy.close()


# -- the embedded store --------------------------------------------------------------------------
@pytest.mark.embedded_store
def test_a_backup_under_writes_is_one_instant_and_a_restored_copy_serves_its_versions(
        start_server, jetstream_bin, tmp_path):
    server = start_server()
    files = [tmp_path / f"backup-{i}.sqlite" for i in range(BACKUPS_UNDER_LOAD)]
    created, order, taken = load_and_capture(
        server, lambda i: backup(jetstream_bin, server.data_dir, files[i]))
    original = Api(server.url)
    try:
        for index, (before, versions, after) in enumerate(taken):
            assert set(created) <= set(versions), versions
            check_prefix({n: versions[n] for n in created}, created, order, before, after)
            # Nothing but the file itself is left beside it.
            assert sorted(p.name for p in tmp_path.glob(f".{files[index].name}*")) == []
            data_dir = tmp_path / f"restored-{index}"
            assert restore(jetstream_bin, files[index], data_dir) == versions
            restored = start_server(data_dir=data_dir)
            check_restored(restored.url, original, versions, created, order)
            restored.stop()
    finally:
        original.close()


@pytest.mark.embedded_store
def test_a_backup_under_four_writers_serves_the_originals_state_at_each_printed_version(
        start_server, jetstream_bin, tmp_path):
    """Four writers, each on its own scope and all on a shared one, while `jetstream backup` runs:
    the restored copy serves, for every scope, exactly the state the original answers for
    `?version=` the printed version (docs/history.md), byte for byte."""
    server = start_server("--snapshot-interval", "7")
    api = Api(server.url)
    own = create_scopes(api, 4)
    shared, shared_state = api.create_canvas()
    stop = threading.Event()
    counts = [0] * 4
    failures: list[str] = []

    def write(index: int, name: str, root: str) -> None:
        deadline = time.monotonic() + MAX_WRITE_SECONDS
        with httpx.Client(base_url=server.url, timeout=60.0) as http:
            for step in range(MAX_WRITES):
                if stop.is_set() or time.monotonic() > deadline:
                    return
                target, target_root = (shared, shared_state["rootUUID"]) if step % 2 else (name, root)
                uuid = new_uuid()
                fragments = [add(uuid, "Shape", x=step, y=index),
                             change(target_root, "Canvas", shapes={"insert": [uuid], "before": None})]
                response = http.post(f"/v1/scopes/{target}/changesets", json={"fragments": fragments})
                if response.status_code != 200:
                    failures.append(f"{target}: {response.status_code} {response.text[:300]}")
                    return
                counts[index] += 1

    writers = [threading.Thread(target=write, args=(i, name, state["rootUUID"]), daemon=True)
               for i, (name, state) in enumerate(own.items())]
    for writer in writers:
        writer.start()
    try:
        wait_until(lambda: min(counts) >= 20 or failures, 120, lambda: f"writes {counts}; {failures}")
        printed = backup(jetstream_bin, server.data_dir, tmp_path / "four.sqlite")
        # A few more sets from every writer after the backup ended (it may have taken long enough
        # on a loaded machine for the writers to be far along already): each scope moves on.
        after = list(counts)
        wait_until(lambda: all(c >= a + 4 for c, a in zip(counts, after)) or failures, 120,
                   lambda: f"writes {counts} (after the backup: {after}); {failures}")
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=120)
    assert not failures, failures
    data_dir = tmp_path / "four-restored"
    assert restore(jetstream_bin, tmp_path / "four.sqlite", data_dir) == printed
    restored = start_server(data_dir=data_dir)
    copy = Api(restored.url)
    try:
        for name in [*own, shared]:
            original = api.http.get(f"/v1/scopes/{name}", params={"version": printed[name]})
            assert original.status_code == 200, original.text
            served = copy.http.get(f"/v1/scopes/{name}")
            assert served.headers["etag"] == f'"{printed[name]}"'
            assert served.content == original.content, f"{name} at {printed[name]} differs from the original's"
            # The original moved on past the copy for every scope.
            assert api.state(name)["version"] > printed[name]
    finally:
        copy.close()
        api.close()


@pytest.mark.embedded_store
def test_a_backup_of_an_idle_server_restores_byte_for_byte_with_its_keys_and_not_its_deleted_scopes(
        start_server, jetstream_bin, tmp_path):
    server = start_server()
    api = Api(server.url)
    scopes = create_scopes(api, 2)
    for name in scopes:
        api.add_shapes(name, count=2)
        api.add_shapes(name, count=1)
    kept, other = list(scopes)
    state = api.state(kept)
    shape = new_uuid()
    keyed_body = {"fragments": [add(shape, "Shape", x=5, y=6),
                                change(state["rootUUID"], "Canvas", shapes=shapes_of(state) + [shape])]}
    keyed = api.http.post(f"/v1/scopes/{kept}/changesets", headers={"Idempotency-Key": "backup-key-1"},
                          json=keyed_body)
    assert keyed.status_code == 200, keyed.text
    deleted, _ = api.create_canvas()
    assert api.http.delete(f"/v1/scopes/{deleted}").status_code == 204
    live = api.http.get("/v1/scopes", params={"limit": 1000}).json()["scopes"]
    states = {s["name"]: api.http.get(f"/v1/scopes/{s['name']}").content for s in live}

    file = tmp_path / "idle.sqlite"
    result = run(jetstream_bin, "backup", "--data-dir", str(server.data_dir), str(file))
    assert result.returncode == 0, result.stderr
    *lines, summary = result.stdout.splitlines()
    printed = {name: int(version) for name, version in (line.split(" ") for line in lines)}
    assert printed == {s["name"]: s["version"] for s in live}
    assert deleted not in printed
    assert summary.startswith(f"backup of {len(live)} scopes written to {file}")

    restored = start_server(data_dir=tmp_path / "restored")
    restored.stop()   # a data directory with a store of its own: refused below, kept intact
    refused = run(jetstream_bin, "restore", "--data-dir", str(restored.data_dir), str(file))
    assert refused.returncode != 0 and "already holds a store" in refused.stderr, refused
    target = tmp_path / "restored-2"
    assert restore(jetstream_bin, file, target) == printed
    copy = start_server(data_dir=target)
    copy_api = Api(copy.url)
    try:
        for name, body in states.items():
            assert copy_api.http.get(f"/v1/scopes/{name}").content == body, name
        assert copy_api.http.get(f"/v1/scopes/{deleted}").status_code == 404
        # Idempotency keys are in the store, so in the backup: the retry is a replay.
        again = copy_api.http.post(f"/v1/scopes/{kept}/changesets",
                                   headers={"Idempotency-Key": "backup-key-1"}, json=keyed_body)
        assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
        assert again.json() == keyed.json()
        assert copy_api.state(kept)["version"] == printed[kept]
    finally:
        copy_api.close()
    # A data directory no gateway serves is copied the same way.
    api.close()
    server.stop()
    assert backup(jetstream_bin, server.data_dir, tmp_path / "stopped.sqlite") == printed


@pytest.mark.embedded_store
def test_backup_and_restore_refuse_clearly_and_write_nothing(start_server, jetstream_bin, tmp_path):
    file = tmp_path / "out.sqlite"
    missing = run(jetstream_bin, "backup", "--data-dir", str(tmp_path / "nowhere"), str(file))
    assert missing.returncode != 0 and "does not exist" in missing.stderr, missing
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    no_store = run(jetstream_bin, "backup", "--data-dir", str(empty_dir), str(file))
    assert no_store.returncode != 0 and "holds no store" in no_store.stderr, no_store
    assert list(empty_dir.iterdir()) == []      # never an empty store made by looking
    garbage_dir = tmp_path / "garbage"
    garbage_dir.mkdir()
    (garbage_dir / "jetstream.sqlite").write_bytes(b"Z" * 8192)
    garbage = run(jetstream_bin, "backup", "--data-dir", str(garbage_dir), str(file))
    assert garbage.returncode != 0 and "not a Jetstream store" in garbage.stderr, garbage
    assert not file.exists()

    server = start_server()
    file.write_bytes(b"precious")
    exists = run(jetstream_bin, "backup", "--data-dir", str(server.data_dir), str(file))
    assert exists.returncode != 0 and "--force" in exists.stderr, exists
    assert file.read_bytes() == b"precious"
    versions = backup(jetstream_bin, server.data_dir, file, "--force")
    assert "demo" in versions
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []

    in_use = run(jetstream_bin, "restore", "--data-dir", str(server.data_dir), str(file))
    assert in_use.returncode != 0 and "in use" in in_use.stderr, in_use
    no_file = run(jetstream_bin, "restore", "--data-dir", str(tmp_path / "r"), str(tmp_path / "none"))
    assert no_file.returncode != 0 and "no backup file" in no_file.stderr, no_file
    not_backup = run(jetstream_bin, "restore", "--data-dir", str(tmp_path / "r2"),
                     str(garbage_dir / "jetstream.sqlite"))
    assert not_backup.returncode != 0 and "not a Jetstream store" in not_backup.stderr
    assert not (tmp_path / "r2" / "jetstream.sqlite").exists()
    # A stale WAL of another store would be replayed into the restored file: refused.
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "jetstream.sqlite-wal").write_bytes(b"\0" * 32)
    refused = run(jetstream_bin, "restore", "--data-dir", str(stale), str(file))
    assert refused.returncode != 0 and "jetstream.sqlite-wal" in refused.stderr, refused
    assert not (stale / "jetstream.sqlite").exists()


# -- PostgreSQL ----------------------------------------------------------------------------------
@pytest.mark.cluster
def test_pg_dump_under_writes_restored_with_pg_restore_serves_one_instant(
        start_server, postgres, tmp_path):
    source = postgres.create_database()
    server = start_server("--database-url", postgres.url(source))
    dump = tmp_path / "jetstream.dump"
    # The commands of docs/backups.md; the tools of the cluster's own version.
    pg_dump = [str(postgres.bindir / "pg_dump"), "--format=custom", f"--file={dump}",
               postgres.url(source)]

    def take_dump(_: int) -> None:
        result = subprocess.run(pg_dump, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert result.returncode == 0, result.stderr

    created, order, taken = load_and_capture(server, take_dump, captures=1)
    (before, _, after), = taken
    target = postgres.create_database()
    result = subprocess.run(
        [str(postgres.bindir / "pg_restore"), "--exit-on-error", "--single-transaction",
         "--no-owner", f"--dbname={postgres.url(target)}", str(dump)],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert result.returncode == 0, result.stderr

    restored = start_server("--database-url", postgres.url(target))
    original = Api(server.url)
    copy = Api(restored.url)
    try:
        versions = {name: copy.state(name)["version"] for name in created}
        # Each restored scope serves exactly the original's state at its version.
        for name, version in versions.items():
            past = original.http.get(f"/v1/scopes/{name}", params={"version": version})
            assert past.status_code == 200, past.text
            assert copy.http.get(f"/v1/scopes/{name}").content == past.content, name
        check_prefix(versions, created, order, before, after)
        check_restored(restored.url, original, versions, created, order)
    finally:
        copy.close()
        original.close()


def test_the_backup_commands_are_documented():
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "backups.md").read_text()
    for text in ("jetstream backup --data-dir", "jetstream restore", "pg_dump --format=custom",
                 "pg_restore --exit-on-error --single-transaction --no-owner"):
        assert text in docs, text
    assert os.path.basename(__file__) in docs
