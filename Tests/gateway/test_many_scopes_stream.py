"""One event stream for many scopes (`GET /v1/events?scope=a&scope=b…`), black box against the
real binary on either store: refusals (each naming its scope), snapshots first in the order given,
then live change sets tagged with their scope, exactly once per scope under concurrent writers;
resume of every scope from one opaque id (header or `?lastEventId=`), a different list resumed
from an earlier id, `scope=NAME@V`, reset when a position is no longer retained, the size of the
id; `deleted` per scope; the single-scope stream's limits (drain, token expiry, heartbeats,
HTTP/2, the shipped nginx); and what a 256-scope stream costs (one connection, one stream)."""
from __future__ import annotations

import json
import signal
import socket
import threading
import time
import urllib.parse

import jwt
import pytest

from gateway_helpers import Api, as_event, assert_problem, change, run_threads, scope_name
from nginx_proxy import Nginx
from sse_stream import SSEStream

BOUND = 60.0  # generous bound for anything a test waits for (a loaded 2-core machine)

SECRET = "a-many-scopes-test-secret-of-more-than-32-bytes"
ISSUER = "https://issuer.many.test"
AUDIENCE = "jetstream-many-tests"


# -- helpers ------------------------------------------------------------------------------------
def many_path(names, *extra: str) -> str:
    query = "&".join(f"scope={urllib.parse.quote(n, safe='@')}" for n in names)
    return "/v1/events?" + "&".join([query, *extra]) if names or extra else "/v1/events"


def tagged(name: str, body: dict) -> dict:
    return {"scope": name, **body}


def data_of(event) -> dict:
    """The event's data, checked to carry "scope" as its first member."""
    body = event.json()
    assert isinstance(body, dict) and next(iter(body), None) == "scope", (event.type, event.data)
    return body


def scope_of(event) -> str:
    return data_of(event)["scope"]


def assert_many_id(event, scopes: int | None = None) -> None:
    assert event.id is not None and event.id.startswith("m"), (event.type, event.id)
    assert "\n" not in event.id and "\r" not in event.id and event.id.isascii()
    if scopes is not None:
        assert len(event.id.encode()) <= 64 * scopes, (scopes, len(event.id))


def rename(api: Api, name: str, root: str, label: str) -> dict:
    return api.apply(name, [change(root, "Canvas", name=label)])


def read_until(stream: SSEStream, done, timeout: float = BOUND) -> list:
    """Events until `done(events)` holds (raises on timeout or end of stream)."""
    deadline = time.monotonic() + timeout
    events: list = []
    while not done(events):
        events.append(stream.expect_event(max(0.01, deadline - time.monotonic())))
    return events


def changesets_by_scope(events) -> dict[str, list[dict]]:
    per: dict[str, list[dict]] = {}
    for event in events:
        if event.type == "changeset":
            per.setdefault(scope_of(event), []).append(data_of(event))
    return per


def history(api: Api, name: str, since: int) -> list[dict]:
    """Every change set after `since` from `changesets?since=` (followed page by page)."""
    entries: list[dict] = []
    while True:
        response = api.history(name, since)
        assert response.status_code == 200, response.text
        page = response.json()["changesets"]
        if not page:
            return entries
        entries += page
        since = page[-1]["version"]


def token(read=("canvas-*",), write=("canvas-*",), exp_in=600, sub="ada") -> str:
    return jwt.encode({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + exp_in,
                       "jetstream": {"read": list(read), "write": list(write)}},
                      SECRET, algorithm="HS256")


def bearer(value: str) -> dict:
    return {"Authorization": f"Bearer {value}"}


def metric(api: Api, name: str) -> float:
    for line in api.http.get("/metrics").text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    raise AssertionError(f"no {name} sample in /metrics")


def long_names(count: int) -> list[str]:
    """`count` fresh scope names of exactly 128 characters (the longest a name may be)."""
    base = scope_name()
    return [f"{base}-{n:04}-".ljust(128, "x") for n in range(count)]


def create_all(api: Api, names: list[str]) -> dict[str, dict]:
    states = {}
    for name in names:
        _, states[name] = api.create_canvas(name)
    return states


@pytest.fixture(scope="module")
def auth_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("many-auth")
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    pool = ServerPool(jetstream_bin, base)
    yield pool("--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER,
               "--jwt-audience", AUDIENCE, "--anonymous-read", "canvas-public-*")
    pool.stop_all()


