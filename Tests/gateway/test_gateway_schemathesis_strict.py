"""schemathesis with every check, status codes and negative data included."""
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
