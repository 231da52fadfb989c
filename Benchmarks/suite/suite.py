#!/usr/bin/env python3
"""Side-by-side benchmark suite: the gateway, the Hummingbird 2 reference and nginx under
the same workloads, driven by `jetstream bench`; one Markdown table with ratios to the gateway.

Run it through Benchmarks/suite/run.sh (same arguments). Python 3 standard library only.

  targets    gateway            .build/release/jetstream serve (fresh data dir, --no-access-log)
             hummingbird        Benchmarks/reference-hummingbird: jetstream-reference
             hummingbird-light  the same binary with --light (light checks, one mutex per scope)
             nginx              the gateway's exact state bytes as a static file (GET only: the ceiling)
  workloads  get          GET /v1/scopes/canvas-read (≈2.5 KB of state)   jetstream bench read
             post         32 writers, durable change sets, 1 scope        jetstream bench write
             post-32      32 writers, durable change sets, 32 scopes      jetstream bench write
             fanout-1k    1000 SSE subscribers, 100 change sets/s         jetstream bench fanout
             fanout-5k    5000 SSE subscribers, 100 change sets/s         jetstream bench fanout
             idle         RSS growth over 10 000 idle SSE streams         jetstream bench idle
             apply        validate + apply at 10k/100k/1M objects         ModelBench --json (gateway)

Every (workload, target) pair runs against a freshly started server on a free loopback port,
stopped afterwards (SIGTERM, SIGKILL after a bound). While the bench runs, /proc is sampled for
the server's CPU time (utime+stime) and RSS, summed over nginx's master and workers.
Every step is bounded by a timeout. Exit status 1 when any bench failed (reported as FAILED).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUITE = ROOT / "Benchmarks" / "suite"
REFERENCE_PACKAGE = ROOT / "Benchmarks" / "reference-hummingbird"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"

TARGETS = ["gateway", "hummingbird", "hummingbird-light", "nginx"]
# Targets served by the reference binary (Benchmarks/reference-hummingbird).
REFERENCE_TARGETS = {"hummingbird", "hummingbird-light"}
WORKLOADS = ["get", "post", "post-32", "fanout-1k", "fanout-5k", "idle", "apply"]
SUPPORTS = {
    "gateway": set(WORKLOADS),
    "hummingbird": {"get", "post", "post-32", "fanout-1k", "fanout-5k", "idle"},
    "hummingbird-light": {"get", "post", "post-32", "fanout-1k", "fanout-5k", "idle"},
    "nginx": {"get"},
}
# Workloads of one request per answer (req/s, latency, server CPU per request).
REQUEST_WORKLOADS = {"get", "post", "post-32"}
# The write workloads and the scopes their 32 writers share.
WRITE_SCOPES = {"post": 1, "post-32": 32}
READ_SCOPE = "canvas-read"
IDLE_SCOPE = "canvas-idle"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Failure(Exception):
    """A step that failed; the row is reported as FAILED with this message."""


# ---------------------------------------------------------------- HTTP helpers (loopback only)


def call(method: str, url: str, body: object | None = None, timeout: float = 30) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def ensure_scope(base: str, name: str) -> dict:
    status, body = call("PUT", f"{base}/v1/scopes/{name}", {"root": {"clsName": "Canvas"}})
    if status == 409:
        status, body = call("GET", f"{base}/v1/scopes/{name}")
    if status not in (200, 201):
        raise Failure(f"creating scope {name} answered {status}: {body[:200]!r}")
    return json.loads(body)


def prepare_read_scope(base: str, shapes: int) -> bytes:
    """Scope canvas-read with SHAPES Shape objects linked into Canvas.shapes (one change set,
    like Benchmarks/gateway/bench_helper.py `shapes`); returns the state's bytes as GET serves them."""
    state = ensure_scope(base, READ_SCOPE)
    ids = [str(uuid.uuid4()) for _ in range(shapes)]
    fragments: list[dict] = [
        {"type": "add", "uuid": i, "clsName": "Shape",
         "properties": {"x": 10.5 * n, "y": 20.25 * n, "width": 120, "height": 80,
                        "label": f"shape number {n} of the benchmark canvas", "kind": "oval" if n % 2 else "rect"}}
        for n, i in enumerate(ids)]
    fragments.append({"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas",
                      "properties": {"name": "benchmark canvas", "shapes": ids}})
    status, body = call("POST", f"{base}/v1/scopes/{READ_SCOPE}/changesets", {"fragments": fragments})
    if status != 200:
        raise Failure(f"adding shapes answered {status}: {body[:200]!r}")
    status, body = call("GET", f"{base}/v1/scopes/{READ_SCOPE}")
    if status != 200:
        raise Failure(f"GET {READ_SCOPE} answered {status}")
    return body


