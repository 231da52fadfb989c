"""Benchmarks/cluster/write_cpu_split.py counts PostgreSQL's CPU by process: the postmaster it is
given and that postmaster's children named `postgres`. Not the gateway, whose command line names
PostgreSQL in its `--database-url`, and not another cluster's processes."""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "write_cpu_split", ROOT / "Benchmarks" / "cluster" / "write_cpu_split.py")
write_cpu_split = importlib.util.module_from_spec(spec)
sys.modules["write_cpu_split"] = write_cpu_split
spec.loader.exec_module(write_cpu_split)


def test_one_clusters_processes_are_found_by_name_and_parent_not_by_arguments(tmp_path):
    named_postgres = tmp_path / "postgres"
    shutil.copy(shutil.which("sleep"), named_postgres)
    # A "postmaster" whose child is named postgres: a shell started under that name forks one.
    postmaster_binary = tmp_path / "bin" / "postgres"
    postmaster_binary.parent.mkdir()
    shutil.copy(shutil.which("bash"), postmaster_binary)
    postmaster = subprocess.Popen([str(postmaster_binary), "-c", f"{named_postgres} 30 & wait"])
    other_cluster = subprocess.Popen([str(named_postgres), "30"])
    # Like the gateway: another program whose arguments name PostgreSQL.
    gateway_like = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                                     "--database-url", "postgresql://postgres@127.0.0.1/db"])
    try:
        def children():
            return [p for p in write_cpu_split.postgres_pids(postmaster.pid) if p != postmaster.pid]
        for _ in range(200):
            if children():
                break
            time.sleep(0.05)
        pids = write_cpu_split.postgres_pids(postmaster.pid)
        assert postmaster.pid in pids and len(children()) == 1
        assert other_cluster.pid not in pids
        assert gateway_like.pid not in pids
        assert other_cluster.pid in write_cpu_split.postgres_pids(other_cluster.pid)
    finally:
        for process in (postmaster, other_cluster, gateway_like):
            process.kill()
            process.wait()
        subprocess.run(["pkill", "-f", f"{named_postgres} 30"])
