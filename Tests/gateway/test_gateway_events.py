"""The SSE stream: snapshot, live change sets, resume, reset, deleted, heartbeats, fan-out."""
from __future__ import annotations

import threading
import time

import pytest

from gateway_helpers import Api, add, as_event, assert_problem, change, new_uuid, scope_name
from sse_stream import SSEStream


def events_path(name: str, query: str = "") -> str:
    return f"/v1/scopes/{name}/events" + (f"?{query}" if query else "")


def test_stream_starts_with_retry_and_a_snapshot_of_the_state(api, server):
    name, _ = api.create_canvas()
    api.add_shapes(name, count=2)
    state = api.state(name)
    with SSEStream(server.url, events_path(name)) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].split(";")[0].strip() == "text/event-stream"
        assert stream.headers.get("cache-control") == "no-cache"
        assert stream.headers.get("x-accel-buffering") == "no"
        event = stream.expect_event()
        assert stream.retry_before_first_event and stream.retry > 0
        assert event.type == "snapshot"
        assert event.id == str(state["version"])
        assert event.json() == state
        assert "\n" not in event.data


def test_live_change_sets_follow_in_order_with_the_answered_content(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, events_path(name)) as stream:
        version = int(stream.expect_event().id)
        answers = [api.add_shapes(name)[1] for _ in range(3)]
        root = api.state(name)["rootUUID"]
        answers.append(api.apply(name, [change(root, "Canvas", shapes=[])]))
        events = stream.take(4)
    assert [(e.type, e.id) for e in events] == [
        ("changeset", str(version + i)) for i in range(1, 5)]
    assert [e.json() for e in events] == [as_event(a) for a in answers]
    assert len(events[3].json()["removed"]) == 3


@pytest.mark.parametrize("how", ["header", "query"])
def test_resume_from_a_retained_version_sends_exactly_the_missed_sets(api, server, how):
    name, _ = api.create_canvas()
    answers = [api.add_shapes(name)[1] for _ in range(4)]
    resume = answers[0]["version"]
    headers, query = ({"Last-Event-ID": str(resume)}, "") if how == "header" else (
        {}, f"lastEventId={resume}")
    with SSEStream(server.url, events_path(name, query), headers) as stream:
        missed = stream.take(3)
        assert [(e.type, e.id) for e in missed] == [
            ("changeset", str(a["version"])) for a in answers[1:]]
        assert [e.json() for e in missed] == [as_event(a) for a in answers[1:]]
        live = api.add_shapes(name)[1]
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(live["version"]))
        assert event.json() == as_event(live)
    assert all(e.type == "changeset" for e in stream.received)


def test_resume_at_the_current_version_sends_nothing_until_the_next_set(api, server):
    name, _ = api.create_canvas()
    current = api.add_shapes(name)[1]["version"]
    with SSEStream(server.url, events_path(name), {"Last-Event-ID": str(current)}) as stream:
        live = api.add_shapes(name)[1]
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(live["version"]))
        assert event.json() == as_event(live)


def test_the_header_wins_over_the_query_parameter(api, server):
    name, _ = api.create_canvas()
    answers = [api.add_shapes(name)[1] for _ in range(2)]
    with SSEStream(server.url, events_path(name, "lastEventId=garbage"),
                   {"Last-Event-ID": str(answers[0]["version"])}) as stream:
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answers[1]["version"]))


@pytest.mark.parametrize("resume", ["garbage", "-3", "1.5", "FUTURE"])
def test_unknown_or_future_resume_point_gets_a_reset_with_the_state(api, server, resume):
    name, _ = api.create_canvas()
    api.add_shapes(name)
    state = api.state(name)
    if resume == "FUTURE":
        resume = str(state["version"] + 100)
    with SSEStream(server.url, events_path(name), {"Last-Event-ID": resume}) as stream:
        event = stream.expect_event()
        assert event.type == "reset"
        assert event.id == str(state["version"])
        assert event.json() == state
        live = api.add_shapes(name)[1]
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(live["version"]))


def test_too_old_resume_point_gets_a_reset(start_server):
    import time
    server = start_server("--history-limit", "3", "--snapshot-interval", "2")
    api = Api(server.url)
    name, created = api.create_canvas()
    for _ in range(12):
        api.add_shapes(name)
    deadline = time.monotonic() + 60
    while api.history(name, created["version"]).status_code != 410:
        assert time.monotonic() < deadline, "history was never pruned"
        time.sleep(0.2)
    state = api.state(name)
    query = f"lastEventId={created['version']}"
    with SSEStream(server.url, events_path(name, query)) as stream:
        event = stream.expect_event()
        assert (event.type, event.id) == ("reset", str(state["version"]))
        assert event.json() == state
    api.close()


