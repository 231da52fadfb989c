"""Presence on one node, black box against the real binary on either store: who is here, not
logged. `PUT/DELETE /v1/scopes/{name}/presence/{client}` and `GET …/presence` (ttl bounds and
default, client id rules, body rules, --max-presence-members, read access is enough, members
owned by their subject), and `event: presence` (join/update/leave, no id, never moving a resume
position) on single- and many-scope streams: one join per member after a snapshot, reset or
catch-up, expiry, not a change (no version, not in history), forgotten by a restart, gone with
its scope."""
from __future__ import annotations

import datetime
import json
import threading
import time
import urllib.parse

import jwt
import pytest

from gateway_helpers import Api, as_event, assert_problem, change, scope_name
from sse_stream import SSEStream

BOUND = 60.0
EXPIRY_BOUND = 15.0  # ttl=1: the leave is due within ttl + 2 s; waited for generously

SECRET = "a-presence-test-secret-of-more-than-32-bytes!"
ISSUER = "https://issuer.presence.test"
AUDIENCE = "jetstream-presence-tests"


# -- helpers ------------------------------------------------------------------------------------
def presence_path(name: str, client: str | None = None) -> str:
    return f"/v1/scopes/{name}/presence" + (f"/{client}" if client is not None else "")


def put(api: Api, name: str, client: str, data=None, ttl=None, headers: dict | None = None,
        raw: bytes | None = None):
    body = raw if raw is not None else json.dumps({} if data is None else data).encode()
    params = {"ttl": ttl} if ttl is not None else None
    return api.http.put(presence_path(name, client), content=body, params=params,
                        headers={"Content-Type": "application/json", **(headers or {})})


def join(api: Api, name: str, client: str, data=None, ttl=None, headers: dict | None = None) -> None:
    response = put(api, name, client, data, ttl, headers)
    assert response.status_code == 204, response.text
    assert response.content == b""


def leave(api: Api, name: str, client: str, headers: dict | None = None):
    return api.http.delete(presence_path(name, client), headers=headers)


def members(api: Api, name: str, headers: dict | None = None) -> list[dict]:
    response = api.http.get(presence_path(name), headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"members"}, body
    for member in body["members"]:
        assert set(member) == {"client", "subject", "data", "expiresAt"}, member
    return body["members"]


def by_client(api: Api, name: str, headers: dict | None = None) -> dict[str, dict]:
    return {m["client"]: m for m in members(api, name, headers)}


