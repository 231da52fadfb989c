"""Change sets: acceptance, every error kind, atomicity, preconditions, limits, history
(demo schema: Canvas{name, shapes: [Shape]}, Shape{x, y, width, height, color, label, kind})."""
from __future__ import annotations

import json

import pytest

from gateway_helpers import (SHAPE_DEFAULTS, Api, add, as_event, assert_problem, assert_rejected,
                             change, etag_version, new_uuid, objects_of, scope_name, shapes_of)
from sse_stream import SSEStream



# -- accepted change sets ----------------------------------------------------------------------

def test_accepted_set_answers_the_new_version_and_normalised_fragments(api):
    name, state = api.create_canvas()
    root, shape = state["rootUUID"], new_uuid()
    response = api.post(name, [add(shape, "Shape", x=10, y=20),
                               change(root, "Canvas", shapes=[shape])])
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["version"] == state["version"] + 1 == etag_version(response)
    assert body["fragmentReplies"] == [{}, {}]
    assert body["removed"] == []
    assert body["fragments"] == [
        {"type": "add", "uuid": shape, "clsName": "Shape",
         "properties": {"x": 10, "y": 20, **SHAPE_DEFAULTS}},
        {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"shapes": [shape]}}]
    after = api.state(name)
    assert after["version"] == body["version"]
    assert objects_of(after)[shape]["properties"] == {"x": 10, "y": 20, **SHAPE_DEFAULTS}


def test_each_accepted_set_adds_exactly_one_to_the_version(api):
    name, state = api.create_canvas()
    versions = [api.add_shapes(name)[1]["version"] for _ in range(5)]
    assert versions == list(range(state["version"] + 1, state["version"] + 6))


def test_change_carries_only_the_changed_properties(api):
    name, _ = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    body = api.apply(name, [change(shape, "Shape", label="moved", x=5.5)])
    [fragment] = body["fragments"]
    assert fragment["type"] == "change" and fragment["uuid"] == shape
    assert fragment["properties"] == {"x": 5.5, "label": "moved"}
    props = objects_of(api.state(name))[shape]["properties"]
    assert props["x"] == 5.5 and props["label"] == "moved" and props["y"] == 2


def test_fragments_may_reference_objects_added_later_and_change_objects_added_earlier(api):
    name, state = api.create_canvas()
    root, shape = state["rootUUID"], new_uuid()
    body = api.apply(name, [change(root, "Canvas", shapes=[shape]),
                            add(shape, "Shape", x=1, y=1),
                            change(shape, "Shape", color=0xFF0000FF)])
    assert body["fragmentReplies"] == [{}, {}, {}]
    assert objects_of(api.state(name))[shape]["properties"]["color"] == 0xFF0000FF


def test_uuids_are_accepted_in_any_case_and_sent_lowercase(api):
    name, state = api.create_canvas()
    root, shape = state["rootUUID"], new_uuid()
    body = api.apply(name, [add(shape.upper(), "Shape", x=1, y=1),
                            change(root.upper(), "Canvas", shapes=[shape.upper()])])
    assert [f["uuid"] for f in body["fragments"]] == [shape, root]
    assert body["fragments"][1]["properties"]["shapes"] == [shape]
    assert shapes_of(api.state(name)) == [shape]


def test_dropping_references_removes_unreachable_objects(api):
    name, state = api.create_canvas()
    (a, b), _ = api.add_shapes(name, count=2)
    body = api.apply(name, [change(state["rootUUID"], "Canvas", shapes=[b])])
    assert body["removed"] == [a]
    assert set(objects_of(api.state(name))) == {state["rootUUID"], b}
    body = api.apply(name, [change(state["rootUUID"], "Canvas", shapes=[])])
    assert body["removed"] == [b]


def test_a_shape_listed_twice_stays_until_both_references_go(api):
    name, state = api.create_canvas()
    root, shape = state["rootUUID"], new_uuid()
    api.apply(name, [add(shape, "Shape", x=0, y=0), change(root, "Canvas", shapes=[shape, shape])])
    assert shapes_of(api.state(name)) == [shape, shape]
    assert api.apply(name, [change(root, "Canvas", shapes=[shape])])["removed"] == []
    assert api.apply(name, [change(root, "Canvas", shapes=[])])["removed"] == [shape]


