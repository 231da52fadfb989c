"""The Swift client's storage across process deaths (`Examples/Offline`, `OfflineExample`, built
with the gateway): a client process SIGKILLed at random points of 300 local changes, with the
server killed and restarted too. Every change the client printed as `saved` reaches the server
exactly once; none is applied twice; the stored view shows with the server down."""
from __future__ import annotations

import collections
import random
import subprocess
import time

import pytest

from gateway_helpers import Api, built_executable, objects_of, scope_name

CHANGES = 300
ROUNDS = 40            # kills of the client; the server is killed every 4th round
RUN_LIMIT = 90         # seconds for the final run that sends everything and waits for it


@pytest.fixture(scope="module")
def offline_example(jetstream_bin):
    return built_executable(jetstream_bin, "OfflineExample")


def labels_of(state: dict) -> list[str]:
    objects = objects_of(state)
    canvas = objects[state["rootUUID"]]
    return [objects[uuid]["properties"]["label"] for uuid in canvas["properties"]["shapes"]]


def saved_lines(output: bytes) -> list[str]:
    # A line cut by the kill is not a whole line: only lines ending in a newline count.
    text = output.decode(errors="replace")
    whole = text[: text.rfind("\n") + 1] if "\n" in text else ""
    return [line.removeprefix("saved ") for line in whole.splitlines() if line.startswith("saved ")]


def test_changes_saved_before_sigkill_reach_the_server_exactly_once(offline_example, start_server, tmp_path):
    server = start_server()
    api = Api(server.url)
    name = scope_name("canvas-offline")
    storage = tmp_path / "client-storage"
    rng = random.Random(2611)
    saved: list[str] = []
    outputs: list[str] = []
    started = time.monotonic()

    def writer() -> subprocess.Popen:
        return subprocess.Popen(
            [str(offline_example), "--storage", str(storage), "--writer", str(CHANGES), server.url, name],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    # The first run creates the scope and its stored copy with the server up.
    first = writer()
    deadline = time.monotonic() + 30
    while not (storage / name / "copy").exists():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "no stored copy after 30 s"
        time.sleep(0.02)

    process = first
    for round_number in range(ROUNDS):
        time.sleep(rng.uniform(0.05, 0.5))  # a random point of the run, not a wait for a condition
        process.kill()
        out, err = process.communicate()
        saved += saved_lines(out)
        outputs.append(err.decode(errors="replace")[-500:])
        if round_number % 4 == 1:
            server.kill()
        elif round_number % 4 == 3:
            server.restart(same_port=True, graceful=False)
        process = writer()
        assert time.monotonic() - started < 240, "the kill rounds took over 4 minutes"
    if not server.running:
        server.start(port=server.port)

    # Let the last run finish: every change made, sent and confirmed.
    try:
        out, err = process.communicate(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the last run did not finish in {RUN_LIMIT} s\n{out[-2000:]!r}\n{err[-2000:]!r}")
    saved += saved_lines(out)
    assert process.returncode == 0, f"exit {process.returncode}\n{out[-2000:]!r}\n{err[-4000:]!r}"
    assert b"done at version" in out

    state = api.state(name)
    labels = labels_of(state)
    counts = collections.Counter(labels)
    twice = [label for label, count in counts.items() if count > 1]
    assert not twice, f"applied more than once: {twice}"
    missing = [label for label in saved if label not in counts]
    assert not missing, f"saved, then lost: {missing[:20]} ({len(missing)} of {len(saved)})"
    assert len(saved) >= CHANGES * 0.5, f"only {len(saved)} changes were saved in the kill rounds and the last run"
    assert len(labels) >= CHANGES

    keys = collections.Counter(
        entry.get("idempotencyKey") for entry in api.history(name, 0, limit=10000).json()["changesets"])
    keys.pop(None, None)
    assert all(count == 1 for count in keys.values()), [key for key, count in keys.items() if count > 1]

    # The stored view with the server down: what the server had, at once.
    server.kill()
    shown = subprocess.run([str(offline_example), "--storage", str(storage), server.url, name],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr[-2000:]
    first_line = shown.stdout.splitlines()[0]
    assert first_line == f"opened {name}: {len(labels)} shape(s), 0 pending, connecting" \
        or first_line == f"opened {name}: {len(labels)} shape(s), 0 pending, offline (reconnecting)", shown.stdout
    assert "still offline: 1 change set(s) kept in" in shown.stdout, shown.stdout
    api.close()