def test_an_id_from_before_a_delete_gets_a_reset_after_the_scope_is_recreated(api, server):
    name, _ = api.create_canvas()
    early = api.add_shapes(name)[1]["version"]
    api.add_shapes(name)
    assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
    _, state = api.create_canvas(name)
    with SSEStream(server.url, events_path(name), {"Last-Event-ID": str(early)}) as stream:
        event = stream.expect_event()
        assert (event.type, event.id) == ("reset", str(state["version"]))
        assert event.json() == state


def test_delete_ends_every_open_stream_with_a_deleted_event(api, server):
    name, _ = api.create_canvas()
    streams = [SSEStream(server.url, events_path(name)) for _ in range(3)]
    try:
        for stream in streams:
            assert stream.expect_event().type == "snapshot"
        assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
        for stream in streams:
            rest = stream.read_to_end()
            assert [e.type for e in rest] == ["deleted"]
            assert stream.eof
    finally:
        for stream in streams:
            stream.close()
    with SSEStream(server.url, events_path(name)) as stream:
        assert stream.status == 404


def test_events_of_an_unknown_scope_is_404(server):
    with SSEStream(server.url, events_path(scope_name())) as stream:
        assert stream.status == 404
        assert stream.headers["content-type"].startswith("application/problem+json")


def test_events_without_accepting_event_stream_is_406(api):
    name, _ = api.create_canvas()
    response = api.http.get(events_path(name), headers={"Accept": "application/json"})
    assert_problem(response, 406, "not-acceptable")


def test_heartbeats_are_keep_alive_comments(start_server):
    server = start_server("--heartbeat-interval", "1")
    with SSEStream(server.url, events_path("demo")) as stream:
        assert stream.expect_event().type == "snapshot"
        stream.wait_for_comment("keep-alive", timeout=30)
        stream.comments.clear()
        stream.wait_for_comment("keep-alive", timeout=30)
        assert stream.received[-1].type == "snapshot"