# -- refusals -----------------------------------------------------------------------------------
def test_without_a_scope_is_400(api):
    for path in ("/v1/events", "/v1/events?other=1"):
        response = api.http.get(path, headers={"Accept": "text/event-stream"})
        assert_problem(response, 400, "bad-request")


def test_more_distinct_scopes_than_the_limit_is_400_and_a_repeated_name_counts_once(start_server):
    server = start_server("--max-scopes-per-stream", "3")
    api = Api(server.url)
    names = [api.create_canvas()[0] for _ in range(4)]
    response = api.http.get(many_path(names), headers={"Accept": "text/event-stream"})
    assert_problem(response, 400, "bad-request")
    # Exactly the limit is served; five parameters naming three scopes are three scopes.
    with SSEStream(server.url, many_path(names[:3])) as stream:
        assert stream.status == 200
        assert [scope_of(e) for e in stream.take(3)] == names[:3]
    repeated = [names[0], names[1], names[0], names[2], names[1]]
    with SSEStream(server.url, many_path(repeated)) as stream:
        assert stream.status == 200
        snapshots = stream.take(3)
        assert [(e.type, scope_of(e)) for e in snapshots] == [("snapshot", n) for n in names[:3]]
        # No second snapshot of a repeated name: the next event is a live change set.
        root = api.state(names[1])["rootUUID"]
        answer = rename(api, names[1], root, "after")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(names[1], as_event(answer)))
    api.close()


@pytest.mark.parametrize("bad", ["bad name", "x" * 129, "", "canvas/1", "ünïcode"])
def test_a_bad_scope_name_is_400_naming_it(api, bad):
    good, _ = api.create_canvas()
    response = api.http.get(many_path([good, bad]), headers={"Accept": "text/event-stream"})
    body = assert_problem(response, 400, "bad-request")
    assert "scope" in body, body


@pytest.mark.parametrize("version", ["x", "-1", "1.5", "", "0x10", "99999999999999999999999"])
def test_a_bad_version_after_at_is_400_naming_the_scope(api, version):
    name, _ = api.create_canvas()
    response = api.http.get(many_path([f"{name}@{version}"]), headers={"Accept": "text/event-stream"})
    body = assert_problem(response, 400, "bad-request")
    assert body.get("scope") == name, body


def test_a_missing_scope_is_404_naming_it(api, server):
    present, _ = api.create_canvas()
    missing = scope_name()
    with SSEStream(server.url, many_path([present, missing])) as stream:
        assert stream.status == 404
        assert stream.headers["content-type"].startswith("application/problem+json")
        body = json.loads(stream.body)
    assert body["type"] == "/problems/not-found" and body["status"] == 404
    assert body["scope"] == missing, body


def test_a_non_event_stream_accept_is_406(api):
    name, _ = api.create_canvas()
    for accept in ("application/json", "text/html"):
        response = api.http.get(many_path([name]), headers={"Accept": accept})
        assert_problem(response, 406, "not-acceptable")


def test_with_jwt_auth_a_scope_that_may_not_be_read_is_401_or_403_naming_it(auth_server):
    api = Api(auth_server.url)
    writer = token()
    public, private = scope_name("canvas-public"), scope_name("canvas")
    for name in (public, private):
        assert api.create(name, headers=bearer(writer)).status_code == 201
    # Anonymous: the public scope alone is fine, the private one needs a token.
    with SSEStream(auth_server.url, many_path([public])) as stream:
        assert stream.status == 200 and scope_of(stream.expect_event()) == public
    response = api.http.get(many_path([public, private]), headers={"Accept": "text/event-stream"})
    assert assert_problem(response, 401, "unauthorized")["scope"] == private
    assert response.headers["www-authenticate"].startswith("Bearer")
    # A token that reads only canvas-public-*: 403 naming the other scope.
    narrow = token(read=("canvas-public-*",), write=())
    response = api.http.get(many_path([public, private]),
                            headers={"Accept": "text/event-stream", **bearer(narrow)})
    assert assert_problem(response, 403, "forbidden")["scope"] == private
    # A token that reads both: served, one snapshot each.
    with SSEStream(auth_server.url, many_path([private, public]), bearer(writer)) as stream:
        assert stream.status == 200
        assert [scope_of(e) for e in stream.take(2)] == [private, public]
    api.close()


