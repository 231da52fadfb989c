"""fault_proxy.FaultProxy on real sockets: an echo server on 127.0.0.1 behind the proxy, and
clients that connect through it. Every wait is a bounded poll or a socket timeout; times are
asserted only from below (a fault must cost at least what it promises)."""
from __future__ import annotations

import json
import os
import pathlib
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import fault_proxy
from fault_proxy import THREAD_PREFIX, FaultProxy

BOUND = 5.0  # seconds any expected event may take on a loaded machine
SILENCE = 0.5  # how long a black-holed connection is watched for a byte or an EOF


class EchoServer:
    """Echoes each connection's bytes back until EOF; counts what it received."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.received = 0
        self.open = 0
        self.conns: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.accepter = threading.Thread(target=self._accept, name="echo-accept", daemon=True)
        self.accepter.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.open += 1
                self.conns.append(conn)
            thread = threading.Thread(target=self._echo, args=(conn,), name="echo", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _echo(self, conn):
        try:
            while data := conn.recv(65536):
                with self.lock:
                    self.received += len(data)
                conn.sendall(data)
        except OSError:
            pass
        finally:
            conn.close()
            with self.lock:
                self.open -= 1

    def drop_connections(self):
        """Closes the server's side of every connection (the threads see EOF and close)."""
        with self.lock:
            conns = list(self.conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.listener.close()
        self.accepter.join(BOUND)
        self.drop_connections()
        for thread in self.threads:
            thread.join(BOUND)


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo):
    with FaultProxy(upstream=("127.0.0.1", echo.port)) as proxy:
        yield proxy


def connect(proxy) -> socket.socket:
    sock = socket.create_connection(proxy.address, timeout=BOUND)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def connect_or_reset(proxy) -> socket.socket | None:
    """None when the proxy's reset came before the client's connect() returned."""
    try:
        return connect(proxy)
    except ConnectionResetError:
        return None


def recv_exactly(sock, size) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(65536, size - got))
        assert chunk, f"EOF after {got} of {size} bytes"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def round_trip(sock, payload: bytes) -> bytes:
    sock.sendall(payload)
    return recv_exactly(sock, len(payload))


def wait_until(condition, what: str):
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"not within {BOUND} s: {what}"
        time.sleep(0.01)


def assert_silent(sock):
    """Nothing comes back, not even an EOF or a reset, for SILENCE seconds."""
    sock.settimeout(SILENCE)
    with pytest.raises(socket.timeout):
        sock.recv(1)
    sock.settimeout(BOUND)


def assert_reset(sock):
    """An RST arrives within BOUND seconds, with no data or FIN first."""
    sock.settimeout(BOUND)
    with pytest.raises(ConnectionResetError):
        data = sock.recv(1)
        pytest.fail(f"got {data!r} instead of a reset")


def assert_ended(sock):
    """The connection ends (FIN or RST) within BOUND seconds, with no data first."""
    sock.settimeout(BOUND)
    try:
        data = sock.recv(1)
    except ConnectionResetError:
        return
    assert data == b"", f"got {data!r} instead of the connection's end"


@pytest.mark.parametrize("latency,size", [(None, 300 * 1024), ((0.01, 0.01), 3 * 1024 * 1024)],
                         ids=["direct", "delayed-beyond-the-queue-limit"])
def test_passes_bytes_through_intact_and_forwards_eof(proxy, echo, latency, size, monkeypatch):
    payload = os.urandom(size)
    if latency:
        # A small queue limit makes the proxy stop and resume reading many times on the way.
        monkeypatch.setattr(fault_proxy, "QUEUE_LIMIT", 64 * 1024)
        proxy.set_latency(*latency, seed=2)
    with connect(proxy) as sock:
        sender = threading.Thread(target=lambda: (sock.sendall(payload),
                                                  sock.shutdown(socket.SHUT_WR)))
        sender.start()
        echoed = recv_exactly(sock, len(payload))
        assert sock.recv(1) == b"", "the echo server's close reaches the client as an EOF"
        sender.join(BOUND)
    assert echoed == payload
    wait_until(lambda: proxy.stats.open == 0, "both halves closed end the proxied connection")
    stats = proxy.stats
    assert (stats.accepted, stats.bytes_up, stats.bytes_down, stats.resets) == (
        1, size, size, 0)


