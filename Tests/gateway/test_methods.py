"""Server methods (`POST /v1/scopes/{name}/methods/{method}`, docs/methods.md) through the real
server, on the built-in demo schema's `arrange`: the answer (`method`, `result`), the event, a keyed
replay that does not run the method again, `If-Match`, a refusal and an unknown method with
nothing applied, a call that changes nothing, and a method run against the latest state while
other writers add shapes (no lost update)."""
from __future__ import annotations

import threading

from gateway_helpers import Api, add, assert_problem, change, new_uuid, objects_of
from sse_stream import SSEStream


def call(api: Api, name: str, method: str, body=None, headers: dict | None = None):
    return api.http.post(f"/v1/scopes/{name}/methods/{method}", json={} if body is None else body,
                         headers=headers)


def positions(state: dict) -> list[tuple[float, float]]:
    objects = objects_of(state)
    shapes = objects[state["rootUUID"]]["properties"]["shapes"]
    return [(objects[uuid]["properties"]["x"], objects[uuid]["properties"]["y"]) for uuid in shapes]


def grid(count: int, columns: int, cell: float = 120) -> list[tuple[float, float]]:
    return [(20 + (index % columns) * cell, 20 + (index // columns) * cell) for index in range(count)]


def test_arrange_answers_with_method_and_result_and_its_event_says_method(api, server):
    name, _ = api.create_canvas()
    api.add_shapes(name, 5, x=3, y=4)
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.expect_event().type == "snapshot"
        answer = call(api, name, "arrange", {"args": {"columns": 2}})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["version"] == 2 and body["method"] == "arrange"
        assert body["result"] == {"moved": 5, "columns": 2}
        assert len(body["fragmentReplies"]) == 5 and answer.headers["etag"] == '"2"'
        event = stream.expect_event()
        assert event.type == "changeset" and event.json()["method"] == "arrange"
        assert event.json()["version"] == 2 and "result" not in event.json()
    assert positions(api.state(name)) == grid(5, 2)
    page = api.history(name, 1).json()["changesets"]
    assert [entry.get("method") for entry in page] == ["arrange"]

    # Already in place: 200 at the current version, no new version, nothing logged.
    again = call(api, name, "arrange", {"args": {"columns": 2}})
    assert again.status_code == 200
    assert again.json() == {"version": 2, "fragmentReplies": [], "fragments": [], "removed": [],
                            "method": "arrange", "result": {"moved": 0, "columns": 2}}
    assert api.state(name)["version"] == 2

    # The default is the smallest square; other members of args are ignored; no args at all is fine.
    assert call(api, name, "arrange", {"args": {"ignored": True}}).json()["result"] == {"moved": 3, "columns": 3}
    assert positions(api.state(name)) == grid(5, 3)
    assert call(api, name, "arrange", {}).json()["result"]["columns"] == 3


def test_a_keyed_call_is_replayed_without_running_again(api):
    name, _ = api.create_canvas()
    api.add_shapes(name, 2)
    key = {"Idempotency-Key": new_uuid()}
    first = call(api, name, "arrange", {"args": {"columns": 1}}, headers=key)
    assert first.status_code == 200 and first.json()["result"]["moved"] == 2
    # Shapes moved away since: running again would move them back; the replay does not.
    api.add_shapes(name, 1, x=500, y=500)
    replay = call(api, name, "arrange", {"args": {"columns": 1}}, headers=key)
    assert replay.status_code == 200 and replay.headers.get("idempotent-replayed") == "true"
    assert replay.json() == first.json()
    assert positions(api.state(name))[2] == (500, 500)
    # The same key with other args is a reused key, and on another method too.
    assert_problem(call(api, name, "arrange", {"args": {"columns": 2}}, headers=key), 422, "idempotency-key-reused")


def test_refusals_apply_nothing(api):
    name, _ = api.create_canvas()
    api.add_shapes(name, 3, x=7, y=7)
    version = api.state(name)["version"]

    problem = assert_problem(call(api, name, "arrange", {"args": {"columns": 0}}), 422, "method-rejected")
    assert problem["method"] == "arrange" and "columns must be an integer from 1 to 100" in problem["reason"]
    assert_problem(call(api, name, "arrange", {"args": {"columns": "two"}}), 422, "method-rejected")
    problem = assert_problem(call(api, name, "no-such-method"), 404, "unknown-method")
    assert "no-such-method" in problem["detail"]
    assert_problem(call(api, name, "arrange", headers={"If-Match": f'"{version - 1}"'}), 412, "precondition-failed")
    assert_problem(call(api, name, "arrange", {"columns": 2}), 400, "bad-request")
    response = api.http.post(f"/v1/scopes/{name}/methods/arrange", content=b"[1]",
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert_problem(call(api, "canvas-missing-" + new_uuid()[:8], "arrange"), 404, "not-found")
    assert api.state(name)["version"] == version
    assert positions(api.state(name)) == [(7, 7)] * 3

    # A matching If-Match applies.
    matched = call(api, name, "arrange", headers={"If-Match": f'"{version}"'})
    assert matched.status_code == 200 and matched.json()["version"] == version + 1


def test_arrange_runs_against_the_latest_state_while_others_add_shapes(api):
    """Writers append shapes while `arrange` is called again and again: the state at each arrange's
    version has every shape then present in the grid, so each ran on the state right before it
    (a method reading an older state would leave the shapes added meanwhile out of place)."""
    name, state = api.create_canvas()
    root = state["rootUUID"]
    stop = threading.Event()
    errors: list[str] = []

    def writer() -> None:
        local = Api(str(api.http.base_url))
        try:
            for _ in range(40):
                if stop.is_set():
                    return
                uuid = new_uuid()
                response = local.post(name, [add(uuid, "Shape", x=999, y=999),
                                             change(root, "Canvas", shapes={"insert": [uuid], "before": None})])
                if response.status_code != 200:
                    errors.append(response.text)
        finally:
            local.close()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    versions = []
    for _ in range(2000):  # bounded: until both writers are done
        answer = call(api, name, "arrange", {"args": {"columns": 4}})
        assert answer.status_code == 200, answer.text
        if answer.json()["fragments"]:
            versions.append(answer.json()["version"])
        if not any(thread.is_alive() for thread in threads):
            break
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors[:3]
    assert len(versions) >= 2, f"arrange moved shapes only {len(versions)} times while 80 were added"
    for version in versions:
        past = api.http.get(f"/v1/scopes/{name}", params={"version": version}).json()
        assert positions(past) == grid(len(positions(past)), 4), f"version {version} is not a whole grid"


def test_rename_sets_the_canvas_name_like_the_equivalent_change_set(api):
    name, state = api.create_canvas()
    answer = call(api, name, "rename", {"args": {"name": "Sketch"}})
    assert answer.status_code == 200 and answer.json()["result"] == {"name": "Sketch"}
    assert answer.json()["fragments"] == [
        {"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas", "properties": {"name": "Sketch"}}]
    assert objects_of(api.state(name))[state["rootUUID"]]["properties"]["name"] == "Sketch"
    assert_problem(call(api, name, "rename", {"args": {"name": 5}}), 422, "method-rejected")


def test_bench_write_calls_a_method(jetstream_bin, server, api):
    import json
    import subprocess
    done = subprocess.run(
        [str(jetstream_bin), "bench", "write", "--url", server.url, "--method", "rename", "-c", "4", "-d", "1",
         "--scope-prefix", "canvas-methodbench-", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["requests"] > 0 and set(result["statuses"]) == {"200"}, result
    history = api.history("canvas-methodbench-0", 0, limit=5).json()["changesets"]
    assert history and all(entry["method"] == "rename" for entry in history)