# -- a fresh stream -----------------------------------------------------------------------------
def test_snapshots_come_first_in_the_order_given_then_live_change_sets(api, server):
    names = [api.create_canvas()[0] for _ in range(3)]
    api.add_shapes(names[1], count=2)
    rename(api, names[2], api.state(names[2])["rootUUID"], "third")
    order = [names[2], names[0], names[1]]
    states = {n: api.state(n) for n in names}
    with SSEStream(server.url, many_path(order)) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].split(";")[0].strip() == "text/event-stream"
        snapshots = stream.take(3)
        assert stream.retry_before_first_event and stream.retry > 0
        assert [e.type for e in snapshots] == ["snapshot"] * 3
        assert [data_of(e) for e in snapshots] == [tagged(n, states[n]) for n in order]
        for count, event in enumerate(snapshots, start=1):
            assert_many_id(event, count)
        # Live: each write arrives tagged with its scope, with an id.
        for name in (names[1], names[2], names[0]):
            answer = rename(api, name, states[name]["rootUUID"], f"live {name}")
            event = stream.expect_event()
            assert event.type == "changeset"
            assert data_of(event) == tagged(name, as_event(answer))
            assert_many_id(event, 3)


def test_change_sets_written_while_the_snapshots_are_sent_follow_them(api, server):
    """Writers are already busy when the stream opens: every scope's snapshot comes before any
    change set, and each scope's sets continue exactly from its snapshot's version."""
    names = [api.create_canvas()[0] for _ in range(6)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    stop = threading.Event()
    started = threading.Barrier(len(names) + 1)

    def write(name: str) -> None:
        client = Api(server.url)
        try:
            rename(client, name, roots[name], "first")
            started.wait(timeout=BOUND)
            for n in range(300):
                if stop.is_set():
                    return
                rename(client, name, roots[name], f"busy {n}")
        finally:
            client.close()

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in names]
    for thread in threads:
        thread.start()
    try:
        started.wait(timeout=BOUND)
        with SSEStream(server.url, many_path(names)) as stream:
            snapshots = stream.take(len(names))
            stop.set()
            for thread in threads:
                thread.join(timeout=BOUND)
            assert [(e.type, scope_of(e)) for e in snapshots] == [("snapshot", n) for n in names]
            snapshot_at = {scope_of(e): data_of(e)["version"] for e in snapshots}
            finals = {n: api.state(n)["version"] for n in names}
            positions = dict(snapshot_at)
            events: list = []
            deadline = time.monotonic() + BOUND
            while positions != finals:
                event = stream.expect_event(max(0.01, deadline - time.monotonic()))
                events.append(event)
                if event.type == "changeset":
                    positions[scope_of(event)] = data_of(event)["version"]
        assert all(e.type == "changeset" for e in events), [e.type for e in events]
        per = changesets_by_scope(events)
        for name in names:
            assert [c["version"] for c in per.get(name, [])] == list(
                range(snapshot_at[name] + 1, finals[name] + 1))
    finally:
        stop.set()


