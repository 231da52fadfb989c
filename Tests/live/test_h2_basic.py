"""HTTP/2 (h2c) and compression against the real HTTPTestServer, with independent clients:
curl, nghttp, h2load, httpx and hand-driven Python `h2` connections for crafted frames.

Every wait is bounded (socket timeouts, subprocess timeouts, frame-count limits)."""
import gzip
import signal
import socket
import subprocess
import time
import zlib

import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx
import pytest

TIMEOUT = 20


def start_server(bin_dir, *args):
    process = subprocess.Popen(
        [str(bin_dir / "HTTPTestServer"), "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("LISTENING "):
        process.kill()
        raise RuntimeError(f"server did not start: {line!r} {process.stderr.read()}")
    return process, int(line.split()[1])


@pytest.fixture(scope="module")
def server(bin_dir):
    process, port = start_server(bin_dir)
    yield port
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()


class H2Client:
    """A blocking h2 client on a raw socket: send, then read frames until a condition holds."""

    def __init__(self, port, window=None, connect=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.events = []
        self.data = {}
        self.frames_data = {}
        self.ended = set()
        self.reset = {}
        self.headers = {}
        self.goaway = None
        if connect:
            self.conn.initiate_connection()
            if window is not None:
                self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
            self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, method="GET", headers=(), body=None, end=True):
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, [(":method", method), (":scheme", "http"), (":authority", "localhost"),
                                        (":path", path), *headers], end_stream=body is None and end)
        if body is not None:
            self.conn.send_data(stream, body, end_stream=end)
        self.flush()
        return stream

    def read_until(self, condition, limit=10_000):
        for _ in range(limit):
            if condition():
                return
            chunk = self.sock.recv(65536)
            if not chunk:
                return
            for event in self.conn.receive_data(chunk):
                self.events.append(event)
                if isinstance(event, h2.events.ResponseReceived):
                    self.headers[event.stream_id] = dict(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    self.data[event.stream_id] = self.data.get(event.stream_id, b"") + event.data
                    self.frames_data.setdefault(event.stream_id, []).append(event.data)
                elif isinstance(event, h2.events.StreamEnded):
                    self.ended.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.reset[event.stream_id] = event.error_code
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.goaway = event
            self.flush()
        raise AssertionError("condition not reached")

    def ack(self, stream, count):
        self.conn.acknowledge_received_data(count, stream)
        self.flush()

    def close(self):
        self.sock.close()


def run(*command, timeout=TIMEOUT):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def test_curl_prior_knowledge(server):
    result = run("curl", "-s", "--http2-prior-knowledge", "-w", "\n%{http_version}", f"http://127.0.0.1:{server}/health")
    assert result.stdout.split("\n") == ["ok", "2"]


def test_curl_upgrade(server):
    result = run("curl", "-s", "--http2", "-w", "\n%{http_version}", f"http://127.0.0.1:{server}/health")
    assert result.stdout.split("\n") == ["ok", "2"]


def test_curl_sse_over_h2(server):
    result = run("curl", "-sN", "--http2-prior-knowledge", f"http://127.0.0.1:{server}/sse?count=3&interval_ms=20")
    assert result.returncode == 0
    assert [line for line in result.stdout.splitlines() if line.startswith("id:")] == ["id: 1", "id: 2", "id: 3"]


def test_nghttp_trace(server):
    result = run("nghttp", "-nv", f"http://127.0.0.1:{server}/static")
    assert result.returncode == 0
    assert "recv SETTINGS frame" in result.stdout
    assert ":status: 200" in result.stdout


def test_nghttp_upgrade(server):
    result = run("nghttp", "-nvu", f"http://127.0.0.1:{server}/health")
    assert "HTTP Upgrade success" in result.stdout
    assert "(stream_id=1) :status: 200" in result.stdout


def test_h2load_many_streams(server):
    result = run("h2load", "-n", "2000", "-c", "4", "-m", "10", f"http://127.0.0.1:{server}/health", timeout=60)
    assert "2000 succeeded, 0 failed" in result.stdout


def test_httpx_http2_get_and_post(server):
    with httpx.Client(http1=False, http2=True, timeout=TIMEOUT) as client:
        response = client.get(f"http://127.0.0.1:{server}/health")
        assert response.http_version == "HTTP/2"
        assert response.text == "ok"
        # 200 KB: more than the default 64 KiB window, so it needs the server's WINDOW_UPDATEs.
        echoed = client.post(f"http://127.0.0.1:{server}/echo", content=b"x" * 200_000).json()
        assert echoed["bodyLength"] == 200_000
        assert echoed["version"] == "HTTP/2"


def test_gzip_body_over_h2(server):
    result = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-H", "Accept-Encoding: gzip", "-D", "-",
                             "-o", "-", f"http://127.0.0.1:{server}/static"], capture_output=True, timeout=TIMEOUT)
    head, _, body = result.stdout.partition(b"\r\n\r\n")
    assert b"content-encoding: gzip" in head
    assert b"vary: Accept-Encoding" in head
    assert gzip.decompress(body).startswith(b'{"kind":"static"')


