"""A frame-level HTTP/2 (h2c, prior knowledge) client for crafted-frame tests.

It uses hyperframe and hpack (the layers under Python `h2`) directly, so a test can send what a
well-behaved client library refuses to: streams over the advertised limit, rapid resets, a tiny
window that is never reopened.
"""
from __future__ import annotations

import socket
import time

import hpack
from hyperframe.frame import (
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = 0x7, 0x8, 0xB


class ConnectionEnded(Exception):
    """The server closed the TCP connection."""


class H2Connection:
    def __init__(self, host: str, port: int, settings: dict[int, int] | None = None, timeout: float = 20.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buffer = b""
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.server_settings: dict[int, int] = {}
        self.settings_acked = False
        self.frames: list[Frame] = []
        self.sock.sendall(PREFACE + SettingsFrame(0, settings=settings or {}).serialize())

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "H2Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sending

    def send(self, *frames: Frame) -> None:
        self.sock.sendall(b"".join(frame.serialize() for frame in frames))

    def headers_frame(self, stream_id: int, path: str, method: str = "GET", end_stream: bool = True,
                      extra: list[tuple[str, str]] | None = None) -> HeadersFrame:
        block = self.encoder.encode(
            [(":method", method), (":scheme", "http"), (":authority", "t"), (":path", path), *(extra or [])]
        )
        frame = HeadersFrame(stream_id, data=block)
        frame.flags.add("END_HEADERS")
        if end_stream:
            frame.flags.add("END_STREAM")
        return frame

    def request(self, stream_id: int, path: str, method: str = "GET", body: bytes | None = None) -> None:
        frames: list[Frame] = [self.headers_frame(stream_id, path, method, end_stream=body is None)]
        if body is not None:
            frames.append(DataFrame(stream_id, data=body, flags=["END_STREAM"]))
        self.send(*frames)

    # -- receiving

    def read_frame(self, timeout: float | None = None) -> Frame:
        """The next frame; SETTINGS are recorded and acknowledged, header blocks decoded into
        `frame.decoded` (a list of (name, value))."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            if len(self.buffer) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) >= 9 + length:
                    frame.parse_body(memoryview(self.buffer[9 : 9 + length]))
                    self.buffer = self.buffer[9 + length :]
                    self._on_frame(frame)
                    self.frames.append(frame)
                    return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame from the server in time")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout as error:
                raise TimeoutError("no frame from the server in time") from error
            except ConnectionResetError:
                data = b""
            if not data:
                raise ConnectionEnded()
            self.buffer += data

    def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, SettingsFrame):
            if "ACK" in frame.flags:
                self.settings_acked = True
            else:
                self.server_settings.update(frame.settings)
                self.send(SettingsFrame(0, flags=["ACK"]))
        elif isinstance(frame, HeadersFrame):
            frame.decoded = [(n.decode() if isinstance(n, bytes) else n, v.decode() if isinstance(v, bytes) else v)
                             for n, v in self.decoder.decode(frame.data)]
        elif isinstance(frame, PingFrame) and "ACK" not in frame.flags:
            self.send(PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"]))

    def handshake(self) -> None:
        """Reads until the server's SETTINGS arrived and ours were acknowledged."""
        while not (self._saw_server_settings() and self.settings_acked):
            self.read_frame()

    def _saw_server_settings(self) -> bool:
        return any(isinstance(f, SettingsFrame) and "ACK" not in f.flags for f in self.frames)

    def read_until(self, predicate, timeout: float | None = None) -> Frame:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            frame = self.read_frame(max(0.01, deadline - time.monotonic()))
            if predicate(frame):
                return frame

    def response(self, stream_id: int, timeout: float | None = None) -> tuple[dict[str, str], bytes]:
        """Reads until `stream_id` ends; returns its headers and body (replenishing windows)."""
        headers: dict[str, str] = {}
        body = b""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            frame = self.read_frame(max(0.01, deadline - time.monotonic()))
            if frame.stream_id != stream_id:
                continue
            if isinstance(frame, HeadersFrame):
                headers.update(frame.decoded)
            elif isinstance(frame, DataFrame):
                body += frame.data
                consumed = frame.flow_controlled_length
                if consumed:
                    updates = [WindowUpdateFrame(0, window_increment=consumed)]
                    if "END_STREAM" not in frame.flags:
                        updates.append(WindowUpdateFrame(stream_id, window_increment=consumed))
                    self.send(*updates)
            elif isinstance(frame, RstStreamFrame):
                raise AssertionError(f"stream {stream_id} reset with code {frame.error_code}")
            if "END_STREAM" in frame.flags:
                return headers, body


__all__ = [
    "H2Connection", "ConnectionEnded", "DataFrame", "GoAwayFrame", "HeadersFrame", "RstStreamFrame",
    "SettingsFrame", "WindowUpdateFrame", "PingFrame",
]