def test_concurrent_writers_on_every_scope_each_set_once_in_version_order(api, server):
    names = [api.create_canvas()[0] for _ in range(4)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    writers, per_scope = 3, 6
    answers: dict[str, list[dict]] = {n: [] for n in names}
    lock = threading.Lock()

    def writer(index: int):
        def run():
            client = Api(server.url)
            try:
                for n in range(per_scope):
                    for name in names:
                        answer = rename(client, name, roots[name], f"w{index}-{n}")
                        with lock:
                            answers[name].append(answer)
            finally:
                client.close()
        return run

    with SSEStream(server.url, many_path(names)) as stream:
        snapshots = stream.take(len(names))
        start = {scope_of(e): data_of(e)["version"] for e in snapshots}
        run_threads([writer(i) for i in range(writers)], timeout=180)
        total = writers * per_scope * len(names)
        events = stream.take(total, timeout=120)
    assert all(e.type == "changeset" for e in events)
    for event in events:
        assert_many_id(event, len(names))
    per = changesets_by_scope(events)
    for name in names:
        expected = sorted(answers[name], key=lambda a: a["version"])
        assert [a["version"] for a in expected] == list(
            range(start[name] + 1, start[name] + writers * per_scope + 1))
        assert per[name] == [tagged(name, as_event(a)) for a in expected]


# -- resume -------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["header", "query"])
def test_a_stream_dropped_mid_load_resumes_every_scope_exactly(api, server, how):
    names = [api.create_canvas()[0] for _ in range(4)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    done = threading.Event()
    errors: list[BaseException] = []

    def write(index: int) -> None:
        client = Api(server.url)
        try:
            for n in range(10):
                for name in names:
                    rename(client, name, roots[name], f"w{index}-{n}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(2)]
    first = SSEStream(server.url, many_path(names))
    try:
        snapshots = first.take(len(names))
        start = {scope_of(e): data_of(e)["version"] for e in snapshots}
        for thread in threads:
            thread.start()
        # Drop the stream after some change sets, while the writers are still writing.
        before = first.take(15, timeout=BOUND)
        last_id = before[-1].id
    finally:
        first.close()
    for thread in threads:
        thread.join(timeout=180)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    finals = {n: api.state(n)["version"] for n in names}
    seen = changesets_by_scope(before)
    seen_to = {n: (seen[n][-1]["version"] if n in seen else start[n]) for n in names}

    headers, extra = ({"Last-Event-ID": last_id}, ()) if how == "header" else (
        {}, (f"lastEventId={urllib.parse.quote(last_id)}",))
    with SSEStream(server.url, many_path(names, *extra), headers) as second:
        remaining = sum(finals[n] - seen_to[n] for n in names)
        events = second.take(remaining, timeout=120)
        assert all(e.type == "changeset" for e in events), [e.type for e in events]
        per = changesets_by_scope(events)
        for name in names:
            # Exactly what history holds after the position reached: no gap, no duplicate.
            assert per.get(name, []) == [tagged(name, h) for h in history(api, name, seen_to[name])]
        # And nothing more: the next event is the next write.
        answer = rename(api, names[2], roots[names[2]], "after the resume")
        event = second.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(names[2], as_event(answer)))


def test_a_resumed_stream_at_the_head_sends_nothing_until_the_next_set(api, server):
    names = [api.create_canvas()[0] for _ in range(3)]
    with SSEStream(server.url, many_path(names)) as stream:
        last_id = stream.take(3)[-1].id
    with SSEStream(server.url, many_path(names), {"Last-Event-ID": last_id}) as stream:
        root = api.state(names[1])["rootUUID"]
        answer = rename(api, names[1], root, "next")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(names[1], as_event(answer)))


def test_a_different_list_resumes_the_shared_scopes_and_snapshots_the_new_ones(api, server):
    a, b, c = (api.create_canvas()[0] for _ in range(3))
    roots = {n: api.state(n)["rootUUID"] for n in (a, b, c)}
    with SSEStream(server.url, many_path([a, b])) as stream:
        stream.take(2)
        rename(api, a, roots[a], "a1")
        rename(api, b, roots[b], "b1")
        early = stream.take(2)[-1].id
    # Written after the id: the shared scope b must get exactly these.
    missed_b = [rename(api, b, roots[b], f"b{n}") for n in (2, 3)]
    rename(api, a, roots[a], "a2")
    rename(api, c, roots[c], "c1")
    with SSEStream(server.url, many_path([b, c]), {"Last-Event-ID": early}) as stream:
        events = stream.take(3)
        by_scope = {}
        for event in events:
            by_scope.setdefault(scope_of(event), []).append(event)
        assert [(e.type, data_of(e)) for e in by_scope[b]] == [
            ("changeset", tagged(b, as_event(m))) for m in missed_b]
        assert [(e.type, data_of(e)) for e in by_scope[c]] == [("snapshot", tagged(c, api.state(c)))]
        assert a not in by_scope
        for event in events:
            assert_many_id(event, 2)
        answer = rename(api, c, roots[c], "c2")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(c, as_event(answer)))


def test_an_id_of_a_single_scope_stream_or_garbage_gives_snapshots(api, server):
    names = [api.create_canvas()[0] for _ in range(2)]
    for resume in ("7", "garbage", "m", "m!!!", "mAAAA"):
        with SSEStream(server.url, many_path(names), {"Last-Event-ID": resume}) as stream:
            assert stream.status == 200, resume
            events = stream.take(2)
            assert [(e.type, data_of(e)) for e in events] == [
                ("snapshot", tagged(n, api.state(n))) for n in names], resume


