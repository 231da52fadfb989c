"""Shutdown: SIGTERM always ends in a graceful exit 0, also the instant the listening line
appears (the line waits until SIGTERM and SIGINT are caught, see SignalReadiness)."""
from __future__ import annotations

import pytest

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


@pytest.mark.embedded_store  # the SQLite file and its lock
def test_a_second_server_on_the_same_data_directory_or_port_refuses_to_start(start_server, jetstream_bin, tmp_path):
    import subprocess
    first = start_server()
    # Same data directory, another port: it would serve stale state beside the first.
    same_dir = subprocess.run([str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(first.data_dir)],
                              capture_output=True, timeout=120)
    assert same_dir.returncode != 0
    assert b"has this store open" in same_dir.stderr and b"one gateway per data directory" in same_dir.stderr
    # Same port, another data directory: SO_REUSEPORT would let the kernel split clients between them.
    same_port = subprocess.run([str(jetstream_bin), "serve", "--port", str(first.port),
                                "--data-dir", str(tmp_path / "other")], capture_output=True, timeout=120)
    assert same_port.returncode != 0
    assert b"another process listens there" in same_port.stderr
    # The first one is untouched.
    api = Api(first.url)
    try:
        assert api.http.get("/readyz").status_code == 200
    finally:
        api.close()


@pytest.mark.embedded_store  # the SQLite file and its lock
def test_an_empty_store_file_is_refused_like_a_corrupt_one(jetstream_bin, tmp_path):
    import subprocess
    data = tmp_path / "data"
    data.mkdir()
    (data / "jetstream.sqlite").write_bytes(b"")
    result = subprocess.run([str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(data)],
                            capture_output=True, timeout=120)
    assert result.returncode != 0
    assert b"is corrupt" in result.stderr and b"empty (0 bytes)" in result.stderr
    assert (data / "jetstream.sqlite").read_bytes() == b""