def instant(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def presence_event(event, scope: str, client: str, state: str, data=None, subject=None) -> None:
    """An `event: presence` as the contract words it (no id; data absent on leave)."""
    assert event.type == "presence", (event.type, event.data)
    assert event.id is None, event.id
    body = event.json()
    expected = {"scope": scope, "client": client, "subject": subject, "state": state}
    if state != "leave":
        expected["data"] = data
    assert body == expected
    assert next(iter(body)) == "scope"


def rename(api: Api, name: str, label: str) -> dict:
    root = api.state(name)["rootUUID"]
    return api.apply(name, [change(root, "Canvas", name=label)])


def many_path(names) -> str:
    return "/v1/events?" + "&".join(f"scope={urllib.parse.quote(n)}" for n in names)


def token(read=("canvas-*",), write=("canvas-*",), exp_in=600, sub="ada") -> str:
    return jwt.encode({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + exp_in,
                       "jetstream": {"read": list(read), "write": list(write)}},
                      SECRET, algorithm="HS256")


def bearer(value: str) -> dict:
    return {"Authorization": f"Bearer {value}"}


def wait_until(condition, what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout}s"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def auth_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("presence-auth")
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    pool = ServerPool(jetstream_bin, base)
    yield pool("--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER,
               "--jwt-audience", AUDIENCE, "--anonymous-read", "canvas-public-*")
    pool.stop_all()


@pytest.fixture(scope="module")
def auth(auth_server):
    client = Api(auth_server.url)
    yield client
    client.close()


# -- PUT, GET, DELETE ---------------------------------------------------------------------------
def test_put_is_204_and_get_lists_the_member(api):
    name, _ = api.create_canvas()
    assert members(api, name) == []
    before = time.time()
    join(api, name, "window-1", {"x": 10, "y": 20, "name": "Ada"}, ttl=120)
    after = time.time()
    (member,) = members(api, name)
    assert (member["client"], member["subject"], member["data"]) == (
        "window-1", None, {"x": 10, "y": 20, "name": "Ada"})
    assert isinstance(member["expiresAt"], str)
    assert before + 120 - 2 <= instant(member["expiresAt"]) <= after + 120 + 2, member


def test_a_second_put_replaces_the_data_and_refreshes_it(api):
    name, _ = api.create_canvas()
    join(api, name, "w", {"x": 1, "keep": True}, ttl=10)
    first = by_client(api, name)["w"]
    join(api, name, "w", {"y": 2}, ttl=200)
    second = by_client(api, name)["w"]
    assert second["data"] == {"y": 2}  # replaced, not merged
    assert instant(second["expiresAt"]) > instant(first["expiresAt"]) + 100
    assert len(members(api, name)) == 1


def test_delete_is_204_then_404(api):
    name, _ = api.create_canvas()
    join(api, name, "a")
    join(api, name, "b")
    response = leave(api, name, "a")
    assert response.status_code == 204 and response.content == b""
    assert list(by_client(api, name)) == ["b"]
    assert_problem(leave(api, name, "a"), 404, "not-found")
    assert_problem(leave(api, name, "never-here"), 404, "not-found")


def test_a_missing_scope_is_404_for_every_presence_route(api):
    missing = scope_name()
    assert_problem(put(api, missing, "w"), 404, "not-found")
    assert_problem(api.http.get(presence_path(missing)), 404, "not-found")
    assert_problem(leave(api, missing, "w"), 404, "not-found")


@pytest.mark.parametrize("ttl", ["1", "300"])
def test_ttl_at_its_bounds_is_accepted(api, ttl):
    name, _ = api.create_canvas()
    before = time.time()
    join(api, name, "w", ttl=ttl)
    expires = instant(by_client(api, name)["w"]["expiresAt"]) if ttl == "300" else None
    if expires is not None:
        assert before + 300 - 2 <= expires <= time.time() + 300 + 2


@pytest.mark.parametrize("ttl", ["0", "301", "-1", "1.5", "abc", "", "1e2", "99999999999999999999"])
def test_ttl_outside_1_to_300_is_400(api, ttl):
    name, _ = api.create_canvas()
    assert_problem(put(api, name, "w", ttl=ttl), 400)
    assert members(api, name) == []


def test_the_default_ttl_is_30_seconds(api):
    name, _ = api.create_canvas()
    before = time.time()
    join(api, name, "w")
    after = time.time()
    assert before + 30 - 2 <= instant(by_client(api, name)["w"]["expiresAt"]) <= after + 30 + 2


@pytest.mark.parametrize("client", ["a", "A-z_0.9~x", "x" * 64])
def test_client_ids_of_the_allowed_characters_are_accepted(api, client):
    name, _ = api.create_canvas()
    join(api, name, client)
    assert list(by_client(api, name)) == [client]
    assert leave(api, name, client).status_code == 204


@pytest.mark.parametrize("client", ["x" * 65, "a%20b", "a*b", "a+b", "a:b", "a@b", "%C3%A9t%C3%A9",
                                    "a%2Fb", "a!"])
def test_other_client_ids_are_400(api, client):
    name, _ = api.create_canvas()
    assert_problem(put(api, name, client), 400)
    assert_problem(leave(api, name, client), 400)
    assert members(api, name) == []


def test_a_body_over_4_kib_is_413_and_exactly_4_kib_is_accepted(api):
    name, _ = api.create_canvas()
    exact = json.dumps({"p": "x" * (4096 - len('{"p": ""}'))}).encode()
    assert len(exact) == 4096
    assert put(api, name, "w", raw=exact).status_code == 204
    over = json.dumps({"p": "x" * (4097 - len('{"p": ""}'))}).encode()
    assert len(over) == 4097
    assert_problem(put(api, name, "v", raw=over), 413)
    assert list(by_client(api, name)) == ["w"]
    assert by_client(api, name)["w"]["data"] == json.loads(exact)


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"42", b"null", b"true", b"not json", b"",
                                 b'{"a": 1', b'{"a": 1} {"b": 2}'])
