"""The past of a scope, black box against the real binary: who and when (`at`, `subject`) on every
accepted change set, reads at a version (`GET /v1/scopes/{name}?version=N`), an object's history,
the difference between two versions, restore and revert (with If-Match, Idempotency-Key, conflicts,
retention) and a bounded concurrent mix of reverts, restores and writes.

Servers run with a small `--snapshot-interval` so that reads of the past cross snapshots, and the
retention tests with a small `--history-limit` so that pruning happens (demo schema:
Canvas{name, shapes: [Shape]}, Shape{x, y, width, height, color, label, kind}).
"""
from __future__ import annotations

import copy
import datetime
import re
import threading
import time

import httpx
import jwt
import pytest

from conftest import ServerPool
from gateway_helpers import (Api, add, apply_collection, assert_problem, change, etag_version,
                             new_uuid, objects_of, run_threads, scope_name, shapes_of)
from sse_stream import SSEStream

SNAPSHOT_INTERVAL = "3"
HISTORY_LIMIT = "5"
RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
PRUNE_TIMEOUT = 60.0

SECRET = "a-secret-for-the-past-of-a-scope-tests!!"
ISSUER = "https://issuer.test"
AUDIENCE = "jetstream-tests"


# -- servers -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def past_server(jetstream_bin, tmp_path_factory):
    """Snapshots every 3 change sets, the default (long) retention."""
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("past"))
    yield pool("--snapshot-interval", SNAPSHOT_INTERVAL)
    pool.stop_all()


@pytest.fixture(scope="module")
def past(past_server):
    client = Api(past_server.url)
    yield client
    client.close()


@pytest.fixture
def pruning(start_server):
    """A server of the test's own that snapshots every 3 and retains 5 change sets per scope."""
    server = start_server("--snapshot-interval", SNAPSHOT_INTERVAL,
                          "--history-limit", HISTORY_LIMIT)
    client = Api(server.url)
    yield server, client
    client.close()


def token(sub: str, exp_in: int = 600) -> str:
    payload = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + exp_in,
               "jetstream": {"read": ["canvas-*"], "write": ["canvas-*"]}}
    return jwt.encode(payload, SECRET, algorithm="HS256")


def bearer(value: str) -> dict:
    return {"Authorization": f"Bearer {value}"}


# -- helpers -----------------------------------------------------------------------------------

def get_at(api: Api, name: str, version) -> httpx.Response:
    return api.http.get(f"/v1/scopes/{name}", params={"version": version})


def state_at(api: Api, name: str, version: int) -> dict:
    response = get_at(api, name, version)
    assert response.status_code == 200, (
        f"?version={version}: {response.status_code} {response.text}")
    assert response.headers.get("etag") == f'"{version}"', response.headers
    return response.json()


def restore(api: Api, name: str, version, headers: dict | None = None):
    return api.http.post(f"/v1/scopes/{name}/restore", json={"version": version}, headers=headers)


def revert(api: Api, name: str, version, headers: dict | None = None):
    return api.http.post(f"/v1/scopes/{name}/changesets/{version}/revert", headers=headers)


def object_history(api: Api, name: str, uuid: str, **params):
    return api.http.get(f"/v1/scopes/{name}/objects/{uuid}/history", params=params or None)


def diff(api: Api, name: str, **params):
    return api.http.get(f"/v1/scopes/{name}/diff", params=params)


def changesets(api: Api, name: str, since: int = 0) -> list[dict]:
    """Every change set after `since`, following pages (bounded)."""
    found: list[dict] = []
    for _ in range(1000):
        response = api.history(name, since)
        assert response.status_code == 200, response.text
        page = response.json()
        found += page["changesets"]
        if not page["changesets"] or page["changesets"][-1]["version"] >= page["version"]:
            return found
        since = page["changesets"][-1]["version"]
    raise AssertionError("changesets paging did not end")


def apply_set(objects: dict[str, dict], fragments: list[dict], removed: list[str]) -> dict:
    """A change set as a client folds it into uuid → {clsName, properties}."""
    objects = copy.deepcopy(objects)
    for fragment in fragments:
        uuid = fragment["uuid"]
        if fragment["type"] == "add":
            objects[uuid] = {"clsName": fragment["clsName"],
                             "properties": dict(fragment.get("properties", {}))}
            continue
        assert uuid in objects, f"a change of an unknown object {uuid}: {fragment}"
        properties = objects[uuid]["properties"]
        for key, value in fragment.get("properties", {}).items():
            if isinstance(value, dict):
                value = apply_collection(properties.get(key, []), value)
            properties[key] = value
    for uuid in removed:
        assert uuid in objects, f"removed {uuid} is not there"
        del objects[uuid]
    return objects


def oldest_retained(api: Api, name: str) -> int:
    """Waits (bounded) until pruning made `changesets?since=0` a 410 and its `oldestVersion` is
    stable; checks that a read at version 0 is a 410 naming the same oldestVersion; returns it."""
    deadline = time.monotonic() + PRUNE_TIMEOUT
    while True:
        first = api.history(name, 0)
        if first.status_code == 410:
            gone = get_at(api, name, 0)
            again = api.history(name, 0)
            oldest = first.json()["oldestVersion"]
            if again.status_code == 410 and again.json()["oldestVersion"] == oldest:
                body = assert_problem(first, 410, "history-gone")
                read = assert_problem(gone, 410, "history-gone")
                assert read["oldestVersion"] == body["oldestVersion"], (read, body)
                return body["oldestVersion"]
        else:
            assert first.status_code == 200, first.text
        assert time.monotonic() < deadline, (
            f"no pruning within {PRUNE_TIMEOUT}s: {first.text[:300]}")
        time.sleep(0.1)