def test_charset_parameter_on_json_is_accepted(api):
    name, state = api.create_canvas()
    body = json.dumps({"fragments": [change(state["rootUUID"], "Canvas", name="é")]}).encode()
    response = api.post_raw(name, body, "application/json; charset=utf-8")
    assert response.status_code == 200, response.text
    assert objects_of(api.state(name))[state["rootUUID"]]["properties"]["name"] == "é"


# -- every error kind --------------------------------------------------------------------------

def error_cases(root: str, shape: str) -> dict[str, tuple[list, list, str | None]]:
    """kind → (fragments, expected error kinds per fragment, the property named)."""
    fresh = new_uuid()
    return {
        "malformed-fragment": ([{"type": "remove", "uuid": shape, "clsName": "Shape"}],
                               ["malformed-fragment"], None),
        "unknown-class": ([add(fresh, "Triangle")], ["unknown-class"], None),
        "unknown-object": ([change(new_uuid(), "Shape", x=1)], ["unknown-object"], None),
        "class-mismatch": ([change(shape, "Canvas", name="x")], ["class-mismatch"], None),
        "duplicate-add": ([add(shape, "Shape", x=1, y=1)], ["duplicate-add"], None),
        "unknown-property": ([change(shape, "Shape", depth=3)], ["unknown-property"], "depth"),
        "type-mismatch": ([change(shape, "Shape", x="10")], ["type-mismatch"], "x"),
        "out-of-range": ([change(shape, "Shape", width=-1)], ["out-of-range"], "width"),
        "constraint-violation": ([change(shape, "Shape", kind="hexagon")],
                                 ["constraint-violation"], "kind"),
        "null-not-allowed": ([change(shape, "Shape", label=None)], ["null-not-allowed"], "label"),
        "missing-reference": ([change(root, "Canvas", shapes=[shape, new_uuid()])],
                              ["missing-reference"], "shapes[1]"),
        "wrong-class": ([change(root, "Canvas", shapes=[shape, root])], ["wrong-class"],
                        "shapes[1]"),
        "unattached-add": ([add(fresh, "Shape", x=1, y=1)], ["unattached-add"], None),
    }


@pytest.mark.parametrize("kind", ["malformed-fragment", "unknown-class", "unknown-object",
                                  "class-mismatch", "duplicate-add", "unknown-property",
                                  "type-mismatch", "out-of-range", "constraint-violation",
                                  "null-not-allowed", "missing-reference", "wrong-class",
                                  "unattached-add"])
def test_each_error_kind_rejects_the_whole_set_and_changes_nothing(api, kind):
    name, state = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    before = api.state(name)
    fragments, expected, prop = error_cases(state["rootUUID"], shape)[kind]
    # A fine fragment first: it must not be applied either.
    fragments = [change(shape, "Shape", label="applied?")] + fragments
    replies = assert_rejected(api.post(name, fragments), [None] + expected)
    if prop is not None:
        assert next(r for r in replies if r)["error"].get("property") == prop
    assert api.state(name) == before
    assert api.history(name, before["version"]).json()["changesets"] == []


def test_limit_exceeded_for_fragments_per_set_and_objects_per_scope(start_server):
    server = start_server("--max-fragments", "3", "--max-objects", "3")
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    a, b, c = new_uuid(), new_uuid(), new_uuid()
    response = api.post(name, [add(a, "Shape", x=0, y=0), add(b, "Shape", x=0, y=0),
                               add(c, "Shape", x=0, y=0), change(root, "Canvas", shapes=[a, b, c])])
    # More fragments than --max-fragments is refused whole before validation (413).
    body = assert_problem(response, 413, "too-many-fragments")
    assert "4 fragments" in body["detail"] and "3" in body["detail"], body
    # Root + 3 shapes is over a limit of 3 objects.
    response = api.post(name, [add(a, "Shape", x=0, y=0), add(b, "Shape", x=0, y=0),
                               change(root, "Canvas", shapes=[a, b])])
    assert response.status_code == 200, response.text
    response = api.post(name, [add(c, "Shape", x=0, y=0),
                               change(root, "Canvas", shapes=[a, b, c])])
    assert_rejected(response, ["limit-exceeded", None])
    assert shapes_of(api.state(name)) == [a, b]
    api.close()