def check_nginx(base: str, expected: bytes) -> None:
    """nginx must serve exactly the gateway's state bytes, as JSON, and only to GET."""
    with urllib.request.urlopen(f"{base}/v1/scopes/{READ_SCOPE}", timeout=10) as response:
        body, kind = response.read(), response.headers.get("Content-Type")
    if body != expected or kind != "application/json":
        raise Failure(f"nginx serves {len(body)} B as {kind!r}, expected the gateway's {len(expected)} B of JSON")
    status, _ = call("POST", f"{base}/v1/scopes/{READ_SCOPE}", {"fragments": []})
    if status != 403:
        raise Failure(f"nginx answered POST with {status}, expected 403 (GET only)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------- /proc sampling


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # fields[1] is the ppid (field 4 of stat)
            found.append(int(entry))
    return found


def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def proc_status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class ProcessTree:
    """The server's process and (for nginx) its worker children."""

    def __init__(self, pid: int, with_children: bool):
        self.pid = pid
        self.with_children = with_children

    def pids(self) -> list[int]:
        return [self.pid] + (children_of(self.pid) if self.with_children else [])

    def _sum(self, read) -> float:
        total = 0
        for pid in self.pids():
            try:
                total += read(pid)
            except (OSError, ValueError, IndexError):
                pass  # a process that just exited
        return total

    def cpu_seconds(self) -> float:
        return self._sum(proc_cpu_seconds)

    def rss_kib(self) -> int:
        return int(self._sum(lambda pid: proc_status_kib(pid, "VmRSS")))

    def hwm_kib(self) -> int:
        return int(self._sum(lambda pid: proc_status_kib(pid, "VmHWM")))


class Sampler:
    """Samples the tree's CPU time and RSS every INTERVAL seconds on a thread while a workload runs.
    CPU: the last sample minus the first (per process, so a worker's time is not lost to the sum
    changing shape). Peak RSS: the larger of the highest sampled sum of VmRSS and the sum of VmHWM
    at the end (for one process, VmHWM is the exact peak since it started)."""

    def __init__(self, tree: ProcessTree, interval: float = 0.2):
        self.tree = tree
        self.interval = interval
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.peak_rss_kib = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        rss = 0
        for pid in self.tree.pids():
            try:
                cpu = proc_cpu_seconds(pid)
                rss += proc_status_kib(pid, "VmRSS")
            except (OSError, ValueError, IndexError):
                continue
            self.first.setdefault(pid, cpu)
            self.last[pid] = cpu
        self.peak_rss_kib = max(self.peak_rss_kib, rss)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> "Sampler":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()
        self.hwm_kib = self.tree.hwm_kib()

    def result(self) -> dict:
        cpu = sum(self.last[pid] - self.first[pid] for pid in self.last)
        return {"cpuSeconds": round(cpu, 3), "peakRssKiB": max(self.peak_rss_kib, self.hwm_kib),
                "maxSampledRssKiB": self.peak_rss_kib, "vmHWMKiB": self.hwm_kib,
                "processes": len(self.last), "samples": self.samples}


# ---------------------------------------------------------------- targets


class Server:
    """One target process on loopback, in its own temp directory."""

    def __init__(self, name: str, command: list[str], workdir: pathlib.Path, port: int,
                 ready: str = "listening on", with_children: bool = False, start_timeout: float = 60):
        self.name = name
        self.command = command
        self.workdir = workdir
        self.port = port
        self.ready = ready
        self.with_children = with_children
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self) -> str:
        text = ""
        for name in ("stdout", "stderr", "error.log"):
            path = self.workdir / name
            if path.exists():
                text += path.read_text(errors="replace")[-600:]
        return text.strip()

    def start(self) -> "Server":
        out = open(self.workdir / "stdout", "w")
        err = open(self.workdir / "stderr", "w")
        # Its own session, so that a SIGKILL can reach nginx's workers too (by this group's id).
        self.process = subprocess.Popen(self.command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                        cwd=self.workdir, start_new_session=True)
        out.close()
        err.close()
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.process.poll() is not None:
                raise Failure(f"{self.name} exited with {self.process.returncode}: {self.log_tail()}")
            announced = (self.workdir / "stdout").read_text(errors="replace")
            if self.ready is None or self.ready in announced:
                match = re.search(r"listening on http://[^\s:]+:(\d+)", announced)
                if match and int(match.group(1)) != 0:
                    self.port = int(match.group(1))
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
                    return self
                except OSError:
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise Failure(f"{self.name} did not listen within {self.start_timeout:.0f} s: {self.log_tail()}")
            time.sleep(0.05)

    def tree(self) -> ProcessTree:
        assert self.process is not None
        return ProcessTree(self.process.pid, self.with_children)

    def stop(self, bound: float = 20) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            log(f"   {self.name} ignored SIGTERM for {bound:.0f} s: SIGKILL")
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)


