"""Change-set identity (docs/gateway.md, "Idempotency"): a keyed write's 200 answer and its
`changeset` event both carry `"idempotencyKey": K`, unkeyed ones carry no such member, and keys
belong to one scope and one authenticated subject."""
from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse

import jwt
import pytest

from gateway_helpers import Api, assert_problem, change, etag_version, new_uuid, scope_name
from sse_stream import SSEStream

SECRET = "a-wave2-test-secret-of-more-than-32-bytes"
ISSUER = "https://issuer.wave2.test"
AUDIENCE = "jetstream-wave2-tests"


def token(sub: str, read=("canvas-*",), write=("canvas-*",)) -> str:
    return jwt.encode({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600,
                       "jetstream": {"read": list(read), "write": list(write)}},
                      SECRET, algorithm="HS256")


def bearer(value: str) -> dict:
    return {"Authorization": f"Bearer {value}"}


def changeset_event(stream: SSEStream) -> dict:
    event = stream.expect_event()
    assert event.type == "changeset", (event.type, event.data)
    body = event.json()
    assert event.id == str(body["version"])
    return body


def open_stream(url: str, name: str, headers: dict | None = None) -> SSEStream:
    stream = SSEStream(url, f"/v1/scopes/{name}/events", headers)
    assert stream.status == 200, getattr(stream, "body", b"")
    assert stream.expect_event().type == "snapshot"
    return stream


# -- the member on answers and events ----------------------------------------------------------

def test_a_keyed_post_carries_its_key_in_the_answer_and_the_event(api, server):
    name, state = api.create_canvas()
    key = f"client-7:{new_uuid()}"
    with open_stream(server.url, name) as stream:
        response = api.post(name, [change(state["rootUUID"], "Canvas", name="mine")],
                            headers={"Idempotency-Key": key})
        assert response.status_code == 200, response.text
        body = response.json()
        event = changeset_event(stream)
    assert body["idempotencyKey"] == key
    assert body["version"] == etag_version(response) == state["version"] + 1
    assert event == {"version": body["version"], "idempotencyKey": key, "at": body["at"],
                     "subject": body["subject"], "fragments": body["fragments"],
                     "removed": body["removed"]}


def test_an_unkeyed_post_carries_no_key_anywhere(api, server):
    name, state = api.create_canvas()
    with open_stream(server.url, name) as stream:
        body = api.apply(name, [change(state["rootUUID"], "Canvas", name="anonymous write")])
        event = changeset_event(stream)
    assert "idempotencyKey" not in body
    assert event == {"version": body["version"], "at": body["at"], "subject": body["subject"],
                     "fragments": body["fragments"], "removed": []}


def test_the_key_is_the_text_between_the_quotes_of_a_structured_field_string(api, server):
    name, state = api.create_canvas()
    key = new_uuid()
    with open_stream(server.url, name) as stream:
        body = api.apply(name, [change(state["rootUUID"], "Canvas", name="quoted")],
                         headers={"Idempotency-Key": f'"{key}"'})
        event = changeset_event(stream)
    assert body["idempotencyKey"] == key and event["idempotencyKey"] == key


def test_a_replayed_answer_carries_the_key_and_emits_no_second_event(api, server):
    name, state = api.create_canvas()
    key = new_uuid()
    fragments = [change(state["rootUUID"], "Canvas", name="once")]
    with open_stream(server.url, name) as stream:
        first = api.post(name, fragments, headers={"Idempotency-Key": key})
        again = api.post(name, fragments, headers={"Idempotency-Key": key})
        later = api.apply(name, [change(state["rootUUID"], "Canvas", name="later")])
        events = [changeset_event(stream), changeset_event(stream)]
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json() and first.json()["idempotencyKey"] == key
    # The retry is not a new change set: the next event is the next write's.
    assert [e["version"] for e in events] == [first.json()["version"], later["version"]]
    assert events[0]["idempotencyKey"] == key and "idempotencyKey" not in events[1]


def test_a_keyed_patch_carries_its_key_in_the_answer_and_the_event(api, server):
    name, state = api.create_canvas()
    key = new_uuid()
    with open_stream(server.url, name) as stream:
        response = api.patch_object(name, state["rootUUID"], {"name": "patched"},
                                    headers={"Idempotency-Key": key})
        assert response.status_code == 200, response.text
        event = changeset_event(stream)
    body = response.json()
    assert body["idempotencyKey"] == key
    assert event == {"version": body["version"], "idempotencyKey": key, "at": body["at"],
                     "subject": body["subject"], "fragments": body["fragments"],
                     "removed": body["removed"]}


