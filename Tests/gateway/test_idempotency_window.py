"""At most once, whatever the time offline: a keyed change set sent again after its idempotency
record expired, with `Idempotency-Key-Created`, is decided from the change-set log — its logged
answer replayed, applied once when the log shows it never was, or refused
(`409 idempotency-window-passed`) when the log no longer reaches back — never applied twice.
A server with a 2 s `--idempotency-ttl` stands in for a week."""
from __future__ import annotations

import datetime
import time

from gateway_helpers import Api, assert_problem, change, new_uuid

TTL_SECONDS = 2


def rfc3339(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, datetime.timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def keyed(key: str, created: float) -> dict:
    return {"Idempotency-Key": key, "Idempotency-Key-Created": rfc3339(created)}


def wait_until_records_expire(api: Api, name: str, root: str) -> None:
    """A probe key's record is replayed until the TTL has passed; once it is not, every record
    made before the probe's is gone too (the probe applies a harmless set once more)."""
    probe = {"Idempotency-Key": new_uuid()}
    fragments = [change(root, "Canvas", name="probe")]
    first = api.apply(name, fragments, headers=probe)
    deadline = time.monotonic() + 60
    while True:
        again = api.post(name, fragments, headers=probe)
        assert again.status_code == 200, again.text
        if again.headers.get("idempotent-replayed") != "true":
            return
        assert again.json()["version"] == first["version"]
        assert time.monotonic() < deadline, "records were still replayed 60 s after a 2 s TTL"
        time.sleep(0.2)


def test_a_set_past_the_window_is_replayed_from_the_log_applied_once_or_refused_never_twice(start_server):
    server = start_server("--idempotency-ttl", str(TTL_SECONDS))
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]

    # Made long ago by the server's measure: the log already reaches back before it (the scope's
    # creation is not a logged set, so the first one is logged now and its time is the oldest).
    made_before_anything = time.time() - 3600
    applied_key = new_uuid()
    applied_made = time.time()
    applied = api.apply(name, [change(root, "Canvas", name="applied once")], headers=keyed(applied_key, applied_made))
    never_key = new_uuid()

    wait_until_records_expire(api, name, root)
    version = api.state(name)["version"]

    # 1. Its record is gone, its key is in the log: the logged answer, nothing applied.
    again = api.post(name, [change(root, "Canvas", name="applied once")], headers=keyed(applied_key, applied_made))
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    body = again.json()
    assert body["version"] == applied["version"] and body["idempotencyKey"] == applied_key
    assert body["fragments"] == applied["fragments"] and body["fragmentReplies"] == [{}]
    assert api.state(name)["version"] == version

    # 2. Made after the oldest logged set and never applied: applied now, once. The server allows
    # half the TTL (1 s) of clock difference on both sides: the set is made 1.5 s after the oldest
    # logged set, and sent once that is more than 1 s past the window.
    never_made = applied_made + 1.5
    deadline = time.monotonic() + 60
    while time.time() < never_made + TTL_SECONDS:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    fresh = api.post(name, [change(root, "Canvas", name="late but new")], headers=keyed(never_key, never_made))
    assert fresh.status_code == 200, fresh.text
    assert fresh.headers.get("idempotent-replayed") is None
    assert fresh.json()["version"] == version + 1
    retried = api.post(name, [change(root, "Canvas", name="late but new")], headers=keyed(never_key, never_made))
    assert retried.headers.get("idempotent-replayed") == "true" and retried.json()["version"] == version + 1

    # 3. Made before the oldest logged set: nobody can tell; refused, recorded, not applied.
    unknown_key = new_uuid()
    fragments = [change(root, "Canvas", name="too old to tell")]
    refused = api.post(name, fragments, headers=keyed(unknown_key, made_before_anything))
    problem = assert_problem(refused, 409, "idempotency-window-passed")
    assert unknown_key in problem["detail"] and "not applied again" in problem["detail"]
    again = api.post(name, fragments, headers=keyed(unknown_key, made_before_anything))
    assert again.status_code == 409 and again.headers.get("idempotent-replayed") == "true"
    assert api.state(name)["version"] == version + 1
    assert api.state(name)["fragments"][0]["properties"]["name"] == "late but new"
    api.close()


def test_a_set_inside_the_window_or_without_a_creation_time_is_decided_by_its_record(start_server):
    server = start_server("--idempotency-ttl", "3600")
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    # Made an hour before the log's first set, but within the window: new, applied.
    key = new_uuid()
    first = api.apply(name, [change(root, "Canvas", name="recent")], headers=keyed(key, time.time() - 60))
    again = api.post(name, [change(root, "Canvas", name="recent")], headers=keyed(key, time.time() - 60))
    assert again.headers.get("idempotent-replayed") == "true" and again.json()["version"] == first["version"]
    plain = api.apply(name, [change(root, "Canvas", name="no time")], headers={"Idempotency-Key": new_uuid()})
    assert plain["version"] == first["version"] + 1
    api.close()


def test_a_creation_time_that_is_not_rfc3339_is_400(api):
    name, state = api.create_canvas()
    for bad in ["yesterday", "1700000000000", "2026-13-40T00:00:00Z"]:
        response = api.post(name, [change(state["rootUUID"], "Canvas", name="x")],
                            headers={"Idempotency-Key": new_uuid(), "Idempotency-Key-Created": bad})
        assert_problem(response, 400, "bad-request")
    assert api.state(name)["version"] == state["version"]