def test_scope_at_version_starts_after_that_version_and_wins_over_the_id(api, server):
    a, b = api.create_canvas()[0], api.create_canvas()[0]
    roots = {n: api.state(n)["rootUUID"] for n in (a, b)}
    with SSEStream(server.url, many_path([a, b])) as stream:
        last_id = stream.take(2)[-1].id  # a and b at their created versions
    answers_a = [rename(api, a, roots[a], f"a{n}") for n in range(4)]
    answers_b = [rename(api, b, roots[b], f"b{n}") for n in range(2)]
    # a@V names a later position than the id does: a starts after V; b resumes from the id.
    after = answers_a[1]["version"]
    with SSEStream(server.url, many_path([f"{a}@{after}", b]), {"Last-Event-ID": last_id}) as stream:
        events = stream.take(len(answers_a) - 2 + len(answers_b))
        per = changesets_by_scope(events)
        assert all(e.type == "changeset" for e in events)
        assert per[a] == [tagged(a, as_event(x)) for x in answers_a[2:]]
        assert per[b] == [tagged(b, as_event(x)) for x in answers_b]
    # Without an id: a@V alone, and b fresh (a snapshot).
    with SSEStream(server.url, many_path([b, f"{a}@{answers_a[2]['version']}"])) as stream:
        events = stream.take(2)
        assert [(e.type, scope_of(e)) for e in events] in (
            [("snapshot", b), ("changeset", a)], [("changeset", a), ("snapshot", b)])
        assert [data_of(e) for e in events if e.type == "changeset"] == [
            tagged(a, as_event(answers_a[3]))]
    # At the head: nothing until the next set; beyond the head: a reset with the state.
    head = answers_a[-1]["version"]
    with SSEStream(server.url, many_path([f"{a}@{head}", f"{b}@{head + 1000}"])) as stream:
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("reset", tagged(b, api.state(b)))
        answer = rename(api, a, roots[a], "live")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(a, as_event(answer)))


def test_a_position_no_longer_retained_gets_a_reset(start_server):
    server = start_server("--history-limit", "3", "--snapshot-interval", "2", "--resume-buffer", "2")
    api = Api(server.url)
    old, kept = api.create_canvas()[0], api.create_canvas()[0]
    roots = {n: api.state(n)["rootUUID"] for n in (old, kept)}
    with SSEStream(server.url, many_path([old, kept])) as stream:
        created_id = stream.take(2)[-1].id
    created = api.state(old)["version"]
    for n in range(12):
        rename(api, old, roots[old], f"o{n}")
    missed_kept = rename(api, kept, roots[kept], "k1")
    deadline = time.monotonic() + BOUND
    while api.history(old, created).status_code != 410:
        assert time.monotonic() < deadline, "history was never pruned"
        time.sleep(0.2)
    with SSEStream(server.url, many_path([old, kept]), {"Last-Event-ID": created_id}) as stream:
        events = stream.take(2)
        by_scope = {scope_of(e): e for e in events}
        assert (by_scope[old].type, data_of(by_scope[old])) == ("reset", tagged(old, api.state(old)))
        assert (by_scope[kept].type, data_of(by_scope[kept])) == (
            "changeset", tagged(kept, as_event(missed_kept)))
        assert_many_id(by_scope[old], 2)
        answer = rename(api, old, roots[old], "after reset")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(old, as_event(answer)))
    # scope=NAME@V at a version no longer retained: a reset as well.
    with SSEStream(server.url, many_path([f"{old}@{created}"])) as stream:
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("reset", tagged(old, api.state(old)))
        assert_many_id(event, 1)
    api.close()


# -- 256 scopes, long names, the id ---------------------------------------------------------------
@pytest.fixture(scope="module")
def wide(jetstream_bin, tmp_path_factory):
    """A server at the default limits but at most two streams per client, holding 256 scopes
    at different versions."""
    from conftest import ServerPool
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("wide"))
    server = pool("--max-streams-per-client", "2")
    api = Api(server.url)
    names = [scope_name() for _ in range(256)]
    create_all(api, names)
    # Different positions: every seventh scope moves on a few versions.
    for index, name in enumerate(names[::7]):
        root = api.state(name)["rootUUID"]
        for n in range(1 + index % 4):
            rename(api, name, root, f"v{n}")
    yield server, api, names
    api.close()
    pool.stop_all()


