"""Scopes: list with paging, create, state with ETag/304, delete, objects (demo schema)."""
from __future__ import annotations

import pytest

from gateway_helpers import (LOWER_UUID, add, assert_problem, change, etag_version, new_uuid,
                             objects_of, scope_name)


# -- the demo scope and the state ------------------------------------------------------------

def test_demo_scope_exists_at_start_with_a_canvas_root(api):
    response = api.http.get("/v1/scopes/demo")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    state = response.json()
    assert state["name"] == "demo"
    assert etag_version(response) == state["version"]
    assert LOWER_UUID.match(state["rootUUID"])
    root = state["fragments"][0]
    assert root["type"] == "change" and root["uuid"] == state["rootUUID"]
    assert root["clsName"] == "Canvas"


def test_create_answers_201_with_the_state_and_its_etag(api):
    name = scope_name()
    response = api.create(name)
    assert response.status_code == 201, response.text
    state = response.json()
    assert state["name"] == name
    assert etag_version(response) == state["version"]
    assert LOWER_UUID.match(state["rootUUID"])
    assert state["fragments"] == [
        {"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas",
         "properties": {"name": None, "shapes": []}}]
    assert api.state(name) == state


def test_create_keeps_the_given_root_uuid_lowercased_and_properties(api):
    name, root = scope_name(), new_uuid()
    response = api.create(name, {"clsName": "Canvas", "uuid": root.upper(),
                                 "properties": {"name": "Hello"}})
    assert response.status_code == 201, response.text
    state = response.json()
    assert state["rootUUID"] == root
    assert objects_of(state)[root]["properties"] == {"name": "Hello", "shapes": []}


def test_create_of_an_existing_scope_is_409_and_changes_nothing(api):
    name, _ = api.create_canvas()
    api.add_shapes(name)
    before = api.state(name)
    response = api.create(name, {"clsName": "Canvas", "properties": {"name": "other"}})
    assert_problem(response, 409, "scope-exists")
    assert api.state(name) == before


def test_create_with_the_wrong_root_class_is_422_and_creates_nothing(api):
    name = scope_name()
    response = api.create(name, {"clsName": "Shape"})
    body = assert_problem(response, 422, "invalid-change-set")
    assert body["fragmentReplies"][0]["error"]["type"] == "unknown-class"
    assert_problem(api.http.get(f"/v1/scopes/{name}"), 404, "not-found")


@pytest.mark.parametrize("properties, kind, prop", [
    ({"name": 5}, "type-mismatch", "name"),
    ({"shapes": None}, "null-not-allowed", "shapes"),
    ({"colour": "red"}, "unknown-property", "colour"),
    ({"shapes": [new_uuid()]}, "missing-reference", "shapes[0]"),
])
def test_create_with_bad_root_properties_is_422_and_creates_nothing(api, properties, kind, prop):
    name = scope_name()
    response = api.create(name, {"clsName": "Canvas", "properties": properties})
    body = assert_problem(response, 422, "invalid-change-set")
    [reply] = body["fragmentReplies"]
    assert reply["error"]["type"] == kind
    assert reply["error"].get("property") == prop
    assert_problem(api.http.get(f"/v1/scopes/{name}"), 404, "not-found")


def test_create_under_a_name_no_scope_rule_matches_is_404(api):
    name = scope_name("norule")
    assert_problem(api.create(name), 404, "not-found")
    assert_problem(api.http.get(f"/v1/scopes/{name}"), 404, "not-found")
    listed = api.http.get("/v1/scopes", params={"limit": 1000}).json()["scopes"]
    assert name not in [s["name"] for s in listed]


@pytest.mark.parametrize("name", ["canvas-" + "x" * 121, "canvas-a.b_c~d-E9"])
def test_create_accepts_every_allowed_name_character_up_to_128(api, name):
    response = api.create(name)
    assert response.status_code == 201, response.text
    assert response.json()["name"] == name


