"""Every property type of docs/model.md through the gateway, with schemas/all-types.yaml:
integer widths, Float, Double, Date, Color, enums, references, [Model], primitive collections,
nullability, defaults and constraints."""
from __future__ import annotations

import pytest

from gateway_helpers import (add, assert_problem, assert_rejected, change, new_uuid, objects_of,
                             scope_name)

ITEM_DEFAULTS = {
    "i8": 0, "i16": 0, "i32": 0, "i64": 0, "int": 0, "u8": 0, "u16": 0, "u32": 0, "u64": 0,
    "uint": 0, "f": 0, "d": 0, "when": 0, "color": 0, "flag": False, "text": "", "note": None,
    "code": "", "size": "large", "level": 1, "score": 5, "percent": 0, "tags": [], "numbers": [],
    "flags": [], "buddy": None, "partner": None, "children": [],
}

WIDTHS = {
    "i8": (-2**7, 2**7 - 1), "i16": (-2**15, 2**15 - 1), "i32": (-2**31, 2**31 - 1),
    "i64": (-2**63, 2**63 - 1), "int": (-2**63, 2**63 - 1),
    "u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
    "uint": (0, 2**64 - 1), "color": (0, 2**32 - 1),
}


@pytest.fixture(scope="module")
def board(types_api):
    """(scope name, root uuid, an attached item's uuid)."""
    name = scope_name("board")
    response = types_api.create(name, {"clsName": "Board"})
    assert response.status_code == 201, response.text
    root, item = response.json()["rootUUID"], new_uuid()
    types_api.apply(name, [add(item, "Item"), change(root, "Board", items=[item])])
    return name, root, item


def item_props(api, board) -> dict:
    name, _, item = board
    return objects_of(api.state(name))[item]["properties"]


def test_an_added_item_gets_every_default(types_api):
    name = scope_name("board")
    root = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    item = new_uuid()
    answer = types_api.apply(name, [add(item, "Item"), change(root, "Board", items=[item])])
    assert answer["fragments"][0] == {"type": "add", "uuid": item, "clsName": "Item",
                                      "properties": ITEM_DEFAULTS}
    assert objects_of(types_api.state(name))[item]["properties"] == ITEM_DEFAULTS


def test_a_person_root_scope_takes_its_class_defaults(types_api):
    name = scope_name("person")
    response = types_api.create(name, {"clsName": "Person"})
    assert response.status_code == 201, response.text
    state = response.json()
    assert objects_of(state)[state["rootUUID"]] == {
        "clsName": "Person", "properties": {"name": "anonymous", "born": None}}
    response = types_api.create(scope_name("person"), {"clsName": "Board"})
    assert response.json()["fragmentReplies"][0]["error"]["type"] == "unknown-class"


@pytest.mark.parametrize("prop", sorted(WIDTHS))
def test_integer_widths_accept_their_bounds_and_reject_one_past(types_api, board, prop):
    name, _, item = board
    low, high = WIDTHS[prop]
    for value in (low, high):
        types_api.apply(name, [change(item, "Item", **{prop: value})])
        assert item_props(types_api, board)[prop] == value
    before = types_api.state(name)
    for value in (low - 1, high + 1):
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **{prop: value})]),
                                  ["out-of-range"])
        assert reply["error"]["property"] == prop
    for value in (5.5, "5", True, [5]):
        assert_rejected(types_api.post(name, [change(item, "Item", **{prop: value})]),
                        ["type-mismatch"])
    assert types_api.state(name) == before


def test_float_and_double_take_finite_numbers_in_range(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", f=3.5, d=1e300)])
    props = item_props(types_api, board)
    assert props["f"] == 3.5 and props["d"] == 1e300
    [reply] = assert_rejected(types_api.post(name, [change(item, "Item", f=1e39)]),
                              ["out-of-range"])
    assert reply["error"]["property"] == "f"
    assert_rejected(types_api.post(name, [change(item, "Item", d="1.5")]), ["type-mismatch"])


def test_a_number_too_small_for_its_type_is_out_of_range_not_zero(types_api, board):
    import json
    name, _, item = board
    before = types_api.state(name)
    for prop, literal in (("d", "1e-400"), ("f", "1e-50"), ("d", "-2.5E-999")):
        body = json.dumps({"fragments": [change(item, "Item", **{prop: 12345})]}).replace("12345", literal)
        [reply] = assert_rejected(types_api.post_raw(name, body.encode()), ["out-of-range"])
        assert reply["error"]["property"] == prop
    assert types_api.state(name) == before
    body = json.dumps({"fragments": [change(item, "Item", d=12345)]}).replace("12345", "0.0e-400")
    assert types_api.post_raw(name, body.encode()).status_code == 200


def test_min_and_max_apply_to_doubles_and_integers(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", score=10, percent=100)])
    types_api.apply(name, [change(item, "Item", score=0, percent=0)])
    for props, prop in (({"score": 10.5}, "score"), ({"score": -0.1}, "score"),
                        ({"percent": 101}, "percent"), ({"percent": -1}, "percent")):
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **props)]),
                                  ["out-of-range"])
        assert reply["error"]["property"] == prop