def test_gzip_sse_each_data_frame_decodes_on_arrival(server):
    client = H2Client(server)
    stream = client.request("/sse?count=5&interval_ms=30", headers=[("accept-encoding", "gzip")])
    client.read_until(lambda: stream in client.ended)
    assert client.headers[stream]["content-encoding"] == "gzip"
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    events = []
    for frame in client.frames_data[stream]:
        text = decoder.decompress(frame).decode()
        if text:
            events.append(text)
    assert decoder.eof
    assert [event.split("\n")[0] for event in events] == [f"id: {i}" for i in range(1, 6)]
    client.close()


def test_many_sse_streams_on_one_connection_receive_a_broadcast(server):
    client = H2Client(server)
    streams = [client.request("/subscribe") for _ in range(30)]
    client.read_until(lambda: all(s in client.headers for s in streams))
    published = httpx.post(f"http://127.0.0.1:{server}/publish", content=b"hello h2", timeout=TIMEOUT).json()
    assert published["subscribers"] >= 30
    client.read_until(lambda: all(b"data: hello h2" in client.data.get(s, b"") for s in streams))
    client.close()


def test_flow_control_holds_data_until_the_client_reads(server):
    client = H2Client(server, window=1000)
    client.read_until(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events))
    stream = client.request("/bytes/50000")
    client.read_until(lambda: len(client.data.get(stream, b"")) >= 1000)
    # The window is used up: nothing more may arrive until the client reads (a short probe).
    client.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        client.sock.recv(65536)
    client.sock.settimeout(TIMEOUT)
    assert len(client.data[stream]) == 1000
    acknowledged = 0
    while stream not in client.ended:
        received = len(client.data[stream])
        client.ack(stream, received - acknowledged)
        acknowledged = received
        client.read_until(lambda: len(client.data[stream]) > received or stream in client.ended)
    assert client.data[stream] == b"x" * 50_000
    client.close()


def test_streams_beyond_the_limit_are_refused(server):
    # Send 110 long-lived requests before reading the server's SETTINGS (limit 100).
    client = H2Client(server)
    streams = [client.request("/subscribe") for _ in range(110)]
    client.read_until(lambda: len(client.reset) >= 10 and len(client.headers) >= 100)
    assert len(client.reset) == 10
    assert set(client.reset) == set(streams[100:])
    client.close()


def test_rapid_reset_ends_the_connection(server):
    client = H2Client(server)
    client.read_until(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events))
    for _ in range(1500):
        stream = client.request("/delayed?ms=1000")
        client.conn.reset_stream(stream)
    client.flush()
    client.read_until(lambda: client.goaway is not None)
    assert client.goaway.error_code != 0
    client.close()


