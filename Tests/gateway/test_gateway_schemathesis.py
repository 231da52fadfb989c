"""schemathesis against openapi.yaml and a running server: no server errors, and every response
matches the document (status codes, content types, headers, bodies).

The run is bounded and deterministic (`--generation-deterministic`, few examples per operation,
`--max-time`). The event stream is left out: it never ends, and test_gateway_events.py covers it.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from gateway_helpers import Api

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKS = ",".join([
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
])


def test_schemathesis_finds_no_server_error_and_no_mismatch(start_server, tmp_path):
    server = start_server()
    api = Api(server.url)
    # Some scopes with content, so that generated names and paging meet real data.
    for index in range(3):
        name, _ = api.create_canvas(f"canvas-{index}")
        api.add_shapes(name, count=2)
    api.close()
    executable = pathlib.Path(sys.executable).parent / "schemathesis"
    command = [
        str(executable), "run", str(ROOT / "openapi.yaml"),
        "--url", server.url,
        "--checks", CHECKS,
        "--exclude-operation-id", "streamEvents",
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"),
        "--generation-deterministic",
        "--workers", "1",
        "--request-timeout", "30",
        "--max-time", "150",
        "--no-color",
        "--report", "junit", "--report-dir", str(tmp_path / "report"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240,
                            cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-12000:]