def test_latency_delays_each_direction_and_keeps_order(proxy):
    with connect(proxy) as sock:
        assert round_trip(sock, b"warm") == b"warm"
        proxy.set_latency(0.1)
        for _ in range(2):  # the fault holds until changed
            started = time.monotonic()
            assert round_trip(sock, b"ping") == b"ping"
            assert time.monotonic() - started >= 0.2, "100 ms up and 100 ms down"

        proxy.set_latency(0.03, jitter=0.03, seed=1)
        messages = [f"{i:05d};".encode() for i in range(300)]
        for message in messages:  # separate chunks, each with its own random delay
            sock.sendall(message)
        assert recv_exactly(sock, sum(map(len, messages))) == b"".join(messages)


def test_black_hole_swallows_bytes_without_closing_and_accepts_silent_connections(proxy, echo):
    with connect(proxy) as before:
        assert round_trip(before, b"hello") == b"hello"
        received = echo.received
        proxy.black_hole()

        before.sendall(b"into the void")
        assert_silent(before)
        before.sendall(b"still open")  # no reset came back: the connection is alive
        assert_silent(before)
        assert echo.received == received, "nothing reached the upstream"
        assert echo.open == 1, "the upstream side was not closed either"

        with connect(proxy) as during:
            wait_until(lambda: proxy.stats.accepted == 2, "the new connection is accepted")
            during.sendall(b"anyone?")
            assert_silent(during)
        assert echo.open == 1, "a black-holed new connection never reaches the upstream"
        assert proxy.stats.swallowed >= len(b"into the void" b"still open")

        echo.drop_connections()
        wait_until(lambda: echo.open == 0, "the upstream closed its side")
        assert_silent(before)  # its FIN was swallowed too


def test_heal_resets_black_holed_connections_and_new_ones_work(proxy):
    with connect(proxy) as before:
        assert round_trip(before, b"hello") == b"hello"
        proxy.black_hole()
        with connect(proxy) as during:
            during.sendall(b"lost")
            assert_silent(during)
            proxy.heal()
            assert_reset(during)
        assert_reset(before)
    with connect(proxy) as after:
        assert round_trip(after, b"back") == b"back"


def test_reset_all_resets_every_open_connection_and_no_later_one(proxy, echo):
    socks = [connect(proxy) for _ in range(3)]
    try:
        for sock in socks:
            assert round_trip(sock, b"up") == b"up"
        assert proxy.reset_all() == 3
        for sock in socks:
            assert_reset(sock)
        wait_until(lambda: echo.open == 0, "the upstream sides are closed too")
        assert proxy.stats.resets == 3
        with connect(proxy) as later:
            assert round_trip(later, b"fine") == b"fine"
    finally:
        for sock in socks:
            sock.close()


def test_drop_randomly_with_certainty_resets_every_new_connection(proxy):
    with connect(proxy) as older:
        assert round_trip(older, b"old") == b"old"
        proxy.drop_randomly(1.0, seed=3, within=0.3)
        socks = [connect_or_reset(proxy) for _ in range(5)]
        try:
            for sock in filter(None, socks):
                assert_reset(sock)
            wait_until(lambda: proxy.stats.resets == 5, "all five were reset")
        finally:
            for sock in filter(None, socks):
                sock.close()
        assert round_trip(older, b"untouched") == b"untouched", "only new connections are drawn"
        proxy.drop_randomly(0.0)
        with connect(proxy) as spared:
            assert round_trip(spared, b"spared") == b"spared"


def test_an_upstream_that_refuses_resets_the_client():
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    with FaultProxy(upstream=("127.0.0.1", port)) as proxy:
        sock = connect_or_reset(proxy)
        if sock:
            with sock:
                assert_reset(sock)
        wait_until(lambda: proxy.stats.resets == 1, "the proxy reset the client")


