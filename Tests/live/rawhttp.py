"""A tiny raw-socket HTTP/1.1 client for the conformance suites.

It sends exactly the bytes a test gives it and parses responses strictly enough to notice framing
mistakes (a HEAD response with a body, a short body, garbage between pipelined responses).
"""
from __future__ import annotations

import dataclasses
import json
import socket
import time


class ProtocolError(Exception):
    """The server sent bytes that are not a well-framed HTTP/1.1 response."""


@dataclasses.dataclass
class Response:
    version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of a header (case-insensitive name), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def header_values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]

    def json(self):
        return json.loads(self.body)

    @property
    def says_close(self) -> bool:
        """True when the response announces that the server closes the connection."""
        tokens = ",".join(self.header_values("connection")).lower().split(",")
        return "close" in (t.strip() for t in tokens)


class RawConnection:
    """One TCP connection to the server; every wait is bounded by `timeout` seconds."""

    def __init__(self, host: str, port: int, timeout: float = 10.0, rcvbuf: int | None = None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Set before connecting so the advertised window stays small (a slow reader).
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buffer = b""
        self.eof = False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sending

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_slowly(self, data: bytes, chunk: int = 1, pause: float = 0.0) -> None:
        """Sends `data` in pieces of `chunk` bytes, each its own TCP segment (Nagle is off)."""
        for start in range(0, len(data), chunk):
            self.sock.sendall(data[start : start + chunk])
            if pause:
                time.sleep(pause)

    # -- receiving

    def _fill(self, deadline: float) -> bool:
        """Reads more bytes into the buffer; False at end of stream."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out waiting for the server")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        except socket.timeout as error:
            raise TimeoutError("timed out waiting for the server") from error
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def _read_until(self, marker: bytes, deadline: float) -> bytes:
        while True:
            index = self.buffer.find(marker)
            if index >= 0:
                line = self.buffer[:index]
                self.buffer = self.buffer[index + len(marker) :]
                return line
            if not self._fill(deadline):
                raise ProtocolError(f"connection closed before {marker!r}; got {self.buffer[:200]!r}")

    def _read_exactly(self, count: int, deadline: float) -> bytes:
        while len(self.buffer) < count:
            if not self._fill(deadline):
                raise ProtocolError(f"connection closed after {len(self.buffer)} of {count} body bytes")
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def read_head(self, timeout: float | None = None) -> Response:
        """Reads a status line and header section (the body is left in the stream)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        head = self._read_until(b"\r\n\r\n", deadline)
        lines = head.split(b"\r\n")
        parts = lines[0].decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"bad status line {lines[0]!r}")
        headers = []
        for line in lines[1:]:
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or name != name.strip():
                raise ProtocolError(f"bad header line {line!r}")
            headers.append((name, value.strip()))
        return Response(parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "", headers, b"")

    def read_response(self, method: str = "GET", timeout: float | None = None) -> Response:
        """Reads one final response (interim 1xx responses are returned as they come)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        response = self.read_head(timeout)
        if method == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200:
            return response
        transfer = ",".join(response.header_values("transfer-encoding")).lower()
        length = response.header("content-length")
        if "chunked" in transfer:
            response.body = self._read_chunked(deadline)
        elif length is not None:
            response.body = self._read_exactly(int(length), deadline)
        else:
            while self._fill(deadline):
                pass
            response.body, self.buffer = self.buffer, b""
        return response

    def _read_chunked(self, deadline: float) -> bytes:
        body = b""
        while True:
            size_line = self._read_until(b"\r\n", deadline)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while self._read_until(b"\r\n", deadline):
                    pass  # trailer fields
                return body
            body += self._read_exactly(size, deadline)
            if self._read_exactly(2, deadline) != b"\r\n":
                raise ProtocolError("chunk data not followed by CRLF")

    def closed_by_server(self, timeout: float = 10.0) -> bool:
        """True when the server ends the connection (FIN or RST) within `timeout` seconds and sends
        nothing more before that; extra bytes raise, since they would be an unexpected response."""
        deadline = time.monotonic() + timeout
        try:
            while self._fill(deadline):
                pass
        except TimeoutError:
            return False
        if self.buffer:
            raise ProtocolError(f"unexpected bytes before close: {self.buffer[:200]!r}")
        return True

    def request(self, data: bytes, method: str = "GET") -> Response:
        self.send(data)
        return self.read_response(method)


def rejected(host: str, port: int, data: bytes, status: int | tuple[int, ...] = 400) -> Response:
    """Sends `data` on a fresh connection and asserts the server answers `status` and then closes
    the connection (a rejected message leaves the stream's framing unknown, RFC 9112 §11)."""
    statuses = status if isinstance(status, tuple) else (status,)
    with RawConnection(host, port) as conn:
        conn.send(data)
        response = conn.read_response()
        assert response.status in statuses, f"{data[:120]!r}: expected {statuses}, got {response.status}"
        assert conn.closed_by_server(), f"{data[:120]!r}: connection left open after {response.status}"
        return response


def still_serves(conn: RawConnection) -> bool:
    """True when a follow-up request on `conn` gets a 200: the connection was kept open and the
    previous exchange left it in a clean state."""
    response = conn.request(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
    return response.status == 200 and response.body == b"ok"
