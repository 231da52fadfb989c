#!/usr/bin/env python3
"""What persistence costs the browser client (`openScope(name, {persist: true})`, docs/offline.md).

    .venv/bin/python Benchmarks/offline/bench_js_offline.py                    # release binary
    .venv/bin/python Benchmarks/offline/bench_js_offline.py --binary .build/debug/jetstream \\
        --objects 1000 --changes 50 --runs 2                                    # smoke sizes

Starts `jetstream serve` (demo schema, fresh data directory, `--cors-origin` for the page's origin)
and a static server of its own for the page (Tests/gateway/browser/offline.html) and the client
modules as the gateway serves them, so the page loads while the gateway is down. A canvas with
`--objects` shapes is made through the API. In headless Chromium:

1. **size** — the scope opened with persist, its state stored: `navigator.storage.estimate()`
   before (after clearStoredScopes) and after, per object; and the stored record's JSON length.
2. **cold start** — reload, then the time from the `openScope` call until it resolves (the view
   is there) and until status "live": from storage with the server up, from storage with the server
   down, and without persist (a full GET) for comparison. `--runs` each; median and min.
3. **per change** — `--changes` times: `scope.set(shape, {x})`, then `await scope.saved()`; the
   time from the call until saved() resolves; exact nearest-rank p50/p99, server up and down.

Prints a Markdown table; timings are never asserted anywhere. Exit 1 when a step failed.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))
sys.path.insert(0, str(ROOT / "Tests" / "gateway" / "browser"))

from chromium_driver import chromium  # noqa: E402
from gateway_helpers import Api, add, change, new_uuid  # noqa: E402
from gateway_server import GatewayServer  # noqa: E402
from test_js_offline import StaticSite, Tab, first_tab  # noqa: E402


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def make_canvas(api: Api, objects: int) -> str:
    name, state = api.create_canvas(f"canvas-offline-bench-{new_uuid()[:8]}")
    root = state["rootUUID"]
    shapes: list[str] = []
    while len(shapes) < objects:
        batch = [new_uuid() for _ in range(min(500, objects - len(shapes)))]
        shapes += batch
        api.apply(name, [*(add(u, "Shape", x=i, y=i, label=f"shape {i}") for i, u in enumerate(batch)),
                         change(root, "Canvas", shapes=list(shapes))])
    return name


def timed_open(tab: Tab, base: str, name: str, persist: bool) -> tuple[float, float]:
    """Reloads the tab and opens the scope: ms until openScope resolved, ms until live (or nan)."""
    tab.reload()
    return tuple(tab.run(
        "const t0 = performance.now();"
        "const scope = await harness.jetstream.openScope(args[1], {baseURL: args[0], persist: args[2],"
        " backoff: {initial: 100, max: 400}});"
        "const opened = performance.now() - t0;"
        "harness.scope = scope;"
        "const until = performance.now() + 5000;"
        "while (scope.status !== 'live' && performance.now() < until) await new Promise(r => setTimeout(r, 5));"
        "return [opened, scope.status === 'live' ? performance.now() - t0 : NaN];", base, name, persist))


def per_change(tab: Tab, changes: int) -> list[float]:
    return tab.run(
        "const scope = harness.scope;"
        "const root = scope.get(scope.rootUUID);"
        "const shapes = root.properties.shapes;"
        "const times = [];"
        "for (let i = 0; i < args[0]; i++) {"
        "  const t0 = performance.now();"
        "  scope.set(shapes[i % shapes.length], {x: 1000 + i}).catch(() => {});"
        "  await scope.saved();"
        "  times.push(performance.now() - t0);"
        "}"
        "return times;", changes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = ROOT / ".build" / "release" / "jetstream"
    parser.add_argument("--binary", type=pathlib.Path, default=default if default.exists() else ROOT / ".build" / "debug" / "jetstream")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-js-offline-"))
    site = StaticSite()
    server = GatewayServer(args.binary, work / "data", ["--cors-origin", site.origin], log_dir=work).start()
    driver = None
    rows: list[tuple[str, str]] = []
    try:
        site.copy_client(server.url)
        api = Api(server.url)
        log(f"binary {args.binary}; making a canvas of {args.objects} shapes")
        name = make_canvas(api, args.objects)
        version = api.state(name)["version"]
        driver = chromium(work / "chromium")
        tab = first_tab(driver)
        tab.load(site.origin)

        # 1. size
        tab.run("await harness.jetstream.clearStoredScopes(); return true;")
        before = tab.run("return (await navigator.storage.estimate()).usage;")
        tab.open_scope(server.url, name)
        deadline = time.monotonic() + 120
        while True:
            stored = [r for r in tab.run("return await harness.records('states');") if r["scope"] == name]
            if stored and stored[0]["version"] == version:
                break
            assert time.monotonic() < deadline, "the state was never stored"
            time.sleep(0.2)
        record_bytes = tab.run("const rs = await harness.records('states');"
                               "return JSON.stringify(rs.find(r => r.scope === args[0])).length;", name)
        after = tab.run("return (await navigator.storage.estimate()).usage;")
        rows.append(("stored state, JSON length per object", f"{record_bytes / args.objects:.0f} B"))
        rows.append(("storage.estimate() growth per object", f"{(after - before) / args.objects:.0f} B"))

        # 2. cold start
        up = [timed_open(tab, server.url, name, True) for _ in range(args.runs)]
        full = [timed_open(tab, server.url, name, False) for _ in range(args.runs)]
        # 3a. per change, server up (the last open was without persist: open with it again)
        timed_open(tab, server.url, name, True)
        saved_up = per_change(tab, args.changes)
        api.close()
        port = server.port
        server.stop()
        down = [timed_open(tab, server.url, name, True) for _ in range(args.runs)]
        saved_down = per_change(tab, args.changes)
        server.start(port=port)

        def opened(samples):
            values = [s[0] for s in samples]
            return f"median {statistics.median(values):.0f} ms, min {min(values):.0f} ms"

        def live(samples):
            values = [s[1] for s in samples if s[1] == s[1]]
            return f"median {statistics.median(values):.0f} ms" if values else "—"

        rows.append(("cold start from storage, server up: openScope resolved", opened(up)))
        rows.append(("  … and live (caught up on the stream)", live(up)))
        rows.append(("cold start from storage, server down: openScope resolved", opened(down)))
        rows.append(("without persist (GET), server up: openScope resolved", opened(full)))
        rows.append(("one change until saved(), server up", f"p50 {percentile(saved_up, 50):.2f} ms, p99 {percentile(saved_up, 99):.2f} ms"))
        rows.append(("one change until saved(), server down", f"p50 {percentile(saved_down, 50):.2f} ms, p99 {percentile(saved_down, 99):.2f} ms"))
    finally:
        if driver is not None:
            driver.quit()
        server.stop()
        site.close()

    print(f"\n{args.objects} objects, {args.runs} runs, {args.changes} changes, {args.binary}\n")
    print("| measure | value |\n|---|---|")
    for label, value in rows:
        print(f"| {label} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