def test_a_body_that_is_not_a_json_object_is_400(api, raw):
    name, _ = api.create_canvas()
    assert_problem(put(api, name, "w", raw=raw), 400)
    assert members(api, name) == []


def test_more_members_than_the_limit_is_429(start_server):
    server = start_server("--max-presence-members", "3")
    api = Api(server.url)
    name, _ = api.create_canvas()
    other, _ = api.create_canvas()
    for client in ("a", "b", "c"):
        join(api, name, client, {"n": client})
    assert_problem(put(api, name, "d"), 429, "too-many-members")
    assert sorted(by_client(api, name)) == ["a", "b", "c"]
    # A member already present still updates; another scope has its own limit.
    join(api, name, "b", {"n": "b2"})
    join(api, other, "d")
    # One leaves: there is room again.
    assert leave(api, name, "a").status_code == 204
    join(api, name, "d")
    assert sorted(by_client(api, name)) == ["b", "c", "d"]
    api.close()


# -- auth ---------------------------------------------------------------------------------------
def test_read_access_is_enough_to_be_present(auth):
    name = scope_name()
    assert auth.create(name, headers=bearer(token())).status_code == 201
    reader = bearer(token(read=("canvas-*",), write=(), sub="reader"))
    join(auth, name, "r1", {"x": 1}, headers=reader)
    assert by_client(auth, name, reader)["r1"]["subject"] == "reader"
    # Without a token, without read access: refused (the scope is not anonymously readable).
    assert_problem(put(auth, name, "anon"), 401)
    assert_problem(auth.http.get(presence_path(name)), 401)
    outsider = bearer(token(read=("other-*",), write=("canvas-*",), sub="outsider"))
    assert_problem(put(auth, name, "o1", headers=outsider), 403, "forbidden")
    assert_problem(auth.http.get(presence_path(name), headers=outsider), 403, "forbidden")
    # Anonymous read of a public scope is enough to be present, with a null subject.
    public = scope_name("canvas-public")
    assert auth.create(public, headers=bearer(token(write=("canvas-public-*",)))).status_code == 201
    join(auth, public, "anon-1", {"hi": True})
    assert by_client(auth, public)["anon-1"]["subject"] is None
    assert leave(auth, public, "anon-1").status_code == 204


def test_with_jwts_a_member_is_changed_or_removed_only_by_its_subject(auth):
    name = scope_name()
    assert auth.create(name, headers=bearer(token())).status_code == 201
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    join(auth, name, "shared-id", {"who": "ada"}, headers=ada)
    assert_problem(put(auth, name, "shared-id", {"who": "bob"}, headers=bob), 403, "forbidden")
    assert_problem(leave(auth, name, "shared-id", headers=bob), 403, "forbidden")
    assert by_client(auth, name, ada)["shared-id"] == {
        **by_client(auth, name, ada)["shared-id"], "subject": "ada", "data": {"who": "ada"}}
    # The same subject with a fresh token is the same owner.
    join(auth, name, "shared-id", {"who": "ada again"}, headers=bearer(token(sub="ada")))
    assert leave(auth, name, "shared-id", headers=ada).status_code == 204
    # Once it left, the id is free for anyone.
    join(auth, name, "shared-id", {"who": "bob"}, headers=bob)
    assert by_client(auth, name, bob)["shared-id"]["subject"] == "bob"
    assert_problem(leave(auth, name, "shared-id", headers=ada), 403, "forbidden")
    assert leave(auth, name, "shared-id", headers=bob).status_code == 204


