"""HTTP/2 (h2c prior knowledge) at the frame level: the CI substitute for h2spec
(docs/http2-and-compression.md)."""
from __future__ import annotations

import json
import subprocess

import pytest

from hyperframe.frame import HeadersFrame
from hyperframe.frame import SettingsFrame as HFSettings
from hyperframe.frame import SettingsFrame as SettingsFrameRaw

from h2raw import (
    CANCEL,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    INTERNAL_ERROR,
    NO_ERROR,
    PROTOCOL_ERROR,
    REFUSED_STREAM,
    ConnectionEnded,
    DataFrame,
    GoAwayFrame,
    H2Connection,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    WindowUpdateFrame,
)
from sse import EventStreamParser

MAX_CONCURRENT_STREAMS = HFSettings.MAX_CONCURRENT_STREAMS
INITIAL_WINDOW_SIZE = HFSettings.INITIAL_WINDOW_SIZE


def test_preface_and_settings_are_acknowledged(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        assert conn.settings_acked
        # The server's first frame must be SETTINGS (RFC 9113 §3.4).
        assert isinstance(conn.frames[0], HFSettings) and "ACK" not in conn.frames[0].flags


def test_ping_is_answered(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.send(PingFrame(0, opaque_data=b"8bytes!!"))
        pong = conn.read_until(lambda f: isinstance(f, PingFrame) and "ACK" in f.flags)
        assert pong.opaque_data == b"8bytes!!"


def test_simple_get_and_post(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(1, "/health")
        headers, body = conn.response(1)
        assert (headers[":status"], body) == ("200", b"ok")
        conn.request(3, "/echo", method="POST", body=b"hello h2")
        headers, body = conn.response(3)
        assert headers[":status"] == "200"
        echoed = json.loads(body)
        assert echoed["method"] == "POST"
        assert echoed["body"] == "hello h2"


def advertised_stream_limit(conn: H2Connection) -> int:
    limit = conn.server_settings.get(MAX_CONCURRENT_STREAMS)
    assert limit is not None and 0 < limit <= 1000, f"the server should advertise a stream limit: {conn.server_settings}"
    return limit


def test_streams_up_to_the_advertised_limit_are_served_concurrently(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        limit = advertised_stream_limit(conn)
        stream_ids = [1 + 2 * i for i in range(limit)]
        conn.send(*(conn.headers_frame(sid, "/delayed?ms=300") for sid in stream_ids))
        completed = set()
        while len(completed) < limit:
            frame = conn.read_frame(timeout=60)
            assert not isinstance(frame, (RstStreamFrame, GoAwayFrame)), frame
            if isinstance(frame, DataFrame) and "END_STREAM" in frame.flags:
                completed.add(frame.stream_id)
        assert completed == set(stream_ids)


def test_streams_over_the_advertised_limit_are_refused(server):
    # RFC 9113 §5.1.2 asks for a stream error (RST_STREAM PROTOCOL_ERROR or REFUSED_STREAM);
    # nghttp2 1.52 escalates to GOAWAY(PROTOCOL_ERROR) once the client has acknowledged the
    # limit. Either way no stream beyond the limit may be served.
    with H2Connection(*server.address) as conn:
        conn.handshake()
        limit = advertised_stream_limit(conn)
        stream_ids = [1 + 2 * i for i in range(limit + 5)]
        conn.send(*(conn.headers_frame(sid, "/delayed?ms=1500") for sid in stream_ids))
        refused, completed, goaway = set(), set(), None
        try:
            while len(refused) + len(completed) < len(stream_ids) and goaway is None:
                frame = conn.read_frame(timeout=60)
                if isinstance(frame, RstStreamFrame):
                    assert frame.error_code in (REFUSED_STREAM, PROTOCOL_ERROR)
                    refused.add(frame.stream_id)
                elif isinstance(frame, GoAwayFrame):
                    goaway = frame
                elif "END_STREAM" in frame.flags:
                    completed.add(frame.stream_id)
        except ConnectionEnded:
            pass
        over_limit = set(stream_ids[limit:])
        assert not completed & over_limit, "a stream over the limit was served"
        if goaway is not None:
            assert goaway.error_code in (PROTOCOL_ERROR, REFUSED_STREAM)
            assert goaway.last_stream_id < min(over_limit)
        else:
            assert refused == over_limit


def test_rapid_reset_ends_the_connection(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        ended_by = None
        try:
            # Bounded: at most 5000 HEADERS+RST_STREAM pairs (CVE-2023-44487 pattern).
            for batch in range(50):
                frames = []
                for i in range(100):
                    sid = 1 + 2 * (batch * 100 + i)
                    frames += [conn.headers_frame(sid, "/delayed?ms=1000"), RstStreamFrame(sid, error_code=CANCEL)]
                conn.send(*frames)
        except (BrokenPipeError, ConnectionResetError):
            ended_by = "reset"
        if ended_by is None:
            try:
                goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame), timeout=30)
                assert goaway.error_code in (ENHANCE_YOUR_CALM, INTERNAL_ERROR, PROTOCOL_ERROR)
                ended_by = "goaway"
            except ConnectionEnded:
                ended_by = "close"
        assert ended_by is not None


def test_server_respects_a_small_stream_window(server):
    window = 1000
    size = 50_000
    with H2Connection(*server.address, settings={INITIAL_WINDOW_SIZE: window}) as conn:
        conn.handshake()
        conn.request(1, f"/bytes/{size}")
        granted, received, frames = window, 0, 0
        while True:
            frame = conn.read_frame(timeout=30)
            if frame.stream_id != 1:
                continue
            if isinstance(frame, DataFrame):
                received += frame.flow_controlled_length
                frames += 1
                assert received <= granted, f"server sent {received} bytes with a window of {granted}"
                if received == granted and "END_STREAM" not in frame.flags:
                    # Reopen only once the window is used up, a little at a time.
                    conn.send(WindowUpdateFrame(0, window_increment=window),
                              WindowUpdateFrame(1, window_increment=window))
                    granted += window
            assert not isinstance(frame, RstStreamFrame)
            if "END_STREAM" in frame.flags:
                break
        assert received == size
        assert frames >= size // window


def test_data_frames_respect_max_frame_size(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(1, "/bytes/200000")
        sizes = []
        while True:
            frame = conn.read_frame(timeout=30)
            if isinstance(frame, DataFrame) and frame.stream_id == 1:
                sizes.append(len(frame.data))
                conn.send(WindowUpdateFrame(0, window_increment=len(frame.data) or 1))
                if "END_STREAM" not in frame.flags and frame.data:
                    conn.send(WindowUpdateFrame(1, window_increment=len(frame.data)))
                if "END_STREAM" in frame.flags:
                    break
        assert sum(sizes) == 200000
        assert max(sizes) <= 16384


def test_headers_on_an_even_stream_id_is_a_connection_error(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.send(conn.headers_frame(2, "/health"))
        try:
            goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame))
            assert goaway.error_code == PROTOCOL_ERROR
        except ConnectionEnded:
            pass


def test_headers_on_a_lower_stream_id_is_a_connection_error(server):
    # RFC 9113 §5.1.1: a client stream id lower than one it already used is PROTOCOL_ERROR (nghttp2
    # alone drops the frame silently; the server now says so with GOAWAY).
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(5, "/health")
        conn.response(5)
        conn.send(conn.headers_frame(3, "/health"))
        goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame), timeout=10)
        assert goaway.error_code == PROTOCOL_ERROR
        assert goaway.last_stream_id == 5


def test_trailers_on_an_open_lower_stream_are_still_accepted(server):
    # Only a new stream on a lower id is refused: HEADERS on a stream still open (trailers of a
    # request body) is fine, whatever higher ids were opened since.
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.send(conn.headers_frame(1, "/echo", method="POST", end_stream=False))
        conn.request(3, "/health")
        conn.response(3)
        trailers = HeadersFrame(1, data=conn.encoder.encode([("x-trailer", "1")]))
        trailers.flags.add("END_HEADERS")
        trailers.flags.add("END_STREAM")
        conn.send(trailers)
        headers, _ = conn.response(1)
        assert headers[":status"] == "200"


def test_sse_over_h2(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(1, "/sse?count=5&interval_ms=10")
        headers, body = conn.response(1)
        assert headers[":status"] == "200"
        assert headers["content-type"].startswith("text/event-stream")
        events = EventStreamParser().feed(body.decode())
        ids = [int(e.id) for e in events]
        assert len(events) == 5 and ids == list(range(ids[0], ids[0] + 5))
        assert all(e.event == "tick" for e in events)


def test_goaway_on_sigterm(start_server):
    server = start_server("--grace-period", "5")
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(1, "/health")
        assert conn.response(1)[0][":status"] == "200"
        server.proc.send_signal(15)
        goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame), timeout=30)
        assert goaway.error_code == NO_ERROR
        try:
            while True:
                conn.read_frame(timeout=30)
        except ConnectionEnded:
            pass
    assert server.proc.wait(timeout=30) == 0


