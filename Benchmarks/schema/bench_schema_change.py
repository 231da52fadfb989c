#!/usr/bin/env python3
"""A schema change over a large embedded store: `jetstream check-schema` and the recovery with and
without the translation step.

  Benchmarks/schema/bench_schema_change.py [--jetstream .build/release/jetstream] [--scopes 1000]
        [--objects 1000] [--rounds 2] [--write-docs]

Fills a fresh data directory through the real gateway (schema A: `Board { cards: [Card] }`,
`Card { text: String, points: Int32 }`, `points` uniform in 0…10, 250 adds per change set), stops
it, then measures, `--rounds` times each:

- `check-schema` of schema B (A with `points: {max: 5, onInvalid: clamp}` and a new property
  `label` with a default): it fits after fixing about half the values; and of schema C (the same
  `max: 5` without `onInvalid`): it reports every object over 5 and exits 1. Wall time and the
  process's peak RSS (from wait4), output to /dev/null.
- recovery (the `store recovered … duration=` log line of `serve`): under A as recorded (no
  translation), then under B the first time (every stored fragment translated; B is recorded
  after it), then under B again (recorded: only what each scope stored before the change is
  translated, which here is all of it: no snapshot is newer than the change). A copy of the filled store is used
  for each round, so each "first time under B" really is.

Prints a Markdown table; --write-docs also replaces the section between the schema-change markers
in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import http.client
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "gateway"))

from gateway_server import GatewayServer  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- schema-change:begin -->", "<!-- schema-change:end -->"

SCHEMA_A = """models:
  Board:
    cards: "[Card]"
  Card:
    text: String
    points: Int32
scopes:
  "board-*": { root: Board }