def test_upgrade_request_is_answered_on_stream_one(server):
    client = H2Client(server, connect=False)
    settings = client.conn.initiate_upgrade_connection().decode()
    client.sock.sendall((f"GET /echo HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                         f"Upgrade: h2c\r\nHTTP2-Settings: {settings}\r\n\r\n").encode())
    buffered = b""
    while b"\r\n\r\n" not in buffered:
        buffered += client.sock.recv(65536)
    head, _, rest = buffered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101")
    client.flush()
    for event in client.conn.receive_data(rest):
        client.events.append(event)
        if isinstance(event, h2.events.DataReceived):
            client.data[1] = client.data.get(1, b"") + event.data
        if isinstance(event, h2.events.StreamEnded):
            client.ended.add(1)
    client.flush()
    client.read_until(lambda: 1 in client.ended)
    assert b'"version":"HTTP/1.1"' in client.data[1]
    second = client.request("/health")
    client.read_until(lambda: second in client.ended)
    assert client.data[second] == b"ok"
    client.close()


def raw_frames(data):
    """(type, flags, stream, payload) for each complete frame in `data`."""
    frames, index = [], 0
    while index + 9 <= len(data):
        length = int.from_bytes(data[index:index + 3], "big")
        kind, flags = data[index + 3], data[index + 4]
        stream = int.from_bytes(data[index + 5:index + 9], "big") & 0x7FFFFFFF
        frames.append((kind, flags, stream, data[index + 9:index + 9 + length]))
        index += 9 + length
    return frames


def shutdown_while_streaming(bin_dir):
    """Opens an SSE stream over h2, sends SIGTERM, returns (frames received until close, stream,
    exit code)."""
    process, port = start_server(bin_dir, "--grace-period", "5")
    try:
        client = H2Client(port)
        stream = client.request("/subscribe")
        client.read_until(lambda: stream in client.headers)
        process.send_signal(signal.SIGTERM)
        # Read raw frames until the server closes: h2's state machine stops at GOAWAY, but the
        # frames after it (the end of the open stream) matter here.
        received = b""
        try:
            while chunk := client.sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass  # the process may exit before our last ACKs were read; the frames already came
        client.close()
        return raw_frames(received), stream, process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()


def test_goaway_on_graceful_shutdown(bin_dir):
    frames, stream, exit_code = shutdown_while_streaming(bin_dir)
    assert exit_code == 0
    goaways = [payload for kind, _, _, payload in frames if kind == 0x7]
    assert goaways, frames
    last_stream = int.from_bytes(goaways[0][0:4], "big") & 0x7FFFFFFF
    assert last_stream >= stream
    assert int.from_bytes(goaways[0][4:8], "big") == 0
    assert any(kind == 0x0 and flags & 0x1 and sid == stream for kind, flags, sid, _ in frames)


def test_slow_h2_subscriber_is_dropped_not_buffered(bin_dir):
    process, port = start_server(bin_dir)
    try:
        # A client that never reads: its 1,000-byte window fills at once, then the server queues
        # at most 256 KiB for the stream (plus its `event: error` and END_STREAM) instead of
        # buffering more, and resets it (CANCEL) when the client has not read that within the
        # linger timeout.
        client = H2Client(port, window=1000)
        client.read_until(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events))
        stream = client.request("/subscribe")
        client.read_until(lambda: stream in client.headers)
        event = b"y" * 10_000
        with httpx.Client(timeout=TIMEOUT) as publisher:
            for _ in range(40):  # 400 KB > the 256 KiB cap
                publisher.post(f"http://127.0.0.1:{port}/publish", content=event)
            client.read_until(lambda: stream in client.reset)
            assert client.reset[stream] == 8  # CANCEL
            assert len(client.data.get(stream, b"")) <= 1000
            stats = publisher.get(f"http://127.0.0.1:{port}/stats").json()
        assert stats["droppedSlowSubscribers"] == 1
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


def test_slow_h2_subscriber_that_reads_again_gets_the_error_event_then_the_end(bin_dir):
    process, port = start_server(bin_dir)
    try:
        client = H2Client(port, window=1000)
        client.read_until(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events))
        stream = client.request("/subscribe")
        client.read_until(lambda: stream in client.headers)
        with httpx.Client(timeout=TIMEOUT) as publisher:
            def dropped():
                return publisher.get(f"http://127.0.0.1:{port}/stats").json()["droppedSlowSubscribers"]

            for index in range(40):  # 400 KB > the 256 KiB cap
                publisher.post(f"http://127.0.0.1:{port}/publish", content=b"%02d" % index + b"y" * 10_000)
                if dropped():
                    break
            deadline = time.monotonic() + 1
            while not dropped() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert dropped() == 1
        # Reading again (a large window) within the linger timeout: what was queued, then the
        # farewell event, then END_STREAM; no reset.
        client.conn.increment_flow_control_window(1 << 24)
        client.conn.increment_flow_control_window(1 << 24, stream_id=stream)
        client.flush()
        client.read_until(lambda: stream in client.ended or stream in client.reset)
        assert stream in client.ended and stream not in client.reset
        text = client.data[stream].decode()
        assert text.endswith('"detail":"too much unsent data waited for this stream; '
                             'reconnect with Last-Event-ID"}\n\n'), text[-300:]
        events = [block for block in text.split("\n\n") if block]
        assert events[-1].startswith("event: error\ndata: {"), events[-1]
        assert sum(block.startswith("event: error") for block in events) == 1
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)
