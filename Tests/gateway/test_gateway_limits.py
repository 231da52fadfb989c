"""Limits (body, fragments, objects, streams, request rate), trusted proxies, CORS and stream
rotation, against the real binary."""
from __future__ import annotations

import re
import subprocess

import httpx
import pytest

from gateway_helpers import Api, add, assert_problem, change, new_uuid, scope_name
from sse_stream import SSEStream


class _api:
    def __init__(self, server):
        self.api = Api(server.url)

    def __enter__(self):
        return self.api

    def __exit__(self, *exc):
        self.api.close()


def retry_after(response: httpx.Response) -> int:
    value = response.headers["retry-after"]
    assert re.fullmatch(r"[1-9][0-9]*", value), value
    return int(value)


def test_body_fragments_and_objects_limits(start_server):
    server = start_server("--max-body-bytes", "2000", "--max-fragments", "3", "--max-objects", "3")
    with _api(server) as api:
        name, state = api.create_canvas()
        root = state["rootUUID"]
        assert_problem(api.post_raw(name, b'{"fragments":[' + b" " * 3000 + b"]}"), 413)
        shapes = [new_uuid() for _ in range(3)]
        too_many = [add(u, "Shape", x=1, y=1) for u in shapes] + [change(root, "Canvas", shapes=shapes)]
        body = assert_problem(api.post(name, too_many), 413, "too-many-fragments")
        assert "4 fragments" in body["detail"]
        # Objects per scope stays the model's 422: the root and two shapes fill three.
        api.apply(name, [add(shapes[0], "Shape", x=1, y=1), add(shapes[1], "Shape", x=1, y=1),
                         change(root, "Canvas", shapes=shapes[:2])])
        rejected = api.post(name, [add(shapes[2], "Shape", x=1, y=1), change(root, "Canvas", shapes=shapes)])
        assert rejected.status_code == 422, rejected.text
        assert "limit-exceeded" in rejected.text


def test_rate_limit_answers_429_with_retry_after(start_server):
    # 0.2 requests a second: a spent bucket needs 5 s, far longer than the requests below take.
    server = start_server("--rate-limit", "0.2", "--rate-burst", "2")
    with _api(server) as api:
        assert api.http.get("/v1/scopes").status_code == 200
        assert api.http.get("/v1/scopes").status_code == 200
        limited = api.http.get("/v1/scopes")
        assert_problem(limited, 429, "rate-limited")
        assert retry_after(limited) >= 1
        # Probes are never limited.
        assert api.http.get("/healthz").status_code == 200


def test_trusted_proxy_separates_clients_and_logs_them(start_server):
    server = start_server("--rate-limit", "0.2", "--rate-burst", "1", "--trusted-proxy", "127.0.0.0/8")
    with _api(server) as api:
        a = {"X-Forwarded-For": "198.51.100.7, 203.0.113.1"}
        b = {"Forwarded": 'for="[2001:db8::1]:4711";proto=https'}
        assert api.http.get("/v1/scopes", headers=a).status_code == 200
        assert_problem(api.http.get("/v1/scopes", headers=a), 429, "rate-limited")
        assert api.http.get("/v1/scopes", headers=b).status_code == 200
        assert api.http.get("/v1/scopes", headers={"X-Forwarded-For": "203.0.113.2"}).status_code == 200
    log = server.log_path.read_text()
    assert "client=203.0.113.1" in log, log[-2000:]
    assert "client=2001:db8::1" in log


def test_untrusted_peer_cannot_spoof_its_address(start_server):
    server = start_server("--rate-limit", "0.2", "--rate-burst", "1")
    with _api(server) as api:
        assert api.http.get("/v1/scopes", headers={"X-Forwarded-For": "203.0.113.1"}).status_code == 200
        spoofed = api.http.get("/v1/scopes", headers={"X-Forwarded-For": "203.0.113.2"})
        assert_problem(spoofed, 429, "rate-limited")
    log = server.log_path.read_text()
    assert "client=127.0.0.1" in log and "client=203.0.113" not in log


