#!/usr/bin/env python3
"""Contract check of the HTTP subset `jetstream bench` uses, run against a base URL.

    python3 Benchmarks/reference-hummingbird/smoke.py http://127.0.0.1:8090

It passes against both the gateway (`jetstream serve`) and the Hummingbird reference
(`jetstream-reference`), which is what makes the side-by-side benchmark a like-for-like one:
create a scope, read its state and ETag, post valid change sets (200, version + 1) and invalid
ones (422 / 400 / 404, nothing applied), and read the SSE stream: snapshot, live change sets,
resumption with Last-Event-ID (exactly the later change sets), reset for an unknown resume point.

With --light it checks the reference's light mode (`jetstream-reference --light`): the same, less the
three rejections that mode does not check (an add nothing references, a second add of an existing
object, a reference to a missing object); they are skipped, not sent, since that mode applies them.

Standard library only; loopback or any URL given; every socket has a timeout, so a run is
bounded (about --timeout seconds per wait). Exit status 0 when every check passed, 1 otherwise.
"""

import argparse
import http.client
import json
import socket
import sys
import urllib.parse
import uuid

FAILURES = []


def check(condition, what, detail=""):
    """Records one check; prints it either way."""
    if condition:
        print(f"  ok    {what}")
    else:
        FAILURES.append(what)
        print(f"  FAIL  {what}{': ' + str(detail) if detail else ''}")
    return condition


class Client:
    """Keep-alive JSON requests over one http.client connection."""

    def __init__(self, base, timeout):
        parsed = urllib.parse.urlsplit(base)
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.timeout = timeout
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=None):
        """Returns (status, headers as a lowercase dict, parsed JSON body or None, raw bytes)."""
        headers = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            headers.setdefault("Content-Type", "application/json")
        try:
            self.connection.request(method, path, body=data, headers=headers)
            response = self.connection.getresponse()
        except (http.client.HTTPException, OSError):
            # The server may close a keep-alive connection after an error; retry once on a new one.
            self.connection.close()
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.connection.request(method, path, body=data, headers=headers)
            response = self.connection.getresponse()
        payload = response.read()
        response_headers = {name.lower(): value for name, value in response.getheaders()}
        parsed = None
        if payload:
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = None
        return response.status, response_headers, parsed, payload


