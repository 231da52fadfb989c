"""Idempotency-Key beyond the contract tests in test_gateway_changesets.py: concurrent retries,
key validation, per-scope keys, the replayed 412, expiry after --idempotency-ttl."""
from __future__ import annotations

import concurrent.futures
import time

from gateway_helpers import Api, assert_problem, change, new_uuid


def test_concurrent_requests_with_one_key_apply_the_change_set_once(api, server):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="raced")]
    key = {"Idempotency-Key": new_uuid()}

    def post(_):
        client = Api(server.url)
        try:
            response = client.post(name, fragments, headers=key)
            return response.status_code, response.headers.get("idempotent-replayed"), response.json()
        finally:
            client.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(post, range(16)))
    accepted = [body for status, _, body in answers if status == 200]
    assert accepted, answers
    # Every 200 names the same single version; the others were told the key is in flight.
    assert {body["version"] for body in accepted} == {state["version"] + 1}
    assert sum(1 for status, replayed, _ in answers if status == 200 and replayed != "true") == 1
    for status, _, body in answers:
        if status != 200:
            assert status == 409 and body["type"] == "/problems/idempotency-key-in-flight", body
    assert api.state(name)["version"] == state["version"] + 1


def test_a_key_that_is_not_visible_ascii_or_too_long_is_400(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="x")]
    for bad in ["", "a b", "k" * 256]:
        response = api.post(name, fragments, headers={"Idempotency-Key": bad})
        assert_problem(response, 400, "bad-request")
    assert api.state(name)["version"] == state["version"]


def test_a_structured_field_string_key_is_the_text_between_the_quotes(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="quoted")]
    key = new_uuid()
    first = api.post(name, fragments, headers={"Idempotency-Key": f'"{key}"'})
    assert first.status_code == 200, first.text
    again = api.post(name, fragments, headers={"Idempotency-Key": key})
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()


def test_keys_belong_to_their_scope(api):
    first_name, first_state = api.create_canvas()
    second_name, second_state = api.create_canvas()
    key = {"Idempotency-Key": new_uuid()}
    api.apply(first_name, [change(first_state["rootUUID"], "Canvas", name="a")], headers=key)
    other = api.post(second_name, [change(second_state["rootUUID"], "Canvas", name="b")], headers=key)
    assert other.status_code == 200, other.text
    assert other.headers.get("idempotent-replayed") in (None, "false")
    assert api.state(second_name)["version"] == second_state["version"] + 1


def test_a_failed_precondition_is_replayed_even_after_the_scope_moved_on(api):
    name, state = api.create_canvas()
    stale = {"If-Match": f'"{state["version"] + 7}"', "Idempotency-Key": new_uuid()}
    fragments = [change(state["rootUUID"], "Canvas", name="late")]
    first = api.post(name, fragments, headers=stale)
    assert_problem(first, 412, "precondition-failed")
    api.apply(name, [change(state["rootUUID"], "Canvas", name="moved")])
    again = api.post(name, fragments, headers=stale)
    assert_problem(again, 412, "precondition-failed")
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()


def test_a_request_without_a_key_is_never_replayed(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="same")]
    first = api.apply(name, fragments)
    second = api.post(name, fragments)
    assert second.status_code == 200 and "idempotent-replayed" not in second.headers
    assert second.json()["version"] == first["version"] + 1


def test_a_key_expires_after_the_ttl(start_server):
    server = start_server("--idempotency-ttl", "1")
    api = Api(server.url)
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="expiring")]
    key = {"Idempotency-Key": new_uuid()}
    first = api.apply(name, fragments, headers=key)
    deadline = time.monotonic() + 60
    while True:
        again = api.post(name, fragments, headers=key)
        assert again.status_code == 200, again.text
        if again.headers.get("idempotent-replayed") != "true":
            break
        assert again.json() == first
        assert time.monotonic() < deadline, "the key was still replayed 60 s after a 1 s TTL"
        time.sleep(0.2)
    assert again.json()["version"] == first["version"] + 1
    api.close()
