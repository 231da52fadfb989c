#!/usr/bin/env python3
"""Many scopes on one stream, and presence: the figures of docs/benchmarks.md's section of that
name, each row on a fresh release server (SQLite, durable commits) on 127.0.0.1, all load from
`jetstream bench`.

- memory: N idle streams of K scopes (`bench idle --scopes-per-stream K`, scopes created and
  loaded before the first reading) against N single-scope streams; the server's VmRSS before
  and once every stream has all its snapshots: bytes per stream and per scope on a stream.
- fanout: S subscribers each on K scopes of one `GET /v1/events` (`bench fanout
  --scopes-per-stream K`) against S×K single-scope streams, the same change sets: deliveries/s,
  p99, server CPU per delivery (utime + stime from the moment every stream is open), peak RSS.
- presence: M members at R updates/s each (`bench presence`), presence PUTs against one-fragment
  change-set POSTs (`--as-change-sets`), with S subscribers and with 1: deliveries/s, p99, server
  CPU per update.

    Benchmarks/presence/bench_many_scopes.py --jetstream .build/release/jetstream
    Benchmarks/presence/bench_many_scopes.py --only presence --presence-subscribers 50 --rounds 2
    Benchmarks/presence/bench_many_scopes.py --smoke          # tiny sizes, ~1 minute

Prints Markdown tables and writes the raw JSON to Benchmarks/presence/results/. Loopback only;
each bench is bounded by --timeout.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Benchmarks" / "suite"))
import suite  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def request(base: str, method: str, path: str, body: dict | None = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        return response.read()


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def status_kib(pid: int, key: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def open_streams(base: str) -> float:
    for line in request(base, "GET", "/metrics").decode().splitlines():
        if line.startswith("jetstream_sse_streams_open"):
            return float(line.split()[-1])
    return 0.0


class Server:
    """A fresh `jetstream serve` in a temporary directory, with limits high enough for the rows."""

    def __init__(self, binary: str) -> None:
        self.work = tempfile.TemporaryDirectory(prefix="many-scopes-")
        self.process = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", self.work.name,
             "--no-access-log", "--max-pending-bytes", "16777216", "--max-streams-per-client", "100000",
             "--max-streams", "100000"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        self.url = ""
        for line in self.process.stdout:
            match = re.search(r"listening on (?:http://)?127\.0\.0\.1:(\d+)", line)
            if match:
                self.url = f"http://127.0.0.1:{match.group(1)}"
                break
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            raise SystemExit(f"{binary} did not say where it listens")
        # Keep draining its output so a chatty server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()
        self.peak_kib = 0
        self.sampling = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_kib(self) -> int:
        return status_kib(self.pid, "VmRSS")

    def sample_peak(self) -> None:
        """Samples VmRSS every 0.2 s until stop_sampling(); peak_kib is the highest (or VmHWM)."""
        self.sampling = True

        def run() -> None:
            while self.sampling and self.process.poll() is None:
                self.peak_kib = max(self.peak_kib, self.rss_kib())
                time.sleep(0.2)
        self.sampler = threading.Thread(target=run, daemon=True)
        self.sampler.start()

    def stop_sampling(self) -> int:
        self.sampling = False
        self.sampler.join()
        return max(self.peak_kib, status_kib(self.pid, "VmHWM"))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.work.cleanup()


def wait_for_streams(server: Server, count: int, bench: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and bench.poll() is None:
        if open_streams(server.url) >= count:
            return True
        time.sleep(0.05)
    return False


def run_bench(binary: str, server: Server, args: list[str], streams: int, timeout: float) -> dict:
    """Runs one `jetstream bench` with --json; CPU of the server from every stream open to the end."""
    command = [binary, "bench", *args, "--url", server.url, "--json", "--timeout", str(timeout)]
    log("   $ " + " ".join(command[1:]))
    server.sample_peak()
    bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    opened = wait_for_streams(server, streams, bench, timeout)
    cpu_before = cpu_seconds(server.pid)
    load_started = time.monotonic()
    out = bench.stdout.read()
    _, status, usage = os.wait4(bench.pid, 0)
    bench.returncode = os.waitstatus_to_exitcode(status)
    cpu = cpu_seconds(server.pid) - cpu_before
    report = json.loads(out) if out.strip() else {"clean": False}
    report["serverCpuSeconds"] = round(cpu, 3)
    # The load generator's whole run (set-up included): it shares the 2 cores with the server.
    report["benchCpuSeconds"] = round(usage.ru_utime + usage.ru_stime, 3)
    report["loadSeconds"] = round(time.monotonic() - load_started, 3)
    report["peakRssKiB"] = server.stop_sampling()
    report["streamsOpenedBeforeLoad"] = opened
    report["exitStatus"] = bench.returncode
    return report


# ---------------------------------------------------------------- memory

def memory_row(binary: str, per_stream: int | None, streams: int, hold_timeout: float) -> dict:
    server = Server(binary)
    try:
        scope = "canvas-mem"
        names = [scope] if per_stream is None else [f"{scope}-{n}" for n in range(per_stream)]
        for name in names:
            request(server.url, "PUT", f"/v1/scopes/{name}", {"root": {"clsName": "Canvas"}})
            request(server.url, "GET", f"/v1/scopes/{name}")
        time.sleep(1)
        before = server.rss_kib()
        command = [binary, "bench", "idle", "--url", server.url, "-s", str(streams), "--scope", scope,
                   "--hold", "600", "--json", "--source-addresses", "4", "--timeout", str(hold_timeout)]
        if per_stream is not None:
            command[command.index("--scope"):command.index("--scope")] = ["--scopes-per-stream", str(per_stream)]
        log("   $ " + " ".join(command[1:]))
        cpu_before = cpu_seconds(server.pid)
        bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = ""
        while not ready.startswith("ready") and bench.poll() is None:
            ready = bench.stderr.readline()
        time.sleep(2)
        after = server.rss_kib()
        cpu = cpu_seconds(server.pid) - cpu_before
        open_count = open_streams(server.url)
        bench.send_signal(signal.SIGTERM)
        out, _ = bench.communicate(timeout=120)
        report = json.loads(out) if out.strip() else {"clean": False}
        delta = (after - before) * 1024
        scopes_on_streams = streams * (per_stream or 1)
        return {"route": "single" if per_stream is None else "many", "scopesPerStream": per_stream or 1,
                "streams": streams, "rssBeforeKiB": before, "rssAfterKiB": after,
                "bytesPerStream": delta / streams, "bytesPerScopeOnStream": delta / scopes_on_streams,
                "serverCpuSeconds": round(cpu, 3), "streamsOpenOnServer": open_count, "ready": ready.strip(),
                "bench": report, "clean": bool(report.get("clean"))}
    finally:
        server.stop()


def memory_table(rows: list[dict]) -> str:
    lines = ["| streams | scopes a stream | route | RSS before → after | bytes per stream | "
             "bytes per scope on a stream | clean |",
             "|---:|---:|---|---|---:|---:|---|"]
    for r in rows:
        route = "`GET /v1/scopes/{name}/events`" if r["route"] == "single" else "`GET /v1/events?scope=…`"
        lines.append(f"| {r['streams']:,} | {r['scopesPerStream']} | {route} | "
                     f"{r['rssBeforeKiB'] / 1024:.1f} → {r['rssAfterKiB'] / 1024:.1f} MiB | "
                     f"{r['bytesPerStream']:,.0f} | {r['bytesPerScopeOnStream']:,.0f} | "
                     f"{'yes' if r['clean'] else 'NO'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- fan-out

def fanout_row(binary: str, subscribers: int, scopes: int, per_stream: int | None, change_sets: int,
               rate: float, timeout: float) -> dict:
    server = Server(binary)
    try:
        args = ["fanout", "--subscribers", str(subscribers), "--scopes", str(scopes), "--change-sets",
                str(change_sets), "--rate", str(rate), "--writers", str(scopes), "--source-addresses", "4",
                "--scope-prefix", "canvas-fan-"]
        if per_stream is not None:
            args += ["--scopes-per-stream", str(per_stream)]
        report = run_bench(binary, server, args, subscribers, timeout)
        report["row"] = {"subscribers": subscribers, "scopes": scopes, "scopesPerStream": per_stream,
                         "rate": rate, "changeSets": change_sets}
        return report
    finally:
        server.stop()


def fanout_table(rows: list[dict]) -> str:
    lines = ["| streams | scopes a stream | change sets | deliveries | deliveries/s | p50 / p99 ms | "
             "server CPU per delivery | bench CPU | peak RSS | clean |",
             "|---|---:|---|---|---:|---|---:|---:|---:|---|"]
    for r in rows:
        row, d = r["row"], r.get("deliveries", {})
        received = d.get("received", 0)
        cpu = r["serverCpuSeconds"] / received * 1e6 if received else float("nan")
        lat = r.get("latencyMs", {})
        lines.append(f"| {row['subscribers']:,} | {row['scopesPerStream'] or 1} | {row['changeSets']:,} at "
                     f"{row['rate']:g}/s on {row['scopes']} scopes | {received:,} of {d.get('expected', 0):,} | "
                     f"{r.get('deliveriesPerSecond', 0):,.0f} | {lat.get('p50', 0):.2f} / {lat.get('p99', 0):.2f} | "
                     f"{cpu:.2f} µs | {r['benchCpuSeconds']:.1f} s | {r['peakRssKiB'] / 1024:.0f} MiB | "
                     f"{'yes' if r.get('clean') else 'NO'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- presence

def presence_row(binary: str, members: int, rate: float, duration: float, subscribers: int, change_sets: bool,
                 timeout: float) -> dict:
    server = Server(binary)
    try:
        args = ["presence", "--members", str(members), "--rate", str(rate), "--duration", str(duration),
                "--subscribers", str(subscribers)]
        if change_sets:
            args.append("--as-change-sets")
        report = run_bench(binary, server, args, subscribers, timeout)
        report["row"] = {"members": members, "rate": rate, "subscribers": subscribers,
                         "kind": "change set POST" if change_sets else "presence PUT"}
        return report
    finally:
        server.stop()


def presence_table(rows: list[dict]) -> str:
    lines = ["| updates | subscribers | updates/s | deliveries | deliveries/s | update → event p50 / p99 ms | "
             "request p50 / p99 ms | server CPU per update | server CPU per delivery | bench CPU | clean |",
             "|---|---:|---:|---|---:|---|---|---:|---:|---:|---|"]
    for r in rows:
        row, d, q = r["row"], r.get("deliveries", {}), r.get("requests", {})
        accepted, received = q.get("accepted", 0), d.get("received", 0)
        per_update = r["serverCpuSeconds"] / accepted * 1e6 if accepted else float("nan")
        per_delivery = r["serverCpuSeconds"] / received * 1e6 if received else float("nan")
        lat, req = r.get("latencyMs", {}), r.get("requestLatencyMs", {})
        lines.append(f"| {row['kind']}, {row['members']} members × {row['rate']:g}/s | {row['subscribers']} | "
                     f"{r.get('updatesPerSecond', 0):,.0f} | {received:,} of {d.get('expected', 0):,} | "
                     f"{r.get('deliveriesPerSecond', 0):,.0f} | {lat.get('p50', 0):.2f} / {lat.get('p99', 0):.2f} | "
                     f"{req.get('p50', 0):.2f} / {req.get('p99', 0):.2f} | {per_update:.1f} µs | "
                     f"{per_delivery:.2f} µs | {r['benchCpuSeconds']:.1f} s | {'yes' if r.get('clean') else 'NO'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"),
                   help="server and load generator binary (default: the release build)")
    p.add_argument("--only", default="memory,fanout,presence", help="parts, comma-separated: memory,fanout,presence")
    p.add_argument("--rounds", type=int, default=1, help="rounds of the fan-out and presence rows")
    p.add_argument("--fanout-rates", default="100,400", help="change sets per second of the fan-out rows")
    p.add_argument("--presence-subscribers", type=int, default=100, help="subscribers of the presence rows")
    p.add_argument("--presence-duration", type=float, default=10.0, help="seconds of updates")
    p.add_argument("--smoke", action="store_true", help="tiny sizes")
    p.add_argument("--timeout", type=float, default=240.0, help="bound on each bench run, seconds")
    a = p.parse_args()
    parts = set(a.only.split(","))
    binary = a.jetstream
    smoke = a.smoke

    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = suite.machine(load_before)
    results: dict = {"machine": machine, "command": " ".join(sys.argv), "memory": [], "fanout": [], "presence": []}
    out: list[str] = []

    if "memory" in parts:
        layouts = ([(None, 200), (1, 200), (16, 100), (256, 20)] if smoke
                   else [(None, 10_000), (1, 10_000), (16, 10_000), (256, 1_000)])
        for per_stream, streams in layouts:
            log(f"== memory: {streams} streams, {per_stream or 'single'} scopes a stream")
            results["memory"].append(memory_row(binary, per_stream, streams, a.timeout))
        out.append(memory_table(results["memory"]))

    if "fanout" in parts:
        subscribers, scopes, sets = (50, 10, 100) if smoke else (1000, 10, 1000)
        for _ in range(a.rounds):
            for rate in [float(r) for r in a.fanout_rates.split(",")]:
                log(f"== fanout: {subscribers} × {scopes} scopes on one stream, "
                    f"then {subscribers * scopes} streams, {rate}/s")
                results["fanout"].append(fanout_row(binary, subscribers, scopes, scopes, sets, rate, a.timeout))
                results["fanout"].append(fanout_row(binary, subscribers * scopes, scopes, None, sets, rate, a.timeout))
        out.append(fanout_table(results["fanout"]))

    if "presence" in parts:
        members, rate = (20, 10.0) if smoke else (200, 10.0)
        duration = 2.0 if smoke else a.presence_duration
        for _ in range(a.rounds):
            for subscribers in [a.presence_subscribers, 1]:
                for change_sets in [False, True]:
                    log(f"== presence: {members} × {rate}/s, {subscribers} subscribers, "
                        f"{'change sets' if change_sets else 'presence'}")
                    results["presence"].append(
                        presence_row(binary, members, rate, duration, subscribers, change_sets, a.timeout))
        out.append(presence_table(results["presence"]))

    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results["loadAfter"] = load_after
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = ROOT / "Benchmarks" / "presence" / "results" / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"Command: `{' '.join(['Benchmarks/presence/bench_many_scopes.py', *sys.argv[1:]])}`\n")
    print(suite.machine_text(machine, started, finished, load_after) + "\n")
    print("\n\n".join(out))
    log(f"raw results: {path}")
    clean = all(r.get("clean") for part in ("memory", "fanout", "presence") for r in results[part])
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