class EventStream:
    """A minimal SSE client on a raw socket: parses the response head, undoes chunked framing and
    splits events at blank lines, whatever the read boundaries."""

    def __init__(self, base, path, timeout, last_event_id=None):
        parsed = urllib.parse.urlsplit(base)
        self.socket = socket.create_connection((parsed.hostname, parsed.port or 80), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", f"Host: {parsed.hostname}:{parsed.port or 80}", "Accept: text/event-stream"]
        if last_event_id is not None:
            lines.append(f"Last-Event-ID: {last_event_id}")
        self.socket.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.raw = b""
        self.body = b""
        self.chunked = False
        self.events = []
        head = self._read_until(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self.length = int(self.headers["content-length"]) if "content-length" in self.headers else None

    def _receive(self):
        data = self.socket.recv(65536)
        if not data:
            raise EOFError("the server closed the stream")
        self.raw += data

    def _read_until(self, marker):
        while marker not in self.raw:
            self._receive()
        head, _, self.raw = self.raw.partition(marker)
        return head

    def _decode_body(self):
        """Moves complete chunks (or plain bytes) from raw to body."""
        if not self.chunked:
            self.body += self.raw
            self.raw = b""
            return
        while True:
            line_end = self.raw.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self.raw[:line_end].split(b";")[0], 16)
            if size == 0:
                raise EOFError("the server ended the stream")
            if len(self.raw) < line_end + 2 + size + 2:
                return
            self.body += self.raw[line_end + 2 : line_end + 2 + size]
            self.raw = self.raw[line_end + 2 + size + 2 :]

    def read_body(self):
        """The whole body of a non-stream answer (an error)."""
        while self.length is not None and len(self.raw) < self.length:
            self._receive()
        return self.raw

    def next_event(self):
        """The next event as a dict of its fields (comments skipped), e.g. {"event","id","data"}."""
        while True:
            self._decode_body()
            normalised = self.body.replace(b"\r\n", b"\n")
            if b"\n\n" in normalised:
                block, _, rest = normalised.partition(b"\n\n")
                self.body = rest
                fields = {}
                for line in block.decode().split("\n"):
                    if not line or line.startswith(":"):
                        continue
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    fields[name] = fields[name] + "\n" + value if name in fields else value
                if fields:
                    return fields
                continue
            self._receive()

    def close(self):
        self.socket.close()


def change_root_name(root, name):
    return {"fragments": [{"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"name": name}}]}


def run(base, timeout, light=False):
    client = Client(base, timeout)
    scope = f"canvas-smoke-{uuid.uuid4().hex[:12]}"
    path = f"/v1/scopes/{scope}"
    print(f"smoke test against {base}, scope {scope}")

    status, _, _, _ = client.request("GET", "/healthz")
    check(status == 200, "GET /healthz is 200", status)

    # Create.
    status, headers, body, raw = client.request("PUT", path, {"root": {"clsName": "Canvas"}})
    check(status == 201, "PUT creates the scope (201)", status)
    check(isinstance(body, dict) and body.get("version") == 0 and body.get("name") == scope,
          "the created state is at version 0", raw)
    status, headers, body, _ = client.request("PUT", path, {"root": {"clsName": "Canvas"}})
    check(status == 409, "PUT on an existing scope is 409", status)
    check(headers.get("content-type", "").startswith("application/problem+json"), "the 409 is problem+json", headers)

    # State.
    status, headers, state, raw = client.request("GET", path)
    check(status == 200, "GET state is 200", status)
    check(headers.get("etag") == '"0"', 'GET state has ETag "0"', headers.get("etag"))
    root = state["rootUUID"] if isinstance(state, dict) else None
    check(isinstance(state, dict) and set(state) >= {"name", "version", "rootUUID", "fragments"},
          "the state has name, version, rootUUID, fragments", raw)
    check(any(f.get("uuid") == root and f.get("clsName") == "Canvas" for f in (state or {}).get("fragments", [])),
          "the state lists the root Canvas", raw)
    status, headers, _, _ = client.request("GET", path, headers={"If-None-Match": '"0"'})
    check(status == 304, "GET with a matching If-None-Match is 304", status)
    status, _, _, _ = client.request("GET", "/v1/scopes/canvas-smoke-missing")
    check(status == 404, "GET of an unknown scope is 404", status)

    # A snapshot stream, open before any change set.
    live = EventStream(base, path + "/events", timeout)
    check(live.status == 200, "GET events is 200", live.status)
    check(live.headers.get("content-type", "").startswith("text/event-stream"), "events are text/event-stream",
          live.headers.get("content-type"))
    check(live.headers.get("cache-control") == "no-cache", "events have Cache-Control: no-cache")
    check(live.headers.get("x-accel-buffering") == "no", "events have X-Accel-Buffering: no")
    first = live.next_event()
    check(first.get("retry") == "2000", "the stream starts with retry: 2000", first)
    snapshot = live.next_event()
    check(snapshot.get("event") == "snapshot" and snapshot.get("id") == "0", "then event: snapshot, id: 0", snapshot)
    check(json.loads(snapshot.get("data", "{}")).get("rootUUID") == root, "the snapshot carries the state", snapshot)

    # Valid change sets.
    status, headers, body, raw = client.request("POST", path + "/changesets", change_root_name(root, "one"))
    check(status == 200, "a valid change set is 200", (status, raw))
    check(isinstance(body, dict) and body.get("version") == 1, "it moves the version to 1", raw)
    check(headers.get("etag") == '"1"', 'its answer has ETag "1"', headers.get("etag"))
    check(isinstance(body, dict) and body.get("fragmentReplies") == [{}] and len(body.get("fragments", [])) == 1
          and body.get("removed") == [], "it answers fragmentReplies [{}], the fragments and removed []", raw)

    shape = str(uuid.uuid4())
    add_shape = {"fragments": [
        {"type": "add", "uuid": shape, "clsName": "Shape", "properties": {"x": 10, "y": 20, "label": "s"}},
        {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"shapes": [shape]}},
    ]}
    status, _, body, raw = client.request("POST", path + "/changesets", add_shape)
    check(status == 200 and isinstance(body, dict) and body.get("version") == 2,
          "adding a Shape to the root's shapes is 200, version 2", (status, raw))

    # Invalid change sets: nothing applied.
    mixed = {"fragments": [
        {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"name": "never"}},
        {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"name": 5}},
    ]}
    status, headers, body, raw = client.request("POST", path + "/changesets", mixed)
    check(status == 422, "a change set with a type mismatch is 422", (status, raw))
    check(headers.get("content-type", "").startswith("application/problem+json"), "the 422 is problem+json")
    replies = body.get("fragmentReplies") if isinstance(body, dict) else None
    check(isinstance(replies, list) and len(replies) == 2 and replies[0] == {}
          and replies[1].get("error", {}).get("type") == "type-mismatch",
          "its fragmentReplies are [{}, {error: type-mismatch}]", raw)
    cases = [  # (what, body, rejected by the light mode too)
        ("an unknown property", {"fragments": [
            {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"colour": "red"}}]}, True),
        ("a change of an unknown object", {"fragments": [
            {"type": "change", "uuid": str(uuid.uuid4()), "clsName": "Shape", "properties": {"x": 1}}]}, True),
        ("an add nothing references", {"fragments": [
            {"type": "add", "uuid": str(uuid.uuid4()), "clsName": "Shape", "properties": {"x": 1, "y": 1}}]}, False),
        ("a second add of an existing object", {"fragments": [
            {"type": "add", "uuid": shape, "clsName": "Shape", "properties": {"x": 1, "y": 1}}]}, False),
        ("an unknown class", {"fragments": [
            {"type": "add", "uuid": str(uuid.uuid4()), "clsName": "Nope", "properties": {}}]}, True),
        ("a malformed fragment", {"fragments": [{"type": "zzz"}]}, True),
        ("a UUID that is not one", {"fragments": [
            {"type": "change", "uuid": "not-a-uuid", "clsName": "Canvas", "properties": {}}]}, True),
        ("a reference to a missing object", {"fragments": [
            {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"shapes": [str(uuid.uuid4())]}}]},
         False),
        ("an empty fragments array", {"fragments": []}, True),
        ("null for a property that is not nullable", {"fragments": [
            {"type": "change", "uuid": shape, "clsName": "Shape", "properties": {"x": None}}]}, True),
        ("a number among the shapes", {"fragments": [
            {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"shapes": [shape, 5]}}]}, True),
    ]
    for what, payload, checked_by_light in cases:
        if light and not checked_by_light:
            print(f"  skip  {what} (not checked by the light mode)")
            continue
        status, _, _, raw = client.request("POST", path + "/changesets", payload)
        check(status == 422, f"{what} is 422", (status, raw))
    status, _, _, _ = client.request("POST", path + "/changesets", raw=b"{not json")
    check(status == 400, "malformed JSON is 400", status)
    status, _, _, _ = client.request("POST", path + "/changesets", {"frags": []})
    check(status == 400, "a body without a fragments array is 400", status)
    status, _, _, _ = client.request("POST", "/v1/scopes/canvas-smoke-missing/changesets",
                                     change_root_name(root, "x"))
    check(status == 404, "a change set for an unknown scope is 404", status)
    status, headers, state, raw = client.request("GET", path)
    canvas = next((f for f in (state or {}).get("fragments", []) if f.get("uuid") == root), {})
    check(isinstance(state, dict) and state.get("version") == 2 and headers.get("etag") == '"2"'
          and canvas.get("properties", {}).get("name") == "one",
          "after the rejected sets the state is unchanged (version 2, name 'one')", raw)
    check(len(state.get("fragments", [])) == 2 and any(f.get("uuid") == shape for f in state["fragments"]),
          "the state lists the root and the added Shape", raw)

    # Live delivery, in order.
    one, two = live.next_event(), live.next_event()
    check(one.get("event") == "changeset" and one.get("id") == "1" and json.loads(one["data"]).get("version") == 1,
          "the open stream gets changeset 1", one)
    check(two.get("event") == "changeset" and two.get("id") == "2" and json.loads(two["data"]).get("version") == 2,
          "then changeset 2", two)
    # At least these keys: the gateway adds its own (`at`, `subject`), which clients ignore.
    check(set(json.loads(two["data"])) >= {"version", "fragments", "removed"},
          "a changeset's data has version, fragments, removed", two)

    # Resumption: exactly the change sets after the resume point, then live ones.
    resumed = EventStream(base, path + "/events", timeout, last_event_id="1")
    check(resumed.next_event().get("retry") == "2000", "a resumed stream starts with retry: 2000")
    catch_up = resumed.next_event()
    check(catch_up.get("event") == "changeset" and catch_up.get("id") == "2",
          "Last-Event-ID: 1 gets changeset 2 and no snapshot", catch_up)
    current = EventStream(base, path + "/events?lastEventId=2", timeout)
    check(current.next_event().get("retry") == "2000", "?lastEventId= at the current version starts with retry")

    status, _, body, raw = client.request("POST", path + "/changesets", {"fragments": [
        {"type": "change", "uuid": root, "clsName": "Canvas", "properties": {"shapes": []}}]})
    check(status == 200 and isinstance(body, dict) and body.get("removed") == [shape],
          "detaching the Shape is 200 and lists it in removed", (status, raw))
    for name, stream in (("the snapshot stream", live), ("the Last-Event-ID stream", resumed),
                         ("the ?lastEventId= stream", current)):
        event = stream.next_event()
        data = json.loads(event.get("data", "{}"))
        check(event.get("event") == "changeset" and event.get("id") == "3" and data.get("removed") == [shape],
              f"{name} gets changeset 3 next, with the removal", event)
    status, _, _, _ = client.request("POST", path + "/changesets", change_root_name(root, "four"))
    for name, stream in (("the snapshot stream", live), ("the Last-Event-ID stream", resumed),
                         ("the ?lastEventId= stream", current)):
        event = stream.next_event()
        check(event.get("event") == "changeset" and event.get("id") == "4", f"{name} gets changeset 4 next", event)
    for stream in (live, resumed, current):
        stream.close()

    # Resume points the scope cannot serve: a reset carrying the state.
    for resume in ("999", "not-a-version"):
        stream = EventStream(base, path + "/events", timeout, last_event_id=resume)
        stream.next_event()
        event = stream.next_event()
        data = json.loads(event.get("data", "{}"))
        check(event.get("event") == "reset" and event.get("id") == "4" and data.get("version") == 4
              and data.get("rootUUID") == root, f"Last-Event-ID: {resume} gets event: reset with the state", event)
        stream.close()
    missing = EventStream(base, "/v1/scopes/canvas-smoke-missing/events", timeout)
    check(missing.status == 404, "events of an unknown scope are 404", missing.status)
    missing.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8090", help="base URL of the server")
    parser.add_argument("--timeout", type=float, default=10, help="seconds to wait for any one answer or event")
    parser.add_argument("--light", action="store_true",
                        help="the server is `jetstream-reference --light`: skip the rejections it does not check")
    arguments = parser.parse_args()
    try:
        run(arguments.url.rstrip("/"), arguments.timeout, arguments.light)
    except (OSError, EOFError, ValueError, KeyError, TypeError) as error:
        FAILURES.append(f"aborted: {error!r}")
        print(f"  FAIL  aborted: {error!r}")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
