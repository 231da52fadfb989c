"""Fixtures for the gateway suites: the real `jetstream serve` on 127.0.0.1, black box.

- `jetstream_bin`: the binary (`$JETSTREAM_BIN_DIR/jetstream`, else `.build/debug/jetstream`).
- `server` / `api`: one server per test module with the built-in demo schema; tests use scope
  names of their own (`gateway_helpers.scope_name()`), so they do not see each other's writes.
- `types_server` / `types_api`: the same with `schemas/all-types.yaml`.
- `start_server(*flags)`: a server of the test's own (limits, heartbeats, history), stopped with
  SIGTERM at the end of the test; it can be restarted on the same data directory.
- `postgres`: the session's private PostgreSQL cluster (postgres_cluster.py), started only when a
  test asks for it (or when `JETSTREAM_TEST_STORE=postgres` puts every server on it).

Markers: `embedded_store` for tests about the SQLite store itself (its file, the data-directory
lock), deselected when the suites run on PostgreSQL (`JETSTREAM_TEST_STORE=postgres` with
`-m "not embedded_store"`); `cluster` for tests that run several nodes on PostgreSQL whatever
`JETSTREAM_TEST_STORE` says (scripts/test runs them once, in the first run).
"""
from __future__ import annotations

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import postgres_cluster  # noqa: E402
from gateway_helpers import Api  # noqa: E402
from gateway_server import GatewayServer  # noqa: E402

# Suites that fail because of a server bug wait in pending/ until the bug is fixed.
collect_ignore_glob = ["pending/*"]

TYPES_SCHEMA = HERE / "schemas" / "all-types.yaml"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "embedded_store: about the embedded SQLite store itself (its file, the "
        "data-directory lock); deselected when the suites run on PostgreSQL")
    config.addinivalue_line(
        "markers", "cluster: several gateway nodes on the session's PostgreSQL cluster")


def pytest_report_header(config):
    return f"gateway store: {'postgres' if postgres_cluster.store_is_postgres() else 'sqlite'}"


def pytest_unconfigure(config):
    # After every fixture's teardown: no gateway uses the cluster any more.
    postgres_cluster.stop_shared()


@pytest.fixture(scope="session")
def postgres() -> postgres_cluster.PostgresCluster:
    return postgres_cluster.shared()


@pytest.fixture(scope="session")
def jetstream_bin() -> pathlib.Path:
    bin_dir = pathlib.Path(os.environ.get("JETSTREAM_BIN_DIR", ROOT / ".build" / "debug"))
    binary = bin_dir / "jetstream"
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is missing: build it with `swift build --product jetstream` "
                    f"or point JETSTREAM_BIN_DIR at its directory")
    return binary


class ServerPool:
    def __init__(self, binary: pathlib.Path, base: pathlib.Path):
        self.binary, self.base = binary, base
        self.servers: list[GatewayServer] = []

    def __call__(self, *args: str, data_dir: pathlib.Path | None = None) -> GatewayServer:
        data_dir = data_dir or self.base / f"data-{len(self.servers)}"
        server = GatewayServer(self.binary, data_dir, list(args), log_dir=self.base)
        self.servers.append(server)
        return server.start()

    def stop_all(self) -> None:
        for server in self.servers:
            if server.running:
                server.stop()


@pytest.fixture
def start_server(jetstream_bin, tmp_path):
    pool = ServerPool(jetstream_bin, tmp_path)
    yield pool
    pool.stop_all()


@pytest.fixture(scope="module")
def server(jetstream_bin, tmp_path_factory):
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("gateway"))
    yield pool()
    pool.stop_all()


@pytest.fixture(scope="module")
def api(server):
    client = Api(server.url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def types_server(jetstream_bin, tmp_path_factory):
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("types"))
    yield pool("--schema", str(TYPES_SCHEMA))
    pool.stop_all()


@pytest.fixture(scope="module")
def types_api(types_server):
    client = Api(types_server.url)
    yield client
    client.close()
