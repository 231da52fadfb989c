"""Benchmarks/cluster/write_cpu_split.py counts PostgreSQL's CPU by process name: a process
named `postgres` is PostgreSQL's; the gateway, whose command line names PostgreSQL in its
`--database-url`, is not."""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "write_cpu_split", ROOT / "Benchmarks" / "cluster" / "write_cpu_split.py")
write_cpu_split = importlib.util.module_from_spec(spec)
sys.modules["write_cpu_split"] = write_cpu_split
spec.loader.exec_module(write_cpu_split)


def test_postgres_processes_are_found_by_their_name_not_their_arguments(tmp_path):
    sleep = shutil.which("sleep")
    named_postgres = tmp_path / "postgres"
    shutil.copy(sleep, named_postgres)
    # Like the gateway: another program whose arguments name PostgreSQL.
    gateway_like = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                                     "--database-url", "postgresql://postgres@127.0.0.1/db"])
    server_like = subprocess.Popen([str(named_postgres), "30"])
    try:
        assert gateway_like.poll() is None and server_like.poll() is None
        pids = write_cpu_split.postgres_pids()
        assert server_like.pid in pids
        assert gateway_like.pid not in pids
    finally:
        for process in (gateway_like, server_like):
            process.kill()
            process.wait()