def test_nghttp_smoke(server):
    result = subprocess.run(["nghttp", "-nv", "-t", "30", server.url + "/health"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "recv SETTINGS frame" in result.stdout
    assert ":status: 200" in result.stdout
    assert "recv DATA frame" in result.stdout


def test_h2load_bounded_smoke(server):
    result = subprocess.run(["h2load", "-n", "500", "-c", "4", "-m", "10", "-T", "30", server.url + "/static"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "500 succeeded, 0 failed, 0 errored" in result.stdout
    assert "status codes: 500 2xx" in result.stdout


def test_broadcast_reaches_an_h2_subscriber(server):
    import urllib.request

    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.request(1, "/subscribe")
        head = conn.read_until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == 1)
        assert dict(head.decoded)[":status"] == "200"
        server.wait_for_stats(lambda s: s["subscribers"] >= 1)
        request = urllib.request.Request(server.url + "/publish", data=b'{"over":"h2"}', method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["subscribers"] >= 1
        parser, events = EventStreamParser(), []
        while not events:
            frame = conn.read_until(lambda f: isinstance(f, DataFrame) and f.stream_id == 1)
            conn.send(WindowUpdateFrame(0, window_increment=max(1, frame.flow_controlled_length)))
            events += parser.feed(frame.data.decode())
        assert events[0].data == '{"over":"h2"}'


def test_header_block_split_into_continuation_frames(server):
    from hyperframe.frame import ContinuationFrame, HeadersFrame as RawHeaders

    with H2Connection(*server.address) as conn:
        conn.handshake()
        block = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"),
                                     (":path", "/echo"), ("x-long", "v" * 3000)])
        parts = [block[i : i + 1000] for i in range(0, len(block), 1000)]
        first = RawHeaders(1, data=parts[0], flags=["END_STREAM"])
        rest = [ContinuationFrame(1, data=part) for part in parts[1:]]
        rest[-1].flags.add("END_HEADERS")
        conn.send(first, *rest)
        headers, body = conn.response(1)
        assert headers[":status"] == "200"
        assert ["x-long", "v" * 3000] in json.loads(body)["headers"]


def raw_frame(frame_type: int, stream_id: int, body: bytes, flags: int = 0) -> bytes:
    # Built by hand: hyperframe 6.1's ExtensionFrame serializes a zero length with a body.
    return len(body).to_bytes(3, "big") + bytes([frame_type, flags]) + stream_id.to_bytes(4, "big") + body


def test_unknown_frame_types_are_ignored(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.sock.sendall(raw_frame(0xFA, 0, b"ignored") + raw_frame(0xFB, 1, b"x", flags=0xFF))
        conn.request(1, "/health")
        assert conn.response(1)[1] == b"ok"


def test_invalid_settings_value_is_a_connection_error(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.send(SettingsFrameRaw(0, settings={HFSettings.ENABLE_PUSH: 2}))
        try:
            goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame))
            assert goaway.error_code == PROTOCOL_ERROR
        except ConnectionEnded:
            pass


def test_window_overflow_is_a_flow_control_error(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        conn.send(WindowUpdateFrame(0, window_increment=2**31 - 1), WindowUpdateFrame(0, window_increment=2**31 - 1))
        goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame))
        assert goaway.error_code == FLOW_CONTROL_ERROR


def amplified_header_block(conn: H2Connection, references: int) -> bytes:
    """A request whose one 4000-byte field is inserted into the HPACK table once and then referenced
    again `references` times at one byte each (index 62: the newest dynamic entry) — a few KiB on
    the wire that decode into megabytes of header fields."""
    # Encoded by the connection's own encoder, so both tables agree afterwards: the 4000-byte
    # field, encoded last, is the newest dynamic entry (index 62).
    head = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"), (":path", "/echo"),
                                ("x-big", "v" * 4000)])
    return head + b"\xbe" * references


