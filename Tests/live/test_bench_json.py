"""`HotPathBench` and `ModelBench` in `--quick --json` mode print one JSON object with every
operation a script reads. Structure only: counts and rates must be positive, timings are never
compared with anything (figures live in docs/benchmarks.md)."""
from __future__ import annotations

import json
import subprocess

import pytest

HOT_PATH_OPERATIONS = {
    "http1.parse.get",
    "http1.parse.post",
    "http1.parse.pipelined16",
    "fragments.decode.10",
    "fragments.decode.1",
    "changeset.apply.10",
    "changeset.apply.1",
    "changeset.post.1",
    "sse.writeEvent.10",
    "sse.event.10",
    "sse.event.1",
    "sse.generic.10",
    "sse.h2.data.10",
    "http1.response.2560",
}
TIMINGS = ("p50Micros", "p99Micros", "meanMicros")


def run_json(binary, *args: str) -> dict:
    if not binary.exists():
        pytest.fail(f"{binary} is missing: build it first (swift build --product {binary.name})")
    done = subprocess.run([str(binary), "--quick", "--json", *args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    # Progress goes to stderr; stdout is exactly one JSON object.
    return json.loads(done.stdout)


def test_hot_path_bench_json_has_every_operation(bin_dir):
    report = run_json(bin_dir / "HotPathBench")
    assert report["benchmark"] == "HotPathBench"
    assert report["quick"] is True
    assert report["scopeObjects"] > 0
    operations = {operation["name"]: operation for operation in report["operations"]}
    assert set(operations) == HOT_PATH_OPERATIONS
    assert len(report["operations"]) == len(HOT_PATH_OPERATIONS)
    for name, operation in operations.items():
        assert operation["samples"] > 0 and operation["batch"] >= 1, name
        assert operation["operations"] == operation["samples"] * operation["batch"], name
        assert operation["itemsPerOp"] >= 1, name
        assert operation["opsPerSecond"] > 0, name
        assert operation["itemsPerSecond"] > 0, name
        assert all(isinstance(operation[key], (int, float)) for key in TIMINGS), name
        if operation["bytesPerOp"] > 0:
            assert operation["megabytesPerSecond"] > 0, name
        else:
            assert "megabytesPerSecond" not in operation, name
    assert operations["http1.parse.pipelined16"]["itemsPerOp"] == 16
    assert operations["http1.parse.post"]["bytesPerOp"] > 300
    assert operations["changeset.apply.10"]["itemsPerOp"] == 10


def test_hot_path_bench_only_selects_by_prefix(bin_dir):
    report = run_json(bin_dir / "HotPathBench", "--only", "http1.parse,sse.event")
    names = [operation["name"] for operation in report["operations"]]
    assert names == ["http1.parse.get", "http1.parse.post", "http1.parse.pipelined16", "sse.event.10", "sse.event.1"]


def test_hot_path_bench_rejects_unknown_arguments(bin_dir):
    done = subprocess.run([str(bin_dir / "HotPathBench"), "--bogus"], capture_output=True, timeout=30)
    assert done.returncode == 2
    assert done.stdout == b""


def test_model_bench_json_has_apply_per_scope_size(bin_dir):
    report = run_json(bin_dir / "ModelBench")
    assert report["benchmark"] == "ModelBench"
    assert report["quick"] is True
    apply = report["apply"]
    assert len(apply) == 2
    assert apply[0]["objects"] < apply[1]["objects"]
    for row in apply:
        assert row["objects"] > 0 and row["sets"] > 0
        assert row["buildObjectsPerSecond"] > 0
        assert all(isinstance(row[key], (int, float)) for key in (*TIMINGS, "parseApplyP50Micros"))
    state = report["state"]
    assert state["objects"] > 0 and state["megabytes"] > 0
    assert {"exportSeconds", "parseSeconds", "decodeSeconds", "importSeconds", "streamSeconds"} <= set(state)
    coders = [row["coder"] for row in report["json"]]
    assert len(coders) == 7 and any(coder.startswith("JSONParser.parse") for coder in coders)
    assert all(row["stateMegabytesPerSecond"] > 0 and row["bodyMegabytesPerSecond"] > 0 for row in report["json"])
