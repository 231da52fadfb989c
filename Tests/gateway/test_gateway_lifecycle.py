"""Shutdown: SIGTERM always ends in a graceful exit 0, also the instant the listening line
appears (the line waits until SIGTERM and SIGINT are caught, see SignalReadiness)."""
from __future__ import annotations

from gateway_helpers import Api


def test_sigterm_right_after_the_listening_line_exits_0(start_server):
    server = start_server()
    codes = []
    for _ in range(10):
        codes.append(server.stop())
        server.start()
    codes.append(server.stop())
    assert codes == [0] * 11


def test_the_server_prints_one_listening_line_and_exits_0_on_sigterm(start_server):
    server = start_server()
    assert Api(server.url).http.get("/healthz").status_code == 200
    assert server.stop() == 0
    assert bytes(server.extra_stdout) == b"", "stdout holds more than the listening line"