NGINX_CONF = """\
{user}daemon off;
master_process on;
worker_processes auto;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    types {{ }}
    default_type application/json;
    sendfile on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location = /v1/scopes/{scope} {{
            limit_except GET {{ deny all; }}
            alias {dir}/html/state.json;
        }}
        location / {{ return 404; }}
    }}
}}
"""


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="jetstream-suite-"))
        self.servers: list[Server] = []
        self.state_bytes: bytes | None = None
        self.rows: list[dict] = []
        self.counter = 0

    # ------------------------------------------------------------ binaries

    def build(self) -> None:
        a = self.args
        steps: list[list[str]] = []
        if not a.jetstream:  # the gateway and `jetstream bench`
            steps.append(["swift", "build", "-c", "release", "--product", "jetstream"])
        if "apply" in a.workloads and "gateway" in a.targets and not a.modelbench:
            steps.append(["swift", "build", "-c", "release", "--product", "ModelBench"])
        if REFERENCE_TARGETS & set(a.targets) and not a.reference and REFERENCE_PACKAGE.is_dir():
            steps.append(["swift", "build", "-c", "release", "--package-path", str(REFERENCE_PACKAGE)])
        for step in steps:
            log("== " + " ".join(step))
            started = time.monotonic()
            result = subprocess.run(step, cwd=ROOT, stdout=sys.stderr, timeout=self.args.build_timeout)
            if result.returncode != 0 and str(REFERENCE_PACKAGE) in step:
                # The reference's rows fail; the gateway's still run.
                a.reference_build_failed = f"the reference did not build (swift build exit {result.returncode})"
                log(f"   {a.reference_build_failed}")
                continue
            if result.returncode != 0:
                raise SystemExit(f"build failed ({result.returncode}): {' '.join(step)}")
            log(f"   built in {time.monotonic() - started:.0f} s")

    def bin_path(self, package: pathlib.Path) -> pathlib.Path:
        out = subprocess.run(["swift", "build", "-c", "release", "--package-path", str(package), "--show-bin-path"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise SystemExit(f"swift build --show-bin-path failed: {out.stderr}")
        return pathlib.Path(out.stdout.strip())

    def resolve_binaries(self) -> None:
        a = self.args
        root_bin = None
        if not (a.jetstream and (a.modelbench or "apply" not in a.workloads)):
            root_bin = self.bin_path(ROOT)
        # Absolute: servers start in their own temp directories.
        self.jetstream = pathlib.Path(a.jetstream).resolve() if a.jetstream else root_bin / "jetstream"
        self.modelbench = (
            pathlib.Path(a.modelbench).resolve() if a.modelbench else (root_bin / "ModelBench" if root_bin else None))
        self.bench = shlex.split(a.bench_override) if a.bench_override else [str(self.jetstream), "bench"]
        # A missing reference fails its rows (FAILED), not the whole suite.
        self.reference = None
        self.reference_problem = None
        if REFERENCE_TARGETS & set(a.targets) and set(a.workloads) & SUPPORTS["hummingbird"]:
            if a.reference:
                self.reference = pathlib.Path(a.reference).resolve()
            elif REFERENCE_PACKAGE.is_dir():
                self.reference = self.bin_path(REFERENCE_PACKAGE) / "jetstream-reference"
            else:
                self.reference_problem = f"no reference package at {REFERENCE_PACKAGE.relative_to(ROOT)}"
            if self.reference is not None and not os.access(self.reference, os.X_OK):
                self.reference_problem = f"missing executable {self.reference} (build it, or drop --no-build)"
            if getattr(a, "reference_build_failed", None):
                self.reference_problem = a.reference_build_failed
        for path in [self.jetstream] + ([self.modelbench] if "apply" in a.workloads else []):
            if path is not None and not os.access(path, os.X_OK):
                raise SystemExit(f"missing executable {path} (build it, or drop --no-build)")

    # ------------------------------------------------------------ servers

    def fresh_dir(self, label: str) -> pathlib.Path:
        self.counter += 1
        path = self.work / f"{self.counter:02d}-{label}"
        path.mkdir(parents=True)
        return path

    def start(self, target: str, label: str) -> Server:
        d = self.fresh_dir(f"{target}-{label}")
        if target == "gateway":
            (d / "data").mkdir()
            command = [str(self.jetstream), "serve", "--host", "127.0.0.1", "--port", "0",
                       "--data-dir", str(d / "data"), "--no-access-log",
                       "--max-pending-bytes", "4194304", "--max-streams-per-client", "100000",
                       "--max-streams", "100000"]
            server = Server("gateway", command, d, 0)
        elif target in REFERENCE_TARGETS:
            if self.reference_problem:
                raise Failure(self.reference_problem)
            port = free_port()
            command = [str(self.reference), "--host", "127.0.0.1", "--port", str(port)]
            if target == "hummingbird-light":
                command.append("--light")
            server = Server(target, command, d, port)
        else:
            server = self.nginx(d)
        self.servers.append(server)
        server.start()
        if target == "nginx":
            check_nginx(server.base, self.state_bytes or b"")
        log(f"   {target} on {server.base} (pid {server.process.pid})")
        return server

    def nginx(self, d: pathlib.Path) -> Server:
        if self.state_bytes is None:
            # The gateway prepares the state that nginx serves byte for byte.
            log("   preparing the gateway's state bytes for nginx")
            gateway = self.start("gateway", "nginx-state")
            try:
                self.state_bytes = prepare_read_scope(gateway.base, self.args.shapes)
            finally:
                self.stop(gateway)
        os.chmod(d, 0o755)  # workers may run as another user and must read the file
        (d / "html").mkdir()
        (d / "tmp").mkdir()
        (d / "html" / "state.json").write_bytes(self.state_bytes)
        os.chmod(d / "html", 0o755)
        os.chmod(d / "html" / "state.json", 0o644)
        port = free_port()
        user = "user root;\n" if os.geteuid() == 0 else ""
        (d / "nginx.conf").write_text(NGINX_CONF.format(user=user, dir=d, port=port, scope=READ_SCOPE))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        command = [nginx, "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "error.log")]
        return Server("nginx", command, d, port, ready=None, with_children=True)

    def stop(self, server: Server) -> None:
        server.stop()
        if server in self.servers:
            self.servers.remove(server)

    def cleanup(self) -> None:
        for server in list(self.servers):
            try:
                server.stop(bound=10)
            except Exception as error:  # keep stopping the others
                log(f"   stopping {server.name}: {error}")
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)

    # ------------------------------------------------------------ bench runs

    def run_bench(self, server: Server, mode: str, options: list[str]) -> tuple[dict, int, str]:
        timeout = self.args.bench_timeout
        command = [*self.bench, mode, "--url", server.base, *options, "--timeout", str(timeout), "--json"]
        log("   $ " + " ".join(shlex.quote(c) for c in command))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            raise Failure(f"bench {mode} did not finish within {timeout + 30} s")
        result = parse_json(done.stdout)
        if result is None:
            raise Failure(f"bench {mode} exit {done.returncode}, no JSON on stdout: {done.stderr[-400:]!r}")
        return result, done.returncode, done.stderr

    def measured(self, server: Server, mode: str, options: list[str]) -> dict:
        with Sampler(server.tree()) as sampler:
            result, code, stderr = self.run_bench(server, mode, options)
        return {"bench": result, "exit": code, "server": sampler.result(),
                "command": shown_command(mode, options), "stderrTail": stderr[-300:]}

    def workload(self, workload: str, target: str) -> dict:
        a = self.args
        if workload == "apply":
            return self.apply()
        server = self.start(target, workload)
        try:
            if workload == "get":
                if target == "nginx":
                    size = len(self.state_bytes or b"")
                else:
                    body = prepare_read_scope(server.base, a.shapes)
                    size = len(body)
                    if target == "gateway" and self.state_bytes is None:
                        self.state_bytes = body
                path = f"/v1/scopes/{READ_SCOPE}"
                row = self.measured(server, "read", ["--connections", "64", "--duration", str(a.duration),
                                                     "--path", path])
                row["stateBytes"] = size
                if a.wrk:
                    row["wrk"] = run_wrk(server.base + path, a.duration)
                return row
            if workload in WRITE_SCOPES:
                return self.measured(server, "write", ["--connections", "32", "--duration", str(a.duration),
                                                       "--scopes", str(WRITE_SCOPES[workload])])
            if workload.startswith("fanout"):
                subscribers = a.fanout_1k if workload == "fanout-1k" else a.fanout_5k
                return self.measured(server, "fanout", [
                    "--subscribers", str(subscribers), "--scopes", "1", "--change-sets", str(a.change_sets),
                    "--rate", f"{a.fanout_rate:g}", "--writers", "4", "--source-addresses", "4"])
            if workload == "idle":
                return self.idle(server)
            raise AssertionError(workload)
        finally:
            self.stop(server)

    def idle(self, server: Server) -> dict:
        a = self.args
        ensure_scope(server.base, IDLE_SCOPE)
        tree = server.tree()
        time.sleep(0.5)  # let the start-up settle before the baseline
        before = tree.rss_kib()
        options = ["--subscribers", str(a.idle_streams), "--scope", IDLE_SCOPE, "--hold", str(a.idle_hold),
                   "--source-addresses", "4"]
        timeout = a.bench_timeout
        command = [*self.bench, "idle", "--url", server.base, *options, "--timeout", str(timeout), "--json"]
        log("   $ " + " ".join(shlex.quote(c) for c in command))
        err_path = server.workdir / "idle.stderr"
        with Sampler(tree) as sampler, open(err_path, "w") as err:
            bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
            deadline = time.monotonic() + timeout
            ready = False
            while time.monotonic() < deadline and bench.poll() is None:
                if re.search(r"^ready \d+", err_path.read_text(errors="replace"), re.M):
                    ready = True
                    break
                time.sleep(0.1)
            after = None
            if ready:
                time.sleep(1.0)  # the last streams' buffers settle
                after = tree.rss_kib()
            if bench.poll() is None:
                bench.send_signal(signal.SIGTERM)
            try:
                out, _ = bench.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                bench.kill()
                out, _ = bench.communicate(timeout=30)
        stderr = err_path.read_text(errors="replace")
        result = parse_json(out)
        row = {"bench": result, "exit": bench.returncode, "server": sampler.result(),
               "command": shown_command("idle", options), "stderrTail": stderr[-300:],
               "rssBeforeKiB": before, "rssReadyKiB": after}
        if not ready:
            raise Failure(f"bench idle never printed `ready`: exit {bench.returncode}, {stderr[-300:]!r}", row)
        if result is None:
            raise Failure(f"bench idle exit {bench.returncode}, no JSON on stdout: {stderr[-300:]!r}", row)
        row["bytesPerStream"] = round((after - before) * 1024 / a.idle_streams)
        return row

    def apply(self) -> dict:
        command = [str(self.modelbench), "--json", "--only", "apply"] + (["--quick"] if self.args.smoke else [])
        log("   $ " + " ".join(command))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.args.apply_timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"ModelBench did not finish within {self.args.apply_timeout} s")
        result = parse_json(done.stdout)
        if done.returncode != 0 or result is None or not result.get("apply"):
            shown = "no JSON with an `apply` list on stdout" if done.returncode == 0 else f"exit {done.returncode}"
            raise Failure(f"ModelBench: {shown}: {(done.stderr or done.stdout)[-200:]!r}")
        return {"bench": result, "exit": 0, "command": " ".join(["ModelBench", *command[1:]])}

    # ------------------------------------------------------------ the run

    def settle(self) -> None:
        """Flushes the previous row's dirty pages and lets the machine go idle, so one row's disk
        writeback (a POST row writes ~250 000 durable change sets) does not land in the next row's
        fsyncs, and the CPUs' load from the last server does not carry over."""
        if self.args.settle <= 0:
            return
        os.sync()
        time.sleep(self.args.settle)

    def run(self) -> None:
        for workload in self.args.workloads:
            for target in TARGETS:
                if target not in self.args.targets or workload not in SUPPORTS[target]:
                    continue
                if workload == "apply" and target != "gateway":
                    continue
                log(f"== {workload} × {target}")
                self.settle()
                started = time.monotonic()
                row: dict = {"workload": workload, "target": target}
                try:
                    row.update(self.workload(workload, target))
                    problem = failure_of(workload, row)
                    row["status"] = "FAILED" if problem else "ok"
                    if problem:
                        row["failure"] = problem
                except Failure as failure:
                    if len(failure.args) > 1:
                        row.update(failure.args[1])
                    row["status"] = "FAILED"
                    row["failure"] = str(failure.args[0])
                except (OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
                    row["status"] = "FAILED"
                    row["failure"] = f"{type(error).__name__}: {error}"
                row["seconds"] = round(time.monotonic() - started, 1)
                log(f"   {row['status']}" + (f": {row['failure']}" if row["status"] != "ok" else "")
                    + f" ({row['seconds']} s)")
                self.rows.append(row)


def parse_json(text: str | None) -> dict | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:  # tolerate stray lines before the object
            value = json.loads(text[text.index("{"):])
        except (ValueError, json.JSONDecodeError):
            return None
    return value if isinstance(value, dict) else None


def shown_command(mode: str, options: list[str]) -> str:
    return " ".join(["jetstream", "bench", mode, "--url", "URL", *options, "--json"])


def run_wrk(url: str, duration: float) -> dict:
    if not shutil.which("wrk"):
        return {"error": "wrk not installed"}
    seconds = max(1, round(duration))
    done = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", url],
                          capture_output=True, text=True, timeout=seconds + 60)
    out = done.stdout
    rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
    result = {"requestsPerSecond": float(rps.group(1)) if rps else None,
              "non2xx": int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)) else 0,
              "socketErrors": bool(re.search(r"Socket errors", out))}
    for key, label in (("p50", "50%"), ("p99", "99%")):
        m = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\b", out, re.M)
        if m:
            result[key + "Ms"] = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    return result