def test_with_jwts_an_expired_member_frees_its_id_for_anyone(auth_server, auth):
    name = scope_name()
    assert auth.create(name, headers=bearer(token())).status_code == 201
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    with SSEStream(auth_server.url, f"/v1/scopes/{name}/events", ada) as stream:
        assert stream.expect_event().type == "snapshot"
        join(auth, name, "w", {"who": "ada"}, ttl=1, headers=ada)
        presence_event(stream.expect_event(), name, "w", "join", {"who": "ada"}, "ada")
        # Its leave (the expiry) comes without anyone asking.
        presence_event(stream.expect_event(timeout=EXPIRY_BOUND), name, "w", "leave", subject="ada")
    join(auth, name, "w", {"who": "bob"}, headers=bob)
    assert by_client(auth, name, bob)["w"]["subject"] == "bob"


def test_with_jwts_an_id_is_free_as_soon_as_get_no_longer_lists_it(auth):
    ada, bob = bearer(token(sub="ada")), bearer(token(sub="bob"))
    names = [scope_name() for _ in range(6)]
    for name in names:
        assert auth.create(name, headers=bearer(token())).status_code == 201
    outcomes = []
    for name in names:
        join(auth, name, "w", {"who": "ada"}, ttl=1, headers=ada)
        wait_until(lambda: "w" not in by_client(auth, name, bob), "the expired member left GET",
                   EXPIRY_BOUND)
        outcomes.append(put(auth, name, "w", {"who": "bob"}, headers=bob).status_code)
    assert outcomes == [204] * len(names)