def parse_at(text: str) -> datetime.datetime:
    assert isinstance(text, str) and RFC3339_MS.match(text), f"not RFC 3339 UTC with ms: {text!r}"
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)


def assert_sane_time(text: str) -> None:
    """Same calendar neighbourhood as this machine's clock (not a timing assertion)."""
    at = parse_at(text)
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs(at - now) < datetime.timedelta(days=1), (text, now)


def shape_scenario(api: Api, name: str) -> list[dict]:
    """~15 accepted change sets over adds, moves, edits, removals and reorders; the state after
    each (index = version, starting with the creation state)."""
    states = [api.state(name)]
    root = states[0]["rootUUID"]

    def record(body: dict) -> None:
        state = api.state(name)
        assert state["version"] == body["version"] == len(states)
        states.append(state)

    (a, b), answer = api.add_shapes(name, count=2)
    record(answer)
    record(api.apply(name, [change(a, "Shape", x=10, y=20)]))
    record(api.apply(name, [change(root, "Canvas", name="first")]))
    (c,), answer = api.add_shapes(name, label="third", color=0x336699FF)
    record(answer)
    record(api.apply(name, [change(b, "Shape", width=5, height=6, kind="oval")]))
    record(api.apply(name, [change(root, "Canvas", shapes=[a, c])]))        # b leaves
    record(api.apply(name, [change(c, "Shape", label="moved", x=-3.5)]))
    d, e = new_uuid(), new_uuid()
    record(api.apply(name, [add(d, "Shape", x=1, y=1), add(e, "Shape", x=2, y=2, label="e"),
                            change(root, "Canvas", shapes=[e, a, c, d])]))
    record(api.apply(name, [change(root, "Canvas", shapes=[d, c, a, e])]))  # reorder
    record(api.apply(name, [change(a, "Shape", color=None, label="a")]))
    record(api.apply(name, [change(root, "Canvas", shapes=[d, e])]))        # a and c leave
    record(api.apply(name, [change(root, "Canvas", name=None)]))
    f = new_uuid()
    record(api.apply(name, [add(f, "Shape", x=9, y=9),
                            change(root, "Canvas", shapes=[d, e, f])]))
    record(api.apply(name, [change(e, "Shape", x=0, y=0, width=1)]))
    record(api.apply(name, [change(f, "Shape", kind="oval"), change(d, "Shape", label="d")]))
    return states


def assert_same_state(read: dict, recorded: dict) -> None:
    assert read["name"] == recorded["name"]
    assert read["version"] == recorded["version"]
    assert read["rootUUID"] == recorded["rootUUID"]
    assert objects_of(read) == objects_of(recorded), (read["version"], read, recorded)
    assert len(read["fragments"]) == len(recorded["fragments"])


# -- 1. at and subject -------------------------------------------------------------------------

def test_anonymous_change_sets_record_server_time_and_a_null_subject(past, past_server):
    name, state = past.create_canvas()
    with SSEStream(past_server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        answer = past.apply(name, [change(state["rootUUID"], "Canvas", name="when")])
        assert answer["subject"] is None
        assert_sane_time(answer["at"])
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answer["version"]))
        assert event.json()["at"] == answer["at"] and event.json()["subject"] is None
        assert event.json()["fragments"] == answer["fragments"]
    [logged] = changesets(past, name, state["version"])
    assert logged["version"] == answer["version"]
    assert logged["at"] == answer["at"] and logged["subject"] is None