def test_every_subscriber_sees_every_set_once_in_order_with_concurrent_writers(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    streams = [SSEStream(server.url, events_path(name)) for _ in range(3)]
    writers, per_writer = 3, 8
    answers: list[dict] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            client = Api(server.url)
            for n in range(per_writer):
                # Each writer renames the canvas: concurrent sets never conflict.
                answer = client.apply(name, [change(root, "Canvas", name=f"w{index}-{n}")])
                with lock:
                    answers.append(answer)
            client.close()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    try:
        start = [int(s.expect_event().id) for s in streams]
        assert len(set(start)) == 1
        threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        total = writers * per_writer
        expected = {a["version"]: as_event(a) for a in answers}
        assert sorted(expected) == list(range(start[0] + 1, start[0] + total + 1))
        for stream in streams:
            events = stream.take(total, timeout=60)
            assert [int(e.id) for e in events] == sorted(expected)
            assert all(e.type == "changeset" for e in events)
            assert [e.json() for e in events] == [expected[int(e.id)] for e in events]
    finally:
        for stream in streams:
            stream.close()


def test_a_gzip_stream_delivers_each_event_as_it_happens(api, server):
    name, _ = api.create_canvas()
    with SSEStream(server.url, events_path(name), {"Accept-Encoding": "gzip"}) as stream:
        assert stream.expect_event().type == "snapshot"
        for _ in range(2):
            answer = api.add_shapes(name)[1]
            event = stream.expect_event()
            assert (event.type, event.json()) == ("changeset", as_event(answer))


def test_sigterm_ends_open_streams_cleanly_and_exits_0(start_server):
    server = start_server()
    stream = SSEStream(server.url, events_path("demo"))
    assert stream.expect_event().type == "snapshot"
    assert server.stop() == 0
    # The drain tells the stream to go (docs/gateway.md, "Readiness and drain"), then ends it.
    assert [event.type for event in stream.read_to_end(timeout=30)] == ["closing"]
    assert stream.eof
    stream.close()


def test_a_stream_resumes_across_a_restart_without_a_snapshot(start_server):
    server = start_server()
    api = Api(server.url)
    name, _ = api.create_canvas()
    with SSEStream(server.url, events_path(name)) as stream:
        stream.expect_event()
        last = api.add_shapes(name)[1]
        assert stream.expect_event().id == str(last["version"])
    api.close()
    server.restart()
    api = Api(server.url)
    after = [api.add_shapes(name)[1] for _ in range(2)]
    with SSEStream(server.url, events_path(name), {"Last-Event-ID": str(last["version"])}) as s:
        events = s.take(2)
        assert [(e.type, e.json()) for e in events] == [("changeset", as_event(a)) for a in after]
    api.close()


def test_shapes_added_and_removed_in_one_set_reach_subscribers_as_one_event(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    (old,), _ = api.add_shapes(name)
    with SSEStream(server.url, events_path(name)) as stream:
        stream.expect_event()
        new = new_uuid()
        answer = api.apply(name, [add(new, "Shape", x=1, y=1),
                                  change(root, "Canvas", shapes=[new])])
        event = stream.expect_event()
        assert event.json() == as_event(answer)
        assert event.json()["removed"] == [old]


def test_a_subscriber_that_does_not_read_is_dropped(start_server):
    server = start_server("--max-pending-bytes", "65536")
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    stream = SSEStream(server.url, events_path(name), receive_buffer=4096)
    try:
        assert stream.expect_event().type == "snapshot"
        # The subscriber stops reading while ~9 MB of change sets are accepted: far more than
        # socket buffers and the 64 KiB the server may hold for it.
        answers = [api.apply(name, [change(root, "Canvas", name=f"{n:04}" + "x" * 30_000)])
                   for n in range(300)]
        received = stream.read_to_end(timeout=90)
        assert stream.eof, "the slow subscriber was never disconnected"
    finally:
        stream.close()
        api.close()
    if received and received[-1].type == "error":
        problem = received.pop().json()
        assert problem["type"] == "/problems/slow-consumer", problem
    assert all(e.type == "changeset" for e in received)
    versions = [int(e.id) for e in received]
    assert versions == [a["version"] for a in answers[:len(versions)]]
    assert len(versions) < len(answers)


def slow_subscribers_dropped(api: Api) -> float:
    for line in api.http.get("/metrics").text.splitlines():
        if line.startswith("jetstream_sse_slow_subscribers_dropped_total "):
            return float(line.split()[1])
    raise AssertionError("no jetstream_sse_slow_subscribers_dropped_total sample")


def test_a_dropped_slow_subscriber_gets_an_error_event_and_resumes_exactly(start_server):
    server = start_server("--max-pending-bytes", "65536")
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    # A tiny receive buffer (set before connect) keeps the window small; the client then does
    # not read while 30 KB change sets are accepted, until the server reports the drop.
    stream = SSEStream(server.url, events_path(name), receive_buffer=4096)
    answers: list[dict] = []
    try:
        snapshot = stream.expect_event()
        assert snapshot.type == "snapshot"
        for n in range(400):
            answers.append(api.apply(name, [change(root, "Canvas", name=f"{n:04}" + "x" * 30_000)]))
            if slow_subscribers_dropped(api) >= 1:
                break
        else:
            pytest.fail("400 change sets of 30 KB never exceeded 64 KiB of unsent data")
        # Accepted after the drop: these reach the client only through the resume.
        answers += [api.apply(name, [change(root, "Canvas", name=f"late{n}")]) for n in range(3)]
        received = stream.read_to_end(timeout=60)
        assert stream.eof, "the stream did not end"
        # The connection is closed as well (the server shut down its side after the error).
        stream.sock.settimeout(30)
        assert stream.sock.recv(1) == b""
    finally:
        stream.close()
    assert received, "nothing after the snapshot, not even the error event"
    error = received.pop()
    assert error.type == "error", [(e.type, e.id) for e in received[-3:]] + [(error.type, error.id)]
    assert error.id is None  # Last-Event-ID stays the last change set received
    problem = error.json()
    assert problem["type"] == "/problems/slow-consumer"
    assert problem["title"] and "Last-Event-ID" in problem["detail"]
    assert all(e.type == "changeset" for e in received)
    versions = [int(e.id) for e in received]
    assert versions == [a["version"] for a in answers[:len(versions)]]
    missed = answers[len(versions):]
    assert len(missed) >= 3

    last_seen = versions[-1] if versions else int(snapshot.id)
    with SSEStream(server.url, events_path(name), {"Last-Event-ID": str(last_seen)}) as resumed:
        events = resumed.take(len(missed), timeout=60)
        assert [(e.type, e.id) for e in events] == [("changeset", str(a["version"])) for a in missed]
        assert [e.json() for e in events] == [as_event(a) for a in missed]
        # Exactly once: the next event is the next change set, not a repeat.
        following = api.apply(name, [change(root, "Canvas", name="after")])
        assert resumed.expect_event().id == str(following["version"])
    api.close()


def test_delete_while_writers_post_ends_streams_after_every_answered_set(api, server):
    name, state = api.create_canvas()
    root = state["rootUUID"]
    stream = SSEStream(server.url, events_path(name))
    answered: list[int] = []
    unexpected: list[str] = []
    lock = threading.Lock()

    def write(index: int) -> None:
        client = Api(server.url)
        try:
            for n in range(500):
                response = client.post(name, [change(root, "Canvas", name=f"w{index}-{n}")])
                if response.status_code == 404:
                    return
                if response.status_code != 200:
                    unexpected.append(f"{response.status_code} {response.text[:200]}")
                    return
                with lock:
                    answered.append(response.json()["version"])
        finally:
            client.close()

    try:
        start = int(stream.expect_event().id)
        threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(answered) < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
        for thread in threads:
            thread.join(timeout=60)
        assert not unexpected, unexpected
        events = stream.read_to_end(timeout=60)
    finally:
        stream.close()
    assert events[-1].type == "deleted"
    versions = [int(e.id) for e in events[:-1]]
    assert all(e.type == "changeset" for e in events[:-1])
    assert versions == list(range(start + 1, start + 1 + len(versions)))
    assert sorted(answered) == versions
    _, again = api.create_canvas(name)
    assert again["version"] > max(versions)


@pytest.mark.parametrize("accept", [None, "*/*", "text/*", "application/json, text/event-stream"])
def test_events_accept_any_accept_header_that_allows_event_streams(api, server, accept):
    name, state = api.create_canvas()
    with SSEStream(server.url, events_path(name), {"Accept": accept}) as stream:
        assert stream.status == 200
        assert stream.expect_event().type == "snapshot"


def test_a_resume_backlog_larger_than_the_pending_bound_is_delivered(start_server):
    """A reading client catches up on more history than the server may hold unsent for it."""
    server = start_server("--max-pending-bytes", "65536")
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    answers = [api.apply(name, [change(root, "Canvas", name=f"{n:04}" + "x" * 30_000)])
               for n in range(20)]
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(state["version"])}) as stream:
        events = stream.take(len(answers), timeout=90)
    assert [(e.type, int(e.id)) for e in events] == [("changeset", a["version"]) for a in answers]
    api.close()