def test_date_is_seconds_since_1970_with_fractions(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", when=1_700_000_000.25)])
    assert item_props(types_api, board)["when"] == 1_700_000_000.25
    assert_rejected(types_api.post(name, [change(item, "Item", when="2024-01-01T00:00:00Z")]),
                    ["type-mismatch"])


def test_bool_is_strict(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", flag=True)])
    assert item_props(types_api, board)["flag"] is True
    for value in (1, "true"):
        assert_rejected(types_api.post(name, [change(item, "Item", flag=value)]),
                        ["type-mismatch"])


def test_strings_check_max_length_and_pattern(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", code="abcde", text="any text ✓")])
    props = item_props(types_api, board)
    assert (props["code"], props["text"]) == ("abcde", "any text ✓")
    for value in ("abcdef", "ABC", "a1"):
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", code=value)]),
                                  ["constraint-violation"])
        assert reply["error"]["property"] == "code"
    assert_rejected(types_api.post(name, [change(item, "Item", text=5)]), ["type-mismatch"])


def test_enums_of_strings_and_integers(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", size="small", level=3)])
    props = item_props(types_api, board)
    assert (props["size"], props["level"]) == ("small", 3)
    for props in ({"size": "medium"}, {"level": 4}):
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **props)]),
                                  ["constraint-violation"])
        assert reply["error"]["property"] == next(iter(props))


def test_nullability(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", note="n")])
    types_api.apply(name, [change(item, "Item", note=None)])
    assert item_props(types_api, board)["note"] is None
    for prop in ("text", "i8", "size", "flag", "tags", "children"):
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **{prop: None})]),
                                  ["null-not-allowed"])
        assert reply["error"]["property"] == prop


def test_primitive_collections_check_each_element_and_max_count(types_api, board):
    name, _, item = board
    types_api.apply(name, [change(item, "Item", tags=["a", "b", "a"], numbers=[-32768, 32767],
                                  flags=[True, False])])
    props = item_props(types_api, board)
    assert (props["tags"], props["numbers"], props["flags"]) == (
        ["a", "b", "a"], [-32768, 32767], [True, False])
    cases = [
        ({"tags": ["a", "b", "c", "d"]}, "constraint-violation", "tags"),
        ({"tags": ["a", 1]}, "type-mismatch", "tags[1]"),
        ({"tags": ["a", None]}, "null-not-allowed", "tags[1]"),
        ({"numbers": [1, 40000]}, "out-of-range", "numbers[1]"),
        ({"numbers": [1, 2.5]}, "type-mismatch", "numbers[1]"),
        ({"tags": "a"}, "type-mismatch", "tags"),
    ]
    for props, kind, prop in cases:
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **props)]), [kind])
        assert reply["error"]["property"] == prop, reply


def test_references_name_objects_of_the_right_class(types_api, board):
    name, root, item = board
    person, other = new_uuid(), new_uuid()
    types_api.apply(name, [add(person, "Person", name="Ada"), add(other, "Item"),
                           change(root, "Board", owner=person, items=[item, other]),
                           change(item, "Item", buddy=other, partner=person)])
    props = item_props(types_api, board)
    assert (props["buddy"], props["partner"]) == (other, person)
    cases = [
        ({"buddy": person}, "wrong-class", "buddy"),
        ({"partner": other}, "wrong-class", "partner"),
        ({"buddy": new_uuid()}, "missing-reference", "buddy"),
        ({"buddy": "not-a-uuid"}, "type-mismatch", "buddy"),
        ({"children": [other, person]}, "wrong-class", "children[1]"),
        ({"children": [other, new_uuid()]}, "missing-reference", "children[1]"),
    ]
    for props, kind, prop in cases:
        [reply] = assert_rejected(types_api.post(name, [change(item, "Item", **props)]), [kind])
        assert reply["error"]["property"] == prop, reply
    types_api.apply(name, [change(item, "Item", buddy=None, partner=None),
                           change(root, "Board", items=[item], owner=None)])


def test_objects_reachable_through_several_parents_and_cycles(types_api):
    name = scope_name("board")
    root = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    a, b, c = new_uuid(), new_uuid(), new_uuid()
    # a and b point at each other; c hangs below b; only a is listed by the root.
    types_api.apply(name, [add(a, "Item", buddy=b), add(b, "Item", buddy=a, children=[c]),
                           add(c, "Item"), change(root, "Board", items=[a])])
    parents = types_api.http.get(f"/v1/scopes/{name}/objects/{a}").json()["parents"]
    assert sorted(parents, key=lambda p: p["key"]) == [
        {"uuid": b, "key": "buddy"}, {"uuid": root, "key": "items"}]
    # Dropping the root's reference leaves an unreachable cycle: all three leave the scope.
    answer = types_api.apply(name, [change(root, "Board", items=[])])
    assert sorted(answer["removed"]) == sorted([a, b, c])
    assert set(objects_of(types_api.state(name))) == {root}


def test_a_change_to_an_object_the_same_set_detaches_is_fine_and_it_leaves(types_api):
    name = scope_name("board")
    root = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    a, b = new_uuid(), new_uuid()
    types_api.apply(name, [add(a, "Item"), add(b, "Item"), change(root, "Board", items=[a, b])])
    # b is dropped by the root and then changed: b is still an object of the set's staged
    # state until the end, so the change is fine and b leaves with the set.
    answer = types_api.apply(name, [change(root, "Board", items=[a]), change(b, "Item", i8=1)])
    assert answer["removed"] == [b]
    assert_rejected(types_api.post(name, [change(b, "Item", i8=2)]), ["unknown-object"])


def test_unknown_property_on_add_and_unknown_class(types_api, board):
    name, root, item = board
    fresh = new_uuid()
    response = types_api.post(name, [add(fresh, "Item", weight=3),
                                     change(root, "Board", items=[item, fresh])])
    replies = assert_problem(response, 422, "invalid-change-set")["fragmentReplies"]
    assert replies[0]["error"]["type"] == "unknown-property"
    assert replies[0]["error"]["property"] == "weight"
    assert_rejected(types_api.post(name, [add(new_uuid(), "Canvas")]), ["unknown-class"])
