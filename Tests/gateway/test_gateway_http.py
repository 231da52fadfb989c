"""HTTP details a client relies on: If-Match forms (RFC 9110), hostile JSON, methods, HEAD,
resume ids that overflow."""
from __future__ import annotations

import pytest

from gateway_helpers import assert_problem, assert_rejected, change, etag_version
from sse_stream import SSEStream


def current(api, name) -> int:
    return api.state(name)["version"]


def test_if_match_star_applies_to_an_existing_scope(api):
    name, state = api.create_canvas()
    body = api.apply(name, [change(state["rootUUID"], "Canvas", name="star")],
                     headers={"If-Match": "*"})
    assert body["version"] == state["version"] + 1


def test_if_match_list_applies_when_one_tag_is_current(api):
    name, state = api.create_canvas()
    body = api.apply(name, [change(state["rootUUID"], "Canvas", name="list")],
                     headers={"If-Match": f'"999999", "{state["version"]}"'})
    assert body["version"] == state["version"] + 1


def test_if_match_with_a_weak_tag_never_matches(api):
    # If-Match compares strongly (RFC 9110 §13.1.1).
    name, state = api.create_canvas()
    response = api.post(name, [change(state["rootUUID"], "Canvas", name="weak")],
                        headers={"If-Match": f'W/"{state["version"]}"'})
    assert assert_problem(response, 412, "precondition-failed")["version"] == state["version"]
    assert current(api, name) == state["version"]


def test_if_match_that_is_not_an_entity_tag_is_400(api):
    name, state = api.create_canvas()
    response = api.post(name, [change(state["rootUUID"], "Canvas", name="x")],
                        headers={"If-Match": "41"})
    assert_problem(response, 400, "bad-request")
    assert current(api, name) == state["version"]


def test_more_fragments_than_the_default_limit_is_413(api):
    name, state = api.create_canvas()
    fragments = [change(state["rootUUID"], "Canvas", name=str(i)) for i in range(1001)]
    body = assert_problem(api.post(name, fragments), 413, "too-many-fragments")
    assert "1001 fragments" in body["detail"] and "1000" in body["detail"]
    assert current(api, name) == state["version"]
    # Exactly the limit is accepted.
    assert api.post(name, fragments[:1000]).status_code == 200


@pytest.mark.parametrize("value", [b"[" * 100_000 + b"]" * 100_000, b'"\xff\xfe"', b'"\\ud800"'])
def test_hostile_json_is_400_and_the_server_stays_up(api, value):
    name, state = api.create_canvas()
    body = (b'{"fragments":[{"type":"change","uuid":"%s","clsName":"Canvas","properties":'
            b'{"name":%s}}]}' % (state["rootUUID"].encode(), value))
    assert_problem(api.post_raw(name, body), 400, "invalid-json")
    assert api.http.get("/healthz").status_code == 200
    assert current(api, name) == state["version"]


def test_a_number_too_large_for_any_type_is_rejected_not_crashing(api):
    name, state = api.create_canvas()
    body = (b'{"fragments":[{"type":"change","uuid":"%s","clsName":"Canvas","properties":'
            b'{"name":1e999999}}]}' % state["rootUUID"].encode())
    assert_rejected(api.post_raw(name, body), ["type-mismatch"])


def test_an_unsupported_method_is_405_with_allow(api):
    response = api.http.request("PATCH", "/v1/scopes/demo", json={})
    assert_problem(response, 405)
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert {"GET", "PUT", "DELETE"} <= allowed


def test_head_of_a_state_has_the_etag_and_no_body(api):
    name, state = api.create_canvas()
    response = api.http.head(f"/v1/scopes/{name}")
    assert response.status_code == 200
    assert etag_version(response) == state["version"]
    assert response.content == b""


def test_an_unknown_path_is_a_404_problem(api):
    assert_problem(api.http.get("/v2/scopes"), 404, "not-found")


def test_a_resume_id_beyond_64_bits_gets_a_reset(api, server):
    name, state = api.create_canvas()
    with SSEStream(server.url, f"/v1/scopes/{name}/events",
                   {"Last-Event-ID": "99999999999999999999999"}) as stream:
        event = stream.expect_event()
        assert (event.type, event.id) == ("reset", str(state["version"]))


def test_a_request_head_over_16_kib_is_431(api):
    response = api.http.get("/v1/scopes/demo", headers={"X-Filler": "f" * 20_000})
    assert_problem(response, 431)
    assert api.http.get("/healthz").status_code == 200


def test_a_client_that_never_finishes_its_head_is_cut_off(start_server):
    import socket
    import time
    server = start_server("--header-timeout", "1")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    try:
        sock.sendall(b"GET /v1/scopes/demo HTTP/1.1\r\nHost: x\r\n")  # no blank line, ever
        received, deadline = b"", time.monotonic() + 60
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        else:
            raise AssertionError("the connection stayed open")
    finally:
        sock.close()
    # Either a 408 problem or a plain close; never the state.
    assert received == b"" or received.startswith(b"HTTP/1.1 408"), received[:200]