def test_256_scopes_one_id_of_at_most_64_bytes_a_scope_resumes_them_all(wide):
    server, api, names = wide
    with SSEStream(server.url, many_path(names), timeout=BOUND) as stream:
        assert stream.status == 200, stream.status_line
        snapshots = stream.take(256, timeout=120)
    assert [(e.type, scope_of(e)) for e in snapshots] == [("snapshot", n) for n in names]
    assert [data_of(e) for e in snapshots[::37]] == [tagged(n, api.state(n)) for n in names[::37]]
    for count, event in enumerate(snapshots, start=1):
        assert_many_id(event, count)
    last_id = snapshots[-1].id
    # The id is one header line, and it resumes every scope: no snapshot, nothing until a write.
    with SSEStream(server.url, many_path(names), {"Last-Event-ID": last_id}, timeout=BOUND) as stream:
        assert stream.status == 200, stream.status_line
        for target in (names[200], names[0], names[255]):
            answer = rename(api, target, api.state(target)["rootUUID"], "resumed")
            event = stream.expect_event()
            assert (event.type, data_of(event)) == ("changeset", tagged(target, as_event(answer)))
            assert_many_id(event, 256)


def test_an_id_is_at_most_64_bytes_a_scope_with_128_character_names(wide):
    """As many 128-character names as fit the request target (8 KiB): the id still grows by at
    most 64 bytes a scope, and resumes each of them."""
    server, api, _ = wide
    names = long_names(48)
    states = create_all(api, names)
    with SSEStream(server.url, many_path(names), timeout=BOUND) as stream:
        assert stream.status == 200, stream.status_line
        snapshots = stream.take(len(names), timeout=BOUND)
        for count, event in enumerate(snapshots, start=1):
            assert_many_id(event, count)
        answer = rename(api, names[5], states[names[5]]["rootUUID"], "long")
        event = stream.expect_event()
        assert_many_id(event, len(names))
        last_id = event.id
    missed = rename(api, names[40], states[names[40]]["rootUUID"], "missed")
    with SSEStream(server.url, many_path(names), {"Last-Event-ID": last_id}) as stream:
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(names[40], as_event(missed)))
    assert answer["version"] == states[names[5]]["version"] + 1


def test_a_256_scope_stream_is_one_connection_and_counts_as_one_stream(wide):
    server, api, names = wide
    scraper = Api(server.url)
    try:
        streams_before = metric(scraper, "jetstream_sse_streams_open")
        connections_before = metric(scraper, "jetstream_http_connections_open")
        with SSEStream(server.url, many_path(names), timeout=BOUND) as stream:
            assert stream.status == 200
            stream.take(256, timeout=120)
            deadline = time.monotonic() + BOUND
            while (metric(scraper, "jetstream_sse_streams_open"),
                   metric(scraper, "jetstream_http_connections_open")) != (
                       streams_before + 1, connections_before + 1):
                assert time.monotonic() < deadline, (
                    metric(scraper, "jetstream_sse_streams_open"),
                    metric(scraper, "jetstream_http_connections_open"), streams_before,
                    connections_before)
                time.sleep(0.1)
            # --max-streams-per-client 2: the 256-scope stream is one of them, so one more is
            # admitted and a third is refused.
            with SSEStream(server.url, many_path(names[:1])) as second:
                assert second.status == 200
                with SSEStream(server.url, many_path(names[1:2])) as third:
                    assert third.status == 429, third.status_line
                    assert json.loads(third.body)["type"] == "/problems/too-many-streams"
    finally:
        scraper.close()


def test_256_names_of_128_characters_are_served_with_a_head_large_enough(start_server):
    """256 names of 128 characters are a 35 KB request target; the target may take half of
    --max-header-bytes (docs/presence.md), so 80 KiB serves them. The default 16 KiB refuses
    them with 414."""
    names = long_names(256)
    small = start_server()
    with SSEStream(small.url, many_path(names[:100]), timeout=BOUND) as stream:
        assert stream.status == 414
    server = start_server("--max-header-bytes", str(80 * 1024))
    api = Api(server.url)
    try:
        create_all(api, names)
        with SSEStream(server.url, many_path(names), timeout=BOUND) as stream:
            assert stream.status == 200, (stream.status_line, getattr(stream, "body", b"")[:200])
            events = stream.take(256, timeout=120)
            assert [e.type for e in events] == ["snapshot"] * 256
            assert [scope_of(e) for e in events] == names
    finally:
        api.close()


