#!/usr/bin/env python3
"""SSE fan-out load client for `jetstream serve`: S subscribers on one scope, change sets POSTed at a
fixed rate, POST→delivery latency measured by every subscriber.

Phases (each bounded in time; loopback only):
  1. idle   — P worker processes open S/P streams each on GET /v1/scopes/NAME/events (spread over
              127.0.0.1..8 source addresses) and wait for every `snapshot` event; the server's RSS
              (VmRSS of /proc/PID/status) before and after gives the memory per idle stream.
  2. active — one publisher POSTs M change sets at R per second over K keep-alive connections; each
              sets the root's name to "t<CLOCK_MONOTONIC ns>" just before it is written, so a
              subscriber computes POST→delivery latency on receipt (CLOCK_MONOTONIC is one clock for
              every process on the machine). Every subscriber checks that it sees versions
              v0+1 … v0+M once each and in order: gaps are "missing", repeats or regressions
              "duplicate".
CPU time of the server and of each client process during the active phase (from /proc/PID/stat)
tells which side was the limit.

Usage: sse_fanout.py --port P --scope NAME --subscribers 1000 [--processes 2] [--events 1000]
                     [--rate 100] [--server-pid PID] [--c-client PATH] [--json]

--c-client runs the subscribers in sse_subscribers.c (same protocol on stdin/stdout) instead of
Python: ~10× less CPU per delivery, so the server rather than the client sets the ceiling.
"""
from __future__ import annotations

import argparse
import array
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import uvloop
except ImportError:  # plain asyncio still works, only slower
    uvloop = None

CHANGESET = re.compile(rb'event: changeset\nid: (\d+)\ndata: [^\n]*?"name":"t(\d+)"')
SNAPSHOT = re.compile(rb"event: snapshot\nid: (\d+)\n")
LATENCY_SAMPLES_PER_WORKER = 2_000_000
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int | None) -> int | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed + 100:
        raise SystemExit(f"need {needed + 100} file descriptors, the limit is {soft}: use more --processes")


# ---------------------------------------------------------------- worker process (subscribers)


class Subscriber(asyncio.Protocol):
    """One event stream. Events are split on the blank line that ends them; each event is one HTTP
    chunk, so the chunk framing sits between events and never inside a line we match."""

    def __init__(self, worker: "Worker", path: bytes):
        self.worker = worker
        self.path = path
        self.buffer = b""
        self.snapshot = asyncio.get_running_loop().create_future()
        self.last = -1  # the last version seen (snapshot or change set)
        self.complete = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(b"GET " + self.path + b" HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")

    def data_received(self, data: bytes):
        buffer = self.buffer + data
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self.buffer = buffer
            return
        complete, self.buffer = buffer[: end + 2], buffer[end + 2 :]
        if not self.snapshot.done():
            if not complete.startswith(b"HTTP/1.1 200"):
                self.snapshot.set_exception(RuntimeError(f"subscribe answered {complete[:80]!r}"))
                return
            match = SNAPSHOT.search(complete)
            if match is None:
                self.buffer = complete + self.buffer  # head and `retry:` arrived before the snapshot
                return
            self.last = int(match.group(1))
            self.snapshot.set_result(self.last)
        found = CHANGESET.findall(complete)
        if found:
            self.worker.delivered(self, time.monotonic_ns(), found)

    def connection_lost(self, exc):
        if not self.complete:
            self.worker.lost += 1
        if not self.snapshot.done():
            self.snapshot.set_exception(ConnectionError(f"closed before the snapshot: {exc}"))


