"""`GET /metrics` answers Prometheus text."""
from __future__ import annotations


def test_metrics_are_prometheus_text(api):
    api.http.get("/v1/scopes/demo")
    response = api.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    lines = [line for line in response.text.splitlines() if line and not line.startswith("#")]
    assert lines, "no samples"
    for line in lines:
        name_and_labels, _, value = line.rpartition(" ")
        assert name_and_labels, line
        float(value.split(" ")[0])