def test_a_resumed_stream_still_carries_the_key(api, server):
    """The key is stored with the change set: a subscriber that reconnects with Last-Event-ID
    gets the same `changeset` event, key included."""
    name, state = api.create_canvas()
    key = new_uuid()
    body = api.apply(name, [change(state["rootUUID"], "Canvas", name="before reconnect")],
                     headers={"Idempotency-Key": key})
    unkeyed = api.apply(name, [change(state["rootUUID"], "Canvas", name="after")])
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(state["version"])}) as stream:
        events = [changeset_event(stream), changeset_event(stream)]
    assert events[0] == {"version": body["version"], "idempotencyKey": key, "at": body["at"],
                         "subject": body["subject"], "fragments": body["fragments"],
                         "removed": []}
    assert events[1]["version"] == unkeyed["version"] and "idempotencyKey" not in events[1]


# -- whichever arrives first -------------------------------------------------------------------

class PendingPost:
    """A POST whose request is sent now and whose answer is read only when asked for."""

    def __init__(self, base_url: str, name: str, fragments: list, headers: dict):
        split = urllib.parse.urlsplit(base_url)
        self.connection = http.client.HTTPConnection(split.hostname, split.port, timeout=30)
        body = json.dumps({"fragments": fragments}).encode()
        self.connection.request("POST", f"/v1/scopes/{name}/changesets", body=body,
                                headers={"Content-Type": "application/json", **headers})

    def answer(self) -> tuple[int, dict]:
        try:
            response = self.connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            self.connection.close()


def test_event_first_then_answer_both_name_the_key(api, server):
    name, state = api.create_canvas()
    key = new_uuid()
    with open_stream(server.url, name) as stream:
        pending = PendingPost(server.url, name, [change(state["rootUUID"], "Canvas", name="e")],
                              {"Idempotency-Key": key})
        # The client reads its stream before it looks at the answer: the event alone tells it
        # this change set is its own.
        event = changeset_event(stream)
        status, body = pending.answer()
    assert event["idempotencyKey"] == key
    assert status == 200, body
    assert body["idempotencyKey"] == key and body["version"] == event["version"]
    assert body["fragments"] == event["fragments"]


def test_answer_first_then_event_both_name_the_key(api, server):
    name, state = api.create_canvas()
    key = new_uuid()
    with open_stream(server.url, name) as stream:
        pending = PendingPost(server.url, name, [change(state["rootUUID"], "Canvas", name="a")],
                              {"Idempotency-Key": key})
        status, body = pending.answer()
        event = changeset_event(stream)
    assert status == 200, body
    assert body["idempotencyKey"] == key and event["idempotencyKey"] == key
    assert body["version"] == event["version"]


def test_among_concurrent_writers_each_recognises_its_own_change_set(api, server):
    """Keyed and unkeyed writes interleaved: every event carries exactly the key of the write that
    made it, and the answers agree with the events."""
    name, state = api.create_canvas()
    root = state["rootUUID"]
    writers, writes = 4, 10
    answers: list[tuple[str | None, dict]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(index: int):
        client = Api(server.url)
        try:
            for n in range(writes):
                key = f"w{index}-{n}-{new_uuid()}" if n % 2 == 0 else None
                headers = {"Idempotency-Key": key} if key else None
                body = client.apply(name, [change(root, "Canvas", name=f"{index}/{n}")], headers)
                with lock:
                    answers.append((key, body))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            client.close()

    with open_stream(server.url, name) as stream:
        threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(writers)]
        for thread in threads:
            thread.start()
        events = [changeset_event(stream) for _ in range(writers * writes)]
        for thread in threads:
            thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    by_version = {e["version"]: e for e in events}
    assert len(by_version) == writers * writes
    for key, body in answers:
        event = by_version[body["version"]]
        assert event["fragments"] == body["fragments"]
        if key is None:
            assert "idempotencyKey" not in body and "idempotencyKey" not in event
        else:
            assert body["idempotencyKey"] == key == event["idempotencyKey"]


# -- keys per authenticated subject ------------------------------------------------------------

@pytest.fixture(scope="module")
def auth_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("wave2-auth")
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    pool = ServerPool(jetstream_bin, base)
    yield pool("--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER,
               "--jwt-audience", AUDIENCE)
    pool.stop_all()


@pytest.fixture(scope="module")
def auth_api(auth_server):
    client = Api(auth_server.url)
    yield client
    client.close()


def ada_token() -> str:
    return token("ada")


def bob_token() -> str:
    return token("bob")


