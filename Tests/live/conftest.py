"""Shared fixtures for the live suites: they run the real binaries on loopback."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bin_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("JETSTREAM_BIN_DIR", ROOT / ".build" / "debug"))