def failure_of(workload: str, row: dict) -> str | None:
    """Why a finished bench counts as failed, or None."""
    if row.get("exit", 0) != 0:
        return f"bench exit {row['exit']}: {row.get('stderrTail', '')[-200:]!r}"
    bench = row.get("bench") or {}
    if workload in REQUEST_WORKLOADS:
        statuses = bench.get("statuses", {})
        bad = {k: v for k, v in statuses.items() if not str(k).startswith("2")}
        if bench.get("errors"):
            return f"{bench['errors']} transport errors {bench.get('errorReasons', {})}"
        if bad:
            return f"non-2xx responses {bad}"
        if not bench.get("succeeded"):
            return "no successful request"
    if workload.startswith("fanout"):
        d = bench.get("deliveries", {})
        if d.get("missing") or d.get("duplicate") or d.get("outOfOrder"):
            return f"missing {d.get('missing')}, duplicate {d.get('duplicate')}, out of order {d.get('outOfOrder')}"
        if bench.get("changeSets", {}).get("failed"):
            return f"change sets failed: {bench['changeSets']['failed']}"
    if workload == "idle":
        if bench.get("failed") or bench.get("connected") != bench.get("subscribers"):
            return f"connected {bench.get('connected')} of {bench.get('subscribers')}, failed {bench.get('failed')}"
    return None


