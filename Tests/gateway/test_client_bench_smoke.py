"""`ClientBench` (the Swift client's benchmark, Sources/Tools/ClientBench) at tiny sizes against the
test binary, so it cannot rot: its JSON has every figure, every event on an observed shape fired
its observer exactly once (in process, over the stream, end to end, on both clients of the actor
section), the storage section's sets reached the server once each, and it stopped the server it
started and removed its storage directory. Timings are never asserted (they are figures, not
requirements)."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest

from gateway_helpers import built_executable

SHAPES, OBSERVERS, APPLY_EVENTS, STREAM_EVENTS, RATE, SECONDS = 300, 10, 200, 100, 50, 1
ACTOR_EVENTS, OFFLINE_CHANGES, COLD_STARTS = 100, 20, 2


def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


@pytest.fixture(scope="module")
def client_bench(jetstream_bin):
    return built_executable(jetstream_bin, "ClientBench")


def run(binary, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:  # the bench's own server dies with it (its guard reads our pipe)
        raise AssertionError(f"ClientBench took over {timeout} s\nstderr:\n{(expired.stderr or '')[-4000:]}")


def guarded_servers() -> set[str]:
    """Command lines of running servers started by a ClientBench (their data directory's name)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if " serve " in command and "/clientbench-" in command:
            found.add(pid)
    return found


def storage_directories() -> set[str]:
    """The offline section's temporary storage directories (removed when it ends)."""
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("clientbench-storage-")}


