"""`jetstream bench` against the real gateway on loopback: fan-out (one scope a stream or many),
write, read, idle and presence runs must count exactly what the server did (checked against the
server's own versions), report refused streams and failed requests with exit status 1, parse SSE
through nginx's re-chunking, and refuse bad usage with exit status 64 (EX_USAGE) before sending anything."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from gateway_helpers import Api, scope_name
from nginx_proxy import Nginx, free_port

BENCH_TIMEOUT = 120


def bench(binary, *args: str, timeout: float = BENCH_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "bench", *args, "--timeout", "90"], capture_output=True, text=True,
                          timeout=timeout)


def bench_json(binary, *args: str, expect_rc: int = 0) -> dict:
    result = bench(binary, *args, "--json")
    assert result.returncode == expect_rc, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def bench_server(jetstream_bin, tmp_path_factory):
    from conftest import ServerPool
    pool = ServerPool(jetstream_bin, tmp_path_factory.mktemp("bench"))
    yield pool("--max-streams-per-client", "10000", "--max-streams", "10000", "--no-access-log")
    pool.stop_all()


def versions(api: Api, prefix: str, count: int) -> list[int]:
    return [api.state(f"{prefix}{n}")["version"] for n in range(count)]


def test_fanout_counts_every_delivery_exactly(jetstream_bin, bench_server):
    prefix = scope_name("canvas-fan") + "-"
    report = bench_json(jetstream_bin, "fanout", "--url", bench_server.url, "--subscribers", "40", "--scopes", "2",
                        "--change-sets", "60", "--rate", "0", "--writers", "3", "--source-addresses", "3",
                        "--threads", "2", "--scope-prefix", prefix)
    api = Api(bench_server.url)
    after = versions(api, prefix, 2)
    api.close()
    assert report["changeSets"] == {"sent": 60, "accepted": 60, "failed": {}}
    # Writers 0 and 2 post to scope 0, writer 1 to scope 1; 20 subscribers on each scope.
    assert sum(after) == 60, "the server's versions must account for every accepted change set"
    deliveries = report["deliveries"]
    assert deliveries["expected"] == 20 * after[0] + 20 * after[1] == 1200
    assert deliveries == {"expected": 1200, "received": 1200, "missing": 0, "duplicate": 0, "outOfOrder": 0}
    assert report["clean"] is True and report["timedOut"] is False
    assert set(report["latencyMs"]) == {"p50", "p90", "p99", "p999", "max", "mean"}
    assert 0 < report["latencyMs"]["p50"] <= report["latencyMs"]["p99"] <= report["latencyMs"]["max"]
    assert report["postLatencyMs"]["max"] > 0 and report["deliveriesPerSecond"] > 0
    assert report["otherEvents"] == {} and report["streamErrors"] == {}


def test_fanout_prints_a_table_and_progress(jetstream_bin, bench_server):
    result = bench(jetstream_bin, "fanout", "--url", bench_server.url, "-s", "10", "-c", "20", "-r", "10",
                   "--scope-prefix", scope_name("canvas-tbl") + "-")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"jetstream bench fanout → {bench_server.url}")
    assert "200 of 200 expected; missing 0, duplicate 0, out of order 0" in result.stdout
    assert "20 accepted of 20 sent" in result.stdout and "clean" in result.stdout
    assert "fanout " in result.stderr, "a progress line goes to stderr while it runs"


def test_fanout_reports_refused_streams_and_exits_1(start_server, jetstream_bin):
    server = start_server("--max-streams-per-client", "5", "--no-access-log")
    report = bench_json(jetstream_bin, "fanout", "--url", server.url, "-s", "8", "-c", "5", "-r", "0",
                        "--scope-prefix", "canvas-refused-", expect_rc=1)
    assert report["streamErrors"] == {"stream answered 429": 3}
    assert report["deliveries"]["received"] == 25 and report["deliveries"]["missing"] == 15
    assert report["clean"] is False


def test_fanout_through_nginx_parses_rechunked_streams(start_server, jetstream_bin, tmp_path):
    server = start_server("--max-streams-per-client", "1000", "--no-access-log")
    nginx = Nginx(tmp_path / "nginx", server.port).start()
    try:
        report = bench_json(jetstream_bin, "fanout", "--url", nginx.url, "-s", "30", "-c", "40", "-r", "0",
                            "-w", "2", "--scope-prefix", "canvas-proxied-")
    finally:
        nginx.stop()
    assert report["deliveries"] == {"expected": 1200, "received": 1200, "missing": 0, "duplicate": 0,
                                     "outOfOrder": 0}


def test_write_counts_match_the_servers_versions(jetstream_bin, bench_server):
    prefix = scope_name("canvas-wr") + "-"
    report = bench_json(jetstream_bin, "write", "--url", bench_server.url, "--connections", "4", "--duration", "1",
                        "--scopes", "2", "--scope-prefix", prefix)
    api = Api(bench_server.url)
    after = versions(api, prefix, 2)
    api.close()
    assert report["mode"] == "write" and report["errors"] == 0 and report["clean"] is True
    assert report["statuses"] == {"200": report["succeeded"]} and report["requests"] == report["succeeded"] > 0
    assert sum(after) == report["succeeded"], "every 200 the bench counted is a version on the server"
    assert report["requestsPerSecond"] > 0 and report["latencyMs"]["p99"] > 0


def test_write_counts_rejections_by_status_and_exits_1(jetstream_bin, bench_server):
    report = bench_json(jetstream_bin, "write", "--url", bench_server.url, "-c", "2", "-d", "0.5",
                        "--property", "noSuchProperty", "--scope-prefix", scope_name("canvas-rej") + "-",
                        expect_rc=1)
    assert report["succeeded"] == 0 and set(report["statuses"]) == {"422"} and report["statuses"]["422"] > 0


def test_read_reports_the_state_size_and_statuses(jetstream_bin, bench_server):
    api = Api(bench_server.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, 5)
    size = len(api.http.get(f"/v1/scopes/{name}").content)
    api.close()
    report = bench_json(jetstream_bin, "read", "--url", bench_server.url, "-c", "4", "-d", "0.5",
                        "--path", f"/v1/scopes/{name}")
    assert report["bytesPerResponse"] == size and report["statuses"] == {"200": report["requests"]}
    missing = bench_json(jetstream_bin, "read", "--url", bench_server.url, "-c", "2", "-d", "0.3",
                         "--path", "/v1/scopes/canvas-no-such-scope", expect_rc=1)
    assert set(missing["statuses"]) == {"404"}


def test_idle_holds_streams_until_signalled(jetstream_bin, bench_server):
    process = subprocess.Popen([str(jetstream_bin), "bench", "idle", "--url", bench_server.url, "-s", "50",
                                "--hold", "60", "--json", "--source-addresses", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while not line.startswith("ready"):
            assert time.monotonic() < deadline and process.poll() is None, "no ready line"
            line = process.stderr.readline()
        assert line.strip() == "ready 50"
        metrics = Api(bench_server.url).http.get("/metrics").text
        streams = [l for l in metrics.splitlines() if l.startswith("jetstream_sse_streams_open")]
        assert streams and float(streams[0].split()[-1]) >= 50
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    report = json.loads(out)
    assert process.returncode == 0
    assert report["connected"] == 50 and report["failed"] == 0 and report["heldSeconds"] < 50


def test_fanout_on_many_scope_streams_counts_every_scope(jetstream_bin, bench_server):
    prefix = scope_name("canvas-msf") + "-"
    report = bench_json(jetstream_bin, "fanout", "--url", bench_server.url, "--subscribers", "12", "--scopes", "4",
                        "--scopes-per-stream", "3", "--change-sets", "40", "--rate", "0", "--writers", "4",
                        "--threads", "2", "--scope-prefix", prefix)
    api = Api(bench_server.url)
    after = versions(api, prefix, 4)
    api.close()
    # Subscriber i follows scopes 3i, 3i+1, 3i+2 (mod 4): 9 streams carry each scope, however the
    # 40 change sets fell on the 4 writers (writer w posts to scope w % 4).
    assert sum(after) == 40
    assert report["scopesPerStream"] == 3
    assert report["deliveries"] == {"expected": 360, "received": 360, "missing": 0, "duplicate": 0,
                                     "outOfOrder": 0}
    assert report["clean"] is True and report["otherEvents"] == {} and report["streamErrors"] == {}


def test_idle_holds_many_scope_streams_until_every_snapshot(jetstream_bin, bench_server):
    scope = scope_name("canvas-msi")
    report = bench_json(jetstream_bin, "idle", "--url", bench_server.url, "-s", "6", "--scopes-per-stream", "5",
                        "--scope", scope, "--hold", "0")
    assert report["scopesPerStream"] == 5 and report["connected"] == 6 and report["failed"] == 0
    api = Api(bench_server.url)
    assert [api.state(f"{scope}-{n}")["version"] for n in range(5)] == [0] * 5, "the bench made SCOPE-0…4"
    api.close()


def test_presence_counts_every_update_and_leaves(jetstream_bin, bench_server):
    scope = scope_name("canvas-prs")
    report = bench_json(jetstream_bin, "presence", "--url", bench_server.url, "--members", "5", "--rate", "20",
                        "--duration", "0.5", "--subscribers", "4", "--scope", scope)
    assert report["updates"] == "presence"
    assert report["requests"]["accepted"] == 50 and report["requests"]["statuses"] == {"204": 50}
    assert report["deliveries"] == {"expected": 200, "received": 200, "missing": 0, "duplicate": 0,
                                     "outOfOrder": 0}
    assert report["clean"] is True and report["latencyMs"]["max"] > 0
    api = Api(bench_server.url)
    assert api.http.get(f"/v1/scopes/{scope}/presence").json() == {"members": []}, "members left at the end"
    assert api.state(scope)["version"] == 0, "presence is not a change"
    api.close()


def test_presence_as_change_sets_posts_one_per_update(jetstream_bin, bench_server):
    scope = scope_name("canvas-prc")
    report = bench_json(jetstream_bin, "presence", "--url", bench_server.url, "-m", "4", "-r", "20", "-d", "0.5",
                        "-s", "3", "--scope", scope, "--as-change-sets")
    api = Api(bench_server.url)
    assert api.state(scope)["version"] == 40
    api.close()
    assert report["updates"] == "changeset" and report["requests"]["statuses"] == {"200": 40}
    assert report["deliveries"]["received"] == 120 and report["clean"] is True


@pytest.mark.parametrize("args, message", [
    (["fanout", "--scopes", "2", "--scopes-per-stream", "3"], "--scopes-per-stream must be 1…--scopes"),
    (["presence", "--ttl", "0"], "--ttl 1…300"),
    (["fanout", "--url", "https://127.0.0.1:1"], "unsupported URL"),
    (["fanout", "--subscribers", "0"], "must be"),
    (["write", "--url", "http://10.255.255.1:80", "--source-addresses", "2"], "loopback targets only"),
    (["read", "--path", "no-slash"], "--path must start with /"),
])
def test_usage_errors_exit_64_before_any_load(jetstream_bin, args, message):
    result = bench(jetstream_bin, *args)
    assert result.returncode == 64 and message in result.stderr, result.stderr


def test_an_unreachable_server_is_a_clear_error(jetstream_bin):
    result = bench(jetstream_bin, "write", "--url", f"http://127.0.0.1:{free_port()}", "-d", "0.2")
    assert result.returncode == 1 and "cannot connect to http://127.0.0.1:" in result.stderr
