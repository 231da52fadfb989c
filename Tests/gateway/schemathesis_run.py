"""Runs schemathesis 4 against openapi.yaml and a running gateway (used by
test_gateway_schemathesis.py and pending/test_gateway_schemathesis_strict.py).

Runs are bounded and deterministic: `--generation-deterministic`, a few examples per operation
(`SCHEMATHESIS_MAX_EXAMPLES`, default 10), one worker. The event stream is never selected: it
does not end. Settings that need explaining live in schemathesis*.toml beside this file."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from gateway_helpers import Api

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MAX_EXAMPLES = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10")
# Every check that reads responses (status codes, types, headers, bodies) and the check that
# schema-violating requests are refused.
ALL_CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
              "response_headers_conformance", "response_schema_conformance",
              "negative_data_rejection"]
WHOLE_API = ["--exclude-operation-id", "streamEvents", "--exclude-operation-id", "streamManyScopes",
             # schemathesis parses a YAML body and compares it with `type: string`;
             # test_gateway_operations.py compares the served document with openapi.yaml.
             "--exclude-operation-id", "openapi"]
EXISTING_SCOPE = ["--include-operation-id", "getScope", "--include-operation-id", "postChangeSet",
                  "--include-operation-id", "getChangeSets", "--include-operation-id", "getObject",
                  "--include-operation-id", "patchObject"]


def seed_scopes(server) -> None:
    """Scopes with content (canvas-0 … canvas-2), so generated names and paging meet data."""
    api = Api(server.url)
    for index in range(3):
        name, _ = api.create_canvas(f"canvas-{index}")
        api.add_shapes(name, count=2)
    api.close()


def run_schemathesis(server, tmp_path, config: str, checks: list[str], selection: list[str]) -> None:
    executable = pathlib.Path(sys.executable).parent / "schemathesis"
    command = [
        str(executable), "--config-file", str(HERE / config), "run", str(ROOT / "openapi.yaml"),
        "--url", server.url,
        "--checks", ",".join(checks),
        *selection,
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", MAX_EXAMPLES,
        "--generation-deterministic",
        "--workers", "1",
        "--request-timeout", "30",
        "--no-color",
        "--report", "junit", "--report-dir", str(tmp_path / "report"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        output[-15000:] + f"\n--- server running: {server.running}; its log:\n"
        + server.log_tail(80))