def test_limit_exceeded_for_a_string_longer_than_the_server_limit(api):
    name, state = api.create_canvas()
    response = api.post(name, [change(state["rootUUID"], "Canvas", name="x" * 70_000)])
    [reply] = assert_rejected(response, ["limit-exceeded"])
    assert reply["error"]["property"] == "name"


def test_every_bad_fragment_gets_its_own_error(api):
    name, state = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    response = api.post(name, [
        change(shape, "Shape", x="1"),
        change(shape, "Shape", y=3),
        change(new_uuid(), "Shape", x=1),
        change(shape, "Shape", label="l" * 201),
        "not a fragment",
    ])
    assert_rejected(response, ["type-mismatch", None, "unknown-object", "constraint-violation",
                               "malformed-fragment"])


@pytest.mark.parametrize("fragment", [
    "a string",
    {"type": "add", "clsName": "Shape"},
    {"type": "add", "uuid": "not-a-uuid", "clsName": "Shape"},
    {"type": "change", "uuid": "ROOT"},
    {"type": "change", "uuid": "ROOT", "clsName": "Canvas", "properties": ["name"]},
    {"uuid": "ROOT", "clsName": "Canvas"},
    {"type": 1, "uuid": "ROOT", "clsName": "Canvas"},
])
def test_malformed_fragment_in_a_valid_body_is_422(api, fragment):
    name, state = api.create_canvas()
    if isinstance(fragment, dict):
        fragment = {k: (state["rootUUID"] if v == "ROOT" else v) for k, v in fragment.items()}
    assert_rejected(api.post(name, [fragment]), ["malformed-fragment"])


def test_empty_fragments_is_422(api):
    name, _ = api.create_canvas()
    assert_problem(api.post(name, []), 422, "invalid-change-set")


@pytest.mark.parametrize("body, kind", [
    (b'{"fragments": [', "invalid-json"),
    (b"", "invalid-json"),
    (b'{"fragments": [] ,}', "invalid-json"),
    (b"[]", "bad-request"),
    (b"{}", "bad-request"),
    (b'{"fragments": {}}', "bad-request"),
    (b'{"fragments": "add"}', "bad-request"),
    (b'"fragments"', "bad-request"),
])
def test_a_body_that_is_not_an_object_with_a_fragments_array_is_400(api, body, kind):
    name, _ = api.create_canvas()
    before = api.state(name)
    assert_problem(api.post_raw(name, body), 400, kind)
    assert api.state(name) == before


def test_unknown_scope_is_404(api):
    assert_problem(api.post(scope_name(), [change(new_uuid(), "Canvas", name="x")]), 404,
                   "not-found")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_415(api, content_type):
    name, state = api.create_canvas()
    body = json.dumps({"fragments": [change(state["rootUUID"], "Canvas", name="x")]}).encode()
    assert_problem(api.post_raw(name, body, content_type), 415, "unsupported-media-type")
    assert api.state(name) == state


# -- If-Match ----------------------------------------------------------------------------------

def test_if_match_with_the_current_version_applies(api):
    name, state = api.create_canvas()
    body = api.apply(name, [change(state["rootUUID"], "Canvas", name="a")],
                     headers={"If-Match": f'"{state["version"]}"'})
    assert body["version"] == state["version"] + 1


def test_if_match_with_another_version_is_412_with_the_current_one(api):
    name, state = api.create_canvas()
    api.add_shapes(name)
    before = api.state(name)
    for stale in (state["version"], before["version"] + 5):
        response = api.post(name, [change(state["rootUUID"], "Canvas", name="late")],
                            headers={"If-Match": f'"{stale}"'})
        body = assert_problem(response, 412, "precondition-failed")
        assert body["version"] == before["version"]
    assert api.state(name) == before