# -- events -------------------------------------------------------------------------------------
def test_join_update_leave_on_a_single_scope_stream_without_ids(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        join(api, name, "w1", {"x": 1})
        presence_event(stream.expect_event(), name, "w1", "join", {"x": 1})
        join(api, name, "w1", {"x": 2, "sel": ["a"]})
        presence_event(stream.expect_event(), name, "w1", "update", {"x": 2, "sel": ["a"]})
        assert leave(api, name, "w1").status_code == 204
        presence_event(stream.expect_event(), name, "w1", "leave")
        assert "data" not in json.loads(stream.received[-1].data)


def test_join_update_leave_on_a_many_scope_stream_tagged_with_the_scope(api, server):
    a, b = api.create_canvas()[0], api.create_canvas()[0]
    with SSEStream(server.url, many_path([a, b])) as stream:
        assert [e.type for e in stream.take(2)] == ["snapshot", "snapshot"]
        join(api, b, "w", {"at": "b"})
        presence_event(stream.expect_event(), b, "w", "join", {"at": "b"})
        join(api, a, "w", {"at": "a"})
        presence_event(stream.expect_event(), a, "w", "join", {"at": "a"})
        join(api, b, "w", {"at": "b2"})
        presence_event(stream.expect_event(), b, "w", "update", {"at": "b2"})
        assert leave(api, a, "w").status_code == 204
        presence_event(stream.expect_event(), a, "w", "leave")


def test_a_subject_is_carried_on_presence_events(auth_server, auth):
    name = scope_name()
    tok = token(sub="ada")
    assert auth.create(name, headers=bearer(tok)).status_code == 201
    with SSEStream(auth_server.url, many_path([name]), bearer(tok)) as stream:
        assert stream.expect_event().type == "snapshot"
        join(auth, name, "w", {"x": 1}, headers=bearer(tok))
        presence_event(stream.expect_event(), name, "w", "join", {"x": 1}, "ada")
        assert leave(auth, name, "w", headers=bearer(tok)).status_code == 204
        presence_event(stream.expect_event(), name, "w", "leave", subject="ada")


def last_id_of(stream: SSEStream) -> str | None:
    """The id an EventSource would send on reconnect: the last `id:` field received (an event
    without one leaves it as it was)."""
    ids = [e.id for e in stream.received if e.id is not None]
    return ids[-1] if ids else None


def test_presence_never_moves_a_single_scope_resume_position(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        first = rename(api, name, "one")
        assert stream.expect_event().id == str(first["version"])
        join(api, name, "w", {"n": 1})
        join(api, name, "w", {"n": 2})
        events = stream.take(2)
        assert [e.id for e in events] == [None, None]
        resume = last_id_of(stream)
    assert resume == str(first["version"])
    assert api.state(name)["version"] == first["version"]
    second = rename(api, name, "two")
    with SSEStream(server.url, f"/v1/scopes/{name}/events", {"Last-Event-ID": resume}) as stream:
        events = stream.take(2)
        assert (events[0].type, events[0].id, events[0].json()) == (
            "changeset", str(second["version"]), as_event(second))
        presence_event(events[1], name, "w", "join", {"n": 2})
        # Nothing twice: the next event is the next write.
        third = rename(api, name, "three")
        assert stream.expect_event().id == str(third["version"])


def test_presence_never_moves_a_many_scope_resume_position(api, server):
    a, b = api.create_canvas()[0], api.create_canvas()[0]
    with SSEStream(server.url, many_path([a, b])) as stream:
        stream.take(2)
        first = rename(api, a, "one")
        changeset = stream.expect_event()
        assert changeset.type == "changeset"
        join(api, a, "w", {"n": 1})
        join(api, b, "v", {"n": 1})
        leave(api, a, "w")
        assert [e.id for e in stream.take(3)] == [None, None, None]
        resume = last_id_of(stream)
    assert resume == changeset.id
    second = rename(api, b, "two")
    with SSEStream(server.url, many_path([a, b]), {"Last-Event-ID": resume}) as stream:
        events = stream.take(2)
        assert events[0].type == "changeset"
        assert events[0].json() == {"scope": b, **as_event(second)}
        presence_event(events[1], b, "v", "join", {"n": 1})
        third = rename(api, a, "three")
        event = stream.expect_event()
        assert (event.type, event.json()) == ("changeset", {"scope": a, **as_event(third)})
    assert first["version"] + 1 == third["version"]


def test_after_a_snapshot_one_join_per_current_member(api, server):
    name, _ = api.create_canvas()
    present = {"c": {"n": 3}, "a": {"n": 1}, "b": {"n": 2}}
    for client, data in present.items():
        join(api, name, client, data)
    join(api, name, "gone")
    leave(api, name, "gone")
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        snapshot = stream.expect_event()
        assert (snapshot.type, snapshot.json()) == ("snapshot", api.state(name))
        joins = stream.take(3)
        for event in joins:
            assert event.id is None
        assert sorted((e.json()["client"], e.json()["state"], json.dumps(e.json()["data"]))
                      for e in joins) == sorted((c, "join", json.dumps(d)) for c, d in present.items())
        for event in joins:
            presence_event(event, name, event.json()["client"], "join", present[event.json()["client"]])
        # Exactly one each: the next event is the next write.
        answer = rename(api, name, "next")
        assert stream.expect_event().id == str(answer["version"])


def test_after_a_catch_up_or_a_reset_one_join_per_current_member(api, server):
    name, created = api.create_canvas()
    join(api, name, "m1", {"k": 1})
    join(api, name, "m2", {"k": 2})
    answers = [rename(api, name, f"n{n}") for n in range(2)]
    expected_joins = {"m1": {"k": 1}, "m2": {"k": 2}}
    # Catch-up: the missed change sets, then the joins.
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(created["version"])}) as stream:
        events = stream.take(4)
        assert [(e.type, e.id) for e in events[:2]] == [
            ("changeset", str(a["version"])) for a in answers]
        assert {e.json()["client"]: e.json()["data"] for e in events[2:]} == expected_joins
        for event in events[2:]:
            presence_event(event, name, event.json()["client"], "join", event.json()["data"])
    # Reset (an id from the future): the state, then the joins.
    with SSEStream(server.url, f"/v1/scopes/{name}/events", {"Last-Event-ID": "999999"}) as stream:
        events = stream.take(3)
        assert (events[0].type, events[0].json()) == ("reset", api.state(name))
        assert {e.json()["client"]: e.json()["data"] for e in events[1:]} == expected_joins
    # At the head: no catch-up, still the joins.
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(answers[-1]["version"])}) as stream:
        events = stream.take(2)
        assert {e.json()["client"]: e.json()["data"] for e in events} == expected_joins
        answer = rename(api, name, "live")
        assert stream.expect_event().id == str(answer["version"])


