"""Benchmarks/js/bench_client.py at tiny sizes against the test binary, so the benchmark of the
JavaScript client cannot rot: every figure is in its JSON and no edit went missing. Timings are
never asserted (they are figures, not requirements)."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPT = ROOT / "Benchmarks" / "js" / "bench_client.py"
EDITS = 20


def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def assert_apply_report(report: dict) -> None:
    assert report["objects"] == 500 and report["events"] == 50 and report["pending"] == 3, report
    assert report["stateBytes"] > 0
    for summary in (report["snapshot"]["parseMs"], report["snapshot"]["loadMs"], report["eventsParseMs"]):
        assert len(summary["runs"]) == report["runs"] and number(summary["median"]) and number(summary["min"]), summary
    for key in ("changesets", "rebase"):
        result = report[key]
        assert len(result["totalMs"]["runs"]) == report["runs"], result
        for figure in ("median", "min"):
            assert number(result["totalMs"][figure]) and number(result["perEventMicros"][figure]), result


def test_the_js_client_benchmark_runs_and_reports_every_figure(jetstream_bin, tmp_path):
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--binary", str(jetstream_bin), "--objects", "500", "--events", "50",
         "--edits", str(EDITS), "--runs", "2", "--timeout", "60", "--results-dir", str(tmp_path / "results")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        stdout, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        process.terminate()  # SIGTERM: the script stops its server and browsers
        stdout, stderr = process.communicate(timeout=120)
        raise AssertionError(f"bench_client.py took over 600 s\nstderr:\n{stderr[-4000:]}")
    assert process.returncode == 0, f"exit {process.returncode}\nstdout:\n{stdout}\nstderr:\n{stderr[-4000:]}"
    [path] = (tmp_path / "results").glob("*.json")
    report = json.loads(path.read_text())
    assert report["failures"] == [], report["failures"]
    assert report["servedModuleMatchesFile"] in (True, False)

    assert report["chromium"]["browser"].startswith("Chromium ")
    assert_apply_report(report["chromium"])
    assert report["node"]["node"].startswith("v")
    assert_apply_report(report["node"])

    e2e = report["endToEnd"]
    assert e2e["edits"] == EDITS and e2e["received"] == EDITS
    assert e2e["missing"] == [] and e2e["repeats"] == 0 and e2e["outOfOrder"] == 0, e2e
    assert e2e["finalX"] == EDITS - 1 and e2e["renderedLast"] and e2e["complete"], e2e
    assert e2e["errorsInA"] == [] and e2e["pendingInA"] == 0
    for distribution in (e2e["latencyMs"], e2e["toNextFrameMs"], e2e["postAcceptedMs"]):
        assert distribution["count"] == EDITS
        for figure in ("min", "p50", "p90", "p99", "max"):
            assert isinstance(distribution[figure], (int, float)), distribution
    assert len(e2e["perEditMs"]) == EDITS
    assert isinstance(e2e["targetMet"], bool)

    # The Markdown on stdout, ready to paste.
    assert "| snapshot: `new SyncCore(schema).load(json)` |" in stdout
    assert f"| {EDITS} edits at 20/s, one shape's x |" in stdout