# -- body size ---------------------------------------------------------------------------------

def test_a_body_over_the_limit_is_413_and_changes_nothing(start_server):
    server = start_server("--max-body-bytes", "4096")
    api = Api(server.url)
    name, state = api.create_canvas()
    small = api.post(name, [change(state["rootUUID"], "Canvas", name="n" * 3000)])
    assert small.status_code == 200, small.text
    before = api.state(name)
    response = api.post(name, [change(state["rootUUID"], "Canvas", name="n" * 5000)])
    assert_problem(response, 413, "payload-too-large")
    assert api.state(name) == before
    other = scope_name()
    response = api.create(other, {"clsName": "Canvas", "properties": {"name": "n" * 5000}})
    assert_problem(response, 413, "payload-too-large")
    assert_problem(api.http.get(f"/v1/scopes/{other}"), 404, "not-found")
    api.close()


# -- atomicity seen by a subscriber ------------------------------------------------------------

def test_a_rejected_set_emits_no_event(api, server):
    name, state = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        snapshot = stream.expect_event()
        assert snapshot.type == "snapshot"
        version = int(snapshot.id)
        assert_rejected(api.post(name, [change(shape, "Shape", x=3),
                                        change(shape, "Shape", y="bad")]), [None, "type-mismatch"])
        accepted = api.apply(name, [change(shape, "Shape", x=4)])
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(version + 1))
        assert event.json() == {"version": version + 1, "at": accepted["at"],
                                "subject": accepted["subject"],
                                "fragments": accepted["fragments"], "removed": []}


# -- history -----------------------------------------------------------------------------------

def test_history_lists_the_accepted_sets_after_a_version_oldest_first(api):
    name, state = api.create_canvas()
    answers = [api.add_shapes(name)[1] for _ in range(4)]
    response = api.history(name, state["version"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["version"] == answers[-1]["version"]
    assert body["changesets"] == [as_event(a) for a in answers]
    tail = api.history(name, answers[1]["version"]).json()["changesets"]
    assert [c["version"] for c in tail] == [answers[2]["version"], answers[3]["version"]]
    assert api.history(name, answers[-1]["version"]).json()["changesets"] == []


def test_history_limit_returns_the_oldest_first(api):
    name, state = api.create_canvas()
    answers = [api.add_shapes(name)[1] for _ in range(3)]
    body = api.history(name, state["version"], limit=2).json()
    assert [c["version"] for c in body["changesets"]] == [a["version"] for a in answers[:2]]
    assert body["version"] == answers[-1]["version"]


@pytest.mark.parametrize("params", [{}, {"since": -1}, {"since": "abc"},
                                    {"since": 0, "limit": 0}, {"since": 0, "limit": "x"}])
def test_history_with_bad_parameters_is_400(api, params):
    name, _ = api.create_canvas()
    response = api.http.get(f"/v1/scopes/{name}/changesets", params=params)
    assert_problem(response, 400, "bad-request")


def test_history_of_an_unknown_scope_is_404(api):
    assert_problem(api.history(scope_name(), 0), 404, "not-found")


def test_history_older_than_retained_is_410(start_server):
    import time

    server = start_server("--history-limit", "3", "--snapshot-interval", "2")
    api = Api(server.url)
    name, state = api.create_canvas()
    answers = [api.add_shapes(name)[1] for _ in range(12)]
    current = answers[-1]["version"]
    # At least the last 3 are always retained.
    kept = api.history(name, current - 3)
    assert kept.status_code == 200, kept.text
    assert [c["version"] for c in kept.json()["changesets"]] == [current - 2, current - 1, current]
    # Pruning may run after the answers: wait (bounded) for the old versions to go.
    deadline = time.monotonic() + 60
    response = api.history(name, state["version"])
    while response.status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
        response = api.history(name, state["version"])
    assert_problem(response, 410, "history-gone")
    api.close()