class Worker:
    def __init__(self, count: int, stride: int):
        self.count = count
        self.stride = stride  # record every stride-th latency (bounded memory at 10k × 1000)
        self.tick = 0
        self.latencies = array.array("q")
        self.deliveries = 0
        self.missing = 0
        self.duplicate = 0
        self.lost = 0
        self.first_delivery = 0
        self.last_delivery = 0
        self.final_version = None  # set by "go"
        self.completed = 0
        self.all_complete: asyncio.Future | None = None

    def delivered(self, subscriber: Subscriber, now: int, found: list[tuple[bytes, bytes]]) -> None:
        if not self.first_delivery:
            self.first_delivery = now
        self.last_delivery = now
        self.deliveries += len(found)
        for version_text, stamp in found:
            version = int(version_text)
            if version == subscriber.last + 1:
                pass
            elif version <= subscriber.last:
                self.duplicate += 1
                continue
            else:
                self.missing += version - subscriber.last - 1
            subscriber.last = version
            self.tick += 1
            if self.tick >= self.stride:
                self.tick = 0
                self.latencies.append(now - int(stamp))
        if self.final_version is not None and not subscriber.complete and subscriber.last >= self.final_version:
            subscriber.complete = True
            self.completed += 1
            if self.completed == self.count and self.all_complete and not self.all_complete.done():
                self.all_complete.set_result(None)


