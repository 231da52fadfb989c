"""schemathesis with every check, status codes and negative data included.

PENDING: both runs fail on the server/contract mismatches that test_gateway_pending_contract.py
spells out: 400 for an invalid scope name on GET/DELETE is undocumented (ST103); `If-None-Match` with a comma inside a quoted tag is a
400 (ST103). Move this file back to Tests/gateway/ once they are settled.

Not collected by a run of Tests/gateway (collect_ignore_glob); run by naming the file:
`.venv/bin/python -m pytest -q Tests/gateway/pending/test_gateway_schemathesis_strict.py`."""
from __future__ import annotations

from schemathesis_run import (ALL_CHECKS, EXISTING_SCOPE, WHOLE_API, run_schemathesis,
                              seed_scopes)


def test_schemathesis_strict_whole_api(start_server, tmp_path):
    server = start_server()
    seed_scopes(server)
    run_schemathesis(server, tmp_path, "schemathesis.toml", ALL_CHECKS, WHOLE_API)


def test_schemathesis_strict_on_an_existing_scope(start_server, tmp_path):
    server = start_server()
    seed_scopes(server)
    run_schemathesis(server, tmp_path, "schemathesis-scope.toml", ALL_CHECKS, EXISTING_SCOPE)