def test_one_http2_connection_carries_a_stream_and_the_writes(api, server):
    """h2c with prior knowledge (the h2 library over a raw socket): the event stream and three
    POSTs share one connection; each answer and its event arrive, the event equal to the answer.
    (httpx is not used here: its HTTP/2 connection lets a blocked stream reader starve another
    request's reader until the next heartbeat.)"""
    import json
    import socket

    import h2.config
    import h2.connection
    import h2.events

    name, state = api.create_canvas()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    bodies: dict[int, bytes] = {}
    ended: set[int] = set()
    statuses: dict[int, str] = {}

    def head(method: str, path: str) -> list[tuple[str, str]]:
        return [(":method", method), (":path", path), (":scheme", "http"),
                (":authority", f"127.0.0.1:{server.port}")]

    def pump_until(condition) -> None:
        while not condition():
            data = sock.recv(65536)
            assert data, "the server closed the connection"
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    statuses[event.stream_id] = dict(event.headers)[b":status"].decode()
                elif isinstance(event, h2.events.DataReceived):
                    bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
                    connection.acknowledge_received_data(event.flow_controlled_length,
                                                         event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended.add(event.stream_id)
            sock.sendall(connection.data_to_send())

    def events_received() -> list[dict]:
        blocks = bodies.get(1, b"").decode().split("\n\n")
        return [json.loads(line[len("data: "):]) for block in blocks[:-1]
                for line in block.split("\n") if line.startswith("data: ")]

    try:
        connection.send_headers(1, head("GET", events_path(name)) + [
            ("accept", "text/event-stream")], end_stream=True)
        sock.sendall(connection.data_to_send())
        pump_until(lambda: len(events_received()) == 1)
        assert statuses[1] == "200"
        for n, stream_id in enumerate((3, 5, 7)):
            body = json.dumps({"fragments": [
                change(state["rootUUID"], "Canvas", name=f"h2-{n}")]}).encode()
            connection.send_headers(stream_id, head("POST", f"/v1/scopes/{name}/changesets") + [
                ("content-type", "application/json"), ("content-length", str(len(body)))])
            connection.send_data(stream_id, body, end_stream=True)
            sock.sendall(connection.data_to_send())
            pump_until(lambda: stream_id in ended and len(events_received()) == n + 2)
            assert statuses[stream_id] == "200"
            assert events_received()[-1] == as_event(json.loads(bodies[stream_id]))
        assert 1 not in ended
    finally:
        sock.close()