def test_client_bench_reports_every_figure_and_no_lost_delivery(client_bench, jetstream_bin):
    before, stored_before = guarded_servers(), storage_directories()
    done = run(client_bench, "--binary", str(jetstream_bin), "--json", "--shapes", str(SHAPES),
               "--observers", str(OBSERVERS), "--apply-events", str(APPLY_EVENTS),
               "--stream-events", str(STREAM_EVENTS), "--writers", "4", "--rate", str(RATE),
               "--seconds", str(SECONDS), "--actor-events", str(ACTOR_EVENTS),
               "--offline-changes", str(OFFLINE_CHANGES), "--cold-starts", str(COLD_STARTS), "--timeout", "240")
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-4000:]}"
    report = json.loads(done.stdout)  # progress goes to stderr; stdout is one JSON object
    assert report["benchmark"] == "ClientBench" and report["failures"] == []
    assert report["objects"] == SHAPES + 1 and report["observers"] == OBSERVERS
    assert "started" in report["server"]
    assert number(report["seedSeconds"])

    load = report["load"]
    assert load["stateBytes"] > SHAPES * 100
    assert number(load["stateImportMs"]) and number(load["typedLoadMs"])
    assert len(load["fetchMs"]) == 2 and all(number(value) for value in load["fetchMs"])  # B, then A

    rows = {row["name"]: row for row in report["apply"]}
    assert set(rows) == {"applySyncFragments.noObservers", "applySyncFragments", "clientEquivalent"}
    assert rows["applySyncFragments.noObservers"]["observers"] == 0
    assert rows["applySyncFragments.noObservers"]["fires"] == 0
    for row in rows.values():
        assert row["events"] == APPLY_EVENTS
        for figure in ("p50Micros", "p99Micros", "meanMicros"):
            assert number(row[figure]), row
        assert row["eventsPerSecond"] > 0
        assert row["fires"] == row["expectedFires"], row
    for name in ("applySyncFragments", "clientEquivalent"):
        # Half the events change an observed shape, each to a new value: one fire each.
        assert rows[name]["observers"] == OBSERVERS and rows[name]["expectedFires"] >= APPLY_EVENTS // 2

    stream = report["stream"]
    assert stream["events"] == STREAM_EVENTS
    assert stream["drainSeconds"] > 0 and stream["eventsPerSecond"] > 0
    assert number(stream["postSeconds"]) and number(stream["postsPerSecond"]) and number(stream["blockedSeconds"])
    assert isinstance(stream["queuedBeforeRelease"], bool)
    assert stream["expectedFires"] >= STREAM_EVENTS // 2
    assert stream["fires"] == stream["expectedFires"]
    assert stream["missing"] == 0 and stream["duplicates"] == 0 and stream["unexpected"] == 0, stream
    assert stream["stateMismatches"] == 0 and stream["versionReached"] is True

    e2e = report["endToEnd"]
    assert e2e["sets"] == RATE * SECONDS and e2e["received"] == e2e["sets"]
    assert e2e["missing"] == 0 and e2e["duplicates"] == 0 and e2e["unknown"] == 0, e2e
    assert e2e["pendingAtEnd"] == 0
    latency = e2e["latencyMs"]
    assert latency["count"] == e2e["sets"]
    for figure in ("min", "p50", "p90", "p99", "max"):
        assert number(latency[figure]), latency
    assert e2e["targetP99Ms"] == 20 and isinstance(e2e["targetMet"], bool)

    actor = report["actor"]
    assert actor["events"] == ACTOR_EVENTS and actor["writers"] == 4 and number(actor["postSeconds"])
    assert actor["lastVersion"] == actor["firstVersion"] + ACTOR_EVENTS
    assert actor["expectedFires"] >= ACTOR_EVENTS // 2
    for name, off in (("onActor", False), ("offActor", True)):
        client = actor[name]
        assert client["preparesEventsOffActor"] is off
        # Every event was timed on the actor and fired its observer once; both reached the last version.
        assert client["events"] == ACTOR_EVENTS and client["version"] == actor["lastVersion"], client
        assert client["fires"] == actor["expectedFires"], client
        for figure in ("fetchMs", "meanMicros", "p50Micros", "p99Micros", "maxMicros", "totalMs"):
            assert number(client[figure]), client
    assert number(actor["meanRatio"]) and number(actor["p50Ratio"])
    assert actor["stateMismatches"] == 0 and actor["reconnects"] == 0

    offline = report["offline"]
    assert offline["objects"] == SHAPES + 1
    assert set(offline["files"]) == {"copy", "journal", "lock"}
    assert offline["storageBytes"] == sum(offline["files"].values()) and offline["files"]["copy"] > SHAPES * 50
    assert number(offline["bytesPerObject"]) and number(offline["firstFetchMs"]) and number(offline["firstStopMs"])
    for name in ("serverFetchMs", "coldStartUpMs", "coldStartDownMs"):
        runs = offline[name]["runs"]
        assert len(runs) == COLD_STARTS and all(number(value) for value in runs), offline[name]
        assert offline[name]["median"] in runs
    assert offline["downStatus"].startswith(("connecting", "reconnecting")), offline["downStatus"]
    for name in ("savedMicros", "flushMicros"):
        assert offline[name]["count"] == OFFLINE_CHANGES
        for figure in ("p50", "p99", "mean", "max"):
            assert number(offline[name][figure]), offline[name]
    replay = offline["replay"]
    assert replay["sets"] == OFFLINE_CHANGES
    # Each offline set reached the server once, with its own key.
    assert replay["versionAfter"] == replay["versionBefore"] + OFFLINE_CHANGES
    assert replay["logged"] == OFFLINE_CHANGES and replay["distinctKeys"] == OFFLINE_CHANGES
    assert replay["valueMismatches"] == 0
    for figure in ("savedMs", "fetchMs", "seconds", "setsPerSecond"):
        assert number(replay[figure]), replay

    assert guarded_servers() <= before, "ClientBench left its server running"
    assert storage_directories() <= stored_before, "ClientBench left its storage directory"


def test_client_bench_markdown_and_usage(client_bench, jetstream_bin):
    done = run(client_bench, "--binary", str(jetstream_bin), "--shapes", "50", "--observers", "5",
               "--apply-events", "20", "--only", "apply", "--timeout", "120")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| in process: `Scope.applySyncFragments` | 5 | 20 |" in done.stdout
    assert "end to end" not in done.stdout and "observers' actor" not in done.stdout and "storage" not in done.stdout

    done = run(client_bench, "--binary", str(jetstream_bin), "--shapes", "50", "--observers", "5",
               "--actor-events", "20", "--offline-changes", "5", "--cold-starts", "1", "--only", "offline,actor",
               "--timeout", "120")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| parsing on the actor (`preparesEventsOffActor = false`, before) | 20 |" in done.stdout
    assert "| parsing off the actor (the default, after) | 20 |" in done.stdout
    assert "| the change, then `try await sync.saved()` (journal write, fsync) | 5 |" in done.stdout
    assert "Replay: 5 change sets" in done.stdout
    assert "remote apply" not in done.stdout and "end to end" not in done.stdout

    refused = run(client_bench, "--bogus", timeout=30)
    assert refused.returncode == 2 and refused.stdout == ""
    refused = run(client_bench, "--only", "everything", timeout=30)
    assert refused.returncode == 2 and refused.stdout == ""
