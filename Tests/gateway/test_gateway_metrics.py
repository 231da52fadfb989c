"""GET /metrics: the Prometheus samples the gateway promises (docs/gateway.md, "Metrics")."""
from __future__ import annotations

import re

from gateway_helpers import Api, change, new_uuid
from sse_stream import SSEStream

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+)$')


def samples(api: Api) -> dict[str, float]:
    response = api.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    result = {}
    for line in response.text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample: {line!r}"
        result[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return result


def test_requests_are_counted_by_route_and_status(start_server):
    api = Api(start_server().url)
    name, _ = api.create_canvas()
    for _ in range(3):
        api.http.get(f"/v1/scopes/{name}")
    api.http.get("/v1/scopes/canvas-nope")
    metrics = samples(api)
    assert metrics['jetstream_http_requests_total{route="/v1/scopes/{name}",status="200"}'] == 3
    assert metrics['jetstream_http_requests_total{route="/v1/scopes/{name}",status="404"}'] == 1
    assert metrics['jetstream_http_requests_total{route="/v1/scopes/{name}",status="201"}'] == 1
    assert metrics['jetstream_http_request_duration_seconds_count{route="/v1/scopes/{name}"}'] == 5
    api.close()


def test_change_sets_are_counted_by_outcome_with_commit_and_fan_out_latency(start_server):
    api = Api(start_server().url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    key = {"Idempotency-Key": new_uuid()}
    api.apply(name, [change(root, "Canvas", name="a")], headers=key)
    api.apply(name, [change(root, "Canvas", name="a")], headers=key)   # replayed, not counted again
    api.apply(name, [change(root, "Canvas", name="b")])
    api.post(name, [change(root, "Canvas", name=3)])
    api.post(name, [change(root, "Canvas", name="c")], headers={"If-Match": '"999"'})
    metrics = samples(api)
    assert metrics['jetstream_changesets_total{result="accepted",type=""}'] == 2
    assert metrics['jetstream_changesets_total{result="rejected",type="invalid-change-set"}'] == 1
    assert metrics['jetstream_changesets_total{result="rejected",type="precondition-failed"}'] == 1
    assert metrics["jetstream_idempotent_replays_total"] == 1
    assert metrics["jetstream_commit_duration_seconds_count"] == 2
    assert metrics["jetstream_fanout_lag_seconds_count"] == 2
    assert metrics['jetstream_commit_duration_seconds_bucket{le="+Inf"}'] == 2
    api.close()


def test_open_event_streams_are_a_gauge(start_server):
    server = start_server()
    api = Api(server.url)
    assert samples(api)["jetstream_sse_streams_open"] == 0
    with SSEStream(server.url, "/v1/scopes/demo/events") as first, \
            SSEStream(server.url, "/v1/scopes/demo/events") as second:
        first.expect_event()
        second.expect_event()
        assert samples(api)["jetstream_sse_streams_open"] == 2
    api.close()


def test_a_dropped_slow_subscriber_is_counted(start_server):
    server = start_server("--max-pending-bytes", "65536")
    api = Api(server.url)
    name, state = api.create_canvas()
    assert samples(api)["jetstream_sse_slow_subscribers_dropped_total"] == 0
    stream = SSEStream(server.url, f"/v1/scopes/{name}/events", receive_buffer=4096)
    try:
        assert stream.expect_event().type == "snapshot"
        # The subscriber stops reading while ~9 MB are accepted (as in test_gateway_events.py).
        for n in range(300):
            api.apply(name, [change(state["rootUUID"], "Canvas", name=f"{n:04}" + "x" * 30_000)])
        stream.read_to_end(timeout=90)
        assert stream.eof
    finally:
        stream.close()
    assert samples(api)["jetstream_sse_slow_subscribers_dropped_total"] == 1
    api.close()