def send_header_block(conn: H2Connection, stream_id: int, block: bytes) -> None:
    from hyperframe.frame import ContinuationFrame, HeadersFrame as RawHeaders

    parts = [block[i : i + 16_000] for i in range(0, len(block), 16_000)]
    frames = [RawHeaders(stream_id, data=parts[0], flags=["END_STREAM"])]
    frames += [ContinuationFrame(stream_id, data=part) for part in parts[1:]]
    (frames[-1].flags.add("END_HEADERS"))
    conn.send(*frames)


def test_an_hpack_amplified_header_block_is_abandoned_and_repeat_offenders_cut_off(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        # One block far past the 16 KiB header-list limit: the stream is reset, not decoded
        # to the end and answered.
        send_header_block(conn, 1, amplified_header_block(conn, 16_000))
        reset = conn.read_until(lambda f: isinstance(f, RstStreamFrame) and f.stream_id == 1, timeout=30)
        assert reset.error_code in (INTERNAL_ERROR, REFUSED_STREAM, CANCEL)
        # The connection stays usable for ordinary requests ...
        conn.request(3, "/echo")
        headers, _ = conn.response(3)
        assert headers[":status"] == "200"
        # ... until it does it again: the third abandoned block ends the connection.
        ended = None
        try:
            for stream_id in (5, 7):
                send_header_block(conn, stream_id, amplified_header_block(conn, 16_000))
            goaway = conn.read_until(lambda f: isinstance(f, GoAwayFrame), timeout=30)
            assert goaway.error_code == ENHANCE_YOUR_CALM
            ended = "goaway"
        except (BrokenPipeError, ConnectionResetError, ConnectionEnded):
            ended = "closed"
        assert ended is not None


def test_a_header_list_a_little_over_the_limit_is_still_answered_431(server):
    with H2Connection(*server.address) as conn:
        conn.handshake()
        block = conn.encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "t"),
                                     (":path", "/echo"), ("x-long", "v" * 20_000)])
        send_header_block(conn, 1, block)
        headers, _ = conn.response(1)
        assert headers[":status"] == "431"


@pytest.mark.parametrize("flood", ["ping", "settings"])
def test_a_control_frame_flood_ends_with_goaway(server, flood):
    # 20,000 PINGs (or empty SETTINGS) sent without reading their answers: past nghttp2's bound on
    # queued answers the connection ends — with GOAWAY(ENHANCE_YOUR_CALM), not a bare close.
    with H2Connection(*server.address, timeout=20) as conn:
        conn.handshake()
        frame = PingFrame(0, opaque_data=b"12345678") if flood == "ping" else HFSettings(0, settings={})
        try:
            conn.sock.sendall(frame.serialize() * 20_000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        frames = []
        try:
            while True:
                frames.append(conn.read_frame(timeout=20))
        except ConnectionEnded:
            pass
        goaways = [f for f in frames if isinstance(f, GoAwayFrame)]
        assert goaways and goaways[-1].error_code == ENHANCE_YOUR_CALM, frames[-3:]