async def run_worker(args) -> None:
    loop = asyncio.get_running_loop()
    raise_fd_limit(args.subscribers)
    stride = max(1, args.subscribers * args.events // LATENCY_SAMPLES_PER_WORKER)
    worker = Worker(args.subscribers, stride)
    path = f"/v1/scopes/{args.scope}/events".encode()
    subscribers: list[Subscriber] = []
    semaphore = asyncio.Semaphore(args.concurrency)
    started = time.monotonic()

    async def open_one(index: int) -> None:
        async with semaphore:
            source = f"127.0.0.{1 + (index + args.index) % 8}"
            _, subscriber = await loop.create_connection(
                lambda: Subscriber(worker, path), args.host, args.port, local_addr=(source, 0))
            subscribers.append(subscriber)
            await asyncio.wait_for(subscriber.snapshot, 60)

    await asyncio.wait_for(asyncio.gather(*(open_one(i) for i in range(args.subscribers))), args.timeout)
    snapshot_versions = [s.last for s in subscribers]
    print(json.dumps({"ready": True, "open_seconds": round(time.monotonic() - started, 2),
                      "snapshot_min": min(snapshot_versions), "snapshot_max": max(snapshot_versions)}),
          flush=True)

    # "go FINAL_VERSION DEADLINE_MONOTONIC_NS" from the driver once every worker is ready.
    line = await loop.run_in_executor(None, sys.stdin.readline)
    _, final_text, deadline_text = line.split()
    worker.all_complete = loop.create_future()
    worker.final_version = int(final_text)
    for subscriber in subscribers:  # a subscriber may already have everything (tiny runs)
        if subscriber.last >= worker.final_version and not subscriber.complete:
            subscriber.complete = True
            worker.completed += 1
    if worker.completed == worker.count:
        worker.all_complete.set_result(None)
    timeout = max(0.1, (int(deadline_text) - time.monotonic_ns()) / 1e9)
    try:
        await asyncio.wait_for(worker.all_complete, timeout)
    except asyncio.TimeoutError:
        pass
    # Versions never delivered by the end count as missing too.
    worker.missing += sum(max(0, worker.final_version - s.last) for s in subscribers)
    with open(args.latency_file, "wb") as out:
        worker.latencies.tofile(out)
    print(json.dumps({
        "deliveries": worker.deliveries, "missing": worker.missing, "duplicate": worker.duplicate,
        "lost": worker.lost, "completed": worker.completed, "first_delivery": worker.first_delivery,
        "last_delivery": worker.last_delivery, "latency_stride": stride,
    }), flush=True)
    for subscriber in subscribers:
        subscriber.complete = True
        if subscriber.transport:
            subscriber.transport.close()


# ---------------------------------------------------------------- driver process (publisher)


def http_json(url: str, body: bytes | None = None, method: str | None = None) -> dict:
    request = urllib.request.Request(url, data=body, method=method or ("POST" if body else "GET"),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def publish(args, root_uuid: str) -> dict:
    """POSTs args.events change sets at args.rate per second (open loop: each is due at
    t0 + i/rate) over args.publishers keep-alive connections."""
    next_index = 0
    statuses: dict[int, int] = {}
    post_latencies: list[int] = []
    started = time.monotonic_ns()
    interval = 1e9 / args.rate
    prefix = (f'{{"fragments":[{{"type":"change","uuid":"{root_uuid}","clsName":"Canvas",'
              f'"properties":{{"name":"t').encode()
    head = (f"POST /v1/scopes/{args.scope}/changesets HTTP/1.1\r\nHost: bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: ").encode()

    async def connection() -> None:
        nonlocal next_index
        reader, writer = await asyncio.open_connection(args.host, args.port)
        while next_index < args.events:
            index = next_index
            next_index += 1
            delay = (started + index * interval - time.monotonic_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.monotonic_ns()
            body = prefix + str(sent).encode() + b'"}}]}'
            writer.write(head + str(len(body)).encode() + b"\r\n\r\n" + body)
            response_head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", response_head).group(1))
            await reader.readexactly(length)
            post_latencies.append(time.monotonic_ns() - sent)
            status = int(response_head.split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    await asyncio.gather(*(connection() for _ in range(args.publishers)))
    post_latencies.sort()
    return {
        "publish_seconds": round((time.monotonic_ns() - started) / 1e9, 2),
        "post_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "post_p50_ms": round(post_latencies[len(post_latencies) // 2] / 1e6, 2),
        "post_p99_ms": round(post_latencies[min(len(post_latencies) - 1, len(post_latencies) * 99 // 100)] / 1e6, 2),
    }


def percentile_ms(sorted_values, p: float) -> float | None:
    if not sorted_values:
        return None
    return round(sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))] / 1e6, 2)


async def drive(args) -> dict:
    loop = asyncio.get_running_loop()
    base = f"http://{args.host}:{args.port}"
    state = await loop.run_in_executor(None, http_json, f"{base}/v1/scopes/{args.scope}")
    root_uuid = state["rootUUID"]
    result: dict = {"subscribers": args.subscribers, "processes": args.processes, "events": args.events,
                    "rate": args.rate, "client": "c" if args.c_client else "python"}
    rss_before = rss_kib(args.server_pid)
    deadline = time.monotonic() + args.timeout
    temp = tempfile.mkdtemp(prefix="sse-fanout-")
    shares = [args.subscribers // args.processes + (1 if i < args.subscribers % args.processes else 0)
              for i in range(args.processes)]
    workers = []
    for index, share in enumerate(shares):
        latency_file = os.path.join(temp, f"latencies-{index}")
        if args.c_client:
            command = [args.c_client, args.host, str(args.port), args.scope, str(share), str(index),
                       str(args.events), latency_file, str(args.timeout)]
        else:
            command = [sys.executable, os.path.abspath(__file__), "--worker", "--host", args.host,
                       "--port", str(args.port), "--scope", args.scope, "--subscribers", str(share),
                       "--events", str(args.events), "--index", str(index),
                       "--concurrency", str(args.concurrency), "--timeout", str(args.timeout),
                       "--latency-file", latency_file]
        workers.append(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    try:
        started = time.monotonic()
        readies = [json.loads(await loop.run_in_executor(None, w.stdout.readline) or "{}") for w in workers]
        if not all(r.get("ready") for r in readies):
            raise SystemExit(f"a worker failed while opening its streams: {readies}")
        result["open_seconds"] = round(time.monotonic() - started, 2)
        base_version = min(r["snapshot_min"] for r in readies)
        if base_version != max(r["snapshot_max"] for r in readies):
            raise SystemExit("the scope changed while the subscribers connected: run nothing else on it")
        await asyncio.sleep(1.0)  # let allocator activity settle before reading RSS
        rss_idle = rss_kib(args.server_pid)
        if rss_before is not None and rss_idle is not None:
            result["server_rss_before_kib"] = rss_before
            result["server_rss_idle_kib"] = rss_idle
            result["rss_per_idle_stream_bytes"] = round((rss_idle - rss_before) * 1024 / args.subscribers)

        final_version = base_version + args.events
        drain_deadline = time.monotonic_ns() + int(max(5.0, deadline - time.monotonic()) * 1e9)
        pids = {"server": args.server_pid} if args.server_pid else {}
        pids.update({f"client{i}": w.pid for i, w in enumerate(workers)})
        pids["publisher"] = os.getpid()
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        for w in workers:
            w.stdin.write(f"go {final_version} {drain_deadline}\n")
            w.stdin.flush()
        published_at = time.monotonic_ns()
        result.update(await publish(args, root_uuid))
        outcomes = [json.loads(await loop.run_in_executor(None, w.stdout.readline) or "{}") for w in workers]
        wall = (time.monotonic_ns() - published_at) / 1e9
        cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
        result["server_rss_active_kib"] = rss_kib(args.server_pid)
        for w in workers:
            w.wait(timeout=60)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()

    if not all("deliveries" in o for o in outcomes):
        raise SystemExit(f"a worker failed: {outcomes}")
    latencies = array.array("q")
    for index in range(args.processes):
        with open(os.path.join(temp, f"latencies-{index}"), "rb") as f:
            latencies.frombytes(f.read())
        os.unlink(os.path.join(temp, f"latencies-{index}"))
    os.rmdir(temp)
    latencies = sorted(latencies)
    deliveries = sum(o["deliveries"] for o in outcomes)
    last_delivery = max(o["last_delivery"] for o in outcomes)
    elapsed = max(1, last_delivery - published_at) / 1e9
    result.update(
        expected=args.subscribers * args.events,
        deliveries=deliveries,
        missing=sum(o["missing"] for o in outcomes),
        duplicate=sum(o["duplicate"] for o in outcomes),
        streams_lost=sum(o["lost"] for o in outcomes),
        subscribers_complete=sum(o["completed"] for o in outcomes),
        delivery_seconds=round(elapsed, 2),
        deliveries_per_second=round(deliveries / elapsed),
        latency_samples=len(latencies),
        latency_p50_ms=percentile_ms(latencies, 50),
        latency_p90_ms=percentile_ms(latencies, 90),
        latency_p99_ms=percentile_ms(latencies, 99),
        latency_max_ms=percentile_ms(latencies, 100),
        cpu_percent={name: round(100 * (cpu_after[name] - cpu_before[name]) / wall) for name in pids},
    )
    return result


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--scope", default="canvas-fanout")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=1, help="subscriber processes")
    parser.add_argument("--events", type=int, default=1000, help="change sets to POST")
    parser.add_argument("--rate", type=float, default=100, help="change sets per second")
    parser.add_argument("--publishers", type=int, default=4, help="publisher connections")
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--c-client", metavar="PATH",
                        help="subscriber processes run this build of sse_subscribers.c instead of Python")
    parser.add_argument("--concurrency", type=int, default=200, help="streams being opened at once, per process")
    parser.add_argument("--timeout", type=float, default=180, help="bound for the whole run, seconds")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--latency-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.host.startswith("127.") and args.host != "localhost":
        parser.error("loopback only")
    if not 1 <= args.subscribers <= 40000 or args.subscribers / max(1, args.processes) > 19000:
        parser.error("at most 19000 subscribers per process (the fd limit is 20000): raise --processes")
    if args.events < 1 or args.rate <= 0:
        parser.error("--events and --rate must be positive")
    return args


if __name__ == "__main__":
    arguments = parse_args(sys.argv[1:])
    if uvloop is not None:
        uvloop.install()
    if arguments.worker:
        asyncio.run(run_worker(arguments))
        sys.exit(0)
    outcome = asyncio.run(drive(arguments))
    if arguments.json:
        print(json.dumps(outcome))
    else:
        for key, value in outcome.items():
            print(f"{key:28} {value}")
