"""Benchmarks/suite/suite.py (the side-by-side suite): its report (ratios, goals met or
missed, FAILED rows), the docs section it rewrites, the nginx target serving the gateway's exact
state bytes, and a failing bench turning into a FAILED row and exit status 1. The benches are
stubbed here; the figures themselves are never asserted."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import sys
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("suite", ROOT / "Benchmarks" / "suite" / "suite.py")
suite = importlib.util.module_from_spec(spec)
sys.modules["suite"] = suite
spec.loader.exec_module(suite)


def row(workload, target, status="ok", **fields):
    return {"workload": workload, "target": target, "status": status, "exit": 0,
            "server": {"cpuSeconds": 1.5, "peakRssKiB": 20480}, **fields}


def read(rps, p99=1.0):
    return {"requestsPerSecond": rps, "succeeded": 10, "statuses": {"200": 10}, "errors": 0,
            "latencyMs": {"p50": 0.5, "p99": p99}}


def test_goals_give_met_or_missed_with_the_margin_relative_to_the_goal():
    rows = [row("get", "gateway", bench=read(30000)), row("get", "hummingbird", bench=read(15000)),
            row("get", "nginx", bench=read(60000)),
            row("post", "gateway", bench=read(25000, p99=7.0)),
            row("idle", "gateway", bytesPerStream=2048, bench={}),
            row("fanout-1k", "gateway", status="FAILED", failure="missing 3")]
    goals = {g["goal"]: g for g in suite.goals(rows)}
    hb = goals["GET ≥ 1.5× hummingbird (req/s)"]
    assert (hb["measured"], hb["result"]) == (2.0, "met") and hb["margin"] == pytest.approx(1 / 3)
    nginx = goals["GET ≥ 0.7× nginx (req/s)"]
    assert nginx["result"] == "missed" and nginx["margin"] == pytest.approx(-2 / 7)
    assert goals["POST ≥ 30 000 change sets/s"]["result"] == "missed"
    p99 = goals["POST p99 ≤ 3 ms"]
    assert p99["result"] == "missed" and p99["margin"] == pytest.approx(-4 / 3)
    assert goals["POST server CPU ≤ 40 µs per change set"]["result"] == "not measured"  # no request count
    assert goals["idle ≤ 4 KiB per stream"]["margin"] == pytest.approx(0.5)
    assert goals["fan-out 1k p99 ≤ 20 ms"]["result"] == "not measured"  # its row failed
    assert goals["fan-out 5k ≥ 3× hummingbird (deliveries/s)"]["result"] == "not measured"
    text = suite.goals_table(suite.goals(rows))
    assert "| GET ≥ 0.7× nginx (req/s) | 0.50× | missed | -29 % |" in text


def test_the_table_has_a_ratio_per_target_and_shows_failed_rows():
    args = suite.parse_args(["--only", "get,post", "--duration", "3"])
    rows = [row("get", "gateway", bench=read(30000), stateBytes=2534),
            row("get", "hummingbird", bench=read(20000), stateBytes=2534),
            row("get", "nginx", status="FAILED", failure="bench exit 1 | broken"),
            row("post", "gateway", bench=read(21000))]
    lines = suite.table(rows, args).splitlines()
    assert lines[0] == ("| workload | gateway | hummingbird | gateway ÷ hummingbird | hummingbird-light"
                        " | gateway ÷ hummingbird-light | nginx | gateway ÷ nginx |")
    get = lines[2].removesuffix(" |").split(" | ")
    assert get[0] == "| GET state, 64 connections, 3 s"
    assert get[1].startswith("30 000 req/s, p50 0.50 / p99 1.00 ms, CPU 1.5 s, peak RSS 20 MiB (2534 B")
    assert get[3] == "1.50×"
    assert get[4] == "–" and get[5] == "–"  # hummingbird-light not run in these rows
    assert get[6].startswith("**FAILED**: bench exit 1 \\| broken") and get[7] == "–"
    post = lines[3].removesuffix(" |").split(" | ")
    assert post[2] == "–" and post[3] == "–"  # hummingbird not run for post in these rows


def test_hummingbird_light_is_its_own_column_with_its_ratio_and_post_goal():
    args = suite.parse_args(["--only", "post", "--targets", "gateway,hummingbird,hummingbird-light",
                             "--duration", "3"])
    assert args.targets == ["gateway", "hummingbird", "hummingbird-light"]
    requests = {"requests": 30000}
    rows = [row("post", "gateway", bench={**read(21000), **requests}),
            row("post", "hummingbird", bench={**read(14000), **requests}),
            row("post", "hummingbird-light", bench={**read(28000, p99=2.0), **requests})]
    lines = suite.table(rows, args).splitlines()
    assert lines[0] == ("| workload | gateway | hummingbird | gateway ÷ hummingbird | hummingbird-light"
                        " | gateway ÷ hummingbird-light |")
    post = lines[2].removesuffix(" |").split(" | ")
    assert post[0] == "| POST change sets, 32 writers, 1 scope, 3 s"
    assert post[4].startswith("28 000 req/s, p50 0.50 / p99 2.00 ms, CPU 1.5 s = 50.0 µs/request")
    assert (post[3], post[5]) == ("1.50×", "0.75×")
    goals = {g["goal"]: g for g in suite.goals(rows, ["post"])}
    light = goals["POST ≥ hummingbird-light (change sets/s)"]
    assert (light["measured"], light["result"]) == (0.75, "missed") and light["margin"] == pytest.approx(-0.25)
    assert "| POST ≥ hummingbird-light (change sets/s) | 0.75× | missed | -25 % |" in suite.goals_table(
        list(goals.values()))
    rows[2] = row("post", "hummingbird-light", status="FAILED", failure="exited")
    goals = {g["goal"]: g for g in suite.goals(rows, ["post"])}
    assert goals["POST ≥ hummingbird-light (change sets/s)"]["result"] == "not measured"


def test_the_32_scope_write_row_has_its_label_its_cpu_per_change_set_and_its_own_goals():
    args = suite.parse_args(["--only", "post,post-32", "--targets", "gateway,hummingbird-light", "--duration", "3"])
    assert args.workloads == ["post", "post-32"]
    rows = [row("post", "gateway", bench={**read(31000, p99=2.5), "requests": 93000}),
            row("post-32", "gateway", bench={**read(33000, p99=1.5), "requests": 30000},
                server={"cpuSeconds": 1.35, "peakRssKiB": 20480}),
            row("post-32", "hummingbird-light", bench={**read(22000, p99=3.5), "requests": 66000})]
    lines = suite.table(rows, args).splitlines()
    post32 = lines[3].removesuffix(" |").split(" | ")
    assert post32[0] == "| POST change sets, 32 writers, 32 scopes, 3 s"
    assert post32[1].startswith("33 000 req/s, p50 0.50 / p99 1.50 ms, CPU 1.4 s = 45.0 µs/request")
    assert post32[3] == "1.50×"
    goals = {g["goal"]: g for g in suite.goals(rows, ["post", "post-32"])}
    assert goals["POST, 32 scopes, ≥ 30 000 change sets/s"]["result"] == "met"
    assert goals["POST, 32 scopes, p99 ≤ 3 ms"]["result"] == "met"
    cpu32 = goals["POST, 32 scopes, server CPU ≤ 40 µs per change set"]
    assert (cpu32["result"], cpu32["measured"]) == ("missed", pytest.approx(45.0))
    assert goals["POST, 32 scopes, ≥ hummingbird-light (change sets/s)"]["measured"] == pytest.approx(1.5)
    cpu1 = goals["POST server CPU ≤ 40 µs per change set"]  # 1.5 s over 93 000 change sets
    assert cpu1["result"] == "met" and cpu1["measured"] == pytest.approx(1.5e6 / 93000)
    assert goals["POST ≥ hummingbird-light (change sets/s)"]["result"] == "not measured"
    text = suite.goals_table(list(goals.values()))
    assert "| POST, 32 scopes, server CPU ≤ 40 µs per change set | 45.0 µs | missed | -12 % |" in text


def test_the_write_rows_ask_the_bench_for_one_scope_and_for_32(jetstream_bin, tmp_path):
    stub = tmp_path / "bench"
    stub.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                    "open(sys.argv[0] + '.args', 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                    "print(json.dumps({'mode': sys.argv[1], 'requests': 3, 'succeeded': 3, 'requestsPerSecond': 3,"
                    " 'statuses': {'200': 3}, 'errors': 0, 'latencyMs': {'p50': 1, 'p99': 2}}))\n")
    stub.chmod(0o755)
    code = suite.main(["--no-build", "--jetstream", str(jetstream_bin), "--only", "post,post-32",
                       "--targets", "gateway", "--duration", "1", "--bench-override", str(stub),
                       "--results-dir", str(tmp_path / "results")])
    assert code == 0
    writes = [line.split() for line in (tmp_path / "bench.args").read_text().splitlines()]
    assert [w[0] for w in writes] == ["write", "write"]
    assert [w[w.index("--scopes") + 1] for w in writes] == ["1", "32"]
    assert all(w[w.index("--connections") + 1] == "32" for w in writes)


def test_the_light_target_starts_the_reference_with_the_light_flag(tmp_path):
    """The command line only: a stand-in for the reference records its arguments and listens."""
    stand_in = tmp_path / "jetstream-reference"
    stand_in.write_text(
        "#!/usr/bin/env python3\nimport socket, sys, time\n"
        "open(sys.argv[0] + '.args', 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "port = int(sys.argv[sys.argv.index('--port') + 1])\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('127.0.0.1', port)); s.listen()\n"
        "print(f'jetstream-reference listening on http://127.0.0.1:{port}', flush=True)\n"
        "time.sleep(60)\n")
    stand_in.chmod(0o755)
    args = suite.parse_args(["--no-build", "--jetstream", "/bin/true", "--reference", str(stand_in), "--only", "post",
                             "--targets", "hummingbird,hummingbird-light"])
    runner = suite.Suite(args)
    try:
        runner.resolve_binaries()
        for target in ("hummingbird", "hummingbird-light"):
            server = runner.start(target, "test")
            assert server.name == target
            runner.stop(server)
    finally:
        runner.cleanup()
    plain, light = (tmp_path / "jetstream-reference.args").read_text().splitlines()
    assert "--light" not in plain.split() and light.split()[-1] == "--light"


def test_update_docs_replaces_only_the_marked_section(tmp_path, monkeypatch):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nbefore\n{suite.BEGIN}\nold table\n{suite.END}\n\n## Next\nafter\n")
    monkeypatch.setattr(suite, "DOCS", doc)
    suite.update_docs("| new | table |")
    assert doc.read_text() == f"# B\n\nbefore\n{suite.BEGIN}\n| new | table |\n{suite.END}\n\n## Next\nafter\n"
    doc.write_text("no markers\n")
    with pytest.raises(SystemExit):
        suite.update_docs("x")


@pytest.mark.skipif(not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")),
                    reason="nginx is installed by scripts/install-deps")
def test_the_nginx_target_serves_the_gateways_state_bytes_for_get_only(jetstream_bin, tmp_path):
    args = suite.parse_args(["--no-build", "--jetstream", str(jetstream_bin), "--only", "get",
                             "--targets", "gateway,nginx", "--shapes", "3"])
    runner = suite.Suite(args)
    try:
        runner.resolve_binaries()
        nginx = runner.start("nginx", "test")  # prepares the state on a gateway of its own first
        assert runner.state_bytes and json.loads(runner.state_bytes)["name"] == suite.READ_SCOPE
        assert len(json.loads(runner.state_bytes)["fragments"]) == 4  # the Canvas and 3 shapes
        with urllib.request.urlopen(f"{nginx.base}/v1/scopes/{suite.READ_SCOPE}") as response:
            assert response.read() == runner.state_bytes
            assert response.headers["Content-Type"] == "application/json"
        status, _ = suite.call("PUT", f"{nginx.base}/v1/scopes/{suite.READ_SCOPE}", {})
        assert status == 403
        tree = nginx.tree()
        assert len(tree.pids()) >= 2, "master and at least one worker"
        assert tree.rss_kib() > 0 and tree.hwm_kib() >= tree.rss_kib() // 2
        master = nginx.process
        runner.stop(nginx)
        assert master.poll() is not None and runner.servers == []
    finally:
        runner.cleanup()


def test_a_failing_bench_is_a_failed_row_and_exit_status_1(jetstream_bin, tmp_path):
    stub = tmp_path / "bench"
    stub.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                    "print(json.dumps({'mode': sys.argv[1], 'requests': 5, 'succeeded': 3, 'requestsPerSecond': 3,"
                    " 'statuses': {'200': 3, '503': 2}, 'errors': 0, 'latencyMs': {'p50': 1, 'p99': 2}}))\n"
                    "sys.exit(int(sys.argv[1] == 'write'))\n")
    stub.chmod(0o755)
    results = tmp_path / "results"
    code = suite.main(["--no-build", "--jetstream", str(jetstream_bin), "--only", "get,post", "--targets", "gateway",
                       "--duration", "1", "--bench-override", str(stub), "--results-dir", str(results)])
    assert code == 1
    [written] = results.glob("*.json")
    report = json.loads(written.read_text())
    rows = {r["workload"]: r for r in report["rows"]}
    assert rows["get"]["status"] == "FAILED" and "non-2xx responses {'503': 2}" in rows["get"]["failure"]
    assert rows["post"]["status"] == "FAILED" and rows["post"]["failure"].startswith("bench exit 1")
    assert rows["get"]["stateBytes"] > 1000 and rows["get"]["server"]["samples"] >= 2
    assert report["machine"]["cores"] == os.cpu_count() and report["goals"]