# -- deleted ------------------------------------------------------------------------------------
def test_deleting_one_scope_ends_only_that_scope_and_the_last_ends_the_stream(api, server):
    names = [api.create_canvas()[0] for _ in range(3)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    with SSEStream(server.url, many_path(names)) as stream:
        stream.take(3)
        assert api.http.delete(f"/v1/scopes/{names[1]}").status_code == 204
        event = stream.expect_event()
        assert event.type == "deleted" and event.id is None
        assert data_of(event)["scope"] == names[1]
        # The others keep streaming.
        for name in (names[0], names[2]):
            answer = rename(api, name, roots[name], "still here")
            event = stream.expect_event()
            assert (event.type, data_of(event)) == ("changeset", tagged(name, as_event(answer)))
        # Re-created, the deleted scope is not followed any more by this stream.
        _, recreated = api.create_canvas(names[1])
        rename(api, names[1], recreated["rootUUID"], "not followed")
        answer = rename(api, names[0], roots[names[0]], "marker")
        event = stream.expect_event()
        assert (event.type, data_of(event)) == ("changeset", tagged(names[0], as_event(answer)))
        assert api.http.delete(f"/v1/scopes/{names[0]}").status_code == 204
        assert api.http.delete(f"/v1/scopes/{names[2]}").status_code == 204
        rest = stream.read_to_end(timeout=BOUND)
        assert [(e.type, scope_of(e)) for e in rest] == [("deleted", names[0]), ("deleted", names[2])]
        assert stream.eof


# -- the single-scope stream's limits -----------------------------------------------------------
def test_drain_sends_closing_once_and_a_new_stream_is_closed_at_once(start_server):
    server = start_server("--drain-delay", "3", "--grace-period", "30")
    api = Api(server.url)
    names = [api.create_canvas()[0] for _ in range(3)]
    api.close()
    stream = SSEStream(server.url, many_path(names))
    try:
        stream.take(3)
        server.process.send_signal(signal.SIGTERM)
        rest = stream.read_to_end(timeout=BOUND)
        assert [e.type for e in rest] == ["closing"], [(e.type, e.data) for e in rest]
        assert rest[0].id is None and rest[0].json()["reason"] == "shutdown"
    finally:
        stream.close()
    with SSEStream(server.url, many_path(names)) as late:
        assert [e.type for e in late.read_to_end(timeout=BOUND)] == ["closing"]
    assert server.stop() == 0


def test_a_stream_ends_with_auth_expired_when_its_token_expires(auth_server):
    api = Api(auth_server.url)
    names = [scope_name() for _ in range(2)]
    for name in names:
        assert api.create(name, headers=bearer(token())).status_code == 201
    with SSEStream(auth_server.url, many_path(names), bearer(token(exp_in=3))) as stream:
        assert stream.status == 200
        events = stream.read_to_end(timeout=BOUND)
    assert [e.type for e in events] == ["snapshot", "snapshot", "auth-expired"], [
        e.type for e in events]
    problem = events[-1].json()
    assert problem["type"] == "/problems/token-expired" and problem["status"] == 401
    api.close()


def test_heartbeats_are_keep_alive_comments(start_server):
    server = start_server("--heartbeat-interval", "1")
    api = Api(server.url)
    names = [api.create_canvas()[0] for _ in range(2)]
    with SSEStream(server.url, many_path(names)) as stream:
        stream.take(2)
        stream.comments.clear()
        stream.wait_for_comment("keep-alive", timeout=BOUND)
        stream.comments.clear()
        stream.wait_for_comment("keep-alive", timeout=BOUND)
        assert [e.type for e in stream.received] == ["snapshot", "snapshot"]
    api.close()


def test_a_gzip_stream_carries_every_scope(api, server):
    names = [api.create_canvas()[0] for _ in range(2)]
    with SSEStream(server.url, many_path(names), {"Accept-Encoding": "gzip"}) as stream:
        assert [scope_of(e) for e in stream.take(2)] == names
        for name in reversed(names):
            answer = rename(api, name, api.state(name)["rootUUID"], "gz")
            event = stream.expect_event()
            assert data_of(event) == tagged(name, as_event(answer))


def test_over_http2_one_connection_carries_the_stream_and_the_writes(api, server):
    import h2.config
    import h2.connection
    import h2.events

    names = [api.create_canvas()[0] for _ in range(3)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=BOUND)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    bodies: dict[int, bytes] = {}
    ended: set[int] = set()
    statuses: dict[int, str] = {}

    def head(method: str, path: str) -> list[tuple[str, str]]:
        return [(":method", method), (":path", path), (":scheme", "http"),
                (":authority", f"127.0.0.1:{server.port}")]

    def pump_until(condition) -> None:
        while not condition():
            data = sock.recv(65536)
            assert data, "the server closed the connection"
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = dict(event.headers)[b":status"].decode()
                elif isinstance(event, h2.events.DataReceived):
                    bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
                    connection.acknowledge_received_data(event.flow_controlled_length,
                                                         event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
            sock.sendall(connection.data_to_send())

    def events_received() -> list[tuple[str, str | None, dict]]:
        out = []
        for block in bodies.get(1, b"").decode().split("\n\n")[:-1]:
            fields = dict(line.split(": ", 1) for line in block.split("\n")
                          if ": " in line and not line.startswith(":"))
            if "data" in fields:
                out.append((fields.get("event", "message"), fields.get("id"),
                            json.loads(fields["data"])))
        return out

    try:
        connection.send_headers(1, head("GET", many_path(names)) + [
            ("accept", "text/event-stream")], end_stream=True)
        sock.sendall(connection.data_to_send())
        pump_until(lambda: len(events_received()) == 3)
        assert statuses[1] == "200"
        assert [(t, d["scope"]) for t, _, d in events_received()] == [("snapshot", n) for n in names]
        for n, stream_id in enumerate((3, 5, 7)):
            name = names[(n + 1) % 3]
            body = json.dumps({"fragments": [change(roots[name], "Canvas", name=f"h2-{n}")]}).encode()
            connection.send_headers(stream_id, head("POST", f"/v1/scopes/{name}/changesets") + [
                ("content-type", "application/json"), ("content-length", str(len(body)))])
            connection.send_data(stream_id, body, end_stream=True)
            sock.sendall(connection.data_to_send())
            pump_until(lambda: stream_id in ended and len(events_received()) == n + 4)
            assert statuses[stream_id] == "200"
            kind, event_id, data = events_received()[-1]
            assert kind == "changeset" and event_id and event_id.startswith("m")
            assert data == tagged(name, as_event(json.loads(bodies[stream_id])))
        assert 1 not in ended
    finally:
        sock.close()


def test_curl_over_http2_prior_knowledge_gets_the_snapshots(api, server):
    import subprocess
    names = [api.create_canvas()[0] for _ in range(2)]
    process = subprocess.Popen(
        ["curl", "-sS", "-N", "--http2-prior-knowledge", "--max-time", "60",
         "-H", "Accept: text/event-stream", server.url + many_path(names)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        text = b""
        deadline = time.monotonic() + BOUND
        while text.count(b"event: snapshot") < 2:
            assert time.monotonic() < deadline, text
            chunk = process.stdout.read1(65536)
            assert chunk, process.stderr.read()
            text += chunk
        assert process.poll() is None, "the h2 stream ended after its snapshots"
    finally:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture
def proxied(start_server, tmp_path):
    server = start_server("--heartbeat-interval", "1", "--drain-delay", "1")
    nginx = Nginx(tmp_path / "nginx", server.port).start()
    yield server, nginx
    nginx.stop()


def test_through_the_shipped_nginx_live_resume_heartbeats_and_closing(proxied):
    server, nginx = proxied
    api = Api(nginx.url)
    names = [api.create_canvas()[0] for _ in range(3)]
    roots = {n: api.state(n)["rootUUID"] for n in names}
    with SSEStream(nginx.url, many_path(names)) as stream:
        assert stream.status == 200
        assert [scope_of(e) for e in stream.take(3)] == names
        # One event at a time comes through while the stream stays open (no proxy buffering).
        for n, name in enumerate(names):
            answer = rename(api, name, roots[name], f"proxied {n}")
            event = stream.expect_event()
            assert (event.type, data_of(event)) == ("changeset", tagged(name, as_event(answer)))
        last_id = event.id
        stream.comments.clear()
        stream.wait_for_comment("keep-alive", timeout=BOUND)
    missed = [rename(api, names[1], roots[names[1]], f"missed {n}") for n in range(2)]
    with SSEStream(nginx.url, many_path(names), {"Last-Event-ID": last_id}) as stream:
        events = stream.take(2)
        assert [(e.type, data_of(e)) for e in events] == [
            ("changeset", tagged(names[1], as_event(m))) for m in missed]
        server.process.send_signal(signal.SIGTERM)
        assert [e.type for e in stream.read_to_end(timeout=BOUND)] == ["closing"]
    api.close()
    assert server.stop() == 0
