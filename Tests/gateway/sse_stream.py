"""A Server-Sent Events client over a raw socket, for the gateway suites.

It speaks HTTP/1.1 itself so that the tests see exactly what the server sends: the response
head, chunked or close-delimited bodies, gzip with a flush per event, comments (`: keep-alive`),
`retry:` and every field of every event, whatever the size of each read. Parsing follows the
HTML Living Standard's event-stream rules (lines end in CRLF, LF or CR; one leading space after
the colon is dropped; a blank line dispatches), except that an event without `data:` is kept too
(the gateway's `event: deleted` carries none).
"""
from __future__ import annotations

import dataclasses
import json
import socket
import time
import urllib.parse
import zlib

DEFAULT_TIMEOUT = 30.0


@dataclasses.dataclass
class Event:
    type: str
    id: str | None
    data: str | None

    def json(self):
        assert self.data is not None, f"event {self.type} has no data"
        return json.loads(self.data)


class StreamClosed(AssertionError):
    pass


class SSEStream:
    """`SSEStream(server.url, "/v1/scopes/demo/events", {"Last-Event-ID": "4"})`.

    `status`, `headers` (lower-case names) and, for a non-200 answer, `body` are read at once.
    """

    def __init__(self, base_url: str, path: str, headers: dict[str, str | None] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, receive_buffer: int | None = None):
        split = urllib.parse.urlsplit(base_url)
        self.host, self.port = split.hostname, split.port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            # Before connect, so that the window the client advertises stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect((self.host, self.port))
        request_headers: dict[str, str | None] = {
            "Host": f"{self.host}:{self.port}", "Accept": "text/event-stream"}
        request_headers.update(headers or {})
        head = f"GET {path} HTTP/1.1\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in request_headers.items() if value is not None)
        self.sock.sendall((head + "\r\n").encode("latin-1"))

        self._raw = b""          # bytes off the socket not yet de-chunked
        self._body = b""         # de-chunked bytes not yet decompressed
        self._text = b""         # event-stream bytes not yet split into lines
        self.eof = False         # the HTTP body ended (or the connection closed)
        self.events: list[Event] = []   # dispatched, not yet returned by next_event
        self.received: list[Event] = []  # every event dispatched so far
        self.comments: list[str] = []
        self.retry: int | None = None
        self.retry_before_first_event = False
        self._fields: dict[str, object] = {}
        self._read_head(timeout)

    # -- HTTP ------------------------------------------------------------------------------
    def _recv(self, deadline: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self.sock.settimeout(remaining)
        try:
            return self.sock.recv(65536)
        except socket.timeout as error:
            raise TimeoutError from error
        except ConnectionResetError:
            return b""

    def _read_head(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self._raw:
            chunk = self._recv(deadline)
            if not chunk:
                raise StreamClosed(f"connection closed before a response head: {self._raw!r}")
            self._raw += chunk
        head, _, self._raw = self._raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        self.status = int(lines[0].split(" ")[1])
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self.content_length = (int(self.headers["content-length"])
                               if "content-length" in self.headers and not self.chunked else None)
        encoding = self.headers.get("content-encoding", "identity").lower()
        assert encoding in ("identity", "gzip"), f"unexpected Content-Encoding {encoding}"
        self._gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else None
        self._chunk_left = 0
        self._chunk_state = "size"
        if self.status != 200:
            self.body = self._read_whole_body(deadline)
            self.close()
        else:
            self._process()

    def _read_whole_body(self, deadline: float) -> bytes:
        self._decode_body()
        while not self.eof:
            chunk = self._recv(deadline)
            if not chunk:
                self.eof = True
            self._raw += chunk
            self._decode_body()
        return self._body

    def _decode_body(self) -> None:
        """Moves what `_raw` holds of the body into `_body`, following the framing."""
        if self.content_length is not None:
            take = self._raw[: self.content_length]
            self._raw = self._raw[len(take):]
            self.content_length -= len(take)
            self._body += take
            if self.content_length == 0:
                self.eof = True
            return
        if not self.chunked:
            self._body += self._raw
            self._raw = b""
            return
        while True:
            if self._chunk_state == "size":
                line_end = self._raw.find(b"\r\n")
                if line_end < 0:
                    return
                size_text = self._raw[:line_end].split(b";")[0].strip()
                self._raw = self._raw[line_end + 2:]
                self._chunk_left = int(size_text, 16)
                self._chunk_state = "data" if self._chunk_left else "trailer"
            elif self._chunk_state == "data":
                if not self._raw:
                    return
                take = self._raw[: self._chunk_left]
                self._raw = self._raw[len(take):]
                self._body += take
                self._chunk_left -= len(take)
                if self._chunk_left == 0:
                    self._chunk_state = "crlf"
            elif self._chunk_state == "crlf":
                if len(self._raw) < 2:
                    return
                assert self._raw[:2] == b"\r\n", f"bad chunk terminator {self._raw[:8]!r}"
                self._raw = self._raw[2:]
                self._chunk_state = "size"
            else:  # trailer: lines until an empty one; then the body is complete
                line_end = self._raw.find(b"\r\n")
                if line_end < 0:
                    return
                line = self._raw[:line_end]
                self._raw = self._raw[line_end + 2:]
                if not line:
                    self.eof = True
                    return

    # -- event stream ----------------------------------------------------------------------
    def _pump(self, deadline: float) -> None:
        """Reads once from the socket and parses whatever became complete."""
        chunk = self._recv(deadline)
        if not chunk:
            self.eof = True
        self._raw += chunk
        self._process()

    def _process(self) -> None:
        self._decode_body()
        body, self._body = self._body, b""
        if self._gunzip is not None:
            body = self._gunzip.decompress(body)
        self._text += body
        self._parse_lines()

    def _parse_lines(self) -> None:
        while True:
            newline = min((i for i in (self._text.find(b"\n"), self._text.find(b"\r")) if i >= 0),
                          default=-1)
            if newline < 0:
                return
            if self._text[newline:newline + 1] == b"\r":
                if newline + 1 == len(self._text) and not self.eof:
                    return  # a CR at the end may be the first half of CRLF
                end = newline + 2 if self._text[newline + 1:newline + 2] == b"\n" else newline + 1
            else:
                end = newline + 1
            line = self._text[:newline].decode("utf-8")
            self._text = self._text[end:]
            self._line(line)

    def _line(self, line: str) -> None:
        if line == "":
            if self._fields:
                data = self._fields.get("data")
                event = Event(type=str(self._fields.get("event") or "message"),
                              id=self._fields.get("id"),  # type: ignore[arg-type]
                              data="\n".join(data) if data is not None else None)  # type: ignore
                self.events.append(event)
                self.received.append(event)
            self._fields = {}
            return
        if line.startswith(":"):
            self.comments.append(line[1:].strip())
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._fields.setdefault("data", []).append(value)  # type: ignore[union-attr]
        elif name in ("event", "id"):
            self._fields[name] = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value)
            if not self.received:
                self.retry_before_first_event = True

    def next_event(self, timeout: float = DEFAULT_TIMEOUT) -> Event | None:
        """The next event, or None when the stream ended. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while not self.events:
            if self.eof:
                return None
            try:
                self._pump(deadline)
            except TimeoutError:
                raise TimeoutError(
                    f"no event within {timeout}s; so far: {[(e.type, e.id) for e in self.received]}"
                ) from None
        return self.events.pop(0)

    def expect_event(self, timeout: float = DEFAULT_TIMEOUT) -> Event:
        event = self.next_event(timeout)
        if event is None:
            raise StreamClosed(
                f"the stream ended; received {[(e.type, e.id) for e in self.received]}")
        return event

    def take(self, count: int, timeout: float = DEFAULT_TIMEOUT) -> list[Event]:
        deadline = time.monotonic() + timeout
        return [self.expect_event(max(0.01, deadline - time.monotonic())) for _ in range(count)]

    def wait_for_comment(self, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.comments:
            if self.eof:
                raise StreamClosed(f"the stream ended without a ': {text}' comment")
            try:
                self._pump(deadline)
            except TimeoutError:
                raise TimeoutError(f"no ': {text}' comment within {timeout}s") from None

    def read_to_end(self, timeout: float = DEFAULT_TIMEOUT) -> list[Event]:
        """Every remaining event until the server ends the stream."""
        deadline = time.monotonic() + timeout
        rest: list[Event] = []
        while True:
            event = self.next_event(max(0.01, deadline - time.monotonic()))
            if event is None:
                return rest
            rest.append(event)

    def assert_quiet(self, seconds: float) -> None:
        """No event arrives for a while (used only to show that something did NOT happen,
        never to measure speed)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.events and not self.eof:
            try:
                self._pump(deadline)
            except TimeoutError:
                break
        assert not self.events, f"unexpected events {[(e.type, e.id) for e in self.events]}"

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "SSEStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
