"""HTTP/1.1 conformance and robustness of the engine, over raw sockets.

The cases come from the Http11Probe (RFC 9110/9112 MUST/SHOULD) and uNetworking/h1spec checklists
(docs/testing.md, "HTTP/1.1 checklist"). Every case asserts the status AND what happens to the
connection: a rejected message leaves the framing of the stream unknown, so the server must close;
an accepted one must leave the connection usable (checked with a follow-up request).
`/echo` returns the request as the server parsed it, which is what the smuggling cases compare.
"""
from __future__ import annotations

import json
import time

import h11
import pytest

from conftest import MAX_BODY
from rawhttp import RawConnection, rejected, still_serves

HOST = b"Host: t\r\n"


def echo_post(headers: bytes, body: bytes) -> bytes:
    return b"POST /echo HTTP/1.1\r\n" + HOST + headers + b"\r\n" + body


def echoed(server, data: bytes) -> dict:
    """Sends `data`, expects a 200 from /echo, checks the connection is still usable, and returns
    the parsed request the server echoed."""
    with RawConnection(*server.address) as conn:
        response = conn.request(data)
        assert response.status == 200, f"{data[:120]!r}: got {response.status} {response.body[:200]!r}"
        assert not response.says_close
        assert still_serves(conn)
        return response.json()


# --------------------------------------------------------------------------------------------
# Request smuggling: Content-Length and Transfer-Encoding

CL_TE_VARIANTS = [
    b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    b"content-length: 5\r\ntransfer-encoding: chunked\r\n",
    b"Content-Length: 5\r\nTRANSFER-ENCODING: CHUNKED\r\n",
    b"Content-Length: 5\r\nTransfer-Encoding:  chunked  \r\n",
    b"Content-Length: 5\r\nTransfer-Encoding:\tchunked\r\n",
    b"Content-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n",
]


@pytest.mark.parametrize("headers", CL_TE_VARIANTS, ids=lambda h: h.decode().replace("\r\n", "|"))
def test_content_length_with_transfer_encoding_is_rejected_and_closed(server, headers):
    rejected(*server.address, echo_post(headers, b"0\r\n\r\n"))


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: 5, 6\r\n",
        b"Content-Length: 5\r\nContent-Length: 5\r\n",
        b"Content-Length: 5, 5\r\n",
    ],
    ids=["differing", "differing-list", "duplicate", "duplicate-list"],
)
def test_repeated_content_length_is_rejected(server, headers):
    rejected(*server.address, echo_post(headers, b"hello!"))


@pytest.mark.parametrize(
    "value",
    [b"-1", b"abc", b"5x", b"+5", b"0x5", b"5 5", b"", b"1.5", b"99999999999999999999999999"],
    ids=["negative", "alpha", "trailing-junk", "plus-sign", "hex", "inner-space", "empty", "decimal", "overflow"],
)
def test_malformed_content_length_is_rejected(server, value):
    rejected(*server.address, echo_post(b"Content-Length: " + value + b"\r\n", b"hello"))


@pytest.mark.parametrize(
    "coding",
    [b"gzip", b"chunked, gzip", b"identity", b"chunked, chunked", b"xchunked", b"chunked\x00"],
    ids=["gzip-only", "chunked-not-last", "identity", "chunked-twice", "xchunked", "nul"],
)
def test_unsupported_transfer_encoding_is_rejected(server, coding):
    # RFC 9112 §6.1: a request whose final coding is not chunked cannot be framed → 400;
    # a coding the server does not implement → 501. Either way the connection must close.
    rejected(*server.address, echo_post(b"Transfer-Encoding: " + coding + b"\r\n", b"0\r\n\r\n"), (400, 501))


def test_content_length_body_is_read_exactly_and_next_request_follows(server):
    with RawConnection(*server.address) as conn:
        # The 'GET /health' bytes after the 5-byte body are the next request, not body.
        conn.send(echo_post(b"Content-Length: 5\r\n", b"helloGET /health HTTP/1.1\r\nHost: t\r\n\r\n"))
        first = conn.read_response()
        assert first.status == 200
        assert first.json()["body"] == "hello"
        second = conn.read_response()
        assert (second.status, second.body) == (200, b"ok")


# --------------------------------------------------------------------------------------------
# Request line and header syntax


