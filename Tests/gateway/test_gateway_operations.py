"""The command and the operational endpoints: listening line, schema, health, readiness,
metrics, the served OpenAPI document, `check-schema`, restarts."""
from __future__ import annotations

import pathlib
import subprocess

import yaml

from gateway_helpers import Api, objects_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
TYPES_SCHEMA = pathlib.Path(__file__).resolve().parent / "schemas" / "all-types.yaml"


def test_the_server_prints_one_listening_line_and_exits_0_on_sigterm(start_server):
    server = start_server()
    assert Api(server.url).http.get("/healthz").status_code == 200
    assert server.stop() == 0
    assert bytes(server.extra_stdout) == b"", "stdout holds more than the listening line"


def test_healthz_and_readyz(api):
    response = api.http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    response = api.http.get("/readyz")
    assert response.status_code == 200
    assert isinstance(response.json()["status"], str)


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


def test_schema_serves_the_demo_models_and_scope_rules(api):
    response = api.http.get("/v1/schema")
    assert response.status_code == 200
    schema = response.json()
    assert set(schema["models"]) == {"Canvas", "Shape"}
    assert set(schema["models"]["Shape"]) == {"x", "y", "width", "height", "color", "label",
                                              "kind"}
    assert schema["scopes"]["canvas-*"]["root"] == "Canvas"
    assert schema["scopes"]["demo"]["root"] == "Canvas"


def test_schema_serves_a_loaded_schema_file(types_api):
    schema = types_api.http.get("/v1/schema").json()
    assert set(schema["models"]) == {"Board", "Item", "Person"}
    assert schema["scopes"]["board-*"]["root"] == "Board"
    assert schema["scopes"]["person-*"]["root"] == "Person"


def test_a_loaded_schema_replaces_the_demo_one(types_api):
    response = types_api.http.get("/v1/scopes/demo")
    assert response.status_code == 404


def test_the_served_openapi_document_is_the_projects(api):
    response = api.http.get("/openapi.yaml")
    assert response.status_code == 200
    assert yaml.safe_load(response.text) == yaml.safe_load((ROOT / "openapi.yaml").read_text())


def test_data_survives_a_restart(start_server):
    server = start_server()
    api = Api(server.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, count=3, label="kept")
    before = api.state(name)
    listed = api.http.get("/v1/scopes", params={"limit": 1000}).json()
    api.close()
    server.restart()
    api = Api(server.url)
    assert api.state(name) == before
    assert api.http.get("/v1/scopes", params={"limit": 1000}).json() == listed
    assert sum(o["clsName"] == "Shape" for o in objects_of(before).values()) == 3
    api.close()


def test_check_schema_accepts_a_valid_schema(jetstream_bin):
    result = subprocess.run([str(jetstream_bin), "check-schema", str(TYPES_SCHEMA)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_check_schema_names_the_file_class_and_property_of_an_error(jetstream_bin, tmp_path):
    bad = tmp_path / "bad-schema.yaml"
    bad.write_text("models:\n  Board:\n    title: String\n    weight: Kilogram\n"
                   "scopes:\n  \"board-*\": { root: Board }\n")
    result = subprocess.run([str(jetstream_bin), "check-schema", str(bad)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "bad-schema.yaml" in message and "Board" in message and "weight" in message, message


def test_serve_with_an_invalid_schema_fails_with_a_message(jetstream_bin, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  Thing:\n    size: { type: Int8, min: 1, max: 0, colour: 1 }\n")
    result = subprocess.run([str(jetstream_bin), "serve", "--host", "127.0.0.1", "--port", "0",
                             "--data-dir", str(tmp_path / "data"), "--schema", str(bad)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "jetstream listening" not in result.stdout
    assert "bad.yaml" in result.stderr and "size" in result.stderr, result.stderr


def test_json_logs_are_one_json_object_per_line(start_server):
    import json
    server = start_server("--log-format", "json")
    api = Api(server.url)
    assert api.http.get("/v1/scopes/demo").status_code == 200
    api.close()
    assert server.stop() in (0, -15)  # the exit code has a test of its own
    lines = [line for line in server.log_path.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        assert isinstance(json.loads(line), dict), line
