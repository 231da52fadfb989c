"""Incremental decoders for SSE over HTTP/1.1: chunked transfer coding and the event-stream format
(WHATWG HTML §9.2), used by the raw-socket SSE tests and the fan-out client."""
from __future__ import annotations

import codecs
import dataclasses
import socket

from rawhttp import RawConnection, Response


@dataclasses.dataclass
class Event:
    event: str = "message"
    data: str = ""
    id: str | None = None


class ChunkedDecoder:
    """Decodes a chunked body as bytes arrive; `done` once the last chunk and trailers were read."""

    def __init__(self):
        self.pending = b""
        self.remaining = 0  # data bytes left in the current chunk, then 2 for its CRLF
        self.in_data = False
        self.in_trailers = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self.pending += data
        out = bytearray()
        while not self.done:
            if self.in_trailers:
                index = self.pending.find(b"\r\n")
                if index < 0:
                    break
                line, self.pending = self.pending[:index], self.pending[index + 2 :]
                if not line:
                    self.done = True
            elif self.in_data:
                if self.remaining > 0:
                    take = self.pending[: self.remaining]
                    if not take:
                        break
                    out += take
                    self.pending = self.pending[len(take) :]
                    self.remaining -= len(take)
                    continue
                if len(self.pending) < 2:
                    break
                if self.pending[:2] != b"\r\n":
                    raise ValueError("chunk data not followed by CRLF")
                self.pending = self.pending[2:]
                self.in_data = False
            else:
                index = self.pending.find(b"\r\n")
                if index < 0:
                    break
                line, self.pending = self.pending[:index], self.pending[index + 2 :]
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.in_trailers = True
                else:
                    self.remaining = size
                    self.in_data = True
        return bytes(out)


class EventStreamParser:
    """Turns event-stream text into events; comment lines (heartbeats) are counted, not returned."""

    def __init__(self):
        self.pending = ""
        self.current = Event()
        self.has_field = False
        self.comments = 0
        self.last_id: str | None = None

    def feed(self, text: str) -> list[Event]:
        self.pending += text
        events = []
        while True:
            index = self.pending.find("\n")
            if index < 0:
                return events
            line, self.pending = self.pending[:index].rstrip("\r"), self.pending[index + 1 :]
            if not line:
                if self.has_field:
                    events.append(self.current)
                self.current, self.has_field = Event(), False
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                self.current.data = value if not self.has_field or not self.current.data else self.current.data + "\n" + value
                self.has_field = True
            elif name == "event":
                self.current.event = value
                self.has_field = True
            elif name == "id":
                self.current.id = value
                self.last_id = value
                self.has_field = True


class SSEConnection:
    """An SSE stream over a raw HTTP/1.1 connection (chunked or close-delimited)."""

    def __init__(self, host: str, port: int, target: str = "/subscribe", rcvbuf: int | None = None,
                 timeout: float = 20.0):
        self.conn = RawConnection(host, port, timeout=timeout, rcvbuf=rcvbuf)
        self.conn.send(f"GET {target} HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.head: Response | None = None
        self.chunked: ChunkedDecoder | None = None
        self.parser = EventStreamParser()
        self.events: list[Event] = []
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.ended = False  # the server finished the body (last chunk) or closed

    @property
    def sock(self) -> socket.socket:
        return self.conn.sock

    def read_head(self) -> Response:
        self.head = self.conn.read_head()
        if "chunked" in (self.head.header("transfer-encoding") or "").lower():
            self.chunked = ChunkedDecoder()
        leftover, self.conn.buffer = self.conn.buffer, b""
        self._consume(leftover)
        return self.head

    def _consume(self, data: bytes) -> None:
        if self.chunked is not None:
            data = self.chunked.feed(data)
            if self.chunked.done:
                self.ended = True
        self.events += self.parser.feed(self.decoder.decode(data))

    def on_readable(self) -> bool:
        """Reads what is there without blocking long; False once the stream is over."""
        try:
            data = self.sock.recv(262144)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.ended = True
            return False
        self._consume(data)
        return not self.ended

    def close(self) -> None:
        self.sock.close()