@pytest.mark.parametrize(
    "data",
    [
        b"GET /health HTTP/1.1\nHost: t\n\n",
        b"GET /health HTTP/1.1\r\nHost: t\n\r\n",
        b"GET /health HTTP/1.1\nHost: t\r\n\r\n",
    ],
    ids=["all-bare-lf", "header-bare-lf", "request-line-bare-lf"],
)
def test_bare_lf_is_rejected(server, data):
    rejected(*server.address, data)


def test_bare_cr_in_request_line_is_rejected(server):
    rejected(*server.address, b"GET /health\rHTTP/1.1\r\nHost: t\r\n\r\n")


def test_obs_fold_is_rejected(server):
    rejected(*server.address, b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n  b\r\n\r\n")


def test_obs_fold_with_tab_is_rejected(server):
    rejected(*server.address, b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n\tb\r\n\r\n")


@pytest.mark.parametrize(
    "line",
    [b"Host : t", b"Host\t: t", b" Host: t", b"Ho st: t", b": novalue", b"NoColon", b"X-\x01: v", b"X(y): v"],
    ids=["space-before-colon", "tab-before-colon", "leading-space", "space-in-name", "empty-name",
         "no-colon", "ctl-in-name", "separator-in-name"],
)
def test_malformed_header_line_is_rejected(server, line):
    rejected(*server.address, b"GET /echo HTTP/1.1\r\n" + line + b"\r\nX-A: 1\r\n\r\n")


@pytest.mark.parametrize("char", [b"\x00", b"\x01", b"\x1f", b"\x7f", b"\r", b"\x0b"],
                         ids=["nul", "soh", "us", "del", "bare-cr", "vtab"])
def test_control_character_in_header_value_is_rejected(server, char):
    rejected(*server.address, b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Test: a" + char + b"b\r\n\r\n")


def test_tab_and_obs_text_in_header_value_are_kept(server):
    request = echoed(server, b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Tab: a\tb\r\nX-Opaque: caf\xc3\xa9\r\n\r\n")
    values = {name.lower(): value for name, value in request["headers"]}
    assert values["x-tab"] == "a\tb"
    assert "x-opaque" in values


def test_optional_whitespace_around_header_value_is_trimmed(server):
    request = echoed(server, b"GET /echo HTTP/1.1\r\nHost: t\r\nX-Padded: \t  value  \t\r\n\r\n")
    values = {name.lower(): value for name, value in request["headers"]}
    assert values["x-padded"] == "value"


@pytest.mark.parametrize(
    "line",
    [
        b"GET  /health HTTP/1.1",
        b"GET /health  HTTP/1.1",
        b"GET /health HTTP/1.1 ",
        b" GET /health HTTP/1.1",
        b"GET /health",
        b"GET /health HTTP/1.1 extra",
        b"GET /health http/1.1",
        b"GET /health HTTP/1",
        b"GET /health HTTP/1.10",
        b"G\x00T /health HTTP/1.1",
        b"GE(T /health HTTP/1.1",
        b"GET /hea lth HTTP/1.1",
        b"GET /he\x7flth HTTP/1.1",
        b"",
    ],
    ids=["double-space-1", "double-space-2", "trailing-space", "leading-space", "no-version",
         "extra-token", "lowercase-version", "short-version", "long-version", "nul-method",
         "separator-method", "space-in-target", "del-in-target", "empty-line"],
)
def test_malformed_request_line_is_rejected(server, line):
    rejected(*server.address, line + b"\r\nHost: t\r\n\r\n")


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/3.0", b"HTTP/0.9"])
def test_unsupported_version_is_rejected(server, version):
    rejected(*server.address, b"GET /health " + version + b"\r\nHost: t\r\n\r\n", (400, 505))


def test_leading_empty_line_before_request_is_ignored(server):
    # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line.
    with RawConnection(*server.address) as conn:
        response = conn.request(b"\r\nGET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        assert (response.status, response.body) == (200, b"ok")
        assert still_serves(conn)


def test_echo_reports_method_target_version_and_header_order(server):
    request = echoed(
        server,
        b"PATCH /echo?a=1&b=%20 HTTP/1.1\r\nHost: t\r\nX-First: 1\r\nx-second: 2\r\nX-First: 3\r\n\r\n",
    )
    assert request["method"] == "PATCH"
    assert request["target"] == "/echo?a=1&b=%20"
    assert request["version"] in ("HTTP/1.1", "1.1")
    names = [name.lower() for name, _ in request["headers"]]
    assert names == ["host", "x-first", "x-second", "x-first"]
    assert [value for _, value in request["headers"]] == ["t", "1", "2", "3"]
    assert request["bodyLength"] == 0


# --------------------------------------------------------------------------------------------
# Host


def test_missing_host_on_http11_is_rejected(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nX-A: 1\r\n\r\n")


def test_multiple_host_headers_are_rejected(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")


def test_host_list_is_rejected(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: a, b\r\n\r\n")


def test_host_with_invalid_characters_is_rejected(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: exa mple\r\n\r\n")


def test_empty_host_is_accepted(server):
    # RFC 9110 §7.2: an empty Host is what a client sends when the target has no authority.
    echoed(server, b"GET /echo HTTP/1.1\r\nHost:\r\n\r\n")


def test_transfer_encoding_on_http10_is_rejected(server):
    rejected(*server.address, b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")


def test_unknown_expectation_is_refused_with_417(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: t\r\nExpect: teapot\r\n\r\n", 417)


def test_more_than_100_header_fields_is_refused_with_431(server):
    headers = b"".join(b"X-%d: v\r\n" % i for i in range(120))
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: t\r\n" + headers + b"\r\n", 431)


def test_missing_host_on_http10_is_accepted(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /health HTTP/1.0\r\n\r\n")
        assert (response.status, response.body) == (200, b"ok")
        assert conn.closed_by_server()


# --------------------------------------------------------------------------------------------
# Chunked request bodies


@pytest.mark.parametrize(
    "chunks, body",
    [
        (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
        (b"A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", b"0123456789abcdefghij"),
        (b"0005\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5;name=value\r\nhello\r\n0;last\r\n\r\n", b"hello"),
        (b'5;a=1;b="q s"\r\nhello\r\n0\r\n\r\n', b"hello"),
        (b"5\r\nhello\r\n0\r\nX-Trailer: yes\r\nX-Other: 2\r\n\r\n", b"hello"),
        (b"0\r\n\r\n", b""),
        (b"1\r\n\x00\r\n1\r\n\xff\r\n0\r\n\r\n", b"\x00\xff"),
    ],
    ids=["one-chunk", "two-chunks", "hex-sizes", "leading-zeros", "extension", "quoted-extension",
         "trailers", "empty", "binary"],
)
def test_chunked_body_is_decoded(server, chunks, body):
    request = echoed(server, echo_post(b"Transfer-Encoding: chunked\r\n", chunks))
    assert request["bodyLength"] == len(body)
    if all(byte < 0x80 for byte in body):
        assert request["body"] == body.decode()


@pytest.mark.parametrize(
    "chunks",
    [
        b"zz\r\nhello\r\n0\r\n\r\n",
        b"-5\r\nhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\n",
        b"5 5\r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"\r\nhello\r\n0\r\n\r\n",
        b"ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
        b"10000000000000000\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-Trailer: a\x00b\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-Trailer: a\n\r\n",
        b"5;\x00=1\r\nhello\r\n0\r\n\r\n",
        b"5\x00\r\nhello\r\n0\r\n\r\n",
    ],
    ids=["non-hex", "negative", "0x-prefix", "plus", "inner-space", "leading-space", "empty-size",
         "overflow-20-digits", "overflow-2^64", "missing-crlf-after-data", "bare-lf-after-data",
         "bare-lf-after-size", "ctl-in-trailer", "bare-lf-in-trailer", "ctl-in-extension", "nul-after-size"],
)
def test_malformed_chunked_body_is_rejected(server, chunks):
    rejected(*server.address, echo_post(b"Transfer-Encoding: chunked\r\n", chunks), (400, 413))


def test_huge_chunk_size_within_64_bits_is_refused_as_too_large(server):
    rejected(*server.address, echo_post(b"Transfer-Encoding: chunked\r\n", b"7fffffffffffffff\r\nhello"), 413)


def test_chunked_body_over_max_body_is_refused(server):
    chunk = b"%x\r\n" % 8192 + b"x" * 8192 + b"\r\n"
    count = MAX_BODY // 8192 + 2
    with RawConnection(*server.address) as conn:
        conn.send(echo_post(b"Transfer-Encoding: chunked\r\n", b""))
        try:
            for _ in range(count):
                conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may stop reading once the limit is crossed
        response = conn.read_response()
        assert response.status == 413
        assert conn.closed_by_server()


def test_pipelined_chunked_requests_are_framed_independently(server):
    data = (
        echo_post(b"Transfer-Encoding: chunked\r\n", b"3\r\none\r\n0\r\n\r\n")
        + echo_post(b"Transfer-Encoding: chunked\r\n", b"3\r\ntwo\r\n0\r\nX-T: 1\r\n\r\n")
        + echo_post(b"Content-Length: 5\r\n", b"three")
    )
    with RawConnection(*server.address) as conn:
        conn.send(data)
        bodies = [conn.read_response().json()["body"] for _ in range(3)]
        assert bodies == ["one", "two", "three"]
        assert still_serves(conn)


# --------------------------------------------------------------------------------------------
# Limits


def test_header_section_over_16_kib_is_refused_with_431(server):
    headers = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"v" * 1000) for i in range(20))
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: t\r\n" + headers + b"\r\n", 431)


def test_single_huge_header_is_refused_with_431(server):
    rejected(*server.address, b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"v" * 20000 + b"\r\n\r\n", 431)


def test_header_section_just_under_the_limit_is_accepted(server):
    headers = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"v" * 1000) for i in range(12))
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /health HTTP/1.1\r\nHost: t\r\n" + headers + b"\r\n")
        assert response.status == 200
        assert still_serves(conn)


def test_too_long_target_is_refused_with_414(server):
    rejected(*server.address, b"GET /" + b"a" * 12000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414)


def test_body_over_max_body_is_refused_with_413(server):
    rejected(*server.address, echo_post(b"Content-Length: %d\r\n" % (MAX_BODY + 1), b"x" * 100), 413)


def test_body_at_max_body_is_accepted(server):
    body = b"y" * MAX_BODY
    request = echoed(server, echo_post(b"Content-Length: %d\r\n" % len(body), body))
    assert request["bodyLength"] == MAX_BODY


# --------------------------------------------------------------------------------------------
# Message flow: fragmentation, pipelining, versions, HEAD, Expect


def test_request_sent_byte_by_byte_is_served(server):
    data = echo_post(b"Content-Length: 11\r\nX-Slow: yes\r\n", b"hello world")
    with RawConnection(*server.address) as conn:
        conn.send_slowly(data, chunk=1)
        response = conn.read_response()
        assert response.status == 200
        assert response.json()["body"] == "hello world"
        assert still_serves(conn)


def test_request_split_across_crlf_is_served(server):
    with RawConnection(*server.address) as conn:
        for piece in [b"GET /health HTTP/1.1\r", b"\nHost: t\r", b"\n\r", b"\n"]:
            conn.send(piece)
            time.sleep(0.05)  # separate segments; correctness does not depend on the pause
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"ok")


def test_pipelined_requests_are_answered_in_order(server):
    targets = [f"/echo?n={i}" for i in range(10)]
    data = b"".join(f"GET {t} HTTP/1.1\r\nHost: t\r\n\r\n".encode() for t in targets)
    with RawConnection(*server.address) as conn:
        conn.send(data)
        got = [conn.read_response().json()["target"] for _ in targets]
        assert got == targets
        assert still_serves(conn)


def test_pipelined_response_order_holds_when_the_first_is_slow(server):
    data = (
        b"GET /delayed?ms=300 HTTP/1.1\r\nHost: t\r\n\r\n"
        b"GET /echo?second HTTP/1.1\r\nHost: t\r\n\r\n"
        b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
    )
    with RawConnection(*server.address) as conn:
        conn.send(data)
        first, second, third = (conn.read_response() for _ in range(3))
        assert first.status == 200
        assert second.json()["target"] == "/echo?second"
        assert (third.status, third.body) == (200, b"ok")


def test_pipelined_requests_after_a_rejected_one_are_not_served(server):
    data = (
        b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
        b"GET /health HTTP/1.1\r\nHost : bad\r\n\r\n"
        b"GET /echo?smuggled HTTP/1.1\r\nHost: t\r\n\r\n"
    )
    with RawConnection(*server.address) as conn:
        conn.send(data)
        assert conn.read_response().status == 200
        assert conn.read_response().status == 400
        assert conn.closed_by_server()


def test_http10_closes_after_the_response(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /static HTTP/1.0\r\n\r\n")
        assert response.status == 200
        assert len(response.body) == 2560
        assert response.version == "HTTP/1.1" or response.version == "HTTP/1.0"
        assert conn.closed_by_server()


def test_http10_keep_alive_keeps_the_connection(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert (response.status, response.body) == (200, b"ok")
        assert "keep-alive" in (response.header("connection") or "").lower()
        second = conn.request(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert (second.status, second.body) == (200, b"ok")


def test_http11_connection_close_is_honoured(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert response.status == 200
        assert response.says_close
        assert conn.closed_by_server()


def test_http11_keeps_the_connection_for_many_requests(server):
    with RawConnection(*server.address) as conn:
        for _ in range(50):
            assert still_serves(conn)


def test_head_has_content_length_and_no_body(server):
    with RawConnection(*server.address) as conn:
        get = conn.request(b"GET /static HTTP/1.1\r\nHost: t\r\n\r\n")
        head = conn.request(b"HEAD /static HTTP/1.1\r\nHost: t\r\n\r\n", method="HEAD")
        assert head.status == 200
        assert head.header("content-length") == str(len(get.body)) == "2560"
        # Any body bytes after the HEAD response would corrupt this next response.
        assert still_serves(conn)


def test_expect_100_continue_gets_interim_then_final_response(server):
    body = b'{"hello":"world"}'
    with RawConnection(*server.address) as conn:
        conn.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        interim = conn.read_head()
        assert interim.status == 100
        conn.send(body)
        final = conn.read_response()
        assert final.status == 200
        assert final.json()["body"] == body.decode()
        assert still_serves(conn)


def test_expect_100_continue_with_too_large_body_is_refused_without_interim(server):
    with RawConnection(*server.address) as conn:
        conn.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % (MAX_BODY * 4))
        response = conn.read_response()
        assert response.status == 413
        assert conn.closed_by_server()


def test_expect_100_continue_with_chunked_body(server):
    with RawConnection(*server.address) as conn:
        conn.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        assert conn.read_head().status == 100
        conn.send(b"4\r\nabcd\r\n0\r\n\r\n")
        final = conn.read_response()
        assert final.json()["body"] == "abcd"


def test_absolute_form_target_is_accepted(server):
    request = echoed(server, b"GET http://t/echo?x=1 HTTP/1.1\r\nHost: t\r\n\r\n")
    assert request["target"] == "http://t/echo?x=1"


def test_requests_after_connection_close_are_not_served(server):
    with RawConnection(*server.address) as conn:
        conn.send(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                  b"GET /echo?ignored HTTP/1.1\r\nHost: t\r\n\r\n")
        response = conn.read_response()
        assert (response.status, response.body) == (200, b"ok")
        assert response.says_close
        assert conn.closed_by_server()  # and nothing for the second request


def test_close_among_connection_options_is_honoured(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, close\r\n\r\n")
        assert response.says_close
        assert conn.closed_by_server()


def test_large_pipelined_input_is_answered_completely_and_in_order(server):
    # About 120 KB of requests in one send: more than the engine buffers before pausing reads.
    pad = b"X-Pad: " + b"p" * 300 + b"\r\n"
    count = 350
    data = b"".join(b"GET /echo?n=%d HTTP/1.1\r\nHost: t\r\n%s\r\n" % (i, pad) for i in range(count))
    with RawConnection(*server.address, timeout=60) as conn:
        conn.send(data)
        targets = [conn.read_response().json()["target"] for _ in range(count)]
        assert targets == [f"/echo?n={i}" for i in range(count)]
        assert still_serves(conn)


def test_every_response_is_framed_exactly_once_and_dated(server):
    requests = [
        (b"GET /health", "GET"), (b"GET /static", "GET"), (b"GET /bytes/3", "GET"), (b"HEAD /bytes/3", "HEAD"),
        (b"POST /echo", "POST"), (b"GET /nope", "GET"), (b"GET /delayed?ms=1", "GET"), (b"GET /stats", "GET"),
    ]
    with RawConnection(*server.address) as conn:
        for line, method in requests:
            response = conn.request(line + b" HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", method=method)
            framing = [name.lower() for name, _ in response.headers if name.lower() in ("content-length", "transfer-encoding")]
            assert framing == ["content-length"], (line, response.headers)
            assert response.header("date"), (line, response.headers)


def test_sse_on_http10_is_close_delimited(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /sse?count=3&interval_ms=1 HTTP/1.0\r\n\r\n")
        assert response.status == 200
        assert response.header("transfer-encoding") is None and response.header("content-length") is None
        assert response.body.count(b"event: tick") == 3
        assert conn.eof


def test_many_concurrent_connections_are_served(server):
    connections = [RawConnection(*server.address, timeout=30) for _ in range(300)]
    try:
        for conn in connections:
            conn.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        assert all(conn.read_response().body == b"ok" for conn in connections)
    finally:
        for conn in connections:
            conn.close()


def test_unknown_path_is_404_and_keeps_the_connection(server):
    with RawConnection(*server.address) as conn:
        assert conn.request(b"GET /no-such-thing HTTP/1.1\r\nHost: t\r\n\r\n").status == 404
        assert still_serves(conn)


def test_bytes_endpoint_returns_exactly_n_bytes(server):
    with RawConnection(*server.address) as conn:
        for n in (0, 1, 1000, 300_000):
            response = conn.request(b"GET /bytes/%d HTTP/1.1\r\nHost: t\r\n\r\n" % n)
            assert response.status == 200
            assert len(response.body) == n
        head = conn.request(b"HEAD /bytes/1000 HTTP/1.1\r\nHost: t\r\n\r\n", method="HEAD")
        assert head.header("content-length") == "1000"
        assert still_serves(conn)


def test_static_is_2560_bytes_of_json(server):
    with RawConnection(*server.address) as conn:
        response = conn.request(b"GET /static HTTP/1.1\r\nHost: t\r\n\r\n")
        assert response.status == 200
        assert len(response.body) == 2560
        json.loads(response.body)


# --------------------------------------------------------------------------------------------
# Timeouts (a generous bound, never a precise timing)


def test_idle_keep_alive_connection_is_closed(start_server):
    server = start_server("--idle-timeout", "1")
    with RawConnection(*server.address) as conn:
        assert still_serves(conn)
        assert conn.closed_by_server(timeout=30.0)


def test_slowloris_header_read_is_closed(start_server):
    server = start_server("--header-timeout", "1", "--idle-timeout", "60")
    with RawConnection(*server.address, timeout=30.0) as conn:
        conn.send(b"GET /health HTTP/1.1\r\nHost: t\r\n")
        deadline = time.monotonic() + 30.0
        closed = False
        # Dribble one header byte every 200 ms: progress must not extend the header deadline.
        while time.monotonic() < deadline and not closed:
            try:
                conn.send(b"X")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            try:
                conn.sock.settimeout(0.2)
                data = conn.sock.recv(65536)
                if not data:
                    closed = True
                else:
                    conn.buffer += data  # a 408 is allowed before the close
            except TimeoutError:
                pass
            except ConnectionResetError:
                closed = True
        assert closed, "header-read timeout never closed a slowly sent header section"
        assert conn.buffer == b"" or conn.buffer.startswith(b"HTTP/1.1 408")


def test_a_head_sent_in_small_pieces_is_answered_once_it_ends(server):
    # The parser resumes where it stopped (only new bytes are searched for the end of the head);
    # a long head dribbled in 7-byte segments still parses to the same request.
    head = b"GET /static HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"v" * 12000 + b"\r\n\r\n"
    with RawConnection(*server.address, timeout=30.0) as conn:
        conn.send_slowly(head, chunk=7)
        response = conn.read_response()
        assert response.status == 200
        assert len(response.body) == 2560


def test_a_bare_lf_late_in_a_dribbled_head_is_refused_when_it_arrives(server):
    # Resuming must not let a smuggling vector in a later piece wait for the end of the head.
    with RawConnection(*server.address, timeout=30.0) as conn:
        conn.send_slowly(b"GET /static HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"v" * 2000, chunk=50)
        conn.send(b"\nY: 1")  # a bare LF; the head has not ended and never will
        response = conn.read_response(timeout=5.0)  # well before the 10 s header timeout's 408
        assert response.status == 400
        assert conn.closed_by_server()


def test_partial_body_is_closed_after_idle_timeout(start_server):
    server = start_server("--idle-timeout", "1", "--header-timeout", "1")
    with RawConnection(*server.address) as conn:
        conn.send(echo_post(b"Content-Length: 100\r\n", b"only a few bytes"))
        deadline = time.monotonic() + 30.0
        while not conn.eof and time.monotonic() < deadline:
            try:
                conn._fill(deadline)
            except TimeoutError:
                break
        assert conn.eof, "a stalled body kept the connection open"


def test_connection_is_served_within_timeouts(start_server):
    # The timeouts must not cut a connection that keeps making progress.
    server = start_server("--idle-timeout", "2", "--header-timeout", "2")
    with RawConnection(*server.address) as conn:
        for _ in range(5):
            assert still_serves(conn)
            time.sleep(0.3)


# --------------------------------------------------------------------------------------------
# h11 as a differential oracle: for well-formed requests the server must parse what h11 parses,
# and for the malformed ones above h11 must also refuse them (a check of the cases themselves).

ORACLE_ACCEPTED = [
    b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /echo?x=1 HTTP/1.1\r\nHost: t\r\nAccept: */*\r\nX-Dup: 1\r\nX-Dup: 2\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n",
    b"PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
    b"DELETE /echo HTTP/1.1\r\nHost: t\r\nX-Empty:\r\n\r\n",
    b"OPTIONS /echo HTTP/1.1\r\nHost: t\r\nX-Spaces:    a b   \r\n\r\n",
    b"GET /echo HTTP/1.1\r\nhOsT: t\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n\r\n",
    b"GET /echo HTTP/1.0\r\n\r\n",
]

ORACLE_REJECTED = [
    b"GET /echo HTTP/1.1\r\nHost : t\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    b"GET /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nX: 1\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n",
    b"GET  /echo HTTP/1.1\r\nHost: t\r\n\r\n",
    b"GET /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
]


def h11_parse(data: bytes):
    """What h11 parses from `data` as a server: (method, target, [(name, value)], body), or None
    when h11 refuses it."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    request, body = None, b""
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            elif event is h11.NEED_DATA:
                return None
    except h11.RemoteProtocolError:
        return None
    headers = [(name.decode(), value.decode("latin-1")) for name, value in request.headers.raw_items()]
    return request.method.decode(), request.target.decode(), headers, body


@pytest.mark.parametrize("data", ORACLE_ACCEPTED, ids=range(len(ORACLE_ACCEPTED)))
def test_server_parses_what_h11_parses(server, data):
    oracle = h11_parse(data)
    assert oracle is not None, "the case itself must be valid HTTP/1.1"
    with RawConnection(*server.address) as conn:
        response = conn.request(data)
        assert response.status == 200
        parsed = response.json()
    method, target, headers, body = oracle
    assert parsed["method"] == method
    assert parsed["target"] == target
    assert [(n.lower(), v) for n, v in parsed["headers"]] == [(n.lower(), v) for n, v in headers]
    assert parsed["bodyLength"] == len(body)
    assert parsed["body"] == body.decode()


@pytest.mark.parametrize("data", ORACLE_REJECTED, ids=range(len(ORACLE_REJECTED)))
def test_server_rejects_what_h11_rejects(server, data):
    assert h11_parse(data) is None, "the case itself must be invalid HTTP/1.1"
    rejected(*server.address, data, (400, 501))


# Trailer field lines and request-target forms (RFC 9112 §7.1.2, §3.2).
def test_trailer_with_invalid_name_is_rejected(server):
    rejected(*server.address, b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\nBad Trailer: x\r\n\r\n")


def test_trailer_without_colon_is_rejected(server):
    rejected(*server.address, b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"5\r\nhello\r\n0\r\nNoColonHere\r\n\r\n")


def test_target_without_leading_slash_is_rejected(server):
    rejected(*server.address, b"GET echo HTTP/1.1\r\nHost: t\r\n\r\n")


def test_target_with_fragment_is_rejected(server):
    rejected(*server.address, b"GET /echo#frag HTTP/1.1\r\nHost: t\r\n\r\n")


def test_target_with_raw_non_ascii_is_rejected(server):
    rejected(*server.address, b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: t\r\n\r\n")
