"""Real nginx running the shipped deploy/nginx/jetstream-cluster.conf in front of N gateways on
127.0.0.1, for test_cluster_proxy.py and Benchmarks/cluster/bench_cluster_proxy.py.

The site config is the deployed file with only its upstream `server` lines (one per gateway, in
order, in place of the shipped `server jetstream-N:8080;` lines) and its listen port substituted;
the main config is deploy/nginx/nginx-test.conf.template (one worker unless asked otherwise).
`NodeCounters` tells which node served a request: each node's /metrics, `jetstream_http_requests_total`
(every route but /metrics) and `jetstream_sse_streams_open`."""
from __future__ import annotations

import pathlib
import re

import httpx

from nginx_proxy import Nginx

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER_SITE = ROOT / "deploy" / "nginx" / "jetstream-cluster.conf"
UPSTREAM_LINE = re.compile(r"^[ \t]*server jetstream-\d+:8080;[ \t]*\n", re.MULTILINE)


def cluster_site(upstream_ports: list[int], listen_port: int, text: str | None = None) -> str:
    """The site config (`text`, else the shipped file) with its upstreams and port substituted."""
    text = CLUSTER_SITE.read_text() if text is None else text
    lines = UPSTREAM_LINE.findall(text)
    assert len(lines) >= 2, "deploy/nginx/jetstream-cluster.conf changed shape (server lines)"
    servers = "".join(f"    server 127.0.0.1:{port};\n" for port in upstream_ports)
    text = text.replace(lines[0], servers, 1)
    for line in lines[1:]:
        text = text.replace(line, "", 1)
    text, listens = re.subn(r"listen 80;", f"listen 127.0.0.1:{listen_port};", text)
    text, ipv6 = re.subn(r"\n\s*listen \[::\]:80;", "", text)
    assert (listens, ipv6) == (1, 1), "deploy/nginx/jetstream-cluster.conf changed shape (listen)"
    return text


class ClusterNginx(Nginx):
    def __init__(self, prefix: pathlib.Path, upstream_ports: list[int], workers: str = "1",
                 site_text: str | None = None):
        super().__init__(prefix, upstream_port=upstream_ports[0])   # main config, port, command
        (prefix / "jetstream.conf").write_text(cluster_site(upstream_ports, self.port, site_text))
        main = prefix / "nginx.conf"
        main.write_text(main.read_text().replace("worker_processes 1;",
                                                 f"worker_processes {workers};"))


def node_counters(url: str) -> tuple[int, int]:
    """(requests answered on every route but /metrics, event streams open) of one node."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    requests = streams = 0
    for line in text.splitlines():
        if line.startswith("jetstream_http_requests_total{") and 'route="/metrics"' not in line:
            requests += int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith("jetstream_sse_streams_open "):
            streams = int(float(line.rsplit(" ", 1)[1]))
    return requests, streams


def conflict_retries(url: str) -> int:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith("jetstream_cluster_conflict_retries_total "):
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


def route_count(url: str, route: str, status: str | None = None) -> int:
    """`jetstream_http_requests_total` of one route (every status, or one) on one node."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    total = 0
    for line in text.splitlines():
        if line.startswith("jetstream_http_requests_total{") and f'route="{route}"' in line:
            if status is None or f'status="{status}"' in line:
                total += int(float(line.rsplit(" ", 1)[1]))
    return total