# ---------------------------------------------------------------- report


def number(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "–"
    if digits == 0:
        return f"{x:,.0f}".replace(",", " ")
    return f"{x:,.{digits}f}".replace(",", " ")


def ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def headline(row: dict) -> float | None:
    """The figure ratios compare: req/s, deliveries/s, bytes per idle stream."""
    if row.get("status") != "ok":
        return None
    bench = row.get("bench") or {}
    w = row["workload"]
    if w in REQUEST_WORKLOADS:
        return bench.get("requestsPerSecond")
    if w.startswith("fanout"):
        return bench.get("deliveriesPerSecond")
    if w == "idle":
        return row.get("bytesPerStream")
    return None


def cpu_per_request(row: dict) -> float | None:
    """The server's CPU time per answered request in µs (get and the write workloads)."""
    requests = (row.get("bench") or {}).get("requests")
    cpu = (row.get("server") or {}).get("cpuSeconds")
    if row.get("status", "ok") != "ok" or not requests or cpu is None:
        return None
    return cpu * 1e6 / requests


def cell(row: dict | None) -> str:
    if row is None:
        return "–"
    if row.get("status") != "ok":
        return "**FAILED**: " + md_escape(row.get("failure", "?"))[:160]
    bench = row.get("bench") or {}
    w = row["workload"]
    server = row.get("server") or {}
    res = f"CPU {server.get('cpuSeconds', 0):.1f} s, peak RSS {server.get('peakRssKiB', 0) / 1024:.0f} MiB"
    lat = bench.get("latencyMs") or {}
    per_request = cpu_per_request(row) if w in REQUEST_WORKLOADS else None
    if per_request is not None:
        # Server CPU per request: on 2 shared cores the load generator's own cost compresses the
        # throughput ratios, so this is the figure that compares the servers' work directly.
        res = f"CPU {server.get('cpuSeconds', 0):.1f} s = {per_request:.1f} µs/request, peak RSS " \
              f"{server.get('peakRssKiB', 0) / 1024:.0f} MiB"
    if w == "get":
        extra = f"; wrk {number(row['wrk'].get('requestsPerSecond'))} req/s" if row.get("wrk", {}).get("requestsPerSecond") else ""
        return (f"{number(bench.get('requestsPerSecond'))} req/s, p50 {ms(lat.get('p50'))} / p99 {ms(lat.get('p99'))} ms, "
                f"{res} ({row.get('stateBytes')} B{extra})")
    if w in WRITE_SCOPES:
        return f"{number(bench.get('requestsPerSecond'))} req/s, p50 {ms(lat.get('p50'))} / p99 {ms(lat.get('p99'))} ms, {res}"
    if w.startswith("fanout"):
        d = bench.get("deliveries") or {}
        offered = (bench.get("subscribers") or 0) * (bench.get("rate") or 0)
        return (f"{number(bench.get('deliveriesPerSecond'))} deliveries/s (offered {number(offered)}/s), "
                f"p50 {ms(lat.get('p50'))} / p99 {ms(lat.get('p99'))} ms ({number(d.get('received'))} of "
                f"{number(d.get('expected'))}), {res}")
    if w == "idle":
        return (f"{number(row.get('bytesPerStream'))} B/stream (RSS {row['rssBeforeKiB'] / 1024:.0f} → "
                f"{row['rssReadyKiB'] / 1024:.0f} MiB, {bench.get('connected')} streams), CPU {server.get('cpuSeconds', 0):.1f} s")
    if w == "apply":
        parts = []
        for entry in bench.get("apply", []):
            parts.append(f"{short_count(entry.get('objects'))}: p50 {micros(entry.get('p50Micros'))} / "
                         f"p99 {micros(entry.get('p99Micros'))}")
        return "; ".join(parts)
    return "?"


def short_count(n: int | None) -> str:
    if n is None:
        return "?"
    if n >= 1_000_000 and n % 1_000_000 < 1000:
        return f"{n // 1_000_000}M"
    if n >= 1000:
        return f"{n // 1000}k"
    return str(n)


def micros(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x / 1000:.1f} ms" if x >= 1000 else f"{x:.0f} µs"


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ratio(gateway: dict | None, other: dict | None) -> str:
    if gateway is None or other is None:
        return "–"
    a, b = headline(gateway), headline(other)
    if a is None or b is None or not b:
        return "–"
    return f"{a / b:.2f}×"


def label(workload: str, args: argparse.Namespace) -> str:
    d = f"{args.duration:g} s"
    return {
        "get": f"GET state, 64 connections, {d}",
        "post": f"POST change sets, 32 writers, 1 scope, {d}",
        "post-32": f"POST change sets, 32 writers, 32 scopes, {d}",
        "fanout-1k": f"fan-out, {args.fanout_1k} subscribers, {args.change_sets} change sets at {args.fanout_rate:g}/s",
        "fanout-5k": f"fan-out, {args.fanout_5k} subscribers, {args.change_sets} change sets at {args.fanout_rate:g}/s",
        "idle": f"idle SSE streams, {args.idle_streams} (lower is better)",
        "apply": "apply (model core): p50 / p99 by scope size",
    }[workload]


def table(rows: list[dict], args: argparse.Namespace) -> str:
    by = {(r["workload"], r["target"]): r for r in rows}
    targets = [t for t in TARGETS if t in args.targets]
    header = ["workload"]
    for t in targets:
        header.append(t)
        if t != "gateway":
            header.append(f"gateway ÷ {t}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for w in args.workloads:
        cells = [label(w, args)]
        for t in targets:
            cells.append(cell(by.get((w, t))))
            if t != "gateway":
                cells.append(ratio(by.get((w, "gateway")), by.get((w, t))))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def goals(rows: list[dict], workloads: list[str] | None = None) -> list[dict]:
    """The issue's targets, each with the measured figure, met/missed and the margin
    (positive: headroom; negative: how far it is missed, relative to the goal)."""
    by = {(r["workload"], r["target"]): r for r in rows}

    def fig(w: str, t: str) -> float | None:
        r = by.get((w, t))
        return headline(r) if r else None

    def lat(w: str, t: str, key: str = "p99") -> float | None:
        r = by.get((w, t))
        if not r or r.get("status") != "ok":
            return None
        return ((r.get("bench") or {}).get("latencyMs") or {}).get(key)

    def rel(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    def cpu(w: str, t: str) -> float | None:
        r = by.get((w, t))
        return cpu_per_request(r) if r else None

    writes = []
    for w, scopes in WRITE_SCOPES.items():
        name = "POST" if scopes == 1 else f"POST, {scopes} scopes,"
        writes += [
            (w, f"{name} ≥ 30 000 change sets/s", fig(w, "gateway"), ">=", 30000, " /s"),
            (w, f"{name} p99 ≤ 3 ms", lat(w, "gateway"), "<=", 3, " ms"),
            (w, f"{name} server CPU ≤ 40 µs per change set", cpu(w, "gateway"), "<=", 40, " µs"),
            (w, f"{name} ≥ hummingbird-light (change sets/s)",
             rel(fig(w, "gateway"), fig(w, "hummingbird-light")), ">=", 1, "×"),
        ]

    specs = [  # (workload, goal, measured, comparison, goal value, unit)
        ("get", "GET ≥ 1.5× hummingbird (req/s)", rel(fig("get", "gateway"), fig("get", "hummingbird")), ">=", 1.5, "×"),
        ("get", "GET ≥ 0.7× nginx (req/s)", rel(fig("get", "gateway"), fig("get", "nginx")), ">=", 0.7, "×"),
        *writes,
        ("fanout-5k", "fan-out 5k ≥ 3× hummingbird (deliveries/s)",
         rel(fig("fanout-5k", "gateway"), fig("fanout-5k", "hummingbird")), ">=", 3, "×"),
        ("fanout-1k", "fan-out 1k p99 ≤ 20 ms", lat("fanout-1k", "gateway"), "<=", 20, " ms"),
        ("idle", "idle ≤ 4 KiB per stream", fig("idle", "gateway"), "<=", 4096, " B"),
    ]
    out = []
    for workload, name, measured, op, goal, unit in specs:
        if workloads is not None and workload not in workloads:
            continue
        if measured is None:
            out.append({"goal": name, "measured": None, "result": "not measured", "margin": None})
            continue
        margin = (measured - goal) / goal if op == ">=" else (goal - measured) / goal
        out.append({"goal": name, "measured": measured, "unit": unit, "result": "met" if margin >= 0 else "missed",
                    "margin": margin})
    return out


def goals_table(results: list[dict]) -> str:
    lines = ["| goal | measured | result | margin |", "|---|---:|---|---:|"]
    for g in results:
        if g["measured"] is None:
            lines.append(f"| {g['goal']} | – | not measured | – |")
            continue
        m = g["measured"]
        shown = f"{m:.2f}{g['unit']}" if g["unit"] in ("×", " ms") else \
            f"{m:.1f}{g['unit']}" if g["unit"] == " µs" else f"{number(m)}{g['unit']}"
        lines.append(f"| {g['goal']} | {shown} | {g['result']} | {g['margin'] * 100:+.0f} % |")
    return "\n".join(lines)


def machine(load_before: str, versions: dict[str, list[str]] | None = None) -> dict:
    """The machine, the commit and the load, with the first line each of `versions`' commands
    (default: `swift --version`); other benchmark scripts import it."""
    def first(cmd: list[str]) -> str:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
            return (done.stdout or done.stderr).strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return "?"

    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, cwd=ROOT, timeout=60).stdout.strip()
    return {"cores": os.cpu_count(), "nproc": first(["nproc"]), "cpu": model, "memoryGiB": round(mem_kib / 1024 ** 2, 1),
            "kernel": platform.release(),
            **{name: first(command) for name, command in (versions or {"swift": ["swift", "--version"]}).items()},
            "commit": first(["git", "rev-parse", "HEAD"]) + (" (with uncommitted changes)" if dirty else ""),
            "loadBefore": load_before}


def machine_text(m: dict, started: str, finished: str, load_after: str) -> str:
    busy = float(m["loadBefore"].split()[0]) > 0.5 * (m["cores"] or 1)
    note = " — **a loaded machine: the figures are indicative only**" if busy else ""
    return (f"- machine: {m['nproc']} cores ({m['cpu']}), {m['memoryGiB']} GiB, Linux {m['kernel']}; "
            f"load generator and servers on the same cores\n"
            f"- {m['swift']}\n"
            f"- commit {m['commit']}\n"
            f"- run {started} → {finished}; load average before {m['loadBefore']}, after {load_after}{note}")


def update_docs(text: str) -> None:
    doc = DOCS.read_text()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOCS} has no {BEGIN} … {END} section")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    log(f"== updated {DOCS}")


# ---------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes (2 s, 100/200 subscribers, 50 change sets, 500 idle streams, ModelBench --quick)")
    p.add_argument("--no-build", action="store_true", help="use the existing release builds")
    p.add_argument("--only", default=",".join(WORKLOADS), help=f"workloads, comma-separated: {','.join(WORKLOADS)}")
    p.add_argument("--targets", default=",".join(TARGETS), help=f"targets, comma-separated: {','.join(TARGETS)}")
    p.add_argument("--duration", type=float, help="seconds per get/post run (default 10; smoke 2)")
    p.add_argument("--change-sets", type=int, help="change sets per fan-out run (default 1000; smoke 50)")
    p.add_argument("--fanout-1k", type=int, help="subscribers of the fanout-1k row (default 1000; smoke 100)")
    p.add_argument("--fanout-5k", type=int, help="subscribers of the fanout-5k row (default 5000; smoke 200)")
    p.add_argument("--fanout-rate", type=float, default=100, help="change sets per second in the fan-out rows")
    p.add_argument("--idle-streams", type=int, help="idle SSE streams (default 10000; smoke 500)")
    p.add_argument("--idle-hold", type=float, default=10, help="seconds bench idle holds the streams at most")
    p.add_argument("--shapes", type=int, default=9, help="Shape objects in the GET scope (9 ≈ 2.5 KB of state)")
    p.add_argument("--wrk", action="store_true", help="also run wrk -t2 -c64 on GET as a cross-check")
    p.add_argument("--update-docs", action="store_true", help="rewrite the suite section of docs/benchmarks.md")
    p.add_argument("--results-dir", default=str(SUITE / "results"))
    p.add_argument("--settle", type=float,
                   help="seconds of quiet (after sync) before every row (default 3; smoke 0)")
    p.add_argument("--keep", action="store_true", help="keep the temp directories (server logs, data dirs)")
    p.add_argument("--bench-timeout", type=int, help="bound on each bench run, seconds (default 300; smoke 60)")
    p.add_argument("--apply-timeout", type=int, default=900, help="bound on ModelBench, seconds")
    p.add_argument("--build-timeout", type=int, default=3600, help="bound on each build, seconds")
    p.add_argument("--jetstream", help="jetstream executable to use (skips its build)")
    p.add_argument("--reference", help="jetstream-reference executable to use (skips its build)")
    p.add_argument("--modelbench", help="ModelBench executable to use (skips its build)")
    p.add_argument("--bench-override", help=argparse.SUPPRESS)  # a stub instead of `jetstream bench` (tests)
    args = p.parse_args(argv)
    smoke = args.smoke
    defaults = {"duration": (10, 2), "change_sets": (1000, 50), "fanout_1k": (1000, 100), "fanout_5k": (5000, 200),
                "idle_streams": (10000, 500), "bench_timeout": (300, 60), "settle": (3, 0)}
    for key, (full, small) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, small if smoke else full)
    args.workloads = [w for w in WORKLOADS if w in args.only.split(",")]
    args.targets = [t for t in TARGETS if t in args.targets.split(",")]
    unknown = set(args.only.split(",")) - set(WORKLOADS) | set(args.targets) - set(TARGETS)
    if unknown or not args.workloads or not args.targets:
        p.error(f"unknown or empty workloads/targets: {sorted(unknown)}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    shown = "Benchmarks/suite/run.sh" + ("" if not argv else " " + " ".join(shlex.quote(a) for a in argv))
    # 10k event streams need 10k descriptors in the servers (children inherit the limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if "nginx" in args.targets and not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        raise SystemExit("missing nginx: run scripts/install-deps --bench")
    if not args.no_build:
        suite_build = Suite(args)
        suite_build.build()
        shutil.rmtree(suite_build.work, ignore_errors=True)
    load_before = open("/proc/loadavg").read().split()[:3]
    started = datetime.datetime.now(datetime.timezone.utc)
    suite = Suite(args)
    interrupted = False

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        suite.resolve_binaries()
        suite.run()
    except KeyboardInterrupt:
        interrupted = True
        log("== interrupted: stopping the servers")
    finally:
        suite.cleanup()
        signal.signal(signal.SIGTERM, previous)
    finished = datetime.datetime.now(datetime.timezone.utc)
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    info = machine(" ".join(load_before))
    stamp = started.strftime("%Y-%m-%dT%H%M%SZ")
    results = goals(suite.rows, args.workloads)
    report = {"started": started.isoformat(timespec="seconds"), "finished": finished.isoformat(timespec="seconds"),
              "command": shown, "smoke": args.smoke, "machine": info, "loadAfter": load_after,
              "options": {k: v for k, v in vars(args).items() if k not in ("bench_override",)},
              "rows": suite.rows, "goals": results}
    results_dir = pathlib.Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    fmt = "%Y-%m-%d %H:%M UTC"
    text = "\n".join([
        f"Command: `{shown}`" + (" (smoke sizes: not comparable with a full run)" if args.smoke else ""),
        "",
        table(suite.rows, args),
        "",
        "Ratios are gateway ÷ target on the first figure of each cell (req/s, deliveries/s, bytes per idle stream).",
        "CPU is the server's utime+stime over the bench; peak RSS the server's (nginx: master + workers).",
        "",
        goals_table(results),
        "",
        machine_text(info, started.strftime(fmt), finished.strftime("%H:%M UTC"), load_after),
    ])
    print(text)
    log(f"== raw results: {(results_dir / f'{stamp}.json').relative_to(ROOT) if results_dir.is_relative_to(ROOT) else results_dir}")
    if args.update_docs:
        update_docs(text)
    failed = [r for r in suite.rows if r.get("status") != "ok"]
    return 1 if failed or interrupted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