"""
SCHEMA_B = SCHEMA_A.replace(
    "    points: Int32\n",
    "    points: { type: Int32, max: 5, onInvalid: clamp }\n    label: { type: String, default: new }\n")
SCHEMA_C = SCHEMA_A.replace("    points: Int32\n", "    points: { type: Int32, max: 5 }\n")
PER_SET = 250


def fill(port: int, scopes: int, objects: int) -> None:
    """`scopes` boards of `objects` cards each, through the gateway, 4 writers."""
    def board(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        name = f"board-{index:05d}"
        root = str(uuid.uuid4())
        body = json.dumps({"root": {"clsName": "Board", "uuid": root}})
        connection.request("PUT", f"/v1/scopes/{name}", body, {"content-type": "application/json"})
        response = connection.getresponse()
        response.read()
        assert response.status == 201, (name, response.status)
        cards: list[str] = []
        rng = random.Random(index)
        for first in range(0, objects, PER_SET):
            batch = [str(uuid.uuid4()) for _ in range(min(PER_SET, objects - first))]
            cards += batch
            fragments = [{"type": "add", "uuid": card, "clsName": "Card",
                          "properties": {"text": f"card {first + i}", "points": rng.randint(0, 10)}}
                         for i, card in enumerate(batch)]
            fragments.append({"type": "change", "uuid": root, "clsName": "Board",
                              "properties": {"cards": {"insert": batch, "before": None}}})
            connection.request("POST", f"/v1/scopes/{name}/changesets", json.dumps({"fragments": fragments}),
                               {"content-type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            assert response.status == 200, (name, response.status, answer[:300])
        connection.close()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(board, range(scopes)))


def check_schema(binary: str, schema: pathlib.Path, data: pathlib.Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB, exit status."""
    started = time.monotonic()
    process = subprocess.Popen([binary, "check-schema", str(schema), "--data-dir", str(data)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - started, usage.ru_maxrss / 1024, process.returncode




def recovery_seconds(binary: str, schema: pathlib.Path, data: pathlib.Path, logs: pathlib.Path) -> float:
    server = GatewayServer(pathlib.Path(binary), data, ["--schema", str(schema), "--no-access-log"], log_dir=logs)
    server.start()
    try:
        log = server.log_path.read_text(errors="replace")
    finally:
        server.stop()
    for line in log.splitlines():
        if "store recovered" in line:
            match = re.search(r"duration=([0-9.e+-]+) seconds", line)
            if match:
                return float(match.group(1))
    raise AssertionError(f"no 'store recovered' line in {server.log_path}:\n{log[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jetstream", default=str(ROOT / ".build" / "release" / "jetstream"))
    parser.add_argument("--scopes", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write-docs", action="store_true")
    a = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-schema-") as work:
        work = pathlib.Path(work)
        schemas = {}
        for name, text in (("a", SCHEMA_A), ("b", SCHEMA_B), ("c", SCHEMA_C)):
            schemas[name] = work / f"{name}.yaml"
            schemas[name].write_text(text)
        filled = work / "filled"
        server = GatewayServer(pathlib.Path(a.jetstream), filled, ["--schema", str(schemas["a"]), "--no-access-log"],
                               log_dir=work)
        server.start()
        started = time.monotonic()
        try:
            fill(server.port, a.scopes, a.objects)
        finally:
            server.stop()
        fill_seconds = time.monotonic() - started
        store_mib = (filled / "jetstream.sqlite").stat().st_size / 2**20
        print(f"filled {a.scopes} scopes × {a.objects} objects in {fill_seconds:.1f} s; store {store_mib:.0f} MiB",
              flush=True)

        rows: dict[str, list[str]] = {}
        for round_index in range(a.rounds):
            data = work / f"round-{round_index}"
            shutil.copytree(filled, data)
            fits = check_schema(a.jetstream, schemas["b"], data)
            refused = check_schema(a.jetstream, schemas["c"], data)
            assert fits[2] == 0 and refused[2] == 1, (fits, refused)
            same = recovery_seconds(a.jetstream, schemas["a"], data, work)
            translated = recovery_seconds(a.jetstream, schemas["b"], data, work)
            recorded = recovery_seconds(a.jetstream, schemas["b"], data, work)
            for key, value in (
                ("check-schema B (fits after clamp): s", f"{fits[0]:.1f}"),
                ("check-schema B: peak RSS, MiB", f"{fits[1]:.0f}"),
                ("check-schema C (reports every object over 5, exit 1): s", f"{refused[0]:.1f}"),
                ("check-schema C: peak RSS, MiB", f"{refused[1]:.0f}"),
                ("recovery under A, recorded (no translation): s", f"{same:.2f}"),
                ("recovery under B, first time (translation): s", f"{translated:.2f}"),
                ("recovery under B again, recorded (translates what predates the change): s", f"{recorded:.2f}"),
            ):
                rows.setdefault(key, []).append(value)
            print(f"round {round_index + 1}: {fits} {refused} {same:.2f} {translated:.2f} {recorded:.2f}", flush=True)
            shutil.rmtree(data)

    table = [f"| measure ({a.scopes} scopes × {a.objects} objects, {store_mib:.0f} MiB store) | "
             + " | ".join(f"round {i + 1}" for i in range(a.rounds)) + " |",
             "|---|" + "---|" * a.rounds]
    table += [f"| {key} | " + " | ".join(values) + " |" for key, values in rows.items()]
    text = "\n".join(table)
    print(text)
    if a.write_docs:
        stamp = datetime.date.today().isoformat()
        section = (f"{BEGIN}\nMeasured {stamp} with `Benchmarks/schema/bench_schema_change.py` (release build, "
                   f"{os.cpu_count()} cores; filling took {fill_seconds:.0f} s):\n\n{text}\n{END}")
        docs = DOCS.read_text()
        if BEGIN in docs:
            docs = docs[:docs.index(BEGIN)] + section + docs[docs.index(END) + len(END):]
        else:
            docs += "\n## Schema changes\n\n" + section + "\n"
        DOCS.write_text(docs)


if __name__ == "__main__":
    main()
