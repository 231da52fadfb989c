"""Real nginx (Debian's nginx-light) with deploy/nginx/jetstream.conf in front of the gateway:
REST through the proxy, a live event stream that is not buffered, heartbeats, resume with
Last-Event-ID, and the drain's `closing` event reaching the client.

nginx runs unprivileged in the test's own prefix directory (pid file, logs, temp paths); the
site config is the deployed file with only its upstream address and listen port substituted
(`nginx_proxy.Nginx`)."""
from __future__ import annotations

import signal

import pytest

from gateway_helpers import Api, change
from nginx_proxy import Nginx
from sse_stream import SSEStream


@pytest.fixture
def proxied(start_server, tmp_path):
    server = start_server("--heartbeat-interval", "1", "--drain-delay", "1")
    nginx = Nginx(tmp_path / "nginx", server.port).start()
    yield server, nginx
    nginx.stop()


def test_the_deployed_site_config_passes_nginx_t(tmp_path):
    result = Nginx(tmp_path / "nginx-t", upstream_port=8080).check()
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr and "test is successful" in result.stderr


def test_rest_through_nginx(proxied):
    _, nginx = proxied
    api = Api(nginx.url)
    name, state = api.create_canvas()
    body = api.apply(name, [change(state["rootUUID"], "Canvas", name="proxied")])
    assert body["version"] == state["version"] + 1
    response = api.http.get(f"/v1/scopes/{name}")
    assert response.status_code == 200 and response.headers["etag"] == f'"{body["version"]}"'
    assert api.http.get("/metrics").status_code == 404, "/metrics must stay internal"
    api.close()


def test_a_live_stream_through_nginx_gets_each_event_while_open_and_heartbeats(proxied):
    _, nginx = proxied
    api = Api(nginx.url)
    name, state = api.create_canvas()
    with SSEStream(nginx.url, f"/v1/scopes/{name}/events") as stream:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.expect_event(timeout=30).type == "snapshot"
        # One at a time: each event must come through while the stream stays open, which a
        # buffering proxy would hold back (a few bytes never fill its buffer).
        for n in range(3):
            answer = api.apply(name, [change(state["rootUUID"], "Canvas", name=f"live {n}")])
            event = stream.expect_event(timeout=30)
            assert (event.type, int(event.id)) == ("changeset", answer["version"])
        # Heartbeats (every second here) pass the proxy too: two more after the events.
        stream.comments.clear()
        for _ in range(2):
            stream.wait_for_comment("keep-alive", timeout=30)
            stream.comments.clear()
    api.close()


def test_resume_with_last_event_id_through_nginx(proxied):
    _, nginx = proxied
    api = Api(nginx.url)
    name, state = api.create_canvas()
    answers = [api.apply(name, [change(state["rootUUID"], "Canvas", name=f"v{n}")]) for n in range(4)]
    with SSEStream(nginx.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": str(answers[0]["version"])}) as stream:
        events = stream.take(3, timeout=30)
    assert [(e.type, int(e.id)) for e in events] == [("changeset", a["version"]) for a in answers[1:]]
    assert [e.json()["fragments"] for e in events] == [a["fragments"] for a in answers[1:]]
    api.close()


def test_the_drain_closing_event_reaches_a_client_behind_nginx(proxied):
    server, nginx = proxied
    with SSEStream(nginx.url, "/v1/scopes/demo/events") as stream:
        assert stream.expect_event(timeout=30).type == "snapshot"
        server.process.send_signal(signal.SIGTERM)
        assert [e.type for e in stream.read_to_end(timeout=30)] == ["closing"]
    assert server.stop() == 0
