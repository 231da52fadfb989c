#!/usr/bin/env python3
"""SSE fan-out load client for HTTPTestServer: N subscribers on /subscribe, one publisher on /publish.

Phases (each bounded in time; loopback only):
  1. idle  — open N streams (spread over 127.0.0.x source addresses), wait until /stats counts them,
             and report the server's RSS growth per stream (VmRSS from /proc/PID/status).
  2. active — publish M small events as fast as /publish answers; every subscriber counts what it
             receives; report deliveries/s and delivery latency (publisher and subscribers share
             CLOCK_MONOTONIC, so latency = receive time - the nanoseconds carried in `data:`).

Usage: sse_fanout.py --port P [--streams 10000] [--events 50] [--burst] [--server-pid PID] [--json]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import urllib.request

try:
    import uvloop
except ImportError:  # plain asyncio still works, only slower
    uvloop = None

STAMP = re.compile(rb'"t":(\d+)')


def rss_kib(pid: int | None) -> int | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


class Subscriber(asyncio.Protocol):
    """Counts events on one stream. Events are split on the blank line that ends them; the chunk
    framing of HTTP/1.1 sits between events, so it never splits a `data:` line we look at."""

    def __init__(self, run: "Run"):
        self.run = run
        self.buffer = b""
        self.head_done = asyncio.get_running_loop().create_future()
        self.got_head = False
        self.events = 0
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport
        transport.write(b"GET /subscribe HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")

    def data_received(self, data: bytes):
        self.buffer += data
        if not self.got_head:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = self.buffer[:end].split(b"\r\n", 1)[0]
            self.buffer = self.buffer[end + 4 :]
            self.got_head = True
            self.head_done.set_result(status)
        end = self.buffer.rfind(b"\n\n")
        if end < 0:
            return
        complete, self.buffer = self.buffer[: end + 2], self.buffer[end + 2 :]
        stamps = STAMP.findall(complete)
        if stamps:
            now = time.monotonic_ns()
            self.events += len(stamps)
            self.run.delivered(now, [now - int(s) for s in stamps])

    def connection_lost(self, exc):
        self.closed = True
        self.run.lost += 1
        if not self.head_done.done():
            self.head_done.set_exception(ConnectionError("closed before the response head"))


class Run:
    def __init__(self, expected: int):
        self.expected = expected
        self.count = 0
        self.lost = 0
        self.latencies: list[int] = []
        self.last_delivery = 0
        self.all_delivered = asyncio.get_running_loop().create_future()

    def delivered(self, now: int, latencies: list[int]) -> None:
        self.count += len(latencies)
        self.last_delivery = now
        if len(self.latencies) < 2_000_000:
            self.latencies += latencies
        if self.count >= self.expected and not self.all_delivered.done():
            self.all_delivered.set_result(None)


def get_json(url: str, body: bytes | None = None) -> dict:
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def publisher(host: str, port: int, events: int, burst: bool) -> list[int]:
    """Publishes `events` events over one keep-alive connection, each after the previous answer
    (or all pipelined in one write with `burst`); returns each answer's subscriber count."""
    reader, writer = await asyncio.open_connection(host, port)

    def request(i: int) -> bytes:
        body = json.dumps({"i": i, "t": time.monotonic_ns()}, separators=(",", ":")).encode()
        return b"POST /publish HTTP/1.1\r\nHost: bench\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    async def answer() -> int:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        return json.loads(await reader.readexactly(length))["subscribers"]

    answers = []
    if burst:
        writer.write(b"".join(request(i) for i in range(events)))
        answers = [await answer() for _ in range(events)]
    else:
        for i in range(events):
            writer.write(request(i))
            answers.append(await answer())
    writer.close()
    return answers


def percentile(values: list[int], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] / 1e6


async def main(args) -> dict:
    loop = asyncio.get_running_loop()
    base = f"http://{args.host}:{args.port}"
    result: dict = {"streams": args.streams, "events": args.events, "burst": args.burst}
    rss_before = rss_kib(args.server_pid)
    run = Run(args.streams * args.events)
    subscribers: list[Subscriber] = []
    deadline = time.monotonic() + args.timeout

    # Phase 1: open the idle streams, a bounded number at a time.
    started = time.monotonic()
    semaphore = asyncio.Semaphore(args.concurrency)

    async def open_one(index: int) -> None:
        async with semaphore:
            source = f"127.0.0.{1 + index % args.source_addresses}"
            _, protocol = await loop.create_connection(
                lambda: Subscriber(run), args.host, args.port, local_addr=(source, 0))
            subscribers.append(protocol)
            status = await asyncio.wait_for(protocol.head_done, 30)
            if b" 200 " not in status + b" ":
                raise RuntimeError(f"subscribe answered {status!r}")

    await asyncio.wait_for(asyncio.gather(*(open_one(i) for i in range(args.streams))),
                           max(1.0, deadline - time.monotonic()))
    result["open_seconds"] = round(time.monotonic() - started, 2)
    while True:
        stats = await loop.run_in_executor(None, get_json, base + "/stats")
        if stats.get("subscribers", args.streams) >= args.streams or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # let allocator activity settle before reading RSS
    rss_idle = rss_kib(args.server_pid)
    if rss_before is not None and rss_idle is not None:
        result["server_rss_before_kib"] = rss_before
        result["server_rss_idle_kib"] = rss_idle
        result["rss_per_idle_stream_bytes"] = round((rss_idle - rss_before) * 1024 / args.streams)

    # Phase 2: publish and count deliveries.
    published_at = time.monotonic_ns()
    answers = await publisher(args.host, args.port, args.events, args.burst)
    publish_done = time.monotonic_ns()
    try:
        await asyncio.wait_for(run.all_delivered, max(1.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        pass
    elapsed = max(1, run.last_delivery - published_at) / 1e9
    result.update(
        publish_seconds=round((publish_done - published_at) / 1e9, 2),
        subscribers_reached_min=min(answers) if answers else 0,
        delivered=run.count,
        expected=run.expected,
        deliveries_per_second=round(run.count / elapsed),
        latency_p50_ms=round(percentile(run.latencies, 50), 1),
        latency_p99_ms=round(percentile(run.latencies, 99), 1),
        streams_lost=run.lost,
        server_rss_active_kib=rss_kib(args.server_pid),
    )
    for subscriber in subscribers:
        subscriber.transport.close()
    return result


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--streams", type=int, default=10000)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--concurrency", type=int, default=500, help="connections opened at once")
    parser.add_argument("--source-addresses", type=int, default=8, help="spread over 127.0.0.1..N")
    parser.add_argument("--timeout", type=float, default=120, help="bound for the whole run, seconds")
    parser.add_argument("--burst", action="store_true", help="pipeline all publishes in one write")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost") and not args.host.startswith("127."):
        parser.error("loopback only")
    if not 1 <= args.streams <= 15000:
        parser.error("--streams must be 1..15000 (the per-process fd limit is 20000)")
    return args


if __name__ == "__main__":
    arguments = parse_args(sys.argv[1:])
    if uvloop is not None:
        uvloop.install()
    outcome = asyncio.run(main(arguments))
    if arguments.json:
        print(json.dumps(outcome))
    else:
        for key, value in outcome.items():
            print(f"{key:28} {value}")
