"""Merge patch on one object (`PATCH /v1/scopes/{name}/objects/{uuid}`, RFC 7396 with merge by
identity) and `GET …/objects/{uuid}?depth=N` (docs/gateway.md, "Objects: reading with depth,
writing a merge patch").
Demo schema (Canvas{name, shapes: [Shape]}) and schemas/all-types.yaml (Board{title, items: [Item],
owner: Person?, people: [Person]}, Item{…, tags, buddy: Item?, partner: Person?, children: [Item]},
Person{name = "anonymous", born: Date?})."""
from __future__ import annotations

import json

import pytest

from gateway_helpers import (MERGE_PATCH, SHAPE_DEFAULTS, Api, add, assert_problem,
                             canvas_with_shapes, change, etag_version, new_uuid, objects_of,
                             scope_name, shapes_of)
from sse_stream import SSEStream

PERSON_DEFAULTS = {"name": "anonymous", "born": None}




def by_uuid(fragments: list[dict]) -> dict[str, dict]:
    result = {f["uuid"]: f for f in fragments}
    assert len(result) == len(fragments), f"one fragment per object expected: {fragments}"
    return result


def patched(api: Api, name: str, uuid: str, patch, **kwargs) -> dict:
    """A PATCH that must be accepted; checks the POST-shaped answer and returns its body."""
    response = api.patch_object(name, uuid, patch, **kwargs)
    assert response.status_code == 200, f"{response.status_code} {response.text[:800]}"
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) >= {"version", "fragmentReplies", "fragments", "removed"}, body
    assert body["version"] == etag_version(response)
    assert body["fragmentReplies"] == [{}] * len(body["fragments"])
    return body


def assert_patch_rejected(response, expected: list[tuple[str | tuple[str, ...], str]],
                          exact: bool = True) -> list:
    """422 invalid-change-set with `errors` of exactly the expected (JSON Pointer, kind) pairs, in
    any order (with `exact=False`, others may follow from them). A pointer given as a tuple lists
    the forms the contract leaves open."""
    body = assert_problem(response, 422, "invalid-change-set")
    errors = body.get("errors")
    assert isinstance(errors, list) and errors, body
    for error in errors:
        assert isinstance(error, dict), body
        assert isinstance(error.get("path"), str), body
        assert error["path"] == "" or error["path"].startswith("/"), f"not a JSON Pointer: {body}"
        assert isinstance(error.get("type"), str) and error["type"], body
        assert isinstance(error.get("message"), str) and error["message"], body
    remaining = list(errors)
    for paths, kind in expected:
        options = paths if isinstance(paths, tuple) else (paths,)
        match = next((e for e in remaining if e["type"] == kind and e["path"] in options), None)
        assert match is not None, f"no {kind} error at {options}: {errors}"
        remaining.remove(match)
    assert not exact or not remaining, f"unexpected errors {remaining} (all: {errors})"
    return errors


# -- accepted patches --------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [MERGE_PATCH, "application/json",
                                          "application/merge-patch+json; charset=utf-8"])
def test_a_flat_patch_sets_the_members_it_names(api, content_type):
    name, root, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    body = patched(api, name, shape, {"x": 5, "label": "hi"}, content_type=content_type)
    assert body["version"] == before["version"] + 1
    assert body["removed"] == []
    assert body["fragments"] == [{"type": "change", "uuid": shape, "clsName": "Shape",
                                  "properties": {"x": 5, "label": "hi"}}]
    props = objects_of(api.state(name))[shape]["properties"]
    assert props == {**objects_of(before)[shape]["properties"], "x": 5, "label": "hi"}


def test_a_patch_of_the_root_and_uuids_in_any_case(api):
    name, root, _ = canvas_with_shapes(api, 1)
    body = patched(api, name, root.upper(), {"name": "renamed"})
    assert body["fragments"] == [{"type": "change", "uuid": root, "clsName": "Canvas",
                                  "properties": {"name": "renamed"}}]


