"""Helpers shared by the gateway suites: names, fragments and problem+json assertions."""
from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid as uuidlib

import httpx
import pytest

ETAG = re.compile(r'^"([0-9]+)"$')
LOWER_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SHAPE_DEFAULTS = {"width": 100, "height": 100, "color": None, "label": "", "kind": "rect"}
MERGE_PATCH = "application/merge-patch+json"
# A change set's `at`: server time, RFC 3339 UTC with milliseconds.
CHANGESET_AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def as_event(answer: dict) -> dict:
    """The `changeset` event (and history entry) an accepted change set's answer promises:
    the answer without its `fragmentReplies`, every other member (`at`, `subject`, …) equal."""
    assert CHANGESET_AT.match(answer["at"]) and "subject" in answer, answer
    return {key: value for key, value in answer.items() if key != "fragmentReplies"}


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def scope_name(prefix: str = "canvas") -> str:
    """A scope name no other test uses (the demo schema's rule is `canvas-*`)."""
    return f"{prefix}-{uuidlib.uuid4().hex[:12]}"


def etag_version(response: httpx.Response) -> int:
    etag = response.headers.get("etag")
    assert etag is not None, f"no ETag on {response.request.method} {response.request.url}"
    match = ETAG.match(etag)
    assert match, f"ETag {etag!r} is not a quoted version"
    return int(match.group(1))


def assert_problem(response: httpx.Response, status: int, kind: str | None = None) -> dict:
    """An RFC 9457 problem with the given status and `type` `/problems/<kind>`."""
    assert response.status_code == status, (
        f"{response.request.method} {response.request.url}: expected {status}, got "
        f"{response.status_code}: {response.text[:500]}")
    content_type = response.headers.get("content-type", "")
    assert content_type.split(";")[0].strip() == "application/problem+json", (
        f"problem with Content-Type {content_type!r}: {response.text[:300]}")
    body = response.json()
    assert isinstance(body, dict), body
    if kind is not None:
        assert body.get("type") == f"/problems/{kind}", f"expected /problems/{kind}: {body}"
    assert isinstance(body.get("type"), str) and body["type"], body
    assert isinstance(body.get("title"), str) and body["title"], body
    assert body.get("status") == status, body
    return body


def assert_rejected(response: httpx.Response, expected: list[str | None]) -> list[dict]:
    """A 422 invalid-change-set whose fragmentReplies carry exactly the expected error kinds,
    aligned with the fragments (`None` for a fragment that was fine)."""
    body = assert_problem(response, 422, "invalid-change-set")
    replies = body.get("fragmentReplies")
    assert isinstance(replies, list) and len(replies) == len(expected), body
    for index, (reply, kind) in enumerate(zip(replies, expected)):
        if kind is None:
            assert reply == {}, f"fragment {index} should be fine: {body}"
        else:
            error = reply.get("error")
            assert isinstance(error, dict), f"fragment {index} should fail with {kind}: {body}"
            assert error.get("type") == kind, f"fragment {index}: expected {kind}: {body}"
            assert isinstance(error.get("message"), str) and error["message"], body
    return replies


def add(uuid: str, cls: str, **properties) -> dict:
    return {"type": "add", "uuid": uuid, "clsName": cls, "properties": properties}


def change(uuid: str, cls: str, **properties) -> dict:
    return {"type": "change", "uuid": uuid, "clsName": cls, "properties": properties}


def objects_of(state: dict) -> dict[str, dict]:
    """uuid → {clsName, properties} from a state's fragments."""
    return {f["uuid"]: {"clsName": f["clsName"], "properties": f.get("properties", {})}
            for f in state["fragments"]}


def shapes_of(state: dict) -> list[str]:
    """The demo canvas root's `shapes`, in order."""
    return objects_of(state)[state["rootUUID"]]["properties"]["shapes"]


def canvas_with_shapes(api: "Api", count: int) -> tuple[str, str, list[str]]:
    """A new canvas scope with `count` shapes: (scope name, canvas uuid, shape uuids in order)."""
    name, state = api.create_canvas()
    shapes, _ = api.add_shapes(name, count=count)
    return name, state["rootUUID"], shapes


