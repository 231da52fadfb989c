"""Runs the real `jetstream serve` binary on loopback for the gateway suites.

A `GatewayServer` owns one data directory; it can be started, stopped with SIGTERM, killed with
SIGKILL and started again on the same directory (and, for clients that reconnect to a fixed
address such as a browser's EventSource, on the same port). With `JETSTREAM_TEST_STORE=postgres`
its store is a PostgreSQL database named after that directory instead of the SQLite file in it.
Optionally (netns_hosts.py) it runs under a `command_prefix` such as `ip netns exec NS` and listens
on `host` instead of 127.0.0.1.
"""
from __future__ import annotations

import os
import pathlib
import re
import selectors
import signal
import subprocess
import threading
import time

import postgres_cluster


def listening_line(host: str) -> re.Pattern[bytes]:
    return re.compile(rb"^jetstream listening on http://" + re.escape(host.encode())
                      + rb":(\d+)\r?\n$")


LISTENING_LINE = listening_line("127.0.0.1")

# Generous bounds: the suites run on a loaded 2-core machine next to compilers.
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0


class ServerStartError(AssertionError):
    pass


class GatewayServer:
    """One `jetstream serve` process over a data directory that outlives it."""

    def __init__(self, binary: pathlib.Path, data_dir: pathlib.Path, args: list[str] | None = None,
                 log_dir: pathlib.Path | None = None, command_prefix: list[str] | None = None,
                 host: str = "127.0.0.1"):
        self.binary = pathlib.Path(binary)
        self.command_prefix = list(command_prefix or [])
        self.host = host
        self.data_dir = pathlib.Path(data_dir)
        self.args = list(args or [])
        self.log_dir = pathlib.Path(log_dir or data_dir.parent)
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.starts = 0
        self.extra_stdout = bytearray()
        self._drain: threading.Thread | None = None
        self._log_file = None

    # -- addresses -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self.port is not None, "the server was never started"
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> pathlib.Path:
        return self.log_dir / f"jetstream-{self.data_dir.name}-{self.starts}.log"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- life cycle ------------------------------------------------------------------------
    def command(self, port: int) -> list[str]:
        """The `jetstream serve` command line; with `JETSTREAM_TEST_STORE=postgres` it adds
        `--database-url` for the database of this data directory (the session's PostgreSQL
        cluster, see postgres_cluster.py), so every suite runs unchanged on either store."""
        command = [*self.command_prefix, str(self.binary), "serve", "--host", self.host,
                   "--port", str(port), "--data-dir", str(self.data_dir), *self.args]
        if postgres_cluster.store_is_postgres() and not self.has_database_url:
            command += ["--database-url", postgres_cluster.database_url_for(self.data_dir)]
        return command

    @property
    def has_database_url(self) -> bool:
        return any(arg == "--database-url" or arg.startswith("--database-url=")
                   for arg in self.args)

    def start(self, port: int = 0) -> "GatewayServer":
        """Starts the server and waits for its one listening line; a fixed `port` that is still
        held by the previous process (or its sockets) is retried until START_TIMEOUT."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            error = self._try_start(port, deadline)
            if error is None:
                return self
            if port == 0 or time.monotonic() > deadline:
                raise ServerStartError(error)
            time.sleep(0.3)

    def _try_start(self, port: int, deadline: float) -> str | None:
        self.starts += 1
        self._log_file = open(self.log_path, "wb")
        self.extra_stdout = bytearray()
        self.process = subprocess.Popen(self.command(port), stdout=subprocess.PIPE,
                                        stderr=self._log_file, stdin=subprocess.DEVNULL)
        line = self._read_listening_line(deadline)
        if line is None:
            rc = self._reap(timeout=5)
            return (f"jetstream serve (port {port}) exited with {rc} before listening; "
                    f"log:\n{self.log_tail()}")
        match = listening_line(self.host).match(line)
        if not match:
            self.kill()
            return f"unexpected first stdout line {line!r}; log:\n{self.log_tail()}"
        self.port = int(match.group(1))
        assert port == 0 or self.port == port, f"asked for port {port}, listening on {self.port}"
        self._drain = threading.Thread(target=self._drain_stdout, daemon=True)
        self._drain.start()
        return None

    def _read_listening_line(self, deadline: float) -> bytes | None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        selector = selectors.DefaultSelector()
        selector.register(stdout, selectors.EVENT_READ)
        buffer = b""
        try:
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    raise ServerStartError(
                        f"no listening line within {START_TIMEOUT}s; log:\n{self.log_tail()}")
                if not selector.select(timeout=min(remaining, 1.0)):
                    if self.process.poll() is not None:
                        return None
                    continue
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    return None
                buffer += chunk
        finally:
            selector.close()
        line, _, rest = buffer.partition(b"\n")
        self.extra_stdout += rest
        return line + b"\n"

    def _drain_stdout(self) -> None:
        process = self.process
        if process is None or process.stdout is None:
            return
        while True:
            try:
                chunk = os.read(process.stdout.fileno(), 4096)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self.extra_stdout += chunk

    def _reap(self, timeout: float) -> int | None:
        if self.process is None:
            return None
        try:
            rc = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._drain is not None:
            self._drain.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return rc

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT. Returns the exit code (negative for a signal)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        rc = self._reap(STOP_TIMEOUT)
        if rc is None:
            self.process.kill()
            rc = self._reap(STOP_TIMEOUT)
            raise AssertionError(
                f"jetstream serve ignored SIGTERM for {STOP_TIMEOUT}s; log:\n{self.log_tail()}")
        return rc

    def kill(self) -> int | None:
        """SIGKILL: no chance to flush or close anything."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        return self._reap(STOP_TIMEOUT)

    def restart(self, same_port: bool = False, graceful: bool = True) -> "GatewayServer":
        port = self.port if same_port else 0
        if graceful:
            self.stop()
        else:
            self.kill()
        return self.start(port=port or 0)
