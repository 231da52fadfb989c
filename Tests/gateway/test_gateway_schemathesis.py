"""schemathesis against openapi.yaml and a running server: no server error, and every response's
content type, headers and body match the document, over the whole API and over an existing
scope. (The stricter run that also checks status codes and the rejection of schema-violating
requests is in pending/test_gateway_schemathesis_strict.py: see its docstring.)"""
from __future__ import annotations

from schemathesis_run import (ALL_CHECKS, EXISTING_SCOPE, WHOLE_API, run_schemathesis,
                              seed_scopes)

CHECKS = [c for c in ALL_CHECKS if c not in ("status_code_conformance", "negative_data_rejection")]


def test_schemathesis_whole_api(start_server, tmp_path):
    server = start_server()
    seed_scopes(server)
    run_schemathesis(server, tmp_path, "schemathesis.toml", CHECKS, WHOLE_API)


def test_schemathesis_on_an_existing_scope(start_server, tmp_path):
    server = start_server()
    seed_scopes(server)
    run_schemathesis(server, tmp_path, "schemathesis-scope.toml", CHECKS, EXISTING_SCOPE)
