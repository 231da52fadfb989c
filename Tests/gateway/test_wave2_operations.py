"""Collection operations in `change` fragments (docs/model.md, "Collection operations"):
`{"insert":[…],"before":…,"remove":[…]}` instead of the whole array, safe under concurrent
writers without If-Match. The stored, answered and broadcast fragment carries a changed collection
as one operations object resolved against the version before (or the whole array where that is
shorter); states keep whole arrays. Demo schema (Canvas.shapes: [Shape]) and schemas/all-types.yaml (Board.items: [Item],
Item.children: [Item], Item.tags: {[String], maxCount: 3}, Item.numbers: [Int16])."""
from __future__ import annotations

import threading
import time

import pytest

from gateway_helpers import (Api, add, apply_collection, assert_rejected, canvas_with_shapes,
                             change, new_uuid, objects_of, run_threads, scope_name, shapes_of)
from sse_stream import SSEStream

WRITERS = 8
INSERTS_PER_WRITER = 50
DEADLINE = 240.0  # seconds for every bounded wait of the concurrent tests




def ops(**operations) -> dict:
    """An operations object (`before=None` is sent as `"before": null`)."""
    return dict(operations)


def fragment_for(answer: dict, uuid: str) -> dict:
    [fragment] = [f for f in answer["fragments"] if f["uuid"] == uuid]
    return fragment



# -- many writers, no If-Match ------------------------------------------------------------------

def test_concurrent_inserts_without_if_match_all_land_exactly_once(api, server):
    name, state = api.create_canvas()
    root, start = state["rootUUID"], state["version"]
    total = WRITERS * INSERTS_PER_WRITER
    answers: dict[int, list[tuple[str, dict]]] = {w: [] for w in range(WRITERS)}
    events: dict[int, dict] = {}
    barrier = threading.Barrier(WRITERS)

    def writer(index: int):
        def run():
            client = Api(server.url)
            try:
                barrier.wait(timeout=60)
                for n in range(INSERTS_PER_WRITER):
                    shape = new_uuid()
                    response = client.post(name, [
                        add(shape, "Shape", x=index, y=n),
                        change(root, "Canvas", shapes=ops(insert=[shape], before=None))])
                    assert response.status_code == 200, (
                        f"writer {index} insert {n}: {response.status_code} {response.text[:500]}")
                    answers[index].append((shape, response.json()))
            finally:
                client.close()
        return run

    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"

        def reader():
            # Read while the writers write, so the stream never backs up to the pending limit.
            deadline = time.monotonic() + DEADLINE
            while len(events) < total:
                event = stream.expect_event(max(0.1, deadline - time.monotonic()))
                assert event.type == "changeset", event
                body = event.json()
                events[body["version"]] = body

        run_threads([writer(w) for w in range(WRITERS)] + [reader], timeout=DEADLINE)

    every = [(shape, answer) for per_writer in answers.values() for shape, answer in per_writer]
    assert len(every) == total
    versions = sorted(answer["version"] for _, answer in every)
    assert versions == list(range(start + 1, start + total + 1)), "versions are not contiguous"

    shape_at: dict[int, str] = {}
    answer_at: dict[int, dict] = {}
    for shape, answer in every:
        version = answer["version"]
        shape_at[version] = shape
        answer_at[version] = answer
        assert answer["fragmentReplies"] == [{}, {}]
        # The broadcast change set is the answered one.
        assert events[version] == {"version": version, "at": answer["at"],
                                   "subject": answer["subject"],
                                   "fragments": answer["fragments"], "removed": []}
    # Applied in version order, each answer's collection value gives the array at its version:
    # an append as an operation against the version before (the whole array only while shorter).
    shapes: list[str] = []
    for version in range(start + 1, start + total + 1):
        value = fragment_for(answer_at[version], root)["properties"]["shapes"]
        assert isinstance(value, dict) or len(value) <= 2, (version, value)
        shapes = apply_collection(shapes, value)
        assert len(shapes) == version - start and shapes[-1] == shape_at[version], (version, shapes[-3:])

    final = api.state(name)
    assert final["version"] == start + total
    # Each shape once, in the order the versions appended them.
    assert shapes_of(final) == [shape_at[v] for v in range(start + 1, start + total + 1)]
    assert len(set(shapes_of(final))) == total
    assert len(objects_of(final)) == total + 1
    # Each writer's own shapes keep the order it inserted them in.
    position = {shape: index for index, shape in enumerate(shapes_of(final))}
    for per_writer in answers.values():
        mine = [position[shape] for shape, _ in per_writer]
        assert mine == sorted(mine)


