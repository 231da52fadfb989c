"""Idempotency-Key replay as docs/gateway.md ("Idempotency") states it: the same key and body
replays the first outcome (accept or reject) with `Idempotent-Replayed: true`, also after a
restart; the same key with another body is 422 `idempotency-key-reused`."""
from __future__ import annotations

from gateway_helpers import Api, assert_problem, assert_rejected, change, new_uuid


def test_idempotency_key_replays_an_accepted_set_once(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="once")]
    key = {"Idempotency-Key": new_uuid()}
    first = api.post(name, fragments, headers=key)
    assert first.status_code == 200, first.text
    assert first.headers.get("idempotent-replayed") in (None, "false")
    again = api.post(name, fragments, headers=key)
    assert again.status_code == 200
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert api.state(name)["version"] == first.json()["version"]


def test_idempotency_key_replays_a_rejection(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name=7)]
    key = {"Idempotency-Key": new_uuid()}
    first = api.post(name, fragments, headers=key)
    assert_rejected(first, ["type-mismatch"])
    again = api.post(name, fragments, headers=key)
    assert_rejected(again, ["type-mismatch"])
    assert again.headers.get("idempotent-replayed") == "true"


def test_idempotency_key_reused_with_another_body_is_422(api):
    name, state = api.create_canvas()
    key = {"Idempotency-Key": new_uuid()}
    api.apply(name, [change(state["rootUUID"], "Canvas", name="one")], headers=key)
    before = api.state(name)
    response = api.post(name, [change(state["rootUUID"], "Canvas", name="two")], headers=key)
    assert_problem(response, 422, "idempotency-key-reused")
    assert api.state(name) == before


def test_idempotency_survives_a_restart(start_server):
    server = start_server()
    api = Api(server.url)
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name="durable")]
    key = {"Idempotency-Key": new_uuid()}
    first = api.apply(name, fragments, headers=key)
    api.close()
    server.restart()
    api = Api(server.url)
    again = api.post(name, fragments, headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first
    assert api.state(name)["version"] == first["version"]
    api.close()
