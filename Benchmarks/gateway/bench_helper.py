#!/usr/bin/env python3
"""Setup and timing steps of Benchmarks/gateway/run.sh that need more than curl (loopback only).

  bench_helper.py shapes   --port P --scope demo --count 10      add COUNT shapes; print the state's size
  bench_helper.py scopes   --port P --prefix canvas-w --count 32 --out FILE
                                                                  create scopes; write "NAME ROOT_UUID" lines
  bench_helper.py versions --port P --prefix canvas-w             print the sum of those scopes' versions
  bench_helper.py restart  --repeat 3 [--verify-prefix canvas-r] -- BINARY serve ARGS…
                                                                  time process start → "listening" line
"""
from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid


def call(method: str, url: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def base(args) -> str:
    if not args.host.startswith("127."):
        raise SystemExit("loopback only")
    return f"http://{args.host}:{args.port}"


def shapes(args) -> None:
    url = f"{base(args)}/v1/scopes/{args.scope}"
    status, body = call("GET", url)
    state = json.loads(body)
    ids = [str(uuid.uuid4()) for _ in range(args.count)]
    fragments = [{"type": "add", "uuid": i, "clsName": "Shape",
                  "properties": {"x": 10.5 * n, "y": 20.25 * n, "width": 120, "height": 80,
                                 "label": f"shape number {n} of the benchmark canvas", "kind": "oval" if n % 2 else "rect"}}
                 for n, i in enumerate(ids)]
    fragments.append({"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas",
                      "properties": {"name": "benchmark canvas", "shapes": ids}})
    status, body = call("POST", url + "/changesets", {"fragments": fragments})
    if status != 200:
        raise SystemExit(f"adding shapes answered {status}: {body[:300]!r}")
    status, body = call("GET", url)
    print(len(body))


def scopes(args) -> None:
    lines = []
    for n in range(args.count):
        name = f"{args.prefix}{n}"
        status, body = call("PUT", f"{base(args)}/v1/scopes/{name}", {"root": {"clsName": "Canvas"}})
        if status == 409:
            status, body = call("GET", f"{base(args)}/v1/scopes/{name}")
        if status not in (200, 201):
            raise SystemExit(f"creating {name} answered {status}: {body[:300]!r}")
        lines.append(f"{name} {json.loads(body)['rootUUID']}\n")
    with open(args.out, "w") as out:
        out.writelines(lines)


def version_sum(args, prefix: str) -> int:
    total, after = 0, None
    while True:
        query = "limit=1000" + (f"&after={after}" if after else "")
        status, body = call("GET", f"{base(args)}/v1/scopes?{query}")
        page = json.loads(body)
        total += sum(s["version"] for s in page["scopes"] if s["name"].startswith(prefix))
        after = page["next"]
        if not after:
            return total


def versions(args) -> None:
    print(version_sum(args, args.prefix))


def restart(args) -> None:
    """Starts the server ARGS --repeat times; each time measures process start → the
    "listening" line on stdout, then stops it with SIGTERM and waits for it."""
    times = []
    for _ in range(args.repeat):
        started = time.monotonic()
        server = subprocess.Popen(args.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = server.stdout.readline()  # bounded: the server either prints it or exits
            elapsed = time.monotonic() - started
            if "listening on" not in line:
                raise SystemExit(f"the server did not start: {line!r} (exit {server.wait(timeout=30)})")
            times.append(elapsed)
            if args.verify_prefix:  # what came back: the sum of the scopes' versions
                args.port = int(line.strip().rsplit(":", 1)[1])
                recovered = version_sum(args, args.verify_prefix)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    result = {"median_seconds": round(statistics.median(times), 3), "runs_seconds": [round(t, 3) for t in times]}
    if args.verify_prefix:
        result["recovered_version_sum"] = recovered
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    for name in ("shapes", "scopes", "versions"):
        p = sub.add_parser(name)
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, required=True)
        if name == "shapes":
            p.add_argument("--scope", default="demo")
        else:
            p.add_argument("--prefix", required=True)
        if name != "versions":
            p.add_argument("--count", type=int, default=10)
        if name == "scopes":
            p.add_argument("--out", required=True)
    p = sub.add_parser("restart")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--verify-prefix", help="after each start, sum the versions of the scopes named PREFIX…")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.step == "restart":
        args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    {"shapes": shapes, "scopes": scopes, "versions": versions, "restart": restart}[args.step](args)


if __name__ == "__main__":
    main()