def test_a_token_s_subject_is_recorded_in_answer_event_page_and_object_history(start_server,
                                                                               tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(SECRET + "\n")
    server = start_server("--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER,
                          "--jwt-audience", AUDIENCE, "--snapshot-interval", SNAPSHOT_INTERVAL)
    api = Api(server.url)
    ada, grace = bearer(token("ada")), bearer(token("grace"))
    name = scope_name()
    assert api.create(name, headers=ada).status_code == 201
    state = api.http.get(f"/v1/scopes/{name}", headers=ada).json()
    root, shape = state["rootUUID"], new_uuid()
    with SSEStream(server.url, f"/v1/scopes/{name}/events", ada) as stream:
        assert stream.expect_event().type == "snapshot"
        posted = api.http.post(f"/v1/scopes/{name}/changesets", headers=ada, json={"fragments": [
            add(shape, "Shape", x=1, y=2), change(root, "Canvas", shapes=[shape])]})
        assert posted.status_code == 200, posted.text
        answer = posted.json()
        assert answer["subject"] == "ada"
        assert_sane_time(answer["at"])
        moved = api.http.post(f"/v1/scopes/{name}/changesets", headers=ada,
                              json={"fragments": [change(shape, "Shape", x=40)]})
        assert moved.status_code == 200, moved.text
        # Another subject reverts: the revert is theirs.
        reverted = api.http.post(f"/v1/scopes/{name}/changesets/{moved.json()['version']}/revert",
                                 headers=grace)
        assert reverted.status_code == 200, reverted.text
        assert reverted.json()["subject"] == "grace"
        assert reverted.json()["revertOf"] == moved.json()["version"]
        events = [e.json() for e in stream.take(3)]
    assert [e["subject"] for e in events] == ["ada", "ada", "grace"]
    assert events[0]["at"] == answer["at"]
    page = api.http.get(f"/v1/scopes/{name}/changesets", params={"since": 0}, headers=ada).json()
    assert [(c["version"], c["subject"]) for c in page["changesets"]] == [
        (1, "ada"), (2, "ada"), (3, "grace")]
    assert [c["at"] for c in page["changesets"]] == [e["at"] for e in events]
    for logged in page["changesets"]:
        assert_sane_time(logged["at"])
    history = api.http.get(f"/v1/scopes/{name}/objects/{shape}/history", headers=ada).json()
    assert [(e["version"], e["subject"]) for e in history["entries"]] == [
        (3, "grace"), (2, "ada"), (1, "ada")]
    api.close()


# -- 2. reads at a version ---------------------------------------------------------------------

def test_every_version_reads_as_it_was_across_snapshots(past):
    name, _ = past.create_canvas()
    states = shape_scenario(past, name)
    current = states[-1]["version"]
    assert current >= 15
    for version, recorded in enumerate(states):
        assert_same_state(state_at(past, name, version), recorded)
    # A matching If-None-Match at a version is 304; another is the state.
    middle = current // 2
    cached = past.http.get(f"/v1/scopes/{name}", params={"version": middle},
                           headers={"If-None-Match": f'"{middle}"'})
    assert cached.status_code == 304 and cached.headers.get("etag") == f'"{middle}"'
    fresh = past.http.get(f"/v1/scopes/{name}", params={"version": middle},
                          headers={"If-None-Match": f'"{current}"'})
    assert fresh.status_code == 200 and fresh.json()["version"] == middle
    # The current version read at its number is the state itself.
    assert state_at(past, name, current) == past.state(name)


def test_a_version_ahead_is_404_and_a_bad_version_is_400(past):
    name, state = past.create_canvas()
    past.add_shapes(name)
    for ahead in (state["version"] + 2, 10**9):
        body = assert_problem(get_at(past, name, ahead), 404, "version-not-found")
        assert body.get("version") == state["version"] + 1, body
    for bad in ("x", "-1", "1.5", ""):
        assert_problem(get_at(past, name, bad), 400)
    assert_problem(get_at(past, scope_name(), 0), 404, "not-found")


def test_retained_versions_are_exactly_oldest_to_current_and_survive_a_restart(pruning):
    server, api = pruning
    name, _ = api.create_canvas()
    states = shape_scenario(api, name)
    current = states[-1]["version"]
    oldest = oldest_retained(api, name)
    assert 0 < oldest <= current, oldest
    assert api.history(name, oldest).status_code == 200
    for version in range(oldest, current + 1):
        assert_same_state(state_at(api, name, version), states[version])
    for version in range(0, oldest):
        body = assert_problem(get_at(api, name, version), 410, "history-gone")
        assert body["oldestVersion"] == oldest, body
    assert_problem(get_at(api, name, current + 1), 404, "version-not-found")
    # Diff, restore and revert reach no further back.
    assert assert_problem(diff(api, name, **{"from": oldest - 1, "to": current}), 410,
                          "history-gone")["oldestVersion"] == oldest
    assert assert_problem(restore(api, name, oldest - 1), 410,
                          "history-gone")["oldestVersion"] == oldest
    # Change set `oldest` needs state oldest-1 to be undone: it is not retained as a change set.
    assert_problem(revert(api, name, oldest), 404, "version-not-found")
    assert api.state(name)["version"] == current

    # The snapshots and the log are the store's: after a restart the same versions read the same.
    api.close()
    server.restart()
    api = Api(server.url)
    try:
        oldest = oldest_retained(api, name)
        assert 0 < oldest <= current
        for version in range(oldest, current + 1):
            assert_same_state(state_at(api, name, version), states[version])
        assert_problem(get_at(api, name, oldest - 1), 410, "history-gone")
    finally:
        api.close()


# -- 3. an object's history --------------------------------------------------------------------

def test_object_history_pages_newest_first_and_ends_with_its_removal(past):
    name, state = past.create_canvas()
    root, s, t = state["rootUUID"], new_uuid(), new_uuid()
    key = new_uuid()
    answers = {
        1: past.apply(name, [add(s, "Shape", x=1, y=2), change(root, "Canvas", shapes=[s])]),
        2: past.apply(name, [change(s, "Shape", x=10)]),
        3: past.apply(name, [add(t, "Shape", x=0, y=0), change(root, "Canvas", shapes=[s, t])]),
        4: past.apply(name, [change(s, "Shape", label="hello")], headers={"Idempotency-Key": key}),
        5: past.apply(name, [change(t, "Shape", x=5)]),
        6: past.apply(name, [change(s, "Shape", width=50, height=60), change(t, "Shape", y=1)]),
        7: past.apply(name, [change(root, "Canvas", shapes=[t])]),   # s leaves
    }
    assert [a["version"] for a in answers.values()] == list(range(1, 8))
    assert answers[7]["removed"] == [s]

    pages, before = [], None
    for _ in range(10):
        params = {"limit": 2, **({"before": before} if before is not None else {})}
        response = object_history(past, name, s, **params)
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["uuid"] == s
        assert len(page["entries"]) <= 2
        pages.append([e["version"] for e in page["entries"]])
        before = page["next"]
        if before is None:
            break
        assert isinstance(before, int), page
    assert before is None, f"paging did not end: {pages}"
    assert pages == [[7, 6], [4, 2], [1]]

    whole = object_history(past, name, s).json()
    assert whole["next"] is None
    entries = whole["entries"]
    versions = [e["version"] for e in entries]
    assert versions == [7, 6, 4, 2, 1] and versions == sorted(versions, reverse=True)
    logged = {c["version"]: c for c in changesets(past, name, 0)}
    for entry in entries:
        version = entry["version"]
        assert set(entry) >= {"version", "at", "subject", "idempotencyKey", "method", "fragments"}
        assert entry["at"] == logged[version]["at"] == answers[version]["at"]
        assert entry["subject"] is None
        assert entry["idempotencyKey"] == (key if version == 4 else None)
        assert entry["fragments"] == [f for f in answers[version]["fragments"] if f["uuid"] == s]
        assert entry.get("removed", False) is (version == 7)
    assert entries[0]["fragments"] == [] and entries[0]["removed"] is True
    assert entries[-1]["fragments"][0]["type"] == "add"

    # Another object's history names only the sets about it (3's add, 5, 6), not s's.
    assert [e["version"] for e in object_history(past, name, t).json()["entries"]] == [6, 5, 3]


def test_object_history_errors(past):
    name, _ = past.create_canvas()
    (shape,), _ = past.add_shapes(name)
    assert_problem(object_history(past, name, new_uuid()), 404)
    assert_problem(object_history(past, scope_name(), shape), 404, "not-found")
    assert_problem(object_history(past, name, "not-a-uuid"), 400)
    for params in ({"limit": 0}, {"limit": "x"}, {"before": 0}, {"before": "x"}):
        assert_problem(object_history(past, name, shape, **params), 400)


def test_object_history_of_an_object_known_only_before_retention_is_404(pruning):
    _, api = pruning
    name, state = api.create_canvas()
    (gone,), _ = api.add_shapes(name)
    api.apply(name, [change(state["rootUUID"], "Canvas", shapes=[])])
    assert object_history(api, name, gone).status_code == 200
    for index in range(8):
        api.apply(name, [change(state["rootUUID"], "Canvas", name=f"n{index}")])
    oldest_retained(api, name)
    assert_problem(object_history(api, name, gone), 404)
    # An object that still exists but whose changes all fell out: an empty page.
    (kept,), added = api.add_shapes(name)
    for index in range(10):
        api.apply(name, [change(state["rootUUID"], "Canvas", name=f"m{index}")])
    deadline = time.monotonic() + PRUNE_TIMEOUT
    while oldest_retained(api, name) < added["version"]:
        assert time.monotonic() < deadline, "the add was never pruned"
        time.sleep(0.1)
    page = object_history(api, name, kept)
    assert page.status_code == 200, page.text
    assert page.json() == {"uuid": kept, "entries": [], "next": None}


# -- 4. diff -----------------------------------------------------------------------------------

def test_diff_is_one_change_set_from_a_to_b(past):
    name, state = past.create_canvas()
    root = state["rootUUID"]
    (p, q, r), _ = past.add_shapes(name, count=3)
    past.apply(name, [change(r, "Shape", label="r", color=0x11223344)])
    a_state = past.state(name)
    a = a_state["version"]
    past.apply(name, [change(p, "Shape", x=11)])
    past.apply(name, [change(q, "Shape", label="temporary")])
    past.apply(name, [change(q, "Shape", label="")])           # q ends as it was at A
    s = new_uuid()
    past.apply(name, [add(s, "Shape", x=3, y=4, label="new"),
                      change(root, "Canvas", shapes=[p, q, r, s])])
    past.apply(name, [change(root, "Canvas", shapes=[s, p, q])])  # r leaves, order changes
    past.apply(name, [change(root, "Canvas", name="renamed")])
    b_state = past.state(name)
    b = b_state["version"]

    response = diff(past, name, **{"from": a, "to": b})
    assert response.status_code == 200, response.text
    forward = response.json()
    assert (forward["from"], forward["to"]) == (a, b)
    assert forward["removed"] == [r]
    by_uuid = {f["uuid"]: f for f in forward["fragments"]}
    assert len(by_uuid) == len(forward["fragments"]), forward
    assert set(by_uuid) == {root, p, s}, forward    # q changed and changed back: not named
    assert by_uuid[s]["type"] == "add" and by_uuid[s]["clsName"] == "Shape"
    assert by_uuid[s]["properties"] == objects_of(b_state)[s]["properties"]
    assert set(by_uuid[s]["properties"]) == {"x", "y", "width", "height", "color", "label", "kind"}
    assert by_uuid[p] == {"type": "change", "uuid": p, "clsName": "Shape", "properties": {"x": 11}}
    assert by_uuid[root]["type"] == "change"
    assert set(by_uuid[root]["properties"]) == {"name", "shapes"}
    folded = apply_set(objects_of(a_state), forward["fragments"], forward["removed"])
    assert folded == objects_of(b_state)

    backward = diff(past, name, **{"from": b, "to": a}).json()
    assert (backward["from"], backward["to"]) == (b, a)
    assert backward["removed"] == [s]
    back = {f["uuid"]: f for f in backward["fragments"]}
    assert back[r]["type"] == "add"
    assert back[r]["properties"] == objects_of(a_state)[r]["properties"]
    folded = apply_set(objects_of(b_state), backward["fragments"], backward["removed"])
    assert folded == objects_of(a_state)

    for version in (a, b, 0):
        same = diff(past, name, **{"from": version, "to": version}).json()
        assert same == {"from": version, "to": version, "fragments": [], "removed": []}

    # It really is one change set: posted, it brings the scope back to A's objects.
    posted = past.apply(name, backward["fragments"])
    assert posted["removed"] == [s]
    assert objects_of(past.state(name)) == objects_of(a_state)


def test_diff_errors(past):
    name, state = past.create_canvas()
    past.add_shapes(name)
    current = state["version"] + 1
    for params in ({}, {"from": 0}, {"to": 0}, {"from": "x", "to": 0}, {"from": 0, "to": -1}):
        assert_problem(diff(past, name, **params), 400)
    assert_problem(diff(past, name, **{"from": 0, "to": current + 1}), 404, "version-not-found")
    assert_problem(diff(past, name, **{"from": current + 5, "to": 0}), 404, "version-not-found")
    assert_problem(diff(past, scope_name(), **{"from": 0, "to": 0}), 404, "not-found")


# -- 5. restore --------------------------------------------------------------------------------

def restore_scenario(api: Api) -> tuple[str, dict, dict]:
    """A canvas at a target version, then moved on (a move, an add, a removal, a rename):
    (name, target state, state before the restore)."""
    name, state = api.create_canvas()
    root = state["rootUUID"]
    api.apply(name, [change(root, "Canvas", name="before")])
    (p, q), _ = api.add_shapes(name, count=2)
    api.apply(name, [change(q, "Shape", label="keep me", color=0x0000FFFF, kind="oval")])
    target = api.state(name)
    s = new_uuid()
    api.apply(name, [change(p, "Shape", x=50, y=60)])
    api.apply(name, [add(s, "Shape", x=3, y=3), change(root, "Canvas", shapes=[s, p, q])])
    api.apply(name, [change(root, "Canvas", shapes=[s, p])])       # q leaves
    api.apply(name, [change(root, "Canvas", name="after")])
    return name, target, api.state(name)


def test_restore_brings_back_a_version_as_one_new_change_set(past, past_server):
    name, target, moved = restore_scenario(past)
    n, current = target["version"], moved["version"]
    with SSEStream(past_server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().id == str(current)
        response = restore(past, name, n)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["version"] == current + 1 == etag_version(response)
        assert answer["restoredFrom"] == n
        assert answer["subject"] is None
        assert_sane_time(answer["at"])
        assert all(reply == {} for reply in answer["fragmentReplies"])
        assert len(answer["fragmentReplies"]) == len(answer["fragments"])
        # s (added after n) leaves; q (removed after n) comes back with its properties.
        [s] = set(objects_of(moved)) - set(objects_of(target))
        assert answer["removed"] == [s]
        folded = apply_set(objects_of(moved), answer["fragments"], answer["removed"])
        assert folded == objects_of(target)

        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(current + 1))
        data = event.json()
        assert data["restoredFrom"] == n
        assert (data["fragments"], data["removed"], data["at"]) == (
            answer["fragments"], answer["removed"], answer["at"])

        after = past.state(name)
        assert after["version"] == current + 1
        assert objects_of(after) == objects_of(state_at(past, name, n)) == objects_of(target)
        [logged] = changesets(past, name, current)
        assert logged["version"] == current + 1 and logged["restoredFrom"] == n

        # Nothing to change: the current version, no new version, no event.
        again = restore(past, name, n)
        assert again.status_code == 200, again.text
        assert again.json()["version"] == current + 1 == etag_version(again)
        assert again.json()["fragments"] == [] and again.json()["removed"] == []
        assert changesets(past, name, current + 1) == []
        marker = past.apply(name, [change(target["rootUUID"], "Canvas", name="marker")])
        assert marker["version"] == current + 2
        assert stream.expect_event().id == str(current + 2)   # nothing came in between


def test_restore_honours_if_match(past):
    name, target, moved = restore_scenario(past)
    stale = restore(past, name, target["version"],
                    headers={"If-Match": f'"{moved["version"] - 1}"'})
    assert assert_problem(stale, 412, "precondition-failed")["version"] == moved["version"]
    assert past.state(name) == moved
    assert changesets(past, name, moved["version"]) == []
    fresh = restore(past, name, target["version"], headers={"If-Match": f'"{moved["version"]}"'})
    assert fresh.status_code == 200, fresh.text
    assert fresh.json()["version"] == moved["version"] + 1


def test_restore_with_an_idempotency_key_is_applied_once_and_replayed(past):
    name, target, moved = restore_scenario(past)
    key = {"Idempotency-Key": new_uuid()}
    first = restore(past, name, target["version"], headers=key)
    assert first.status_code == 200, first.text
    assert first.headers.get("idempotent-replayed") in (None, "false")
    again = restore(past, name, target["version"], headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert past.state(name)["version"] == moved["version"] + 1
    assert len(changesets(past, name, moved["version"])) == 1
    # The same key for another request is refused.
    other = restore(past, name, target["version"] - 1, headers=key)
    assert_problem(other, 422, "idempotency-key-reused")
    assert past.state(name)["version"] == moved["version"] + 1


def test_a_no_op_restore_retried_with_its_key_replays(past):
    name, target, _ = restore_scenario(past)
    restore(past, name, target["version"])
    now = past.state(name)
    key = {"Idempotency-Key": new_uuid()}
    first = restore(past, name, target["version"], headers=key)
    assert first.status_code == 200 and first.json()["version"] == now["version"]
    past.apply(name, [change(now["rootUUID"], "Canvas", name="moved on")])
    again = restore(past, name, target["version"], headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert past.state(name)["version"] == now["version"] + 1


@pytest.mark.parametrize("body", [b"{}", b'{"version":"1"}', b'{"version":-1}', b'{"version":1.5}',
                                  b'{"version":1,"extra":2}', b'{"version":null}', b"[]", b"1",
                                  b"not json", b""])
def test_restore_with_a_bad_body_is_400(past, body):
    name, _, moved = restore_scenario(past)
    response = past.http.post(f"/v1/scopes/{name}/restore", content=body,
                              headers={"Content-Type": "application/json"})
    assert_problem(response, 400)
    assert past.state(name) == moved


def test_restore_of_a_version_ahead_or_an_unknown_scope_is_404(past):
    name, _, moved = restore_scenario(past)
    for ahead in (moved["version"] + 1, 10**9):
        assert_problem(restore(past, name, ahead), 404, "version-not-found")
    assert past.state(name) == moved
    assert_problem(restore(past, scope_name(), 0), 404, "not-found")


def test_restore_of_a_pruned_version_is_410_with_the_oldest_version(pruning):
    _, api = pruning
    name, target, moved = restore_scenario(api)
    for index in range(6):
        api.apply(name, [change(moved["rootUUID"], "Canvas", name=f"n{index}")])
    oldest = oldest_retained(api, name)
    before = api.state(name)
    body = assert_problem(restore(api, name, oldest - 1), 410, "history-gone")
    assert body["oldestVersion"] == oldest
    assert api.state(name) == before
    # The oldest retained version itself can be restored (read first: the restore prunes on).
    expected = objects_of(state_at(api, name, oldest))
    response = restore(api, name, oldest)
    assert response.status_code == 200, response.text
    assert objects_of(api.state(name)) == expected


def test_a_restore_retried_after_its_target_was_pruned_replays(pruning):
    _, api = pruning
    name, target, moved = restore_scenario(api)
    key = {"Idempotency-Key": new_uuid()}
    n = moved["version"] - 1
    first = restore(api, name, n, headers=key)
    assert first.status_code == 200, first.text
    for index in range(8):
        api.apply(name, [change(moved["rootUUID"], "Canvas", name=f"n{index}")])
    assert oldest_retained(api, name) > n
    again = restore(api, name, n, headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()


# -- 6. revert ---------------------------------------------------------------------------------

def test_revert_puts_changed_values_back(past, past_server):
    name, state = past.create_canvas()
    (p, other), _ = past.add_shapes(name, count=2)
    v = past.apply(name, [change(p, "Shape", x=42, label="moved"), change(other, "Shape", y=9)])
    later = past.apply(name, [change(other, "Shape", x=7)])      # unrelated property
    with SSEStream(past_server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().id == str(later["version"])
        response = revert(past, name, v["version"])
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["version"] == later["version"] + 1 == etag_version(response)
        assert answer["revertOf"] == v["version"]
        assert answer["subject"] is None
        assert_sane_time(answer["at"])
        assert answer["removed"] == []
        assert {f["uuid"]: f["properties"] for f in answer["fragments"]} == {
            p: {"x": 1, "label": ""}, other: {"y": 2}}
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answer["version"]))
        assert event.json()["revertOf"] == v["version"]
        assert event.json()["fragments"] == answer["fragments"]
    objects = objects_of(past.state(name))
    assert objects[p]["properties"]["x"] == 1 and objects[p]["properties"]["label"] == ""
    assert objects[other]["properties"]["y"] == 2 and objects[other]["properties"]["x"] == 7
    [logged] = changesets(past, name, later["version"])
    assert logged["revertOf"] == v["version"]


def test_revert_of_an_add_removes_the_object(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    (t,), added = past.add_shapes(name, label="temporary")
    past.apply(name, [change(p, "Shape", x=99)])                 # unrelated
    response = revert(past, name, added["version"])
    assert response.status_code == 200, response.text
    assert response.json()["removed"] == [t]
    after = past.state(name)
    assert t not in objects_of(after)
    assert shapes_of(after) == [p]
    assert objects_of(after)[p]["properties"]["x"] == 99


def test_revert_of_a_removal_brings_the_object_back_with_its_properties(past):
    name, state = past.create_canvas()
    root = state["rootUUID"]
    (p, q, r), _ = past.add_shapes(name, count=3)
    past.apply(name, [change(q, "Shape", label="keep", color=0xFF00FF00, width=12, kind="oval")])
    before = past.state(name)
    removal = past.apply(name, [change(root, "Canvas", shapes=[p, r])])
    assert removal["removed"] == [q]
    past.apply(name, [change(p, "Shape", y=5)])                  # unrelated
    response = revert(past, name, removal["version"])
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["removed"] == []
    assert [f for f in answer["fragments"] if f["uuid"] == q] == [
        {"type": "add", "uuid": q, "clsName": "Shape",
         "properties": objects_of(before)[q]["properties"]}]
    after = past.state(name)
    assert shapes_of(after) == [p, q, r]
    assert objects_of(after)[q] == objects_of(before)[q]


def test_revert_conflicts_name_the_later_sets_and_apply_nothing(past):
    name, state = past.create_canvas()
    root = state["rootUUID"]
    (p, q), _ = past.add_shapes(name, count=2)
    first = past.apply(name, [change(p, "Shape", x=5)])
    second = past.apply(name, [change(p, "Shape", x=6)])
    (t,), added = past.add_shapes(name)
    touched = past.apply(name, [change(t, "Shape", label="touched")])
    removal = past.apply(name, [change(root, "Canvas", shapes=[p, t])])     # q leaves
    u = new_uuid()
    reshaped = past.apply(name, [add(u, "Shape", x=0, y=0),
                                 change(root, "Canvas", shapes=[p, t, u])])
    before = past.state(name)

    cases = [
        (first, [{"uuid": p, "property": "x", "version": second["version"]}]),
        (added, [{"uuid": t, "property": "label", "version": touched["version"]}]),
        (removal, [{"uuid": root, "property": "shapes", "version": reshaped["version"]}]),
    ]
    for target, expected in cases:
        response = revert(past, name, target["version"])
        body = assert_problem(response, 409, "revert-conflict")
        conflicts = body["conflicts"]
        assert all(set(c) == {"uuid", "property", "version"} for c in conflicts), body
        for conflict in expected:
            assert conflict in conflicts, (target["version"], body)
        assert all(c["version"] > target["version"] for c in conflicts), body
        assert past.state(name) == before
        assert changesets(past, name, before["version"]) == []
    # Exactly the named ones where only one later set touched it.
    assert revert(past, name, first["version"]).json()["conflicts"] == cases[0][1]


def test_revert_of_a_version_that_is_no_retained_change_set_is_404(past):
    name, state = past.create_canvas()
    past.add_shapes(name)
    current = state["version"] + 1
    for version in (current + 1, 10**9):
        assert_problem(revert(past, name, version), 404, "version-not-found")
    assert past.state(name)["version"] == current
    assert_problem(revert(past, scope_name(), 1), 404, "not-found")
    assert_problem(revert(past, name, "abc"), 400)


def test_revert_of_version_zero_is_404_version_not_found(past):
    name, _ = past.create_canvas()
    past.add_shapes(name)
    assert_problem(revert(past, name, 0), 404, "version-not-found")


def test_revert_of_a_pruned_change_set_is_404(pruning):
    _, api = pruning
    name, state = api.create_canvas()
    (p,), added = api.add_shapes(name)
    for index in range(8):
        api.apply(name, [change(state["rootUUID"], "Canvas", name=f"n{index}")])
    oldest = oldest_retained(api, name)
    assert oldest >= added["version"]
    before = api.state(name)
    for version in range(1, oldest + 1):
        assert_problem(revert(api, name, version), 404, "version-not-found")
    assert api.state(name) == before
    # The newest set is still revertible.
    assert revert(api, name, before["version"]).status_code == 200


def test_a_revert_of_a_revert_applies_the_change_again(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", label="A", x=3)])
    undo = revert(past, name, v["version"])
    assert undo.status_code == 200, undo.text
    assert objects_of(past.state(name))[p]["properties"]["label"] == ""
    redo = revert(past, name, undo.json()["version"])
    assert redo.status_code == 200, redo.text
    assert redo.json()["revertOf"] == undo.json()["version"]
    props = objects_of(past.state(name))[p]["properties"]
    assert (props["label"], props["x"]) == ("A", 3)
    # The undo and the redo cancel out: v's values are current again and v can be undone again.
    again = revert(past, name, v["version"])
    assert again.status_code == 200, again.text
    props = objects_of(past.state(name))[p]["properties"]
    assert (props["label"], props["x"]) == ("", 1)


def test_a_later_set_undone_by_a_later_revert_does_not_block_but_its_redo_does(past):
    """Add a shape, move it, undo the move: the add can still be undone; redo the move and it
    cannot (the redo names the conflict)."""
    name, _ = past.create_canvas()
    (t,), added = past.add_shapes(name)
    move = past.apply(name, [change(t, "Shape", x=50)])
    undo = revert(past, name, move["version"])
    assert undo.status_code == 200, undo.text
    redo = revert(past, name, undo.json()["version"])
    assert redo.status_code == 200, redo.text
    before = past.state(name)
    body = assert_problem(revert(past, name, added["version"]), 409, "revert-conflict")
    assert body["conflicts"] == [{"uuid": t, "property": "x", "version": redo.json()["version"]}]
    assert past.state(name) == before
    undo_redo = revert(past, name, redo.json()["version"])
    assert undo_redo.status_code == 200, undo_redo.text
    gone = revert(past, name, added["version"])
    assert gone.status_code == 200, gone.text
    assert gone.json()["removed"] == [t]
    assert shapes_of(past.state(name)) == []


def test_revert_honours_if_match(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", x=8)])
    stale = revert(past, name, v["version"], headers={"If-Match": f'"{v["version"] - 1}"'})
    assert assert_problem(stale, 412, "precondition-failed")["version"] == v["version"]
    assert past.state(name)["version"] == v["version"]
    fresh = revert(past, name, v["version"], headers={"If-Match": f'"{v["version"]}"'})
    assert fresh.status_code == 200, fresh.text
    assert fresh.json()["version"] == v["version"] + 1


def test_revert_with_a_body_other_than_empty_is_400(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", x=8)])
    response = past.http.post(f"/v1/scopes/{name}/changesets/{v['version']}/revert",
                              content=b'{"version": 3}',
                              headers={"Content-Type": "application/json"})
    assert_problem(response, 400)
    assert past.state(name)["version"] == v["version"]


def test_a_revert_retried_with_its_key_replays_and_is_never_applied_twice(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", x=8)])
    key = {"Idempotency-Key": new_uuid()}
    first = revert(past, name, v["version"], headers=key)
    assert first.status_code == 200, first.text
    assert first.headers.get("idempotent-replayed") in (None, "false")
    assert first.json()["idempotencyKey"] == key["Idempotency-Key"]
    again = revert(past, name, v["version"], headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert etag_version(again) == first.json()["version"]
    # Still the first answer after the scope moved on.
    past.apply(name, [change(p, "Shape", x=9)])
    late = revert(past, name, v["version"], headers=key)
    assert late.status_code == 200 and late.headers.get("idempotent-replayed") == "true"
    assert late.json() == first.json()
    assert [c.get("revertOf") for c in changesets(past, name, v["version"])] == [v["version"], None]


def test_a_revert_conflict_is_stored_under_its_key(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", x=8)])
    later = past.apply(name, [change(p, "Shape", x=9)])
    key = {"Idempotency-Key": new_uuid()}
    first = revert(past, name, v["version"], headers=key)
    assert_problem(first, 409, "revert-conflict")
    # Even once the conflict is gone (the later set undone), the key keeps its 409.
    assert revert(past, name, later["version"]).status_code == 200
    again = revert(past, name, v["version"], headers=key)
    assert_problem(again, 409, "revert-conflict")
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert past.state(name)["version"] == later["version"] + 1


def test_concurrent_reverts_with_one_key_apply_once(past, past_server):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    v = past.apply(name, [change(p, "Shape", x=8)])
    key = {"Idempotency-Key": new_uuid()}
    statuses: list[int] = []
    lock = threading.Lock()

    def one():
        client = Api(past_server.url)
        try:
            status = revert(client, name, v["version"], headers=key).status_code
        finally:
            client.close()
        with lock:
            statuses.append(status)

    run_threads([one] * 6)
    assert statuses.count(200) >= 1, statuses
    assert set(statuses) <= {200, 409}, statuses
    assert past.state(name)["version"] == v["version"] + 1
    assert [c.get("revertOf") for c in changesets(past, name, v["version"])] == [v["version"]]


def test_a_revert_key_reused_for_a_revert_that_would_conflict_is_422(past):
    name, state = past.create_canvas()
    (p,), _ = past.add_shapes(name)
    first = past.apply(name, [change(p, "Shape", x=8)])
    second = past.apply(name, [change(p, "Shape", x=9)])
    key = {"Idempotency-Key": new_uuid()}
    assert revert(past, name, second["version"], headers=key).status_code == 200
    assert_problem(revert(past, name, first["version"], headers=key), 422, "idempotency-key-reused")


def test_a_revert_key_reused_for_a_revert_that_could_apply_is_422(past):
    name, state = past.create_canvas()
    (p, q), _ = past.add_shapes(name, count=2)
    first = past.apply(name, [change(p, "Shape", x=8)])
    second = past.apply(name, [change(q, "Shape", x=9)])
    key = {"Idempotency-Key": new_uuid()}
    assert revert(past, name, second["version"], headers=key).status_code == 200
    assert_problem(revert(past, name, first["version"], headers=key), 422, "idempotency-key-reused")
    assert_problem(restore(past, name, first["version"], headers=key), 422,
                   "idempotency-key-reused")
    assert past.state(name)["version"] == second["version"] + 1


# -- 7. concurrency sanity ---------------------------------------------------------------------

def test_reverts_and_restores_among_concurrent_writes_stay_consistent(past, past_server):
    name, state = past.create_canvas()
    root = state["rootUUID"]
    (w, *targets), _ = past.add_shapes(name, count=6)
    edits = [past.apply(name, [change(t, "Shape", x=100 + i, label=f"t{i}")])
             for i, t in enumerate(targets)]
    restore_points = [edits[1]["version"], edits[3]["version"]]
    start = past.state(name)
    outcomes: dict[str, list] = {"write": [], "revert": [], "restore": []}
    lock = threading.Lock()

    def call(kind: str, send) -> None:
        """One request; a documented 503 (with Retry-After) is retried a bounded number of times."""
        for _ in range(20):
            response = send()
            if response.status_code == 503:
                assert response.headers.get("retry-after"), response.text
                time.sleep(0.05)
                continue
            assert response.status_code < 500, f"{kind}: {response.status_code} {response.text}"
            with lock:
                outcomes[kind].append((response.status_code, response.json()))
            return
        raise AssertionError(f"{kind}: still 503 after 20 tries")

    def writer():
        client = Api(past_server.url)
        try:
            for j in range(25):
                call("write", lambda j=j: client.post(name, [change(w, "Shape", x=j, y=-j)]))
        finally:
            client.close()

    def reverter():
        client = Api(past_server.url)
        try:
            for edit in reversed(edits):
                call("revert", lambda edit=edit: revert(client, name, edit["version"]))
        finally:
            client.close()

    def restorer():
        client = Api(past_server.url)
        try:
            for point in restore_points:
                call("restore", lambda point=point: restore(client, name, point))
        finally:
            client.close()

    with SSEStream(past_server.url, f"/v1/scopes/{name}/events", timeout=60) as stream:
        assert stream.expect_event().id == str(start["version"])
        run_threads([writer, reverter, restorer], timeout=240)
        final = past.state(name)
        events = stream.take(final["version"] - start["version"], timeout=120)

    assert all(status == 200 for status, _ in outcomes["write"]), outcomes["write"]
    assert len(outcomes["write"]) == 25
    assert len(outcomes["revert"]) == len(edits)
    for status, body in outcomes["revert"]:
        assert status in (200, 409), body
        if status == 409:
            assert body["type"] == "/problems/revert-conflict" and body["conflicts"], body
    for status, body in outcomes["restore"]:
        assert status == 200, body

    logged = changesets(past, name, start["version"])
    versions = [c["version"] for c in logged]
    assert versions == list(range(start["version"] + 1, final["version"] + 1)), versions
    assert [int(e.id) for e in events] == versions
    by_version = {c["version"]: c for c in logged}
    # A restore that found nothing to change answers the current version without "at": not a set.
    accepted = [body for kind in outcomes for status, body in outcomes[kind]
                if status == 200 and "at" in body]
    assert len({a["version"] for a in accepted}) == len(accepted)
    for answer in accepted:
        entry = by_version[answer["version"]]
        assert (entry["fragments"], entry["removed"]) == (answer["fragments"], answer["removed"])
        assert entry.get("revertOf") == answer.get("revertOf")
        assert entry.get("restoredFrom") == answer.get("restoredFrom")
    reverted = sorted(b["revertOf"] for s, b in outcomes["revert"] if s == 200)
    assert sorted(c["revertOf"] for c in logged if "revertOf" in c) == reverted

    # Folding the log from the start gives the final state, and each version reads as folded.
    objects = objects_of(start)
    for entry, event in zip(logged, events):
        assert event.json()["fragments"] == entry["fragments"]
        objects = apply_set(objects, entry["fragments"], entry["removed"])
        if entry["version"] % 7 == 0 or entry["version"] == final["version"]:
            assert objects_of(state_at(past, name, entry["version"])) == objects
    assert objects == objects_of(final)
    assert objects[root]["clsName"] == "Canvas"
