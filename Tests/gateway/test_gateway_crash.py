"""Crash safety: SIGKILL the server while several writers post; after a restart every change set
that was answered 200 is there, whole, and versions are contiguous."""
from __future__ import annotations

import threading
import time

import httpx

from gateway_helpers import (CHANGESET_AT, Api, add, as_event, change, new_uuid, objects_of,
                             scope_name)
from sse_stream import SSEStream

SHAPES_PER_SET = 2
# Sets per writer and crash: enough to overlap the kill, few enough to keep states small.
MAX_SETS_PER_ROUND = 40


class Writer(threading.Thread):
    """Appends SHAPES_PER_SET shapes per change set to one canvas until told to stop or the
    server goes away. With `if_match` it re-reads and retries on 412 (shared scope)."""

    def __init__(self, url: str, scope: str, if_match: bool, stop: threading.Event):
        super().__init__(daemon=True)
        self.url, self.scope, self.if_match, self.stop = url, scope, if_match, stop
        self.answered: list[tuple[dict, list[str]]] = []   # (200 answer, added uuids)
        self.in_flight: list[list[str]] = []               # sent, no answer (the kill)
        self.unexpected: list[str] = []

    def run(self) -> None:
        http = httpx.Client(base_url=self.url, timeout=60.0)
        try:
            for _ in range(2000):
                if self.stop.is_set() or len(self.answered) >= MAX_SETS_PER_ROUND:
                    return
                try:
                    response = http.get(f"/v1/scopes/{self.scope}")
                except httpx.TransportError:
                    return
                state = response.json()
                root = state["rootUUID"]
                shapes = objects_of(state)[root]["properties"]["shapes"]
                uuids = [new_uuid() for _ in range(SHAPES_PER_SET)]
                fragments = [add(u, "Shape", x=1, y=2, label=f"{self.scope}:{u}") for u in uuids]
                fragments.append(change(root, "Canvas", shapes=shapes + uuids))
                headers = {"If-Match": f'"{state["version"]}"'} if self.if_match else {}
                try:
                    response = http.post(f"/v1/scopes/{self.scope}/changesets",
                                         json={"fragments": fragments}, headers=headers)
                except httpx.TransportError:
                    self.in_flight.append(uuids)
                    return
                if response.status_code == 200:
                    self.answered.append((response.json(), uuids))
                elif response.status_code != 412 or not self.if_match:
                    self.unexpected.append(f"{response.status_code} {response.text[:300]}")
                    return
        finally:
            http.close()


def test_every_answered_change_set_survives_sigkill_whole_and_in_order(start_server):
    server = start_server()
    api = Api(server.url)
    shared = scope_name("canvas-crash")
    own = [scope_name("canvas-crash") for _ in range(2)]
    created = {name: api.create_canvas(name)[1]["version"] for name in [shared, *own]}
    api.close()
    writers: list[Writer] = []
    for _ in range(3):  # three crashes, each checked after its restart
        writers += crash_while_writing(server, shared, own)
        server.start()
        check_after_restart(server, created, writers)


def crash_while_writing(server, shared: str, own: list[str]) -> list[Writer]:
    stop = threading.Event()
    writers = [Writer(server.url, shared, True, stop), Writer(server.url, shared, True, stop),
               Writer(server.url, own[0], False, stop), Writer(server.url, own[1], False, stop)]
    for writer in writers:
        writer.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(len(w.answered) >= 15 for w in writers) or any(not w.is_alive() for w in writers):
            break
        time.sleep(0.05)
    server.kill()  # SIGKILL while the writers are posting
    stop.set()
    for writer in writers:
        writer.join(timeout=90)
    for writer in writers:
        assert not writer.is_alive()
        assert not writer.unexpected, writer.unexpected
        assert len(writer.answered) >= 1
    return writers


def full_history(api, name: str, since: int) -> dict:
    """Every change set after `since`, following pages of the history endpoint."""
    changesets: list[dict] = []
    while True:
        response = api.history(name, since)
        assert response.status_code == 200, response.text
        page = response.json()
        changesets += page["changesets"]
        if not page["changesets"]:
            return {"version": page["version"], "changesets": changesets}
        since = page["changesets"][-1]["version"]


def check_after_restart(server, created: dict[str, int], writers: list[Writer]) -> None:
    api = Api(server.url)
    for name in created:
        mine = [w for w in writers if w.scope == name]
        answered = [a for w in mine for a in w.answered]
        in_flight = [u for w in mine for u in w.in_flight]
        state = api.state(name)
        history = full_history(api, name, created[name])
        assert history["version"] == state["version"]
        versions = [c["version"] for c in history["changesets"]]
        # Contiguous from creation to the current version.
        assert versions == list(range(created[name] + 1, state["version"] + 1))
        # Every stored set, answered or not, kept its server time and (anonymous) subject.
        for c in history["changesets"]:
            assert CHANGESET_AT.match(c["at"]) and c["subject"] is None, c
        # Every answered change set is there, exactly as answered.
        by_version = {c["version"]: c for c in history["changesets"]}
        for answer, _ in answered:
            assert by_version[answer["version"]] == as_event(answer)
        # The state holds every shape of every stored set, none partially.
        shapes = objects_of(state)[state["rootUUID"]]["properties"]["shapes"]
        stored = [f["uuid"] for c in history["changesets"] for f in c["fragments"]
                  if f["type"] == "add"]
        assert shapes == stored
        assert len(shapes) == SHAPES_PER_SET * len(versions)
        for _, uuids in answered:
            assert set(uuids) <= set(shapes)
        for uuids in in_flight:
            assert set(uuids) <= set(shapes) or not set(uuids) & set(shapes)
        # A subscriber that saw the creation resumes with exactly the stored sets.
        resume = created[name]
        with SSEStream(server.url, f"/v1/scopes/{name}/events",
                       {"Last-Event-ID": str(resume)}) as stream:
            events = stream.take(state["version"] - resume, timeout=60)
        assert [e.json() for e in events] == [c for c in history["changesets"]
                                              if c["version"] > resume]
    api.close()