@pytest.mark.parametrize("name", ["canvas-" + "x" * 122, "canvas-a!b", "canvas-%C3%A9", "canvas-a%20b"])
def test_create_with_an_invalid_scope_name_is_400(api, name):
    response = api.http.put(f"/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}})
    assert_problem(response, 400, "bad-request")


@pytest.mark.parametrize("body, content_type, status, kind", [
    (b'{"root":{"clsName":"Canvas"}}', "text/plain", 415, "unsupported-media-type"),
    (b"root=Canvas", "application/x-www-form-urlencoded", 415, "unsupported-media-type"),
    (b'{"root":', "application/json", 400, "invalid-json"),
    (b'{"rooot":{"clsName":"Canvas"}}', "application/json", 400, "bad-request"),
    (b'{"root":"Canvas"}', "application/json", 400, "bad-request"),
    (b'[{"root":{"clsName":"Canvas"}}]', "application/json", 400, "bad-request"),
    # Typos are refused, not ignored: a scope without what the writer meant to send is worse.
    (b'{"root":{"clsName":"Canvas","propeties":{"name":"x"}}}', "application/json", 400, "bad-request"),
    (b'{"root":{"clsName":"Canvas"},"extra":1}', "application/json", 400, "bad-request"),
])
def test_create_with_a_bad_body_is_rejected_and_creates_nothing(api, body, content_type, status,
                                                                 kind):
    name = scope_name()
    response = api.http.put(f"/v1/scopes/{name}", content=body,
                            headers={"Content-Type": content_type})
    assert_problem(response, status, kind)
    assert_problem(api.http.get(f"/v1/scopes/{name}"), 404, "not-found")


def test_state_of_an_unknown_scope_is_404(api):
    assert_problem(api.http.get(f"/v1/scopes/{scope_name()}"), 404, "not-found")


def test_if_none_match_with_the_current_version_is_304(api):
    name, state = api.create_canvas()
    etag = f'"{state["version"]}"'
    response = api.http.get(f"/v1/scopes/{name}", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag

    api.add_shapes(name)
    response = api.http.get(f"/v1/scopes/{name}", headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert etag_version(response) == state["version"] + 1
    newer = response.headers["etag"]
    response = api.http.get(f"/v1/scopes/{name}", headers={"If-None-Match": f'"999", {newer}'})
    assert response.status_code == 304


def test_state_lists_objects_in_preorder_from_the_root(api):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    a, b = new_uuid(), new_uuid()
    api.apply(name, [add(a, "Shape", x=1, y=1), add(b, "Shape", x=2, y=2),
                     change(root, "Canvas", shapes=[b, a])])
    fragments = api.state(name)["fragments"]
    assert [(f["type"], f["uuid"]) for f in fragments] == [("change", root), ("add", b), ("add", a)]
    assert fragments[1]["properties"] == {"x": 2, "y": 2, "width": 100, "height": 100,
                                          "color": None, "label": "", "kind": "rect"}


# -- list --------------------------------------------------------------------------------------

def test_list_pages_through_scopes_in_name_order(api):
    prefix = scope_name()
    names = [f"{prefix}-{i}" for i in range(5)]
    for name in reversed(names):
        api.create_canvas(name)
    seen, after, pages = [], prefix, 0
    while after is not None and pages < 20:
        response = api.http.get("/v1/scopes", params={"after": after, "limit": 2})
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["scopes"]) <= 2
        if page["scopes"]:
            assert page["next"] in (None, page["scopes"][-1]["name"])
        else:
            assert page["next"] is None
        mine = [s for s in page["scopes"] if s["name"].startswith(prefix)]
        seen += mine
        after = page["next"] if len(mine) == len(page["scopes"]) else None
        pages += 1
    assert [s["name"] for s in seen] == names
    for summary in seen:
        assert summary["rootClass"] == "Canvas"
        state = api.state(summary["name"])
        assert summary["rootUUID"] == state["rootUUID"]
        assert summary["version"] == state["version"]


def test_list_without_parameters_is_sorted_and_ends_with_next_null(api):
    api.create_canvas()
    response = api.http.get("/v1/scopes", params={"limit": 1000})
    assert response.status_code == 200
    body = response.json()
    names = [s["name"] for s in body["scopes"]]
    assert "demo" in names
    assert names == sorted(names, key=lambda n: n.encode())
    assert body["next"] is None


def test_list_has_a_next_when_a_page_is_full(api):
    api.create_canvas()
    api.create_canvas()
    body = api.http.get("/v1/scopes", params={"limit": 1}).json()
    assert len(body["scopes"]) == 1
    assert body["next"] == body["scopes"][0]["name"]
    following = api.http.get("/v1/scopes", params={"limit": 1, "after": body["next"]}).json()
    assert following["scopes"][0]["name"] > body["next"]


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1001}, {"limit": "ten"},
                                    {"limit": -1}])
