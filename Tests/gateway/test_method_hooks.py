"""Methods served over HTTP (`--method NAME=URL`, docs/methods.md): a small service in Python, on
loopback, answers the gateway's calls. The contract's answers (200 with method and result, a
refusal, a failing, garbled or slow service, an unknown method), a keyed replay that does not call
the service again, the optimistic retry when the scope moved while the service thought (both
writes kept), a scope that never stops moving (503), writes to the scope going on while the
service holds a call, and the per-method metrics. Nothing is applied on any failure."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from gateway_helpers import Api, add, assert_problem, change, new_uuid, objects_of

WAIT = 30


class Service:
    """The method service: one handler per path, every call recorded."""

    def __init__(self):
        self.calls: dict[str, list[dict]] = {}
        self.lock = threading.Lock()
        self.hold = threading.Event()       # /held waits for it on its first call
        self.holding = threading.Event()    # set when /held's first call arrived
        self.gateway_url = ""
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                path = self.path.strip("/")
                with service.lock:
                    service.calls.setdefault(path, []).append(body)
                    count = len(service.calls[path])
                status, answer = service.answer(path, body, count)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def spread(body: dict, x: float) -> list[dict]:
        state = body["state"]
        objects = objects_of(state)
        root = state["rootUUID"]
        return [change(uuid, "Shape", x=x + index) for index, uuid in
                enumerate(objects[root]["properties"]["shapes"])]

    def answer(self, path: str, body: dict, count: int):
        if path == "spread":
            return 200, {"fragments": self.spread(body, body["args"]["x"]), "result": {"version": body["version"]}}
        if path == "refuse":
            return 200, {"reject": "not today"}
        if path == "broken":
            return 500, {"error": "boom"}
        if path == "garbled":
            return 200, b"<html>"
        if path == "bad-fragment":
            return 200, {"fragments": [{"type": "change", "uuid": "nope"}]}
        if path == "slow":
            threading.Event().wait(3)  # past the gateway's 1 s --method-timeout
            return 200, {"fragments": []}
        if path == "held":
            if count == 1:
                self.holding.set()
                self.hold.wait(WAIT)
            return 200, {"fragments": self.spread(body, 500), "result": {"call": count}}
        if path == "restless":
            # Moves the scope itself before answering: the answer is always planned on an old state.
            name = body["scope"]
            root = body["state"]["rootUUID"]
            uuid = new_uuid()
            httpx.post(f"{self.gateway_url}/v1/scopes/{name}/changesets", timeout=WAIT, json={"fragments": [
                add(uuid, "Shape", x=1, y=1), change(root, "Canvas", shapes={"insert": [uuid], "before": None})]})
            return 200, {"fragments": self.spread(body, 900)}
        return 404, {"error": "no such path"}

    def count(self, path: str) -> int:
        with self.lock:
            return len(self.calls.get(path, []))

    def close(self):
        self.hold.set()
        self.server.shutdown()


@pytest.fixture
def service():
    running = Service()
    yield running
    running.close()


@pytest.fixture
def hooked(start_server, service):
    names = ["spread", "refuse", "broken", "garbled", "bad-fragment", "slow", "held", "restless"]
    args = []
    for name in names:
        args += ["--method", f"{name}={service.url}/{name}"]
    server = start_server(*args, "--method-timeout", "1")
    service.gateway_url = server.url
    api = Api(server.url)
    yield server, api
    api.close()


def call(api: Api, name: str, method: str, args=None, headers=None) -> httpx.Response:
    return api.http.post(f"/v1/scopes/{name}/methods/{method}", json={"args": args}, headers=headers)


def xs(api: Api, name: str) -> list[float]:
    state = api.state(name)
    objects = objects_of(state)
    return [objects[uuid]["properties"]["x"] for uuid in objects[state["rootUUID"]]["properties"]["shapes"]]


def test_a_service_answers_and_its_fragments_are_one_change_set(hooked, service):
    server, api = hooked
    name, _ = api.create_canvas()
    api.add_shapes(name, 3)
    answer = call(api, name, "spread", {"x": 10}, headers={"Idempotency-Key": "spread-1"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["method"] == "spread" and body["result"] == {"version": 1} and body["version"] == 2
    assert xs(api, name) == [10, 11, 12]
    sent = service.calls["spread"][0]
    assert sent["scope"] == name and sent["version"] == 1 and sent["args"] == {"x": 10}
    assert sent["subject"] is None and sent["claims"] is None and sent["state"]["version"] == 1
    assert api.history(name, 1).json()["changesets"][0]["method"] == "spread"

    # A keyed retry is answered from its key: the service is not called again.
    replay = call(api, name, "spread", {"x": 10}, headers={"Idempotency-Key": "spread-1"})
    assert replay.headers.get("idempotent-replayed") == "true" and replay.json() == body
    assert service.count("spread") == 1

    metrics = httpx.get(server.url + "/metrics").text
    assert 'jetstream_method_calls_total{method="spread",outcome="applied"} 1' in metrics
    assert 'jetstream_method_calls_total{method="spread",outcome="replayed"} 1' in metrics
    assert 'jetstream_method_duration_seconds_count{method="spread"} 2' in metrics


@pytest.mark.parametrize("method,status,kind", [
    ("refuse", 422, "method-rejected"), ("broken", 502, "method-failed"), ("garbled", 502, "method-failed"),
    ("bad-fragment", 502, "method-failed"), ("slow", 504, "method-timeout"), ("absent", 404, "unknown-method"),
])
def test_every_failure_applies_nothing(hooked, method, status, kind):
    server, api = hooked
    name, _ = api.create_canvas()
    api.add_shapes(name, 2, x=5)
    problem = assert_problem(call(api, name, method, {"x": 1}), status, kind)
    if method == "refuse":
        assert problem["reason"] == "not today"
    if method != "absent":
        assert problem["method"] == method
    assert api.state(name)["version"] == 1 and xs(api, name) == [5, 5]
    if kind in ("method-rejected", "method-failed", "method-timeout"):
        metrics = httpx.get(server.url + "/metrics").text
        outcome = {"method-rejected": "rejected", "method-failed": "failed", "method-timeout": "timeout"}[kind]
        assert f'jetstream_method_calls_total{{method="{method}",outcome="{outcome}"}}' in metrics


def test_writes_go_on_while_the_service_thinks_and_the_method_is_planned_again_on_the_newer_state(hooked, service):
    _, api = hooked
    name, _ = api.create_canvas()
    api.add_shapes(name, 2)
    outcome: dict = {}
    caller = threading.Thread(target=lambda: outcome.update(answer=call(api, name, "held")))
    caller.start()
    assert service.holding.wait(WAIT), "the service never got the call"
    # The service holds the call: the scope's writes are not blocked meanwhile.
    for _ in range(3):
        api.add_shapes(name, 1, x=7)
    assert caller.is_alive(), "the method answered while its service was still holding it"
    service.hold.set()
    caller.join(WAIT)
    answer = outcome["answer"]
    assert answer.status_code == 200, answer.text
    # Its first answer was planned on version 1; the scope was at 4: it was called again, on 4.
    assert service.count("held") == 2
    assert [body["version"] for body in service.calls["held"]] == [1, 4]
    assert answer.json()["version"] == 5 and answer.json()["result"] == {"call": 2}
    assert xs(api, name) == [500, 501, 502, 503, 504], "both the writers' shapes and the method's write"


def test_a_scope_that_moves_on_every_attempt_gets_503_and_nothing_of_the_method(hooked, service):
    _, api = hooked
    name, _ = api.create_canvas()
    api.add_shapes(name, 1, x=3)
    response = call(api, name, "restless")
    problem = assert_problem(response, 503, "server-busy")
    assert response.headers.get("retry-after") == "1" and problem["method"] == "restless"
    assert service.count("restless") == 5
    assert 900 not in xs(api, name) and len(xs(api, name)) == 6, "five shapes of the service, none moved to 900"


def test_bad_method_flags_are_refused(jetstream_bin, tmp_path):
    import subprocess
    for argument, message in [("spread", "NAME=URL"), ("spread=ftp://x", "not an http"),
                              ("a/b=http://127.0.0.1:1", "not a method name")]:
        done = subprocess.run([str(jetstream_bin), "serve", "--data-dir", str(tmp_path), "--method", argument],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and message in done.stderr, done.stderr[-500:]
