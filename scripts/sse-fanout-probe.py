#!/usr/bin/env python3
"""Bounded SSE fan-out probe for the engine: opens N /subscribe streams on HTTPTestServer,
publishes E events through /publish and counts deliveries. Prints connect time, deliveries/s and
the server's RSS (pass its pid). Loopback only; every phase is bounded in time.

    scripts/sse-fanout-probe.py --port PORT --pid SERVER_PID --streams 10000 --events 20
"""
import argparse
import asyncio
import json
import time
import urllib.request


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--events", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()

    received = 0
    done = asyncio.Event()
    target = args.streams * args.events

    async def subscriber() -> None:
        nonlocal received
        reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
        writer.write(b"GET /subscribe HTTP/1.1\r\nHost: probe\r\n\r\n")
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        try:
            while not done.is_set():
                chunk = await reader.read(65536)
                if not chunk:
                    return
                received += chunk.count(b"data: e")
                if received >= target:
                    done.set()
        finally:
            writer.close()

    def rss_mib() -> float:
        with open(f"/proc/{args.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def post(path: str, body: bytes = b"") -> dict:
        request = urllib.request.Request(f"http://127.0.0.1:{args.port}{path}", data=body or None,
                                         method="POST" if body else "GET")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    rss_before = rss_mib()
    started = time.monotonic()
    tasks = []
    for index in range(args.streams):
        tasks.append(asyncio.create_task(subscriber()))
        if index % 500 == 499:
            await asyncio.sleep(0)
    while post("/stats")["subscribers"] < args.streams:
        if time.monotonic() - started > args.timeout:
            raise SystemExit("subscribers did not connect in time")
        await asyncio.sleep(0.1)
    connected = time.monotonic() - started
    rss_connected = rss_mib()

    publish_start = time.monotonic()
    for index in range(args.events):
        await asyncio.to_thread(post, "/publish", f"e{index}".encode())
    try:
        await asyncio.wait_for(done.wait(), timeout=args.timeout)
    except asyncio.TimeoutError:
        pass
    elapsed = time.monotonic() - publish_start
    stats = post("/stats")
    print(json.dumps({
        "streams": args.streams, "events": args.events, "connectSeconds": round(connected, 2),
        "deliveries": received, "expected": target, "deliveriesPerSecond": round(received / elapsed),
        "rssBeforeMiB": round(rss_before, 1), "rssWithStreamsMiB": round(rss_connected, 1),
        "rssAfterMiB": round(rss_mib(), 1), "dropped": stats["droppedSlowSubscribers"]}))
    done.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
