#!/usr/bin/env python3
"""Benchmarks of the browser client `Clients/js/jetstream.mjs` and its demo.

    .venv/bin/python Benchmarks/js/bench_client.py                      # release binary, full sizes
    .venv/bin/python Benchmarks/js/bench_client.py --binary .build/debug/jetstream \\
        --objects 500 --events 50 --edits 20                             # smoke sizes, ~1 minute

It starts `jetstream serve` (demo schema) on 127.0.0.1 with a fresh data directory, then:

1. **apply** — in headless Chromium (a page on the gateway's origin importing
   `/client/jetstream.mjs`) and in Node (importing the file), `Benchmarks/js/apply_bench.mjs`
   times: (a) `JSON.parse` of a GET-shaped state of `--objects` objects (a Canvas and its Shapes)
   and, apart, `new SyncCore(schema).load(json)`; (b) `--events` `changeset` events (each one
   shape's x/y, versions v+1…) applied to a core holding that state; (c) the same events with
   `--pending` local change sets rebased on every event. `--warmup` untimed runs, then `--runs`
   timed ones; median and min.
2. **end to end** — two Chromium instances open `/demo/?scope=canvas-bench-…`; tab A sets one
   shape's x to 0, 1, … (`--edits` at `--rate`/s, paced by setInterval in the page); tab B's
   subscriber, registered after the demo's own render subscriber, notes when it sees each x.
   Latency = B's time − A's time of the `set` call, both `performance.timeOrigin +
   performance.now()`; exact nearest-rank percentiles of the sorted list. Every edit must arrive.

Writes `Benchmarks/js/results/<UTC timestamp>.json` (not committed) and prints Markdown tables on
stdout; progress on stderr. Exit status 1 when an edit was missing or a step failed.
Timings are never asserted anywhere (Tests/gateway/test_js_bench_smoke.py runs tiny sizes).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import pathlib
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
sys.path.insert(0, str(ROOT / "Benchmarks" / "suite"))

import suite  # noqa: E402  (the side-by-side suite: its machine description)
from gateway_server import GatewayServer  # noqa: E402

CLIENT = ROOT / "Clients" / "js" / "jetstream.mjs"
APPLY_BENCH = HERE / "apply_bench.mjs"
APPLY_NODE = HERE / "apply_node.mjs"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
TARGET_P99_MS = 50.0
STEPS = ("node", "chromium", "e2e")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def wall() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------ HTTP helpers

def http(method: str, url: str, body: dict | None = None, headers: dict | None = None,
         timeout: float = 30) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Accept": "application/json", **({"Content-Type": "application/json"} if data else {}),
        **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def get_json(url: str) -> dict:
    status, body = http("GET", url)
    if status != 200:
        raise RuntimeError(f"GET {url}: HTTP {status}: {body[:300]!r}")
    return json.loads(body)


# ------------------------------------------------------------------------------ statistics

def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank: the smallest value with at least p % of the values at or below it."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def distribution(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    r = lambda v: round(v, 3)  # noqa: E731
    return {"count": len(ordered), "min": r(ordered[0]), "p50": r(percentile(ordered, 50)),
            "p90": r(percentile(ordered, 90)), "p99": r(percentile(ordered, 99)),
            "max": r(ordered[-1]), "mean": r(statistics.fmean(ordered))}


# ------------------------------------------------------------------------------ browsers

class Browsers:
    """Headless Chromium instances (Debian's chromium + chromedriver through selenium); all quit
    by `close()`."""

    def __init__(self, work: pathlib.Path):
        self.work = work
        self.drivers = []

    def open(self, label: str, expose_gc: bool = False):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        arguments = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--no-proxy-server", "--disable-extensions",
                     # A benchmark tab must not be throttled as a background one.
                     "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                     "--disable-backgrounding-occluded-windows",
                     f"--user-data-dir={self.work / f'chromium-{label}'}"]
        if expose_gc:
            arguments.append("--js-flags=--expose-gc")
        for argument in arguments:
            options.add_argument(argument)
        service = Service(executable_path=CHROMEDRIVER, log_output=str(self.work / f"chromedriver-{label}.log"))
        driver = webdriver.Chrome(service=service, options=options)
        self.drivers.append(driver)
        driver.set_script_timeout(600)
        driver.set_page_load_timeout(60)
        return driver

    def close(self) -> None:
        while self.drivers:
            driver = self.drivers.pop()
            try:
                driver.quit()
            except Exception as error:  # noqa: BLE001 - best effort in cleanup
                log(f"   (quitting a driver: {error})")


def wait_until(driver, expression: str, timeout: float, what: str, *args):
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return {expression};", *args)
        if value:
            return value
        if time.monotonic() > deadline:
            state = driver.execute_script(
                "return window.demo ? JSON.stringify({ready: demo.ready, error: demo.error, "
                "status: demo.scope && demo.scope.status, pending: demo.scope && demo.scope.pendingCount}) : null;")
            raise RuntimeError(f"{what}: `{expression}` did not hold within {timeout:.0f} s (demo: {state})")
        time.sleep(0.2)


NOW_JS = "performance.timeOrigin + performance.now()"


def clock_offset(driver, probes: int = 15) -> tuple[float, float]:
    """The page clock minus Python's wall clock (ms), from the probe with the shortest round
    trip; returns (offset, half that round trip = its uncertainty)."""
    best = None
    for _ in range(probes):
        t0 = time.time() * 1000
        page = driver.execute_script(f"return {NOW_JS};")
        t1 = time.time() * 1000
        if best is None or t1 - t0 < best[1] * 2:
            best = (page - (t0 + t1) / 2, (t1 - t0) / 2)
    return best


# ------------------------------------------------------------------------------ the steps

def run_node(schema: dict, options: dict, timeout: float) -> dict:
    node = shutil.which("node")
    if not node:
        raise RuntimeError("node is not installed (Debian's nodejs, version 20)")
    done = subprocess.run([node, "--expose-gc", str(APPLY_NODE), str(CLIENT)],
                          input=json.dumps({"schema": schema, "options": options}),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"node exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def open_blank_page(driver, url: str) -> None:
    """A page on the gateway's origin (module imports need it): /healthz, rewritten."""
    driver.get(f"{url}/healthz")
    driver.execute_script("document.open(); document.write('<!doctype html><title>jetstream bench</title>'); "
                          "document.close();")


def run_chromium_apply(browsers: Browsers, url: str, options: dict, module: str) -> dict:
    """`module`: "served" imports the gateway's /client/jetstream.mjs, "file" the text of
    Clients/js/jetstream.mjs through a blob: URL (for a binary built before the file's last edit)."""
    driver = browsers.open("apply", expose_gc=True)
    try:
        open_blank_page(driver, url)
        source = CLIENT.read_text() if module == "file" else None
        result = driver.execute_async_script("""
            const [moduleURL, moduleSource, benchSource, options, done] = arguments;
            const blob = (text) => URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
            (async () => {
              const jetstream = await import(moduleSource === null ? moduleURL : blob(moduleSource));
              const bench = await import(blob(benchSource));
              const schema = await (await fetch("/v1/schema", { cache: "no-store" })).json();
              const report = await bench.runApplyBench(jetstream, schema, options);
              done({ report, userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated });
            })().catch((error) => done({ error: String(error && error.stack || error) }));
        """, f"{url}/client/jetstream.mjs", source, APPLY_BENCH.read_text(), options)
        if "error" in result:
            raise RuntimeError(f"Chromium apply bench: {result['error']}")
        report = result["report"]
        report["browser"] = f"Chromium {driver.capabilities.get('browserVersion', '?')}"
        report["module"] = "Clients/js/jetstream.mjs (blob: URL)" if module == "file" else "/client/jetstream.mjs (served)"
        report["userAgent"] = result["userAgent"]
        # Not cross-origin isolated: performance.now() is coarsened to 100 µs in Chromium.
        report["timerResolution"] = "5 µs" if result["crossOriginIsolated"] else "100 µs (page not cross-origin isolated)"
        return report
    finally:
        browsers.drivers.remove(driver)
        driver.quit()


def make_scope_with_a_shape(url: str, name: str) -> str:
    status, body = http("PUT", f"{url}/v1/scopes/{name}", {"root": {"clsName": "Canvas", "properties": {"name": "bench"}}})
    if status != 201:
        raise RuntimeError(f"PUT scope {name}: HTTP {status}: {body[:300]!r}")
    state = json.loads(body)
    shape = str(uuid.uuid4())
    fragments = [
        {"type": "add", "uuid": shape, "clsName": "Shape",
         "properties": {"x": -1, "y": 120, "width": 140, "height": 90, "color": 0x93c5fdff, "label": "bench"}},
        {"type": "change", "uuid": state["rootUUID"], "clsName": "Canvas", "properties": {"shapes": {"insert": [shape]}}},
    ]
    status, body = http("POST", f"{url}/v1/scopes/{name}/changesets", {"fragments": fragments},
                        {"Idempotency-Key": f"bench-setup-{shape}"})
    if status != 200:
        raise RuntimeError(f"POST the shape: HTTP {status}: {body[:300]!r}")
    return shape


def run_end_to_end(browsers: Browsers, url: str, edits: int, rate: float, timeout: float) -> dict:
    name = f"canvas-bench-{uuid.uuid4().hex[:10]}"
    shape = make_scope_with_a_shape(url, name)
    interval = 1000.0 / rate
    tab_a, tab_b = browsers.open("tab-a"), browsers.open("tab-b")
    for driver in (tab_a, tab_b):
        driver.get(f"{url}/demo/?scope={name}")
    for label, driver in (("tab A", tab_a), ("tab B", tab_b)):
        wait_until(driver, "window.demo && demo.ready && demo.scope.status === 'live' && "
                   "!!demo.scope.get(arguments[0])", 60, f"{label} opening the demo", shape)
    # B: a subscriber after the demo's own render subscriber (listeners run in insertion order),
    # so its time is after the DOM update of the notification.
    tab_b.execute_script("""
        const [uuid, NOW] = arguments;
        window.bench = { seen: {}, framed: {}, sequence: [], repeats: 0 };
        let last = demo.scope.get(uuid).properties.x;
        demo.scope.subscribe((notification) => {
          const t = performance.timeOrigin + performance.now();
          for (const fragment of notification.fragments) {
            if (fragment.uuid !== uuid || fragment.properties.x === last) continue;
            last = fragment.properties.x;
            bench.sequence.push(last);
            if (last in bench.seen) { bench.repeats += 1; continue; }
            bench.seen[last] = t;
            // The next animation frame's callbacks (run before that frame is painted).
            const x = last;
            requestAnimationFrame(() => { bench.framed[x] = performance.timeOrigin + performance.now(); });
          }
        });
    """, shape, NOW_JS)
    offset_a_before, offset_b_before = clock_offset(tab_a), clock_offset(tab_b)
    renders_b_before = tab_b.execute_script("return demo.renders;")
    log(f"   {edits} edits at {rate:g}/s on {name}")
    started = time.monotonic()
    tab_a.execute_script("""
        const [uuid, edits, interval] = arguments;
        window.bench = { sent: [], accepted: [], errors: [], done: false };
        let i = 0;
        const timer = setInterval(() => {
          const k = i++;
          bench.sent[k] = performance.timeOrigin + performance.now();
          demo.scope.set(uuid, { x: k }).then(
            () => { bench.accepted[k] = performance.timeOrigin + performance.now(); },
            (error) => { bench.errors.push(`${k}: ${error && error.message || error}`); });
          if (i >= edits) { clearInterval(timer); bench.done = true; }
        }, interval);
    """, shape, edits, interval)
    deadline = edits * interval / 1000 + timeout
    last = edits - 1
    try:
        wait_until(tab_a, "bench.done && demo.scope.pendingCount === 0", deadline, "tab A sending its edits")
        wait_until(tab_b, "arguments[0] in bench.seen", timeout, "tab B seeing the last edit", last)
    except RuntimeError as error:
        log(f"   {error}")
    duration = time.monotonic() - started
    a = tab_a.execute_script("return { sent: bench.sent, accepted: bench.accepted, errors: bench.errors, "
                             "pending: demo.scope.pendingCount, status: demo.scope.status };")
    b = tab_b.execute_script("""
        const [uuid] = arguments;
        const element = document.querySelector(`.shape[data-uuid="${uuid}"]`);
        return { seen: bench.seen, framed: bench.framed, sequence: bench.sequence, repeats: bench.repeats, renders: demo.renders,
                 x: demo.scope.get(uuid).properties.x, left: element && element.style.left,
                 status: demo.scope.status, rejections: demo.rejections.length };
    """, shape)
    offset_a_after, offset_b_after = clock_offset(tab_a), clock_offset(tab_b)

    seen = {int(float(x)): t for x, t in b["seen"].items()}
    framed = {int(float(x)): t for x, t in b["framed"].items()}
    missing = [i for i in range(edits) if i not in seen]
    sent = a["sent"]
    latencies = [seen[i] - sent[i] for i in range(min(edits, len(sent))) if i in seen and sent[i] is not None]
    accepted = [a["accepted"][i] - sent[i] for i in range(min(edits, len(a["accepted"])))
                if a["accepted"][i] is not None]
    to_frame = [framed[i] - sent[i] for i in range(min(edits, len(sent))) if i in framed and sent[i] is not None]
    # Per edit (null where missing), for a look at what the tail is made of.
    per_edit = [{"latency": round(seen[i] - sent[i], 2) if i in seen and i < len(sent) else None,
                 "toNextFrame": round(framed[i] - sent[i], 2) if i in framed and i < len(sent) else None,
                 "postAccepted": round(a["accepted"][i] - sent[i], 2)
                 if i < len(a["accepted"]) and a["accepted"][i] is not None else None}
                for i in range(edits)]
    sequence = b["sequence"]
    out_of_order = sum(1 for x, y in zip(sequence, sequence[1:]) if y <= x)
    skew_before = offset_b_before[0] - offset_a_before[0]
    skew_after = offset_b_after[0] - offset_a_after[0]
    latency = distribution(latencies)
    return {
        "scope": name, "edits": edits, "ratePerSecond": rate, "intervalMs": interval,
        "durationSeconds": round(duration, 2),
        "latencyMs": latency,
        "toNextFrameMs": distribution(to_frame),
        "postAcceptedMs": distribution(accepted),
        "received": len(seen), "missing": missing, "repeats": b["repeats"], "outOfOrder": out_of_order,
        "finalX": b["x"], "finalLeft": b["left"], "renderedLast": b["left"] == f"{last}px",
        "rendersInB": b["renders"] - renders_b_before,
        "errorsInA": a["errors"], "pendingInA": a["pending"], "rejectionsInB": b["rejections"],
        "status": {"a": a["status"], "b": b["status"]},
        # Tab B's clock minus tab A's, estimated through WebDriver round trips: a check that the
        # two tabs share a clock (it is not subtracted).
        "clockSkewMs": {"before": round(skew_before, 2), "after": round(skew_after, 2),
                        "uncertainty": round(max(offset_a_before[1] + offset_b_before[1],
                                                 offset_a_after[1] + offset_b_after[1]), 2)},
        "perEditMs": per_edit,
        "targetP99Ms": TARGET_P99_MS,
        "targetMet": bool(latency.get("p99") is not None and latency["p99"] <= TARGET_P99_MS),
        "complete": not missing and b["x"] == last and b["left"] == f"{last}px" and not a["errors"],
    }


# ------------------------------------------------------------------------------ report

def machine(load_before: str) -> dict:
    return suite.machine(load_before, {"node": ["node", "--version"]})


def ms(summary: dict) -> str:
    return f"{summary['median']:.2f} ms ({summary['min']:.2f})"


def per_event(result: dict) -> str:
    return (f"{result['totalMs']['median']:.1f} ms = {result['perEventMicros']['median']:.1f} µs/event "
            f"({result['totalMs']['min']:.1f} ms)")


def markdown(report: dict) -> str:
    lines = []
    apply_columns = [(k, report[k]) for k in ("chromium", "node") if report.get(k)]
    if apply_columns:
        first = apply_columns[0][1]
        heads = [r.get("browser") or f"Node {r.get('node', '?')}" for _, r in apply_columns]
        lines += [f"| apply, {first['objects']:,} objects (state {first['stateBytes'] / 1e6:.1f} MB), "
                  f"median (min) of {first['runs']} runs | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(apply_columns)]
        rows = [
            ("snapshot: `JSON.parse` of the state text", lambda r: ms(r["snapshot"]["parseMs"])),
            ("snapshot: `new SyncCore(schema).load(json)`", lambda r: ms(r["snapshot"]["loadMs"])),
            (f"{first['events']:,} `changeset` events: `core.event(e)`", lambda r: per_event(r["changesets"])),
            (f"same, with {first['pending']} pending local sets (rebase per event)", lambda r: per_event(r["rebase"])),
            (f"`JSON.parse` of the {first['events']:,} events' data (apart)", lambda r: ms(r["eventsParseMs"])),
        ]
        for label, cell in rows:
            lines.append(f"| {label} | " + " | ".join(cell(r) for _, r in apply_columns) + " |")
    e2e = report.get("endToEnd")
    if e2e:
        lat, post, frame = e2e["latencyMs"], e2e["postAcceptedMs"], e2e["toNextFrameMs"]
        f = lambda d, k: f"{d[k]:.1f} ms" if k in d else "–"  # noqa: E731
        verdict = "met" if e2e["targetMet"] else "missed"
        lines += ["", "| end to end: tab A `set` → tab B render | p50 | p90 | p99 | max | missing | p99 ≤ 50 ms |",
                  "|---|---|---|---|---|---|---|",
                  f"| {e2e['edits']} edits at {e2e['ratePerSecond']:g}/s, one shape's x | {f(lat, 'p50')} | "
                  f"{f(lat, 'p90')} | {f(lat, 'p99')} | {f(lat, 'max')} | "
                  f"{len(e2e['missing'])} of {e2e['edits']} | {verdict} |",
                  f"| (same, to B's next animation frame) | {f(frame, 'p50')} | {f(frame, 'p90')} | "
                  f"{f(frame, 'p99')} | {f(frame, 'max')} | | |",
                  f"| (A's `set` → its POST answered, for comparison) | {f(post, 'p50')} | {f(post, 'p90')} | "
                  f"{f(post, 'p99')} | {f(post, 'max')} | | |"]
    m = report["machine"]
    if report.get("servedModuleMatchesFile") is False:
        lines += ["", "- **the binary serves an older jetstream.mjs than Clients/js/jetstream.mjs** "
                      f"(Chromium apply: {report.get('chromium', {}).get('module', '–')}; Node: the file; demo tabs: served)"]
    lines += ["", f"- binary `{report['binaryShown']}`; machine: {m['cores']} cores ({m['cpu']}), "
                  f"{m['memoryGiB']} GiB, Linux {m['kernel']}; browsers, Node and server on the same cores",
              f"- commit {m['commit']}; run {report['started']} → {report['finished']}; "
              f"load average before {m['loadBefore']}, after {report['loadAfter']}"]
    return "\n".join(lines).lstrip("\n")


# ------------------------------------------------------------------------------ main

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(ROOT / ".build" / "release" / "jetstream"), help="the jetstream executable")
    p.add_argument("--objects", type=int, default=10000, help="objects in the applied snapshot (root included)")
    p.add_argument("--events", type=int, default=1000, help="changeset events applied per run")
    p.add_argument("--pending", type=int, default=3, help="local pending sets in the rebase measurement")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each apply measurement")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs before them")
    p.add_argument("--edits", type=int, default=500, help="edits in the end-to-end measurement")
    p.add_argument("--rate", type=float, default=20, help="edits per second")
    p.add_argument("--only", default=",".join(STEPS), help=f"steps, comma-separated: {','.join(STEPS)}")
    p.add_argument("--chromium-module", choices=("served", "file"), default="served",
                   help="what Chromium's apply step imports: the gateway's /client/jetstream.mjs, or "
                        "Clients/js/jetstream.mjs itself (when the binary predates the file)")
    p.add_argument("--timeout", type=float, default=120, help="bound on each wait, seconds (beyond the edits' own time)")
    p.add_argument("--results-dir", default=str(HERE / "results"))
    p.add_argument("--keep", action="store_true", help="keep the work directory (server and chromedriver logs)")
    args = p.parse_args(argv)
    args.steps = [s for s in STEPS if s in args.only.split(",")]
    if set(args.only.split(",")) - set(STEPS) or not args.steps:
        p.error(f"--only takes {','.join(STEPS)}")
    if args.objects < args.pending + 2 or min(args.events, args.edits, args.runs) < 1 or args.rate <= 0:
        p.error("sizes too small")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    binary = pathlib.Path(args.binary)
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"{binary} is missing: build it (swift build -c release --product jetstream) or pass --binary")
    shown = "Benchmarks/js/bench_client.py" + ("" if not argv else " " + " ".join(shlex.quote(a) for a in argv))
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc)
    work = pathlib.Path(tempfile.mkdtemp(prefix="jetstream-js-bench-"))
    server = GatewayServer(binary, work / "data", ["--no-access-log"], log_dir=work)
    browsers = Browsers(work)
    apply_options = {"objects": args.objects, "events": args.events, "pending": args.pending,
                     "runs": args.runs, "warmup": args.warmup}
    report: dict = {"benchmark": "jetstream.mjs client", "command": shown,
                    "binary": str(binary.absolute()), "options": apply_options | {"edits": args.edits, "rate": args.rate}}
    failures: list[str] = []

    def on_sigterm(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, on_sigterm)  # so that `finally` stops what we started
    try:
        server.start()
        log(f"== {binary} listening at {server.url}")
        status, served = http("GET", f"{server.url}/client/jetstream.mjs")
        if status != 200:
            raise RuntimeError(f"{binary} does not serve /client/jetstream.mjs (HTTP {status}): rebuild it")
        report["servedModuleMatchesFile"] = hashlib.sha256(served).hexdigest() == hashlib.sha256(CLIENT.read_bytes()).hexdigest()
        if not report["servedModuleMatchesFile"]:
            log("   note: the binary serves another jetstream.mjs than Clients/js/jetstream.mjs (rebuild it, "
                "or pass --chromium-module file); the demo tabs use the served one")
        schema = get_json(f"{server.url}/v1/schema")
        steps = {
            "node": lambda: run_node(schema, apply_options, timeout=600 + args.timeout),
            "chromium": lambda: run_chromium_apply(browsers, server.url, apply_options, args.chromium_module),
            "e2e": lambda: run_end_to_end(browsers, server.url, args.edits, args.rate, args.timeout),
        }
        keys = {"node": "node", "chromium": "chromium", "e2e": "endToEnd"}
        for step in args.steps:
            log(f"== {step} ({wall()})")
            try:
                report[keys[step]] = steps[step]()
            except Exception as error:  # noqa: BLE001 - reported, the other steps still run
                failures.append(f"{step}: {error}")
                log(f"   FAILED: {error}")
            finally:
                browsers.close()
        e2e = report.get("endToEnd")
        if e2e and not e2e["complete"]:
            failures.append(f"e2e: missing edits {e2e['missing'][:20]}, final x {e2e['finalX']}, errors {e2e['errorsInA'][:5]}")
    except Exception as error:  # noqa: BLE001
        failures.append(str(error))
        log(f"FAILED: {error}\nserver log:\n{server.log_tail() if server.starts else '(not started)'}")
    finally:
        browsers.close()
        if server.running:
            try:
                server.stop()
            except AssertionError as error:  # it ignored SIGTERM and was killed
                failures.append(str(error))
        signal.signal(signal.SIGTERM, previous)
        if args.keep:
            log(f"== work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    finished = datetime.datetime.now(datetime.timezone.utc)
    report.update({
        "started": started.strftime("%Y-%m-%d %H:%M:%S UTC"), "finished": finished.strftime("%H:%M:%S UTC"),
        "loadAfter": " ".join(open("/proc/loadavg").read().split()[:3]), "machine": machine(load_before),
        "binaryShown": os.path.relpath(binary.absolute(), ROOT) if binary.absolute().is_relative_to(ROOT) else str(binary),
        "failures": failures,
    })
    results_dir = pathlib.Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{started.strftime('%Y-%m-%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    log(f"== results: {path}")
    for failure in failures:
        log(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
