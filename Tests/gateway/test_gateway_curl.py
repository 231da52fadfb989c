"""What a person with curl sees: create, post, conditional GET, and a live event stream."""
from __future__ import annotations

import json
import selectors
import subprocess
import time

from gateway_helpers import new_uuid, scope_name


def curl(*args: str, data: str | None = None) -> tuple[int, dict[str, str], str]:
    """Runs curl -sS -i and returns (status, headers, body)."""
    command = ["curl", "-sS", "-i", "--max-time", "60", *args]
    if data is not None:
        command += ["--data-binary", data]
    result = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    head, _, body = result.stdout.replace("\r\n", "\n").partition("\n\n")
    lines = head.split("\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def test_curl_create_post_and_conditional_get(server):
    name, shape = scope_name(), new_uuid()
    url = f"{server.url}/v1/scopes/{name}"
    status, headers, body = curl("-X", "PUT", url, "-H", "Content-Type: application/json",
                                 data='{"root":{"clsName":"Canvas","properties":{"name":"c"}}}')
    assert status == 201, body
    state = json.loads(body)
    root = state["rootUUID"]
    assert headers["etag"] == f'"{state["version"]}"'

    fragments = [{"type": "add", "uuid": shape, "clsName": "Shape", "properties": {"x": 1, "y": 2}},
                 {"type": "change", "uuid": root, "clsName": "Canvas",
                  "properties": {"shapes": [shape]}}]
    status, headers, body = curl(f"{url}/changesets", "-H", "Content-Type: application/json",
                                 "-H", f'If-Match: "{state["version"]}"',
                                 data=json.dumps({"fragments": fragments}))
    assert status == 200, body
    version = json.loads(body)["version"]
    assert headers["etag"] == f'"{version}"'

    status, headers, body = curl(url, "-H", f'If-None-Match: "{version}"')
    assert (status, body) == (304, "")
    status, _, body = curl(f"{url}/changesets", "-H", "Content-Type: application/json",
                           "-H", f'If-Match: "{state["version"]}"',
                           data=json.dumps({"fragments": fragments}))
    assert status == 412
    assert json.loads(body)["version"] == version


def test_curl_default_form_post_is_415(server):
    name = scope_name()
    status, headers, body = curl("-X", "PUT", f"{server.url}/v1/scopes/{name}",
                                 data='{"root":{"clsName":"Canvas"}}')
    assert status == 415
    assert headers["content-type"].startswith("application/problem+json")
    assert json.loads(body)["type"] == "/problems/unsupported-media-type"


def test_curl_follows_a_live_event_stream(server, api):
    name, state = api.create_canvas()
    process = subprocess.Popen(["curl", "-sS", "-N", "--max-time", "120",
                                f"{server.url}/v1/scopes/{name}/events"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        output = b""

        def read_until(marker: bytes, timeout: float = 60) -> None:
            nonlocal output
            deadline = time.monotonic() + timeout
            while marker not in output:
                assert time.monotonic() < deadline, f"no {marker!r} in {output!r}"
                if selector.select(timeout=1):
                    chunk = process.stdout.read1(65536)
                    assert chunk, f"curl ended: {output!r}"
                    output += chunk

        read_until(f"id: {state['version']}\n".encode())
        assert b"event: snapshot\n" in output
        api.add_shapes(name)
        read_until(b"id: %d\n" % (state["version"] + 1))
        assert b"event: changeset\n" in output
    finally:
        process.kill()
        process.wait(timeout=30)


def test_curl_http2_prior_knowledge_reads_state_and_events(server, api):
    name, _ = api.create_canvas()
    api.add_shapes(name)
    state = api.state(name)
    result = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--max-time", "60",
                             "-w", "\\n%{http_version}", f"{server.url}/v1/scopes/{name}"],
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    body, _, version = result.stdout.rpartition("\n")
    assert version == "2"
    assert json.loads(body) == state
    # The event stream over h2: the snapshot arrives and the stream stays open.
    process = subprocess.Popen(["curl", "-sS", "-N", "--http2-prior-knowledge", "--max-time", "20",
                                f"{server.url}/v1/scopes/{name}/events"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        output = b""
        deadline = time.monotonic() + 60
        while b"\ndata: " not in output or not output.endswith(b"\n\n"):
            assert time.monotonic() < deadline, output
            chunk = process.stdout.read1(65536)
            assert chunk, f"curl ended: {output!r} {process.stderr.read()!r}"
            output += chunk
        assert b"event: snapshot\n" in output
        assert f"id: {state['version']}\n".encode() in output
    finally:
        process.kill()
        process.wait(timeout=30)


def test_curl_compressed_gets_gzip_json(server, api):
    name, _ = api.create_canvas()
    api.add_shapes(name, count=100, label="l" * 150)
    state = api.state(name)
    status, headers, body = curl("--compressed", f"{server.url}/v1/scopes/{name}")
    assert status == 200
    assert headers.get("content-encoding") == "gzip"
    assert json.loads(body) == state
