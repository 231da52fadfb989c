"""A few live checks of the engine through HTTPTestServer with curl and httpx (the big
conformance suites live in their own files)."""
import json
import pathlib
import signal
import subprocess
import time

import httpx
import pytest


@pytest.fixture()
def engine(bin_dir: pathlib.Path):
    """Starts HTTPTestServer on an ephemeral loopback port; yields (process, base URL)."""
    process = subprocess.Popen(
        [str(bin_dir / "HTTPTestServer"), "--host", "127.0.0.1", "--port", "0", "--loops", "2",
         "--heartbeat-interval", "1", "--grace-period", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline().strip()
    assert line.startswith("LISTENING "), f"unexpected first line {line!r}"
    port = int(line.split()[1])
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            stop(process)


def stop(process: subprocess.Popen) -> int:
    """SIGTERM, then SIGKILL if the server has not exited within 30 s (never leak a server)."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
        raise


def curl(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "--silent", "--show-error", "--max-time", "30", *arguments],
                          capture_output=True, text=True, timeout=60)


def test_health_static_and_keep_alive_with_curl(engine):
    _, base = engine
    result = curl("--verbose", f"{base}/health", f"{base}/static")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")
    assert len(result.stdout) == 2 + 2560
    assert json.loads(result.stdout[2:])["kind"] == "static"
    assert "Re-using existing connection" in result.stderr


def test_echo_shows_the_parsed_request(engine):
    _, base = engine
    with httpx.Client() as client:
        response = client.post(f"{base}/echo?x=1", content=b"payload", headers={"X-Test": "spaced value"})
    assert response.status_code == 200
    echoed = response.json()
    assert echoed["method"] == "POST"
    assert echoed["target"] == "/echo?x=1"
    assert echoed["version"] == "HTTP/1.1"
    assert ["X-Test", "spaced value"] in [[name, value] for name, value in echoed["headers"]]
    assert echoed["body"] == "payload" and echoed["bodyLength"] == 7


def test_sse_stream_and_broadcast(engine):
    _, base = engine
    ticks = curl("--no-buffer", f"{base}/sse?count=3&interval_ms=10")
    assert ticks.stdout == "".join(f'id: {i}\nevent: tick\ndata: {{"i":{i}}}\n\n' for i in (1, 2, 3))

    with httpx.Client(timeout=30) as client, client.stream("GET", f"{base}/subscribe") as stream:
        assert stream.headers["content-type"] == "text/event-stream"
        deadline = time.monotonic() + 30
        published = None
        while published != 1 and time.monotonic() < deadline:
            published = httpx.post(f"{base}/publish", content=b"hello\nworld").json()["subscribers"]
        assert published == 1
        received = ""
        for chunk in stream.iter_text():
            received += chunk
            if "data: world\n\n" in received:
                break
        assert "data: hello\ndata: world\n\n" in received


def test_rejects_smuggling_shapes_with_400(engine):
    _, base = engine
    result = curl("--include", "-H", "Content-Length: 3", "-H", "Transfer-Encoding: chunked",
                  "--data-binary", "abc", f"{base}/echo")
    assert result.stdout.startswith("HTTP/1.1 400 Bad Request")


def test_sigterm_ends_streams_and_exits_zero(engine):
    process, base = engine
    subscriber = subprocess.Popen(["curl", "--silent", "--no-buffer", "--max-time", "30", f"{base}/subscribe"],
                                  stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while httpx.get(f"{base}/stats").json()["openStreams"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stop(process) == 0
    assert subscriber.wait(timeout=30) == 0


def test_unix_socket_listener(bin_dir: pathlib.Path, tmp_path: pathlib.Path):
    path = tmp_path / "engine.sock"
    process = subprocess.Popen(
        [str(bin_dir / "HTTPTestServer"), "--port", "0", "--loops", "2", "--unix-socket", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout.readline().startswith("LISTENING ")
        result = curl("--unix-socket", str(path), "http://localhost/health")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "ok"
    finally:
        assert stop(process) == 0
    assert not path.exists()


def test_out_of_file_descriptors_sheds_connections_and_recovers(bin_dir: pathlib.Path):
    import resource
    import socket

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

    process = subprocess.Popen(
        [str(bin_dir / "HTTPTestServer"), "--port", "0", "--loops", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=low_limit)
    try:
        port = int(process.stdout.readline().split()[1])
        clients = []
        for _ in range(80):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        # Past the limit the server accepts and closes at once (spare descriptor trick) instead of
        # leaving the backlog to spin on; some of these sockets therefore see EOF.
        shed = 0
        for client in clients:
            client.settimeout(0.2)
            try:
                if client.recv(1) == b"":
                    shed += 1
            except (socket.timeout, ConnectionResetError):
                pass
        assert shed > 0
        for client in clients:
            client.close()
        deadline = time.monotonic() + 30
        ok = None
        while ok != "ok" and time.monotonic() < deadline:
            ok = curl(f"http://127.0.0.1:{port}/health").stdout
        assert ok == "ok"
        assert process.poll() is None
    finally:
        assert stop(process) == 0