def test_a_many_scope_stream_joins_each_scopes_members_after_the_snapshots(api, server):
    a, b, c = (api.create_canvas()[0] for _ in range(3))
    join(api, a, "x", {"in": "a"})
    join(api, c, "y", {"in": "c"})
    join(api, c, "z", {"in": "c"})
    with SSEStream(server.url, many_path([a, b, c])) as stream:
        snapshots = stream.take(3)
        assert [(e.type, e.json()["scope"]) for e in snapshots] == [
            ("snapshot", a), ("snapshot", b), ("snapshot", c)]
        joins = stream.take(3)
        assert sorted((e.json()["scope"], e.json()["client"]) for e in joins) == sorted([
            (a, "x"), (c, "y"), (c, "z")])
        for event in joins:
            body = event.json()
            presence_event(event, body["scope"], body["client"], "join", body["data"])
        answer = rename(api, b, "next")
        event = stream.expect_event()
        assert (event.type, event.json()) == ("changeset", {"scope": b, **as_event(answer)})


def test_an_expired_member_leaves_within_its_ttl(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, many_path([name])) as many, \
            SSEStream(server.url, f"/v1/scopes/{name}/events") as single:
        many.expect_event()
        single.expect_event()
        join(api, name, "stays", {"x": 2}, ttl=300)
        join(api, name, "brief", {"x": 1}, ttl=1)
        for stream in (many, single):
            presence_event(stream.expect_event(), name, "stays", "join", {"x": 2})
            presence_event(stream.expect_event(), name, "brief", "join", {"x": 1})
            presence_event(stream.expect_event(timeout=EXPIRY_BOUND), name, "brief", "leave")
    assert list(by_client(api, name)) == ["stays"]
    assert_problem(leave(api, name, "brief"), 404, "not-found")


def test_a_member_put_again_after_it_expired_leaves_then_joins(api, server):
    outcomes = []
    for attempt in range(5):
        name, _ = api.create_canvas()
        with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
            stream.expect_event()
            join(api, name, "w", {"n": 1}, ttl=1)
            wait_until(lambda: "w" not in by_client(api, name), "the member left GET", EXPIRY_BOUND)
            join(api, name, "w", {"n": 2}, ttl=300)
            got = [stream.expect_event(timeout=EXPIRY_BOUND).json()["state"] for _ in range(2)]
            if got[-1] == "leave":
                got.append(stream.expect_event(timeout=EXPIRY_BOUND).json()["state"])
            outcomes.append(got)
    assert outcomes == [["join", "leave", "join"]] * 5


def test_an_expired_member_gets_no_join_after_a_snapshot(api, server):
    outcomes = []
    for attempt in range(5):
        name, _ = api.create_canvas()
        join(api, name, "w", {"n": 1}, ttl=1)
        wait_until(lambda: "w" not in by_client(api, name), "the member left GET", EXPIRY_BOUND)
        with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
            assert stream.expect_event().type == "snapshot"
            answer = rename(api, name, "next")
            event = stream.expect_event()
            outcomes.append("changeset" if event.id == str(answer["version"]) else event.type)
    assert outcomes == ["changeset"] * 5