def authed_canvas(auth_api: Api) -> tuple[str, str]:
    name = scope_name()
    response = auth_api.create(name, headers=bearer(ada_token()))
    assert response.status_code == 201, response.text
    return name, response.json()["rootUUID"]


def test_another_subject_with_the_same_key_and_another_body_is_independent(auth_api,
                                                                           auth_server):
    name, root = authed_canvas(auth_api)
    key = new_uuid()
    ada_fragments = [change(root, "Canvas", name="ada's")]
    bob_fragments = [change(root, "Canvas", name="bob's")]
    with open_stream(auth_server.url, name, bearer(ada_token())) as stream:
        ada = auth_api.post(name, ada_fragments, headers={"Idempotency-Key": key, **bearer(ada_token())})
        bob = auth_api.post(name, bob_fragments, headers={"Idempotency-Key": key, **bearer(bob_token())})
        events = [changeset_event(stream), changeset_event(stream)]
    assert ada.status_code == 200, ada.text
    assert bob.status_code == 200, bob.text
    for response in (ada, bob):
        assert response.headers.get("idempotent-replayed") in (None, "false")
        assert response.json()["idempotencyKey"] == key
    assert bob.json()["version"] == ada.json()["version"] + 1
    assert bob.json()["fragments"] == [{"type": "change", "uuid": root, "clsName": "Canvas",
                                        "properties": {"name": "bob's"}}]
    # Both change sets are broadcast, each with the key its writer sent.
    assert [(e["version"], e["idempotencyKey"]) for e in events] == [
        (ada.json()["version"], key), (bob.json()["version"], key)]

    # Each subject's retry replays its own outcome, never the other's.
    ada_again = auth_api.post(name, ada_fragments, headers={"Idempotency-Key": key, **bearer(ada_token())})
    bob_again = auth_api.post(name, bob_fragments, headers={"Idempotency-Key": key, **bearer(bob_token())})
    assert ada_again.headers.get("idempotent-replayed") == "true"
    assert ada_again.json() == ada.json()
    assert bob_again.headers.get("idempotent-replayed") == "true"
    assert bob_again.json() == bob.json()
    # The key is still each subject's own: ada sending bob's body with it is a reuse.
    reused = auth_api.post(name, bob_fragments, headers={"Idempotency-Key": key, **bearer(ada_token())})
    assert_problem(reused, 422, "idempotency-key-reused")
    state = auth_api.http.get(f"/v1/scopes/{name}", headers=bearer(ada_token())).json()
    assert state["version"] == bob.json()["version"]


def test_another_subject_with_the_same_key_and_the_same_body_is_not_replayed(auth_api):
    name, root = authed_canvas(auth_api)
    key = new_uuid()
    fragments = [change(root, "Canvas", name="same body")]
    ada = auth_api.post(name, fragments, headers={"Idempotency-Key": key, **bearer(ada_token())})
    bob = auth_api.post(name, fragments, headers={"Idempotency-Key": key, **bearer(bob_token())})
    assert ada.status_code == bob.status_code == 200, (ada.text, bob.text)
    assert bob.headers.get("idempotent-replayed") in (None, "false")
    assert bob.json()["version"] == ada.json()["version"] + 1


def test_concurrent_subjects_with_one_key_never_block_each_other(auth_api, auth_server):
    """One key in flight for ada is no reason to answer bob 409 idempotency-key-in-flight."""
    for _ in range(5):
        name, root = authed_canvas(auth_api)
        key = new_uuid()
        barrier = threading.Barrier(2)
        results: dict[str, tuple[int, dict]] = {}
        errors: list[BaseException] = []

        def send(sub: str, tok: str):
            client = Api(auth_server.url)
            try:
                barrier.wait(timeout=60)
                response = client.post(name, [change(root, "Canvas", name=sub)],
                                       headers={"Idempotency-Key": key, **bearer(tok)})
                results[sub] = (response.status_code, response.json())
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)
            finally:
                client.close()

        threads = [threading.Thread(target=send, args=(sub, tok), daemon=True)
                   for sub, tok in (("ada", ada_token()), ("bob", bob_token()))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in threads) and not errors, errors
        assert {sub: status for sub, (status, _) in results.items()} == {"ada": 200, "bob": 200}, (
            results)
        first, second = sorted(body["version"] for _, body in results.values())
        assert second == first + 1


def test_a_read_only_subject_cannot_patch(auth_api):
    name, root = authed_canvas(auth_api)
    reader = token("carol", write=())
    response = auth_api.patch_object(name, root, {"name": "no"}, headers=bearer(reader))
    assert_problem(response, 403, "forbidden")