def test_list_with_bad_parameters_is_400(api, params):
    assert_problem(api.http.get("/v1/scopes", params=params), 400, "bad-request")


# -- delete ------------------------------------------------------------------------------------

def test_delete_is_204_then_the_scope_is_gone(api):
    name, _ = api.create_canvas()
    response = api.http.delete(f"/v1/scopes/{name}")
    assert response.status_code == 204
    assert response.content == b""
    assert_problem(api.http.get(f"/v1/scopes/{name}"), 404, "not-found")
    assert_problem(api.http.delete(f"/v1/scopes/{name}"), 404, "not-found")
    assert_problem(api.post(name, [change(new_uuid(), "Canvas", name="x")]), 404, "not-found")
    assert_problem(api.history(name, 0), 404, "not-found")
    listed = api.http.get("/v1/scopes", params={"limit": 1000}).json()["scopes"]
    assert name not in [s["name"] for s in listed]


def test_delete_of_an_unknown_scope_is_404(api):
    assert_problem(api.http.delete(f"/v1/scopes/{scope_name()}"), 404, "not-found")


def test_a_recreated_scope_continues_the_version_numbering(api):
    name, _ = api.create_canvas()
    api.add_shapes(name)
    api.add_shapes(name)
    deleted_version = api.state(name)["version"]
    assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
    _, state = api.create_canvas(name)
    assert state["version"] > deleted_version
    assert objects_of(state)[state["rootUUID"]]["properties"]["shapes"] == []


# -- objects -----------------------------------------------------------------------------------

def test_object_answers_with_its_properties_and_parents(api):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    (shape,), answer = api.add_shapes(name, label="hi")
    response = api.http.get(f"/v1/scopes/{name}/objects/{shape}")
    assert response.status_code == 200, response.text
    assert etag_version(response) == answer["version"]
    body = response.json()
    # Added without a token: no owner.
    assert body == {"uuid": shape, "clsName": "Shape", "owner": None,
                    "properties": {"x": 1, "y": 2, "width": 100, "height": 100, "color": None,
                                   "label": "hi", "kind": "rect"},
                    "parents": [{"uuid": root, "key": "shapes"}]}
    root_body = api.http.get(f"/v1/scopes/{name}/objects/{root}").json()
    assert root_body["clsName"] == "Canvas" and root_body["parents"] == [] and root_body["owner"] is None
    assert root_body["properties"]["shapes"] == [shape]


def test_object_uuid_in_the_path_is_accepted_in_any_case(api):
    name, _ = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    response = api.http.get(f"/v1/scopes/{name}/objects/{shape.upper()}")
    assert response.status_code == 200
    assert response.json()["uuid"] == shape


def test_unknown_object_is_404_and_a_malformed_uuid_400(api):
    name, _ = api.create_canvas()
    assert_problem(api.http.get(f"/v1/scopes/{name}/objects/{new_uuid()}"), 404, "not-found")
    assert_problem(api.http.get(f"/v1/scopes/{name}/objects/not-a-uuid"), 400, "bad-request")
    assert_problem(api.http.get(f"/v1/scopes/{scope_name()}/objects/{new_uuid()}"), 404,
                   "not-found")


def test_a_removed_object_is_404(api):
    name, state = api.create_canvas()
    (shape,), _ = api.add_shapes(name)
    api.apply(name, [change(state["rootUUID"], "Canvas", shapes=[])])
    assert_problem(api.http.get(f"/v1/scopes/{name}/objects/{shape}"), 404, "not-found")


@pytest.mark.parametrize("after", ["bad name!", "", "x" * 129])
def test_list_with_an_after_that_is_no_scope_name_is_400(api, after):
    assert_problem(api.http.get("/v1/scopes", params={"after": after}), 400, "bad-request")