def test_two_writers_inserting_at_the_same_version_both_keep_their_shape(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    seen = api.state(name)["version"]
    first, second = new_uuid(), new_uuid()
    # Both were written against version `seen`; neither overwrites the other.
    one = api.apply(name, [add(first, "Shape", x=1, y=1),
                           change(root, "Canvas", shapes=ops(insert=[first]))])
    two = api.apply(name, [add(second, "Shape", x=2, y=2),
                           change(root, "Canvas", shapes=ops(insert=[second], before=a))])
    assert (one["version"], two["version"]) == (seen + 1, seen + 2)
    assert shapes_of(api.state(name)) == [second, a, first]


def test_concurrent_move_and_remove_of_one_shape_never_duplicates_it(api, server):
    for _ in range(5):
        name, root, (a, b, c, d) = canvas_with_shapes(api, 4)
        results: dict[str, object] = {}
        barrier = threading.Barrier(2)

        def send(label: str, operations: dict):
            def run():
                client = Api(server.url)
                try:
                    barrier.wait(timeout=60)
                    results[label] = client.post(
                        name, [change(root, "Canvas", shapes=operations)])
                finally:
                    client.close()
            return run

        run_threads([send("move", ops(insert=[c], before=a)), send("remove", ops(remove=[c]))],
                    timeout=DEADLINE)
        removed = results["remove"]
        assert removed.status_code == 200, removed.text
        moved = results["move"]
        if moved.status_code == 200:
            # The move came first: the remove then took c out wherever it was.
            value = fragment_for(moved.json(), root)["properties"]["shapes"]
            assert apply_collection([a, b, c, d], value) == [c, a, b, d]
        else:
            # The remove came first: c left the scope, so inserting it names a missing object.
            [reply] = assert_rejected(moved, ["missing-reference"])
            assert reply["error"]["property"] == "shapes"
        assert c in removed.json()["removed"]
        state = api.state(name)
        assert shapes_of(state) == [a, b, d]
        assert set(objects_of(state)) == {root, a, b, d}


def test_concurrent_move_to_another_collection_and_remove_end_moved_or_removed(types_api,
                                                                               types_server):
    """Board.items [p, c]; one writer moves c under p (p.children), the other removes c from the
    board. Either order leaves a consistent state: c under p once, or c gone."""
    for _ in range(5):
        name = scope_name("board")
        board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
        p, c = new_uuid(), new_uuid()
        types_api.apply(name, [add(p, "Item"), add(c, "Item", text="c"),
                               change(board, "Board", items=[p, c])])
        results: dict[str, object] = {}
        barrier = threading.Barrier(2)

        def send(label: str, fragments: list):
            def run():
                client = Api(types_server.url)
                try:
                    barrier.wait(timeout=60)
                    results[label] = client.post(name, fragments)
                finally:
                    client.close()
            return run

        run_threads([
            send("move", [change(board, "Board", items=ops(remove=[c])),
                          change(p, "Item", children=ops(insert=[c]))]),
            send("remove", [change(board, "Board", items=ops(remove=[c]))])], timeout=DEADLINE)
        assert results["remove"].status_code == 200, results["remove"].text
        state = types_api.state(name)
        objects = objects_of(state)
        assert objects[board]["properties"]["items"] == [p]
        if results["move"].status_code == 200:
            # The move came first; the remove then found no c on the board and changed nothing.
            assert objects[p]["properties"]["children"] == [c]
            assert objects[c]["properties"]["text"] == "c"
            assert results["remove"].json()["removed"] == []
        else:
            # The remove came first: c left the scope, so the move names a missing object.
            assert_rejected(results["move"], [None, "missing-reference"])
            assert c not in objects and objects[p]["properties"]["children"] == []
            assert results["remove"].json()["removed"] == [c]


# -- the rules of one operations object ------------------------------------------------------

def test_insert_goes_before_the_anchor_or_at_the_end(api):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    x, y, z, w = new_uuid(), new_uuid(), new_uuid(), new_uuid()
    api.apply(name, [add(x, "Shape", x=0, y=0), add(y, "Shape", x=0, y=0),
                     change(root, "Canvas", shapes=ops(insert=[x, y], before=b))])
    assert shapes_of(api.state(name)) == [a, x, y, b, c]
    # `before: null`, `before` absent and an anchor that is not in the collection: the end.
    api.apply(name, [add(z, "Shape", x=0, y=0),
                     change(root, "Canvas", shapes=ops(insert=[z], before=None))])
    api.apply(name, [add(w, "Shape", x=0, y=0), change(root, "Canvas", shapes=ops(insert=[w]))])
    assert shapes_of(api.state(name)) == [a, x, y, b, c, z, w]
    v = new_uuid()
    api.apply(name, [add(v, "Shape", x=0, y=0),
                     change(root, "Canvas", shapes=ops(insert=[v], before=new_uuid()))])
    assert shapes_of(api.state(name)) == [a, x, y, b, c, z, w, v]


def test_insert_before_the_first_of_several_occurrences(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    api.apply(name, [change(root, "Canvas", shapes=[a, b, a, b])])
    x = new_uuid()
    api.apply(name, [add(x, "Shape", x=0, y=0),
                     change(root, "Canvas", shapes=ops(insert=[x], before=b))])
    assert shapes_of(api.state(name)) == [a, x, b, a, b]


def test_remove_takes_every_occurrence_and_ignores_absent_values(api):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    api.apply(name, [change(root, "Canvas", shapes=[a, b, a, c])])
    before = api.state(name)
    answer = api.apply(name, [change(root, "Canvas", shapes=ops(remove=[new_uuid()]))])
    assert answer["version"] == before["version"] + 1
    assert answer["removed"] == []
    # Duplicates: operations cannot build them, so the collection comes whole.
    assert fragment_for(answer, root)["properties"]["shapes"] == [a, b, a, c]
    answer = api.apply(name, [change(root, "Canvas", shapes=ops(remove=[a, new_uuid()]))])
    assert answer["removed"] == [a]
    value = fragment_for(answer, root)["properties"]["shapes"]
    assert apply_collection([a, b, a, c], value) == [b, c]
    assert set(objects_of(api.state(name))) == {root, b, c}


def test_an_inserted_value_already_present_is_moved(api):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    props_before = objects_of(api.state(name))[c]["properties"]
    answer = api.apply(name, [change(root, "Canvas", shapes=ops(insert=[c], before=a))])
    assert answer["removed"] == []
    assert shapes_of(api.state(name)) == [c, a, b]
    api.apply(name, [change(root, "Canvas", shapes=ops(insert=[c]))])
    assert shapes_of(api.state(name)) == [a, b, c]
    # A value listed twice in the collection ends up once.
    api.apply(name, [change(root, "Canvas", shapes=[a, b, a, c])])
    api.apply(name, [change(root, "Canvas", shapes=ops(insert=[a], before=c))])
    state = api.state(name)
    assert shapes_of(state) == [b, a, c]
    assert objects_of(state)[c]["properties"] == props_before


def test_remove_and_insert_of_one_value_is_a_move_that_keeps_the_object(api):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    api.apply(name, [change(a, "Shape", label="kept")])
    answer = api.apply(name, [change(root, "Canvas", shapes=ops(remove=[a], insert=[a], before=c))])
    assert answer["removed"] == []
    state = api.state(name)
    assert shapes_of(state) == [b, a, c]
    assert objects_of(state)[a]["properties"]["label"] == "kept"


def test_a_later_fragment_sees_the_result_of_an_earlier_one(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    x, y = new_uuid(), new_uuid()
    answer = api.apply(name, [add(x, "Shape", x=0, y=0), add(y, "Shape", x=0, y=0),
                              change(root, "Canvas", shapes=ops(insert=[x])),
                              change(root, "Canvas", shapes=ops(insert=[y], before=x))])
    assert shapes_of(api.state(name)) == [a, y, x]
    # One value for the collection in the whole set, at its last fragment, against the version
    # before: the earlier fragment that wrote it leaves it out.
    assert answer["fragments"][2]["properties"] == {}
    assert apply_collection([a], answer["fragments"][-1]["properties"]["shapes"]) == [a, y, x]


def test_a_whole_array_is_still_accepted(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    answer = api.apply(name, [change(root, "Canvas", shapes=[b, a])])
    assert fragment_for(answer, root)["properties"]["shapes"] == [b, a]


# -- what is answered, stored and broadcast -------------------------------------------------

def test_answer_event_and_history_carry_the_operation_against_the_version_before(api, server):
    name, root, (a, b, c) = canvas_with_shapes(api, 3)
    x = new_uuid()
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        snapshot = stream.expect_event()
        assert snapshot.type == "snapshot"
        answer = api.apply(name, [add(x, "Shape", x=3, y=4),
                                  change(root, "Canvas", shapes=ops(insert=[x], before=b))])
        event = stream.expect_event()
    assert answer["fragments"][1] == {"type": "change", "uuid": root, "clsName": "Canvas",
                                      "properties": {"shapes": {"insert": [x], "before": b}}}
    assert shapes_of(api.state(name)) == [a, x, b, c]
    assert (event.type, event.id) == ("changeset", str(answer["version"]))
    answered = {"version": answer["version"], "at": answer["at"], "subject": answer["subject"],
                "fragments": answer["fragments"], "removed": []}
    assert event.json() == answered
    [logged] = api.history(name, answer["version"] - 1).json()["changesets"]
    assert logged == answered
    # A subscriber resuming gets the same operation; a new one gets whole arrays in its snapshot.
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(answer["version"] - 1)}) as resumed:
        again = resumed.expect_event()
    assert again.type == "changeset" and again.json()["fragments"] == answer["fragments"]


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("operations", [
    {},
    {"before": None},
    {"insert": "not an array"},
    {"remove": {"a": 1}},
    {"insert": [], "after": None},
    {"remove": [], "replace": []},
    {"insert": None},
])
def test_a_malformed_operations_object_is_a_type_mismatch_on_the_property(api, operations):
    name, root, (a,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    [reply] = assert_rejected(api.post(name, [change(root, "Canvas", shapes=operations)]),
                              ["type-mismatch"])
    assert reply["error"]["property"] == "shapes"
    assert api.state(name) == before


def test_inserted_elements_are_validated_like_array_elements(api):
    name, root, (a,) = canvas_with_shapes(api, 1)
    before = api.state(name)
    for inserted, kind in (([new_uuid()], "missing-reference"), ([root], "wrong-class"),
                           (["not-a-uuid"], "type-mismatch"), ([7], "type-mismatch")):
        response = api.post(name, [change(root, "Canvas", shapes=ops(insert=inserted))])
        [reply] = assert_rejected(response, [kind])
        assert reply["error"]["property"] == "shapes", reply
    assert api.state(name) == before


def test_operations_in_an_add_are_a_type_mismatch(types_api):
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    item = new_uuid()
    response = types_api.post(name, [add(item, "Item", tags=ops(insert=["a"])),
                                     change(board, "Board", items=ops(insert=[item]))])
    [reply, _] = assert_rejected(response, ["type-mismatch", None])
    assert reply["error"]["property"] == "tags"
    assert objects_of(types_api.state(name)) == {
        board: {"clsName": "Board", "properties": {"title": None, "items": [], "owner": None,
                                                   "people": []}}}


def test_a_rejected_operation_rejects_the_whole_set(api):
    name, root, (a, b) = canvas_with_shapes(api, 2)
    before = api.state(name)
    response = api.post(name, [change(a, "Shape", label="applied?"),
                               change(root, "Canvas", shapes=ops(remove=[b])),
                               change(root, "Canvas", shapes=ops(insert=[new_uuid()]))])
    assert_rejected(response, [None, None, "missing-reference"])
    assert api.state(name) == before


# -- primitive collections and maxCount --------------------------------------------------------

@pytest.fixture
def item(types_api):
    """(scope name, item uuid) of a board holding one Item."""
    name = scope_name("board")
    board = types_api.create(name, {"clsName": "Board"}).json()["rootUUID"]
    uuid = new_uuid()
    types_api.apply(name, [add(uuid, "Item"), change(board, "Board", items=[uuid])])
    return name, uuid


def item_tags(api: Api, name: str, uuid: str, prop: str = "tags") -> list:
    return objects_of(api.state(name))[uuid]["properties"][prop]


def test_primitive_collections_take_operations(types_api, item):
    name, uuid = item
    types_api.apply(name, [change(uuid, "Item", tags=["a", "b"])])
    answer = types_api.apply(name, [change(uuid, "Item", tags=ops(insert=["c"], before="a"))])
    assert answer["fragments"] == [{"type": "change", "uuid": uuid, "clsName": "Item",
                                    "properties": {"tags": {"insert": ["c"], "before": "a"}}}]
    assert item_tags(types_api, name, uuid) == ["c", "a", "b"]
    types_api.apply(name, [change(uuid, "Item", tags=ops(remove=["b", "zzz"]))])
    assert item_tags(types_api, name, uuid) == ["c", "a"]
    types_api.apply(name, [change(uuid, "Item", tags=ops(insert=["c"], before=None))])
    assert item_tags(types_api, name, uuid) == ["a", "c"]
    types_api.apply(name, [change(uuid, "Item", tags=["x", "y", "x"])])
    types_api.apply(name, [change(uuid, "Item", tags=ops(insert=["x"]))])
    assert item_tags(types_api, name, uuid) == ["y", "x"]
    types_api.apply(name, [change(uuid, "Item", numbers=[1, 2, 3])])
    types_api.apply(name, [change(uuid, "Item", numbers=ops(remove=[2], insert=[-7], before=1))])
    assert item_tags(types_api, name, uuid, "numbers") == [-7, 1, 3]


def test_primitive_elements_are_validated_with_the_collection_named(types_api, item):
    name, uuid = item
    before = types_api.state(name)
    for prop, operations, kind in (
            ("numbers", ops(insert=[40000]), "out-of-range"),
            ("numbers", ops(insert=[2.5]), "type-mismatch"),
            ("numbers", ops(insert=["5"]), "type-mismatch"),
            ("tags", ops(insert=[1]), "type-mismatch"),
            ("tags", ops(insert="a"), "type-mismatch")):
        response = types_api.post(name, [change(uuid, "Item", **{prop: operations})])
        [reply] = assert_rejected(response, [kind])
        assert reply["error"]["property"] == prop, reply
    assert types_api.state(name) == before


def test_max_count_applies_to_the_result(types_api, item):
    name, uuid = item
    types_api.apply(name, [change(uuid, "Item", tags=["a", "b", "c"])])
    [reply] = assert_rejected(
        types_api.post(name, [change(uuid, "Item", tags=ops(insert=["d"]))]),
        ["constraint-violation"])
    assert reply["error"]["property"] == "tags"
    # At the limit, a move and a remove + insert keep the count: both are fine.
    types_api.apply(name, [change(uuid, "Item", tags=ops(insert=["a"]))])
    assert item_tags(types_api, name, uuid) == ["b", "c", "a"]
    types_api.apply(name, [change(uuid, "Item", tags=ops(remove=["b"], insert=["d"], before="c"))])
    assert item_tags(types_api, name, uuid) == ["d", "c", "a"]


def test_a_new_scope_root_gives_collections_whole_not_as_operations(api):
    # Like an `add`: there is nothing yet for operations to apply to.
    name = f"canvas-{new_uuid()[:8]}"
    refused = api.create(name, {"clsName": "Canvas", "properties": {"shapes": {"insert": []}}})
    [reply] = assert_rejected(refused, ["type-mismatch"])
    assert reply["error"]["property"] == "shapes"
    assert api.http.get(f"/v1/scopes/{name}").status_code == 404
    assert api.create(name, {"clsName": "Canvas", "properties": {"shapes": []}}).status_code == 201