def test_close_frees_the_port_and_stops_the_thread(echo):
    proxy = FaultProxy(upstream=("127.0.0.1", echo.port)).start()
    open_sock = connect(proxy)
    assert round_trip(open_sock, b"x") == b"x"
    port = proxy.port
    assert any(t.name.startswith(THREAD_PREFIX) for t in threading.enumerate())
    proxy.close()
    proxy.close()  # idempotent
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=BOUND).close()
    assert not [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    assert_ended(open_sock)  # its connection was closed too
    open_sock.close()
    with pytest.raises(RuntimeError):
        proxy.black_hole()


def test_only_loopback_upstreams():
    with pytest.raises(ValueError):
        FaultProxy(upstream=("10.0.0.1", 5432))


# --- the command line: one proxy for another process (the client tests start it as a child) ---

SCRIPT = pathlib.Path(__file__).resolve().parent / "fault_proxy.py"
LISTENING = re.compile(r"fault proxy listening on 127\.0\.0\.1:(\d+)\n")


class CliProxy:
    """`python3 fault_proxy.py ARGS` with stdin and stdout on pipes; `address` from its one line."""

    def __init__(self, *args: str):
        # Started with SIGTERM and SIGINT blocked, as Foundation's Process starts it (the Swift
        # tests): the proxy must unblock them or it would ignore them.
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK,
                                                      {signal.SIGTERM, signal.SIGINT}))
        self.first = self._line()
        match = LISTENING.fullmatch(self.first)
        assert match, f"the first line was {self.first!r}"
        self.address = ("127.0.0.1", int(match[1]))

    def _line(self) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], BOUND)
        assert ready, f"no line within {BOUND} s"
        return self.process.stdout.readline().decode()

    def finish(self) -> dict:
        """Waits for the exit the test caused; returns the stats line, which must be the last."""
        self.process.wait(timeout=BOUND)  # not communicate(): it flushes stdin, maybe closed
        out, err = self.process.stdout.read(), self.process.stderr.read()
        assert self.process.returncode == 0, f"exit {self.process.returncode}: {err.decode()}"
        lines = out.decode().splitlines()
        assert len(lines) == 1, f"one line after the first, the stats: {lines}"
        return json.loads(lines[0])

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=BOUND)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            pipe.close()


@pytest.fixture
def cli():
    started = []

    def start(*args: str) -> CliProxy:
        started.append(CliProxy(*args))
        return started[-1]
    yield start
    for proxy in started:
        proxy.kill()


def test_cli_delays_by_its_flags_and_prints_its_stats_at_sigterm(echo, cli):
    proxy = cli("--upstream", f"127.0.0.1:{echo.port}", "--latency", "0.05", "--jitter", "0.01",
                "--seed", "4")
    with socket.create_connection(proxy.address, timeout=BOUND) as sock:
        started = time.monotonic()
        assert round_trip(sock, b"ping") == b"ping"
        assert time.monotonic() - started >= 0.08, "40 ms or more each way"
    proxy.process.send_signal(signal.SIGTERM)
    stats = proxy.finish()
    assert stats == {"accepted": 1, "open": 0, "bytes_up": 4, "bytes_down": 4, "swallowed": 0,
                     "resets": 0, "dropped": 0}


def test_cli_drops_at_most_max_drops_and_stops_at_the_end_of_stdin(echo, cli):
    proxy = cli("--upstream", f"127.0.0.1:{echo.port}", "--drop", "1", "--drop-within", "0.2",
                "--max-drops", "2", "--seed", "5")
    for _ in range(2):  # one after the other: each is chosen, and reset within 0.2 s
        sock = connect_or_reset(proxy)
        if sock:
            with sock:
                assert_reset(sock)
    with socket.create_connection(proxy.address, timeout=BOUND) as spared:
        assert round_trip(spared, b"third") == b"third"
        assert_silent(spared)  # longer than --drop-within: the budget is spent, no reset came
        assert round_trip(spared, b"alive") == b"alive"
    proxy.process.stdin.close()
    stats = proxy.finish()
    assert (stats["accepted"], stats["dropped"], stats["resets"]) == (3, 2, 2), stats


def test_cli_refuses_bad_flags_naming_them(cli):
    for args, words in [(["--upstream", "10.0.0.1:5432"], "loopback"),
                        (["--upstream", "127.0.0.1:1", "--drop", "1.5"], "--drop"),
                        (["--upstream", "127.0.0.1:1", "--max-drops", "-1"], "--max-drops")]:
        run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                             timeout=BOUND, stdin=subprocess.DEVNULL)
        assert run.returncode == 2 and words in run.stderr.decode(), (args, run)
        assert run.stdout == b"", "no listening line for a proxy that never listened"
