"""`CanvasExample` (Examples/Canvas, the Swift client's runnable example) against the real server,
so the example cannot rot: two typed peers in one process edit one canvas; what they print is what
their observers saw, and what they did is read back from the server — the final state and every
change set they sent, in order, from two clients."""
from __future__ import annotations

import subprocess

import pytest

from gateway_helpers import SHAPE_DEFAULTS, built_executable, objects_of, scope_name

TIMEOUT = 120  # the example bounds each of its waits to 10 s; this bounds the whole run


@pytest.fixture(scope="module")
def canvas_example(jetstream_bin):
    return built_executable(jetstream_bin, "CanvasExample")


def run(binary, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"CanvasExample took over {TIMEOUT} s\nstdout:\n{expired.stdout}\n"
                             f"stderr:\n{(expired.stderr or '')[-4000:]}")


def test_canvas_example_two_peers_edit_one_canvas_on_the_server(canvas_example, server, api):
    name = scope_name("canvas-example")
    done = run(canvas_example, server.url, name)
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-4000:]}"

    # What the observers saw. Whether Bob's fetch already holds Ada's first shape depends on
    # whether her first change set was confirmed before it, so only the name is checked there.
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"bob fetched {name}: 'Sketch' with "), lines
    assert "bob sees a new oval 'hello' at (40.0, 0.0)" in lines
    assert lines.count("ada sees the oval move to (120.0, 80.0)") == 1, lines
    refused = [line for line in lines if line.startswith("ada's change was refused: ")]
    assert len(refused) == 1 and "width" in refused[0], lines
    assert "bob sees 'hello' removed" in lines
    assert lines[-1] == "both at version 4 / 4; ada pending 0", lines

    # The server's state: the canvas Ada created, with the one shape she started with.
    state = api.state(name)
    assert state["version"] == 4
    objects = objects_of(state)
    canvas = objects[state["rootUUID"]]
    assert canvas["clsName"] == "Canvas" and canvas["properties"]["name"] == "Sketch"
    assert len(canvas["properties"]["shapes"]) == 1
    first = canvas["properties"]["shapes"][0]
    assert objects[first] == {"clsName": "Shape", "properties": {"x": 0, "y": 0, **SHAPE_DEFAULTS}}
    assert len(objects) == 2

    # Every change set, in order: Ada's content and oval, then Bob's move and removal. The refused
    # width never reached the server (the client's schema check refused it first).
    history = api.history(name, 0)
    assert history.status_code == 200, history.text
    sets = history.json()["changesets"]
    assert [s["version"] for s in sets] == [1, 2, 3, 4]
    first_add = [f for f in sets[0]["fragments"] if f["type"] == "add"]
    assert [f["uuid"] for f in first_add] == [first]
    oval = [f for f in sets[1]["fragments"] if f["type"] == "add"]
    assert len(oval) == 1 and oval[0]["clsName"] == "Shape"
    assert {k: oval[0]["properties"][k] for k in ("kind", "label", "x", "y")} == {
        "kind": "oval", "label": "hello", "x": 40, "y": 0}
    oval_uuid = oval[0]["uuid"]
    assert sets[2]["fragments"] == [
        {"type": "change", "uuid": oval_uuid, "clsName": "Shape", "properties": {"x": 120, "y": 80}}]
    assert sets[3]["removed"] == [oval_uuid]
    assert all(f["properties"].get("width") != -5 for s in sets for f in s["fragments"])
    writers = [s["idempotencyKey"].rsplit(":", 1)[0] for s in sets]
    assert writers[0] == writers[1] and writers[2] == writers[3] and writers[0] != writers[2], writers


def test_canvas_example_fails_when_no_server_answers(canvas_example):
    # Nothing listens on port 1 (tcpmux, privileged and unused): the example says so in one line
    # and exits 1, not hanging, passing, or crashing with a backtrace.
    done = run(canvas_example, "http://127.0.0.1:1", scope_name("canvas-example"))
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr.startswith("CanvasExample: unreachable: ") and done.stderr.count("\n") == 1, done.stderr[-2000:]
