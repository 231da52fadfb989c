"""Collections on the wire (docs/gateway.md, "Collections travel as operations"): answers,
`changeset` events, history pages and resumed events write a changed collection as one operations
object against the version before (or the whole array where that is shorter); applying what a
subscriber receives to its snapshot gives exactly what GET serves."""
from __future__ import annotations

import json
import random
import threading
import time

from gateway_helpers import (Api, add, apply_collection, change, new_uuid, objects_of, run_threads,
                             shapes_of)
from sse_stream import SSEStream

WRITERS = 4
SETS_PER_WRITER = 60
DEADLINE = 240.0


def apply_event(objects: dict[str, dict], event: dict) -> None:
    """Applies one change set as a reader does: adds first, then changes in order (a collection
    as the whole array or an operations object against the value before), then what left."""
    for fragment in event["fragments"]:
        if fragment["type"] == "add":
            objects[fragment["uuid"]] = {"clsName": fragment["clsName"],
                                         "properties": dict(fragment["properties"])}
    for fragment in event["fragments"]:
        if fragment["type"] != "change":
            continue
        properties = objects[fragment["uuid"]]["properties"]
        for key, value in fragment["properties"].items():
            if isinstance(value, dict) or (isinstance(value, list) and key == "shapes"):
                properties[key] = apply_collection(properties[key], value)
            else:
                properties[key] = value
    for uuid in event["removed"]:
        del objects[uuid]


def same_values(a: dict, b: dict) -> bool:
    """Objects equal with numbers compared by value (the server writes 5.0 for 5)."""
    return json.loads(json.dumps(a), parse_int=float) == json.loads(json.dumps(b), parse_int=float)


def random_set(rng: random.Random, root: str, shapes: list[str], writer: int) -> list[dict]:
    """One of: insert new shapes (at the end or before a shape), remove shapes, move one, or write
    the whole array (shuffled), against a possibly stale view of the collection."""
    kind = rng.choice(["insert", "insert", "insert-before", "remove", "move", "whole"])
    if kind.startswith("insert") or not shapes:
        fresh = [new_uuid() for _ in range(rng.randint(1, 3))]
        before = rng.choice(shapes) if kind == "insert-before" and shapes else None
        return [add(u, "Shape", x=writer, y=rng.randint(0, 99)) for u in fresh] + [
            change(root, "Canvas", shapes={"insert": fresh, "before": before})]
    if kind == "remove":
        return [change(root, "Canvas", shapes={"remove": rng.sample(shapes, min(len(shapes), 2))})]
    if kind == "move":
        return [change(root, "Canvas", shapes={"insert": [rng.choice(shapes)],
                                               "before": rng.choice(shapes)})]
    whole = list(shapes)
    rng.shuffle(whole)
    return [change(root, "Canvas", shapes=whole)]


def test_a_random_mix_from_several_writers_applied_to_the_snapshot_gives_get(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    api.add_shapes(name, count=20)
    start = api.state(name)
    events: list[dict] = []
    total = WRITERS * SETS_PER_WRITER

    def writer(index: int):
        def run():
            rng = random.Random(1000 + index)
            client = Api(server.url)
            try:
                for _ in range(SETS_PER_WRITER):
                    shapes = shapes_of(client.state(name)) if rng.random() < 0.3 else writer_view[index]
                    response = client.post(name, random_set(rng, root, shapes, index))
                    # A stale view may name a shape that left meanwhile: refused whole, fine.
                    assert response.status_code in (200, 422), response.text[:300]
                    if response.status_code == 200:
                        accepted.append(response.json()["version"])
                    writer_view[index] = shapes_of(client.state(name))
            finally:
                client.close()
        return run

    writer_view = {w: shapes_of(start) for w in range(WRITERS)}
    accepted: list[int] = []
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(start["version"])}) as stream:
        done = threading.Event()

        def reader():
            deadline = time.monotonic() + DEADLINE
            while not (done.is_set() and len(events) >= len(accepted)):
                try:
                    event = stream.next_event(timeout=0.5)
                except TimeoutError:
                    event = None
                if event is not None:
                    assert event.type == "changeset", event
                    events.append(event.json())
                assert time.monotonic() < deadline, "the stream fell behind the writers"

        readers = threading.Thread(target=reader)
        readers.start()
        try:
            run_threads([writer(w) for w in range(WRITERS)], timeout=DEADLINE)
        finally:
            done.set()
            readers.join(DEADLINE)
    assert len(accepted) >= total // 2, f"only {len(accepted)} of {total} sets were accepted"
    assert [e["version"] for e in events] == list(range(start["version"] + 1, start["version"] + len(events) + 1))

    objects = objects_of(start)
    operations = 0
    for event in events:
        operations += sum(isinstance(f["properties"].get("shapes"), dict) for f in event["fragments"])
        apply_event(objects, event)   # asserts each anchor is in the collection before the set
    final = api.state(name)
    assert final["version"] == events[-1]["version"]
    assert same_values(objects, objects_of(final))
    assert operations > len(events) // 2, "most sets should travel as operations"

    # The history pages and a resumed stream carry the same fragments.
    history = []
    since = start["version"]
    while since < final["version"]:
        page = api.history(name, since).json()["changesets"]
        assert page, since
        history += page
        since = page[-1]["version"]
    assert history == events
    middle = events[len(events) // 2]["version"]
    with SSEStream(server.url, f"/v1/scopes/{name}/events", {"Last-Event-ID": str(middle)}) as resumed:
        again = [resumed.expect_event().json() for _ in range(final["version"] - middle)]
    assert again == [e for e in events if e["version"] > middle]


def test_an_insert_into_5000_shapes_is_delivered_in_under_2_kb(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    shapes = [new_uuid() for _ in range(5000)]
    for batch in range(0, 5000, 500):   # --max-fragments is 1000 by default
        answer = api.apply(name, [add(u, "Shape", x=1, y=1) for u in shapes[batch:batch + 500]]
                           + [change(root, "Canvas", shapes={"insert": shapes[batch:batch + 500]})])
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(answer["version"])}) as stream:
        fresh = new_uuid()
        inserted = api.post_raw(name, json.dumps({"fragments": [
            add(fresh, "Shape", x=3, y=3),
            change(root, "Canvas", shapes={"insert": [fresh], "before": shapes[1234]})]}).encode())
        assert inserted.status_code == 200, inserted.text[:300]
        event = stream.expect_event()
    assert len(event.data.encode()) < 2048, len(event.data)
    assert len(inserted.content) < 2048, len(inserted.content)
    [canvas] = [f for f in event.json()["fragments"] if f["uuid"] == root]
    assert canvas["properties"]["shapes"] == {"insert": [fresh], "before": shapes[1234]}
    expected = shapes[:1234] + [fresh] + shapes[1234:]
    assert shapes_of(api.state(name)) == expected