def run_threads(targets, timeout: float = 120.0) -> None:
    """Runs every target in its own thread, all within `timeout` seconds; re-raises failures."""
    errors: list[BaseException] = []

    def guard(target):
        def run():
            try:
                target()
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)
        return run

    threads = [threading.Thread(target=guard(t), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(timeout=max(0.1, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"a client did not finish within {timeout}s"
    assert not errors, errors


class Api:
    """A thin httpx wrapper naming the gateway's endpoints."""

    def __init__(self, base_url: str):
        self.http = httpx.Client(base_url=base_url, timeout=60.0)

    def close(self) -> None:
        self.http.close()

    def create(self, name: str, root: dict | None = None, **kwargs) -> httpx.Response:
        return self.http.put(f"/v1/scopes/{name}", json={"root": root or {"clsName": "Canvas"}},
                             **kwargs)

    def create_canvas(self, name: str | None = None, **properties) -> tuple[str, dict]:
        """Creates a Canvas scope and returns (name, state)."""
        name = name or scope_name()
        root: dict = {"clsName": "Canvas"}
        if properties:
            root["properties"] = properties
        response = self.create(name, root)
        assert response.status_code == 201, response.text
        return name, response.json()

    def state(self, name: str) -> dict:
        response = self.http.get(f"/v1/scopes/{name}")
        assert response.status_code == 200, response.text
        assert etag_version(response) == response.json()["version"]
        return response.json()

    def post(self, name: str, fragments, headers: dict | None = None) -> httpx.Response:
        return self.http.post(f"/v1/scopes/{name}/changesets", json={"fragments": fragments},
                              headers=headers)

    def post_raw(self, name: str, body: bytes, content_type: str | None = "application/json",
                 headers: dict | None = None) -> httpx.Response:
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        return self.http.post(f"/v1/scopes/{name}/changesets", content=body, headers=all_headers)

    def apply(self, name: str, fragments, headers: dict | None = None) -> dict:
        response = self.post(name, fragments, headers)
        assert response.status_code == 200, (
            f"change set rejected: {response.status_code} {response.text[:800]}")
        body = response.json()
        assert etag_version(response) == body["version"]
        return body

    def history(self, name: str, since: int, limit: int | None = None) -> httpx.Response:
        params = {"since": since}
        if limit is not None:
            params["limit"] = limit
        return self.http.get(f"/v1/scopes/{name}/changesets", params=params)

    def add_shapes(self, name: str, count: int = 1, **properties) -> tuple[list[str], dict]:
        """Appends `count` new shapes to the canvas of scope `name`; returns (uuids, answer)."""
        state = self.state(name)
        root = state["rootUUID"]
        shapes = list(objects_of(state)[root]["properties"]["shapes"])
        uuids = [new_uuid() for _ in range(count)]
        props = {"x": 1, "y": 2, **properties}
        fragments = [add(u, "Shape", **props) for u in uuids]
        fragments.append(change(root, "Canvas", shapes=shapes + uuids))
        return uuids, self.apply(name, fragments)

    def get_object(self, name: str, uuid: str, depth=None,
                   headers: dict | None = None) -> httpx.Response:
        """`GET /v1/scopes/{name}/objects/{uuid}`, with `?depth=` when given (any value, so that
        tests can send bad ones)."""
        params = {"depth": depth} if depth is not None else None
        return self.http.get(f"/v1/scopes/{name}/objects/{uuid}", params=params, headers=headers)

    def patch_object(self, name: str, uuid: str, patch, content_type: str | None = MERGE_PATCH,
                     headers: dict | None = None) -> httpx.Response:
        """`PATCH /v1/scopes/{name}/objects/{uuid}`: `patch` is JSON-encoded unless it is bytes."""
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        body = patch if isinstance(patch, bytes) else json.dumps(patch).encode()
        return self.http.patch(f"/v1/scopes/{name}/objects/{uuid}", content=body,
                               headers=all_headers)


def dumps(value) -> bytes:
    return json.dumps(value).encode()


def built_executable(jetstream_bin, product: str):
    """The executable `product` the same build made next to `jetstream` (a test fails, never
    skips, when it is missing)."""
    binary = jetstream_bin.parent / product
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: build it with `swift build --product {product}`")
    return binary


def apply_collection(old: list, value) -> list:
    """A collection property as a `change` fragment of an answer, event or history page carries
    it — the whole array, or one operations object against the value before the change set
    (docs/model.md, "Collection operations") — applied to `old`, as a client does."""
    if isinstance(value, list):
        return list(value)
    assert isinstance(value, dict) and set(value) <= {"remove", "insert", "before"}, value
    assert "remove" in value or "insert" in value, value
    insert = value.get("insert", [])
    before = value.get("before")
    # The server resolves operations against the value before: its anchor is there and stays.
    assert before is None or (before in old and before not in value.get("remove", [])), (before, value)
    # Removed values leave (every occurrence); an inserted value already present moves.
    kept = [v for v in old if v not in value.get("remove", []) and v not in insert]
    position = kept.index(before) if before is not None else len(kept)
    return kept[:position] + list(insert) + kept[position:]
