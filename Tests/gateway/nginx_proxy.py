"""Real nginx (Debian's nginx-light) with the shipped deploy/nginx/jetstream.conf in front of a
gateway on 127.0.0.1, for the suites that go through a proxy (test_gateway_nginx.py, the bench, the
browser demo).

nginx runs unprivileged in a prefix directory of the caller's own (pid file, logs, temp paths); the
site config is the deployed file with only its upstream address and listen port substituted."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = ROOT / "deploy" / "nginx" / "jetstream.conf"
MAIN = ROOT / "deploy" / "nginx" / "nginx-test.conf.template"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def site_config(upstream_port: int, listen_port: int) -> str:
    text = SITE.read_text()
    text, upstreams = re.subn(r"server jetstream:8080;", f"server 127.0.0.1:{upstream_port};", text)
    text, listens = re.subn(r"listen 80;", f"listen 127.0.0.1:{listen_port};", text)
    text, ipv6 = re.subn(r"\n\s*listen \[::\]:80;", "", text)
    assert (upstreams, listens, ipv6) == (1, 1, 1), "deploy/nginx/jetstream.conf changed shape"
    return text


class Nginx:
    def __init__(self, prefix: pathlib.Path, upstream_port: int):
        self.prefix = prefix
        self.prefix.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        (prefix / "jetstream.conf").write_text(site_config(upstream_port, self.port))
        user = "user root;" if os.geteuid() == 0 else ""
        (prefix / "nginx.conf").write_text(
            MAIN.read_text().replace("@PREFIX@", str(prefix)).replace("@USER@", user))
        self.command = [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                        "-e", str(prefix / "error.log")]
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def check(self) -> subprocess.CompletedProcess:
        return subprocess.run([*self.command, "-t"], capture_output=True, text=True, timeout=60)

    def start(self) -> "Nginx":
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, (
                f"nginx exited: {self.process.stderr.read().decode(errors='replace')}"
                f"{(self.prefix / 'error.log').read_text(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                return self
            except OSError:
                assert time.monotonic() < deadline, "nginx did not listen within 60 s"
                time.sleep(0.05)

    def stop(self, fast: bool = False) -> None:
        """SIGQUIT (graceful: open requests finish), or SIGTERM with `fast`."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM if fast else signal.SIGQUIT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