def test_each_put_again_is_an_update_until_the_member_leaves(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        stream.expect_event()
        join(api, name, "w", {"n": 0}, ttl=30)
        presence_event(stream.expect_event(), name, "w", "join", {"n": 0})
        for n in range(1, 4):
            join(api, name, "w", {"n": n}, ttl=30 + n)
            presence_event(stream.expect_event(), name, "w", "update", {"n": n})
        assert leave(api, name, "w").status_code == 204
        presence_event(stream.expect_event(), name, "w", "leave")


def test_presence_is_not_a_change(api, server):
    name, created = api.create_canvas()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        stream.expect_event()
        join(api, name, "w", {"x": 1})
        join(api, name, "w", {"x": 2})
        leave(api, name, "w")
        events = stream.take(3)
        assert [e.type for e in events] == ["presence"] * 3
        response = api.http.get(f"/v1/scopes/{name}")
        assert response.headers["etag"] == f'"{created["version"]}"'
        assert response.json() == created
        assert api.history(name, created["version"]).json()["changesets"] == []
        since_start = api.history(name, 0).json()["changesets"]
        assert all("presence" not in json.dumps(entry) for entry in since_start)
        # The next change set takes the next version.
        answer = rename(api, name, "next")
        assert answer["version"] == created["version"] + 1
        assert stream.expect_event().id == str(answer["version"])


def test_a_restart_forgets_presence(start_server):
    server = start_server()
    api = Api(server.url)
    name, _ = api.create_canvas()
    join(api, name, "w", {"x": 1}, ttl=300)
    assert list(by_client(api, name)) == ["w"]
    api.close()
    server.restart()
    api = Api(server.url)
    assert members(api, name) == []
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        answer = rename(api, name, "after restart")
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answer["version"])), "a join survived"
    assert_problem(leave(api, name, "w"), 404, "not-found")
    api.close()


def test_deleting_the_scope_removes_its_members(api, server):
    name, _ = api.create_canvas()
    join(api, name, "a", {"x": 1}, ttl=300)
    join(api, name, "b", {"x": 2}, ttl=300)
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert [e.type for e in stream.take(3)] == ["snapshot", "presence", "presence"]
        assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
        rest = stream.read_to_end(timeout=BOUND)
        assert rest and rest[-1].type == "deleted", [(e.type, e.data) for e in rest]
    assert_problem(api.http.get(presence_path(name)), 404, "not-found")
    assert_problem(put(api, name, "a"), 404, "not-found")
    assert_problem(leave(api, name, "a"), 404, "not-found")
    # Re-created: nobody is there.
    api.create_canvas(name)
    assert members(api, name) == []
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        answer = rename(api, name, "fresh")
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answer["version"])), "a member survived"
    # And the old ids are free.
    join(api, name, "a", {"x": 3})
    assert by_client(api, name)["a"]["data"] == {"x": 3}


def test_concurrent_presence_and_writes_keep_change_sets_exactly_once(api, server):
    """Presence from several windows while writers write: every change set once, in order, with
    ids; presence events interleave without ids; the last id resumes with nothing twice."""
    name, created = api.create_canvas()
    errors: list[BaseException] = []

    def windows(index: int) -> None:
        client = Api(server.url)
        try:
            for n in range(15):
                join(client, name, f"win-{index}", {"n": n})
            assert leave(client, name, f"win-{index}").status_code == 204
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            client.close()

    def writes() -> None:
        client = Api(server.url)
        try:
            for n in range(15):
                rename(client, name, f"w{n}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            client.close()

    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        stream.expect_event()
        threads = [threading.Thread(target=windows, args=(i,)) for i in range(3)]
        threads.append(threading.Thread(target=writes))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert not errors, errors
        events = stream.take(15 + 3 * 16, timeout=BOUND)
    changesets = [e for e in events if e.type == "changeset"]
    presences = [e for e in events if e.type == "presence"]
    assert [int(e.id) for e in changesets] == list(
        range(created["version"] + 1, created["version"] + 16))
    assert all(e.id is None for e in presences) and len(presences) == 48
    for index in range(3):
        mine = [e.json() for e in presences if e.json()["client"] == f"win-{index}"]
        assert [m["state"] for m in mine] == ["join"] + ["update"] * 14 + ["leave"]
        assert [m["data"]["n"] for m in mine[:-1]] == list(range(15))
    assert members(api, name) == []
