"""Concurrent clients: one creator wins, readers see consistent and monotonic states, If-Match
admits exactly one of several racing writers."""
from __future__ import annotations

import threading
import time

from gateway_helpers import (Api, assert_problem, change, etag_version, objects_of, run_threads,
                             scope_name)



def test_racing_creators_of_one_name_get_one_201_and_409s(server):
    name = scope_name()
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def create():
        client = Api(server.url)
        barrier.wait(timeout=60)
        response = client.create(name, {"clsName": "Canvas", "properties": {"name": "mine"}})
        statuses.append(response.status_code)
        if response.status_code == 409:
            assert_problem(response, 409, "scope-exists")
        client.close()

    run_threads([create] * 6)
    assert sorted(statuses) == [201] + [409] * 5


def test_racing_if_match_writers_exactly_one_wins(server, api):
    name, state = api.create_canvas()
    results: list[int] = []
    barrier = threading.Barrier(5)

    def write(index: int):
        def run():
            client = Api(server.url)
            barrier.wait(timeout=60)
            response = client.post(name, [change(state["rootUUID"], "Canvas", name=f"w{index}")],
                                   headers={"If-Match": f'"{state["version"]}"'})
            results.append(response.status_code)
            if response.status_code == 412:
                assert assert_problem(response, 412, "precondition-failed")["version"] == (
                    state["version"] + 1)
            client.close()
        return run

    run_threads([write(i) for i in range(5)])
    assert sorted(results) == [200] + [412] * 4
    assert api.state(name)["version"] == state["version"] + 1


def test_readers_during_writes_see_consistent_monotonic_states(server, api):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    writes = 40

    def writer():
        client = Api(server.url)
        for n in range(writes):
            client.apply(name, [change(root, "Canvas", name=f"v{n}")])
        client.close()

    def reader():
        client = Api(server.url)
        last = state["version"]
        deadline = time.monotonic() + 90
        while last < state["version"] + writes:
            assert time.monotonic() < deadline, f"stuck at version {last}"
            response = client.http.get(f"/v1/scopes/{name}")
            assert response.status_code == 200
            body = response.json()
            assert etag_version(response) == body["version"]
            assert body["version"] >= last
            # The state at version V is the one written by the V-th set.
            expected = None if body["version"] == state["version"] else (
                f"v{body['version'] - state['version'] - 1}")
            assert objects_of(body)[root]["properties"]["name"] == expected
            last = body["version"]
        client.close()

    run_threads([writer, reader, reader])