def test_stream_limits_per_client_and_total(start_server):
    server = start_server("--max-streams-per-client", "2", "--max-streams", "3", "--trusted-proxy", "127.0.0.1")
    path = "/v1/scopes/demo/events"
    a, b = {"X-Forwarded-For": "203.0.113.1"}, {"X-Forwarded-For": "203.0.113.2"}
    streams = [SSEStream(server.url, path, a), SSEStream(server.url, path, a)]
    try:
        assert all(s.status == 200 for s in streams)
        with SSEStream(server.url, path, a) as third:
            assert third.status == 429 and b"too-many-streams" in third.body
            assert int(third.headers["retry-after"]) >= 1
        streams.append(SSEStream(server.url, path, b))
        assert streams[-1].status == 200
        with SSEStream(server.url, path, {"X-Forwarded-For": "203.0.113.3"}) as over_total:
            assert over_total.status == 429 and b"too-many-streams" in over_total.body
        # A closed stream frees its place.
        streams.pop(0).close()
        deadline_ok = False
        for _ in range(100):
            with SSEStream(server.url, path, a) as again:
                if again.status == 200:
                    deadline_ok = True
                    break
            import time
            time.sleep(0.1)
        assert deadline_ok
    finally:
        for stream in streams:
            stream.close()


def test_cors_with_credentials(start_server):
    server = start_server("--cors-origin", "https://app.example", "--cors-credentials")
    with _api(server) as api:
        preflight = api.http.options("/v1/scopes/demo/changesets", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization, if-match"})
        assert preflight.status_code == 204, preflight.text
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        assert preflight.headers["access-control-allow-credentials"] == "true"
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "Idempotency-Key" in preflight.headers["access-control-allow-headers"]
        assert int(preflight.headers["access-control-max-age"]) > 0
        assert "Origin" in preflight.headers.get_list("vary")
        refused = api.http.options("/v1/scopes/demo", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "DELETE"})
        assert_problem(refused, 403, "forbidden")
        assert "access-control-allow-origin" not in refused.headers
        bad_header = api.http.options("/v1/scopes/demo", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "x-secret"})
        assert_problem(bad_header, 403, "forbidden")

        actual = api.http.get("/v1/scopes/demo", headers={"Origin": "https://app.example"})
        assert actual.status_code == 200
        assert actual.headers["access-control-allow-origin"] == "https://app.example"
        assert actual.headers["access-control-allow-credentials"] == "true"
        assert "ETag" in actual.headers["access-control-expose-headers"]
        other = api.http.get("/v1/scopes/demo", headers={"Origin": "https://evil.example"})
        assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
    with SSEStream(server.url, "/v1/scopes/demo/events", {"Origin": "https://app.example"}) as stream:
        assert stream.headers["access-control-allow-origin"] == "https://app.example"


def test_cors_wildcard_never_with_credentials(start_server, jetstream_bin, tmp_path):
    server = start_server("--cors-origin", "*")
    with _api(server) as api:
        actual = api.http.get("/v1/scopes/demo", headers={"Origin": "https://anyone.example"})
        assert actual.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in actual.headers
    result = subprocess.run([str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(tmp_path / "x"),
                             "--cors-origin", "*", "--cors-credentials"], capture_output=True, timeout=120)
    assert result.returncode != 0
    assert b"cannot be combined with --cors-credentials" in result.stderr


def test_stream_rotation_resumes_exactly(start_server):
    server = start_server("--stream-max-age", "2")
    with _api(server) as api:
        name, state = api.create_canvas()
        root = state["rootUUID"]
        with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
            snapshot = stream.expect_event()
            assert snapshot.type == "snapshot"
            first = new_uuid()
            api.apply(name, [add(first, "Shape", x=1, y=1), change(root, "Canvas", shapes=[first])])
            events = stream.read_to_end(timeout=60)
        assert [e.type for e in events] == ["changeset", "closing"], [e.type for e in events]
        assert events[-1].json() == {"reason": "rotation"}
        last_id = events[0].id
        second = new_uuid()
        api.apply(name, [add(second, "Shape", x=2, y=2), change(root, "Canvas", shapes=[first, second])])
        with SSEStream(server.url, f"/v1/scopes/{name}/events", {"Last-Event-ID": last_id}) as resumed:
            event = resumed.expect_event()
            assert event.type == "changeset" and int(event.id) == int(last_id) + 1


def test_bad_tokens_are_rate_limited_by_address(start_server, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a-test-secret-of-more-than-32-bytes!!")
    server = start_server("--jwt-secret-file", str(secret), "--rate-limit", "0.2", "--rate-burst", "1")
    with _api(server) as api:
        guess = {"Authorization": "Bearer not.a.token"}
        assert_problem(api.http.get("/v1/scopes/demo", headers=guess), 401, "unauthorized")
        limited = api.http.get("/v1/scopes/demo", headers=guess)
        assert_problem(limited, 429, "rate-limited")
        assert retry_after(limited) >= 1