def test_null_sets_a_nullable_property(api):
    name, root, (shape,) = canvas_with_shapes(api, 1)
    patched(api, name, shape, {"color": 0xFF0000FF})
    patched(api, name, root, {"name": "x"})
    patched(api, name, shape, {"color": None})
    patched(api, name, root, {"name": None})
    objects = objects_of(api.state(name))
    assert objects[shape]["properties"]["color"] is None
    assert objects[root]["properties"]["name"] is None


def test_a_nested_existing_object_is_merged_by_uuid(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    before = objects_of(api.state(name))
    body = patched(api, name, root, {"shapes": [{"uuid": a, "x": 9, "label": "merged"}, b]})
    fragments = by_uuid(body["fragments"])
    assert set(fragments) == {root, a}
    assert fragments[root]["properties"] == {"shapes": [a, b]}
    assert fragments[a] == {"type": "change", "uuid": a, "clsName": "Shape",
                            "properties": {"x": 9, "label": "merged"}}
    after = objects_of(api.state(name))
    assert after[a]["properties"] == {**before[a]["properties"], "x": 9, "label": "merged"}
    assert after[b] == before[b]


def test_a_nested_object_with_its_class_named_and_in_upper_case_is_merged(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    patched(api, name, root, {"shapes": [{"uuid": a.upper(), "clsName": "Shape", "y": 7}]})
    state = api.state(name)
    assert shapes_of(state) == [a] and objects_of(state)[a]["properties"]["y"] == 7


def test_a_nested_new_object_is_added_with_defaults(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    fresh, named = new_uuid(), new_uuid()
    body = patched(api, name, root, {"shapes": [a, {"uuid": fresh, "x": 1, "y": 2},
                                                {"uuid": named, "clsName": "Shape", "kind": "oval"}]})
    fragments = by_uuid(body["fragments"])
    assert fragments[fresh] == {"type": "add", "uuid": fresh, "clsName": "Shape",
                                "properties": {"x": 1, "y": 2, **SHAPE_DEFAULTS}}
    assert fragments[named] == {"type": "add", "uuid": named, "clsName": "Shape",
                                "properties": {"x": 0, "y": 0, **SHAPE_DEFAULTS, "kind": "oval"}}
    assert fragments[root]["properties"] == {"shapes": [a, fresh, named]}
    assert shapes_of(api.state(name)) == [a, fresh, named]


def test_a_nested_new_reference_takes_the_declared_class_and_replaces_the_old_one(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    first, second = new_uuid(), new_uuid()
    body = patched(types_api, name, board, {"owner": {"uuid": first}})
    fragments = by_uuid(body["fragments"])
    assert fragments[first] == {"type": "add", "uuid": first, "clsName": "Person",
                                "properties": PERSON_DEFAULTS}
    assert fragments[board]["properties"] == {"owner": first}
    # Merged when it exists …
    patched(types_api, name, board, {"owner": {"uuid": first, "name": "Grace"}})
    assert objects_of(types_api.state(name))[first]["properties"]["name"] == "Grace"
    # … replaced by a new one, which drops the old one from the scope.
    body = patched(types_api, name, board, {"owner": {"uuid": second, "name": "Ada"}})
    assert body["removed"] == [first]
    objects = objects_of(types_api.state(name))
    assert objects[board]["properties"]["owner"] == second
    assert objects[second] == {"clsName": "Person", "properties": {"name": "Ada", "born": None}}
    # null on a nullable reference.
    body = patched(types_api, name, board, {"owner": None})
    assert body["removed"] == [second]


def test_nested_new_objects_nest_recursively(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    parent, child, partner = new_uuid(), new_uuid(), new_uuid()
    patch = {"title": "t", "items": {"insert": [{
        "uuid": parent, "text": "parent",
        "children": [{"uuid": child, "text": "child", "partner": {"uuid": partner}}]}]}}
    body = patched(types_api, name, board, patch)
    fragments = by_uuid(body["fragments"])
    assert {fragments[u]["type"] for u in (parent, child, partner)} == {"add"}
    assert fragments[partner]["clsName"] == "Person"
    objects = objects_of(types_api.state(name))
    assert objects[board]["properties"]["items"] == [parent]
    assert objects[board]["properties"]["title"] == "t"
    assert objects[parent]["properties"]["children"] == [child]
    assert objects[child]["properties"]["text"] == "child"
    assert objects[child]["properties"]["partner"] == partner
    assert objects[child]["properties"]["tags"] == []  # a default


def test_arrays_are_given_whole(api):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    patched(api, name, root, {"shapes": [c, a, b]})
    assert shapes_of(api.state(name)) == [c, a, b]
    body = patched(api, name, root, {"shapes": [a]})
    assert sorted(body["removed"]) == sorted([b, c])
    assert shapes_of(api.state(name)) == [a]


def test_collection_members_take_operations_objects(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    fresh = new_uuid()
    body = patched(api, name, root, {"shapes": {"insert": [{"uuid": fresh, "x": 3, "y": 3}],
                                                "before": b}})
    # Answered as the operation against the version before (docs/gateway.md).
    assert by_uuid(body["fragments"])[root]["properties"] == {"shapes": {"insert": [fresh], "before": b}}
    assert shapes_of(api.state(name)) == [a, fresh, b]
    body = patched(api, name, root, {"shapes": {"remove": [a]}})
    assert body["removed"] == [a]
    assert shapes_of(api.state(name)) == [fresh, b]


def test_primitive_collections_in_a_patch(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    item = new_uuid()
    types_api.apply(name, [add(item, "Item"), change(board, "Board", items=[item])])
    patched(types_api, name, item, {"tags": ["a", "b"], "numbers": [1]})
    patched(types_api, name, item, {"tags": {"insert": ["c"], "before": "a"}})
    props = objects_of(types_api.state(name))[item]["properties"]
    assert (props["tags"], props["numbers"]) == (["c", "a", "b"], [1])


def test_one_version_and_one_event_per_patch(api, server):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    fresh = new_uuid()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        snapshot = stream.expect_event()
        assert snapshot.type == "snapshot"
        body = patched(api, name, root, {"name": "n", "shapes": [
            {"uuid": a, "x": 1}, {"uuid": b, "y": 2}, {"uuid": fresh, "x": 5, "y": 5}]})
        assert body["version"] == int(snapshot.id) + 1
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(body["version"]))
        assert event.json() == {"version": body["version"], "at": body["at"],
                                "subject": body["subject"], "fragments": body["fragments"],
                                "removed": []}
        # The next event is the next write's: the patch made no other change set.
        later = api.apply(name, [change(root, "Canvas", name="after")])
        assert stream.expect_event().id == str(later["version"])
    assert len(body["fragments"]) == 4
    logged = api.history(name, int(snapshot.id)).json()["changesets"]
    assert [c["version"] for c in logged] == [body["version"], later["version"]]
    assert logged[0]["fragments"] == body["fragments"]


def test_read_modify_write_with_depth_one(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    got = api.get_object(name, root, depth=1)
    assert got.status_code == 200, got.text
    document = got.json()["properties"]
    assert all(isinstance(shape, dict) for shape in document["shapes"]), document
    document["name"] = "edited"
    document["shapes"][1]["label"] = "second"
    document["shapes"].reverse()
    body = patched(api, name, root, document, headers={"If-Match": got.headers["etag"]})
    assert body["removed"] == []
    objects = objects_of(api.state(name))
    assert objects[root]["properties"] == {"name": "edited", "shapes": [b, a]}
    assert objects[b]["properties"]["label"] == "second"


# -- rejected patches: errors with JSON Pointers, nothing applied -------------------------------

def test_null_on_a_non_nullable_property_is_null_not_allowed(api):
    name, root, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    for member in ("label", "x", "kind"):
        assert_patch_rejected(api.patch_object(name, shape, {member: None}),
                              [(f"/{member}", "null-not-allowed")])
    assert_patch_rejected(api.patch_object(name, root, {"shapes": None}),
                          [("/shapes", "null-not-allowed")])
    assert api.state(name) == before


@pytest.mark.parametrize("patch, expected", [
    ({"depth": 3}, [("/depth", "unknown-property")]),
    ({"x": "10"}, [("/x", "type-mismatch")]),
    ({"width": -1}, [("/width", "out-of-range")]),
    ({"kind": "hexagon"}, [("/kind", "constraint-violation")]),
    ({"label": "l" * 201}, [("/label", "constraint-violation")]),
    ({"color": 2 ** 32}, [("/color", "out-of-range")]),
    ({"label~x/y": 1}, [("/label~0x~1y", "unknown-property")]),
])
def test_errors_on_the_target_point_at_the_member(api, patch, expected):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    assert_patch_rejected(api.patch_object(name, shape, patch), expected)
    assert api.state(name) == before


def test_errors_inside_arrays_and_nested_objects_point_into_the_patch(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    before = api.state(name)
    cases = [
        ({"name": "x" * 70_000}, [("/name", "limit-exceeded")]),
        ({"shapes": [a, new_uuid()]}, [("/shapes/1", "missing-reference")]),
        ({"shapes": [a, root]}, [("/shapes/1", "wrong-class")]),
        ({"shapes": [a, "not-a-uuid"]}, [("/shapes/1", "type-mismatch")]),
        ({"shapes": [{"uuid": a, "x": "bad"}]}, [("/shapes/0/x", "type-mismatch")]),
        ({"shapes": [a, {"uuid": new_uuid(), "x": 1, "y": 1, "width": -5}]},
         [("/shapes/1/width", "out-of-range")]),
        ({"shapes": [{"uuid": a, "speed": 1}]}, [("/shapes/0/speed", "unknown-property")]),
        # Operations objects: the element's own pointer, or the collection's (as POST names it).
        ({"shapes": {"insert": [new_uuid()]}},
         [(("/shapes/insert/0", "/shapes"), "missing-reference")]),
        ({"shapes": {"insert": [a], "after": b}}, [("/shapes", "type-mismatch")]),
        # An existing nested object named with another class: the error names the nested object.
        ({"shapes": [{"uuid": a, "clsName": "Canvas"}]},
         [(("/shapes/0", "/shapes/0/clsName"), "class-mismatch")]),
    ]
    for patch, expected in cases:
        assert_patch_rejected(api.patch_object(name, root, patch), expected)
    # A new nested object of a class the schema lacks (its reference may be reported as well).
    response = api.patch_object(name, root, {"shapes": [{"uuid": new_uuid(), "clsName": "Triangle"}]})
    errors = assert_patch_rejected(response, [(("/shapes/0", "/shapes/0/clsName"), "unknown-class")],
                                   exact=False)
    assert all(e["path"].startswith("/shapes") for e in errors), errors
    assert api.state(name) == before


def test_every_bad_object_gets_its_own_error_and_a_fine_member_is_not_applied(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    before = api.state(name)
    response = api.patch_object(name, root, {
        "name": 5, "shapes": [{"uuid": a, "label": "fine"}, {"uuid": b, "x": "bad"}]})
    assert_patch_rejected(response, [("/name", "type-mismatch"), ("/shapes/1/x", "type-mismatch")])
    assert api.state(name) == before
    assert api.history(name, before["version"]).json()["changesets"] == []


def test_a_rejected_patch_emits_no_event(api, server):
    name, root, (shape,) = canvas_with_shapes(api, 1)
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        version = int(stream.expect_event().id)
        assert_patch_rejected(api.patch_object(name, shape, {"x": "no"}), [("/x", "type-mismatch")])
        accepted = patched(api, name, shape, {"x": 4})
        event = stream.expect_event()
    assert (event.id, accepted["version"]) == (str(version + 1), version + 1)


@pytest.mark.parametrize("target", ["root", "shape"])
def test_an_empty_patch_answers_the_current_version_and_makes_no_event(api, server, target):
    """RFC 7396: `{}` leaves the target as it is, so no version, event or history entry is made."""
    name, root, (shape,) = canvas_with_shapes(api, 1)
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        version = int(stream.expect_event().id)
        body = patched(api, name, root if target == "root" else shape, {})
        assert (body["version"], body["fragments"], body["removed"]) == (version, [], [])
        assert api.state(name)["version"] == version
        # The next event is the next write's: the empty patch made none.
        later = api.apply(name, [change(root, "Canvas", name="after")])
        event = stream.expect_event()
    assert (event.id, later["version"]) == (str(version + 1), version + 1)
    assert [c["version"] for c in api.history(name, version).json()["changesets"]] == [version + 1]


@pytest.mark.parametrize("body", [b'{"x": ', b"", b'{"x": 1,}'])
def test_a_body_that_is_not_json_is_400(api, body):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    assert_problem(api.patch_object(name, shape, body), 400, "invalid-json")
    assert api.state(name) == before


@pytest.mark.parametrize("body", [b"[]", b'"x"', b"null", b"5"])
def test_a_patch_that_is_not_an_object_is_rejected_at_the_root_pointer(api, body):
    """Any JSON value is a well-formed merge patch (RFC 7396), but one that is not an object
    would replace the whole object: unprocessable (RFC 5789 §2.2), 422 at the pointer ""."""
    name, _, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    assert_patch_rejected(api.patch_object(name, shape, body), [("", "type-mismatch")])
    assert api.state(name) == before


@pytest.mark.parametrize("content_type", ["text/plain", "application/json-patch+json",
                                          "application/x-www-form-urlencoded", None])
def test_another_media_type_is_415(api, content_type):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    response = api.patch_object(name, shape, {"x": 1}, content_type=content_type)
    assert_problem(response, 415, "unsupported-media-type")
    assert api.state(name) == before


def test_unknown_scope_or_object_is_404(api):
    assert_problem(api.patch_object(scope_name(), new_uuid(), {"name": "x"}), 404, "not-found")
    name, _, _ = canvas_with_shapes(api, 1)
    before = api.state(name)
    assert_problem(api.patch_object(name, new_uuid(), {"x": 1}), 404, "not-found")
    assert api.state(name) == before


def test_a_path_uuid_that_is_not_a_uuid_is_400(api):
    name, _, _ = canvas_with_shapes(api, 1)
    assert_problem(api.patch_object(name, "not-a-uuid", {"x": 1}), 400, "bad-request")


def test_an_object_that_left_the_scope_is_404(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    patched(api, name, root, {"shapes": [b]})
    assert_problem(api.patch_object(name, a, {"x": 1}), 404, "not-found")


# -- If-Match and Idempotency-Key, as on POST …/changesets --------------------------------------

def test_if_match_with_the_current_version_applies_and_a_stale_one_is_412(api):
    name, root, (shape,) = canvas_with_shapes(api, 1)
    state = api.state(name)
    body = patched(api, name, shape, {"x": 1}, headers={"If-Match": f'"{state["version"]}"'})
    assert body["version"] == state["version"] + 1
    before = api.state(name)
    for stale in (state["version"], before["version"] + 5):
        response = api.patch_object(name, shape, {"x": 2}, headers={"If-Match": f'"{stale}"'})
        problem = assert_problem(response, 412, "precondition-failed")
        assert problem["version"] == before["version"]
    assert api.state(name) == before


def test_a_malformed_if_match_is_400(api):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    response = api.patch_object(name, shape, {"x": 1}, headers={"If-Match": "41"})
    assert_problem(response, 400, "bad-request")


def test_idempotency_key_replays_a_patch(api):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    key = {"Idempotency-Key": new_uuid()}
    first = api.patch_object(name, shape, {"x": 11}, headers=key)
    assert first.status_code == 200, first.text
    assert first.headers.get("idempotent-replayed") in (None, "false")
    again = api.patch_object(name, shape, {"x": 11}, headers=key)
    assert again.status_code == 200, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert api.state(name)["version"] == first.json()["version"]
    reused = api.patch_object(name, shape, {"x": 12}, headers=key)
    assert_problem(reused, 422, "idempotency-key-reused")
    assert objects_of(api.state(name))[shape]["properties"]["x"] == 11


def test_idempotency_key_replays_a_rejected_patch(api):
    name, _, (shape,) = canvas_with_shapes(api, 1)
    key = {"Idempotency-Key": new_uuid()}
    first = api.patch_object(name, shape, {"x": "bad"}, headers=key)
    assert_patch_rejected(first, [("/x", "type-mismatch")])
    again = api.patch_object(name, shape, {"x": "bad"}, headers=key)
    assert_patch_rejected(again, [("/x", "type-mismatch")])
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()


def test_the_same_key_and_body_on_another_object_is_a_reused_key_not_a_replay(api):
    name, _, (first_shape, second_shape) = canvas_with_shapes(api, 2)
    key = {"Idempotency-Key": new_uuid()}
    first = api.patch_object(name, first_shape, {"y": 21}, headers=key)
    assert first.status_code == 200, first.text
    other = api.patch_object(name, second_shape, {"y": 21}, headers=key)
    assert_problem(other, 422, "idempotency-key-reused")
    assert objects_of(api.state(name))[second_shape]["properties"]["y"] != 21
    assert api.state(name)["version"] == first.json()["version"]


def test_a_key_used_by_a_post_cannot_be_reused_by_a_different_patch(api):
    name, root, _ = canvas_with_shapes(api, 1)
    key = {"Idempotency-Key": new_uuid()}
    api.apply(name, [change(root, "Canvas", name="by post")], headers=key)
    before = api.state(name)
    assert_problem(api.patch_object(name, root, {"name": "by patch"}, headers=key), 422,
                   "idempotency-key-reused")
    assert api.state(name) == before


# -- limits --------------------------------------------------------------------------------------

def test_a_patch_over_the_body_limit_is_413(start_server):
    server = start_server("--max-body-bytes", "4096")
    api = Api(server.url)
    try:
        name, root, _ = canvas_with_shapes(api, 1)
        patched(api, name, root, {"name": "n" * 3000})
        before = api.state(name)
        assert_problem(api.patch_object(name, root, {"name": "n" * 5000}), 413,
                       "payload-too-large")
        assert api.state(name) == before
    finally:
        api.close()


def test_a_patch_over_the_fragment_limit_is_413(start_server):
    server = start_server("--max-fragments", "3")
    api = Api(server.url)
    try:
        name, root, (a,) = canvas_with_shapes(api, 1)
        before = api.state(name)
        patch = {"shapes": [{"uuid": new_uuid(), "x": n, "y": n} for n in range(4)]}
        assert_problem(api.patch_object(name, root, patch), 413, "too-many-fragments")
        assert api.state(name) == before
    finally:
        api.close()


# -- GET …/objects/{uuid}?depth=N ---------------------------------------------------------------

def get_object(api: Api, name: str, uuid: str, depth=None) -> dict:
    response = api.get_object(name, uuid, depth)
    assert response.status_code == 200, response.text
    assert etag_version(response) == api.state(name)["version"]
    body = response.json()
    assert set(body) == {"uuid", "clsName", "owner", "properties", "parents"}, body
    return body


def nested(props: dict, uuid: str, cls: str) -> dict:
    """A nested object as GET ?depth returns it: `uuid`, `clsName` and its properties."""
    return {"uuid": uuid, "clsName": cls, **props}


def test_depth_zero_is_the_default_shape(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    plain = get_object(api, name, root)
    assert get_object(api, name, root, 0) == plain
    assert plain["properties"]["shapes"] == [a, b]
    assert get_object(api, name, a, 0) == get_object(api, name, a)


def test_depth_one_expands_collection_elements(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    objects = objects_of(api.state(name))
    body = get_object(api, name, root, 1)
    assert body["uuid"] == root and body["clsName"] == "Canvas" and body["parents"] == []
    assert body["properties"] == {
        "name": None,
        "shapes": [nested(objects[a]["properties"], a, "Shape"),
                   nested(objects[b]["properties"], b, "Shape")]}
    # An object without references looks the same at every depth.
    assert get_object(api, name, a, 3) == get_object(api, name, a, 0)


@pytest.fixture
def deep_board(types_api):
    """A board whose items nest three deep, with an owner: (name, {label: uuid}, objects)."""
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    u = {"board": board, "owner": new_uuid(), "i1": new_uuid(), "i2": new_uuid(),
         "i3": new_uuid()}
    types_api.apply(name, [
        add(u["owner"], "Person", name="Ada"),
        add(u["i1"], "Item", text="1", children=[u["i2"]], partner=u["owner"]),
        add(u["i2"], "Item", text="2", children=[u["i3"]]),
        add(u["i3"], "Item", text="3"),
        change(board, "Board", owner=u["owner"], items=[u["i1"]])])
    return name, u, objects_of(types_api.state(name))


def test_depth_is_bounded_by_n(types_api, deep_board):
    name, u, objects = deep_board
    props = {k: objects[v]["properties"] for k, v in u.items()}
    owner = nested(props["owner"], u["owner"], "Person")
    level3 = nested(props["i3"], u["i3"], "Item")
    level2 = nested({**props["i2"], "children": [u["i3"]]}, u["i2"], "Item")
    level1 = nested({**props["i1"], "children": [u["i2"]], "partner": u["owner"]}, u["i1"], "Item")
    one = get_object(types_api, name, u["board"], 1)["properties"]
    assert one["owner"] == owner and one["items"] == [level1]
    two = get_object(types_api, name, u["board"], 2)["properties"]
    assert two["items"] == [{**level1, "children": [level2], "partner": owner}]
    three = get_object(types_api, name, u["board"], 3)["properties"]
    assert three["items"][0]["children"] == [{**level2, "children": [level3]}]
    assert get_object(types_api, name, u["board"], 50)["properties"] == three
    # References that are null stay null; an object below the root works the same way.
    assert three["items"][0]["buddy"] is None
    below = get_object(types_api, name, u["i2"], 1)
    assert below["properties"]["children"] == [level3]
    assert below["parents"] == [{"uuid": u["i1"], "key": "children"}]


def test_a_cycle_is_expanded_once_per_path(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    a, b, c = new_uuid(), new_uuid(), new_uuid()
    # a ⇄ b through buddy; c is its own buddy; both a and c are listed by the board.
    types_api.apply(name, [add(a, "Item", text="a", buddy=b), add(b, "Item", text="b", buddy=a),
                           add(c, "Item", text="c", buddy=c),
                           change(board, "Board", items=[a, c])])
    objects = objects_of(types_api.state(name))
    for depth in (2, 5, 20):
        top = get_object(types_api, name, a, depth)["properties"]
        # b is expanded; its reference back to a (already on the path) stays a UUID.
        assert top["buddy"] == nested({**objects[b]["properties"], "buddy": a}, b, "Item")
        assert get_object(types_api, name, c, depth)["properties"]["buddy"] == c
        items = get_object(types_api, name, board, depth)["properties"]["items"]
        expanded_a = nested({**objects[a]["properties"],
                             "buddy": nested({**objects[b]["properties"], "buddy": a}, b, "Item")},
                            a, "Item")
        assert items == [expanded_a, nested(objects[c]["properties"], c, "Item")]


def test_an_object_reachable_by_two_paths_is_expanded_on_each(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    a, b = new_uuid(), new_uuid()
    types_api.apply(name, [add(a, "Item", buddy=b), add(b, "Item", text="shared"),
                           change(board, "Board", items=[a, b])])
    items = get_object(types_api, name, board, 2)["properties"]["items"]
    assert all(isinstance(i, dict) for i in items), items
    assert items[0]["buddy"]["uuid"] == b and items[0]["buddy"]["text"] == "shared"
    assert items[1]["uuid"] == b and items[1]["text"] == "shared"


@pytest.mark.parametrize("depth", ["-1", "x", "1.5", "", "0x1", "99999999999999999999999"])
def test_a_bad_depth_is_400(api, depth):
    name, root, _ = canvas_with_shapes(api, 1)
    response = api.http.get(f"/v1/scopes/{name}/objects/{root}", params={"depth": depth})
    assert_problem(response, 400, "bad-request")


def test_depth_on_an_unknown_object_is_404(api):
    name, _, _ = canvas_with_shapes(api, 1)
    assert_problem(api.get_object(name, new_uuid(), 2), 404, "not-found")


def test_an_operations_member_and_a_plain_member_in_one_patch(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    raw = json.dumps({"shapes": {"remove": [a]}, "name": "after remove"}).encode()
    body = patched(api, name, root, raw)
    assert body["removed"] == [a]
    assert objects_of(api.state(name))[root]["properties"] == {"name": "after remove",
                                                               "shapes": []}
