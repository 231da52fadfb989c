"""What the engine refuses before routing is seen, not only answered (docs/gateway.md,
"Metrics"): a malformed or smuggling head, an over-long one or one that never ends gets an
access-log line with the reason and `jetstream_http_rejected_total{status, reason}`; running out of
file descriptors is logged (once per tick) and counted in `jetstream_connections_shed_total`."""
from __future__ import annotations

import re
import socket
import time

from gateway_helpers import Api
from gateway_server import GatewayServer
from test_gateway_metrics import samples

REFUSED = [
    # Content-Length with Transfer-Encoding: the classic smuggling pair.
    (b"POST /v1/scopes/x/changesets HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nX: 1\nY: 2\r\n\r\n", 400),  # bare LF
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nX: " + b"v" * 20000 + b"\r\n\r\n", 431),
]


def refuse(port: int, request: bytes) -> tuple[int, str]:
    """Sends `request` on a new connection; returns the status and the body (the reason)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < content_length(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode(errors="replace")


def content_length(answer: bytes) -> int:
    match = re.search(rb"(?i)content-length: (\d+)", answer)
    return int(match.group(1)) if match else 0


def test_refused_heads_get_an_access_log_line_and_a_counter_with_the_reason(start_server):
    server = start_server()
    answers = [refuse(server.port, request) for request, _ in REFUSED]
    assert [status for status, _ in answers] == [status for _, status in REFUSED]
    api = Api(server.url)
    metrics = samples(api)
    api.close()
    rejected = {key: value for key, value in metrics.items() if key.startswith("jetstream_http_rejected_total")}
    assert sum(rejected.values()) == len(REFUSED), rejected
    for status, body in answers:
        # The metric's reason is the sentence the client was answered (the problem's detail).
        assert any(f'status="{status}"' in key and reason_in(key) in body for key in rejected), (status, body, rejected)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server.log_path.read_text(errors="replace").count("rejected=") < len(REFUSED):
        time.sleep(0.1)
    lines = [line for line in server.log_path.read_text(errors="replace").splitlines() if "rejected=" in line]
    assert len(lines) == len(REFUSED), server.log_tail()
    assert all(" - - HTTP/1.1 " in line for line in lines), lines


def reason_in(key: str) -> str:
    return re.search(r'reason="((?:[^"\\]|\\.)*)"', key).group(1)


class LimitedServer(GatewayServer):
    """`jetstream serve` under `prlimit --nofile=N`: few file descriptors."""

    def __init__(self, *args, nofile: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.nofile = nofile

    def command(self, port: int) -> list[str]:
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", "--", *super().command(port)]


def test_running_out_of_descriptors_is_logged_and_counted(jetstream_bin, tmp_path):
    server = LimitedServer(jetstream_bin, tmp_path / "data", [], log_dir=tmp_path, nofile=64).start()
    try:
        clients = []
        for _ in range(120):
            try:
                clients.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
            except OSError:
                break
        time.sleep(1.5)  # the loop's tick (1 s) logs and counts what it shed
        for client in clients:
            client.close()
        deadline = time.monotonic() + 20
        shed = 0.0
        while time.monotonic() < deadline and shed == 0:
            try:
                api = Api(server.url)
                shed = samples(api).get("jetstream_connections_shed_total", 0.0)
                api.close()
            except Exception:  # noqa: BLE001 — still at the limit: try again
                pass
            if shed == 0:
                time.sleep(0.5)
        assert shed > 0, server.log_tail()
        assert "out of file descriptors" in server.log_path.read_text(errors="replace")
    finally:
        server.kill()
