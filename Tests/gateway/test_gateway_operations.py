"""The command and the operational endpoints: listening line, schema, health, readiness,
metrics, the served OpenAPI document, `check-schema`, restarts."""
from __future__ import annotations

import pathlib
import subprocess

import pytest
import yaml

from gateway_helpers import Api, objects_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
TYPES_SCHEMA = pathlib.Path(__file__).resolve().parent / "schemas" / "all-types.yaml"


def test_healthz_and_readyz(api):
    response = api.http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    response = api.http.get("/readyz")
    assert response.status_code == 200
    assert isinstance(response.json()["status"], str)


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


def test_data_survives_restarts_across_snapshots(start_server):
    server = start_server("--snapshot-interval", "3")
    api = Api(server.url)
    name, _ = api.create_canvas()
    for _ in range(10):
        api.add_shapes(name)
    before = api.state(name)
    history = api.history(name, before["version"] - 2).json()
    api.close()
    for _ in range(2):
        server.restart()
        api = Api(server.url)
        assert api.state(name) == before
        assert api.history(name, before["version"] - 2).json() == history
        api.close()


def test_versions_never_repeat_across_delete_and_restart(start_server):
    server = start_server()
    api = Api(server.url)
    name, _ = api.create_canvas()
    for _ in range(3):
        api.add_shapes(name)
    deleted = api.state(name)["version"]
    assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
    api.close()
    server.restart()
    api = Api(server.url)
    response = api.http.get(f"/v1/scopes/{name}")
    assert response.status_code == 404
    _, state = api.create_canvas(name)
    assert state["version"] > deleted
    api.close()


def test_the_demo_scope_is_created_again_when_missing(start_server):
    server = start_server()
    api = Api(server.url)
    old = api.state("demo")
    assert api.http.delete("/v1/scopes/demo").status_code == 204
    api.close()
    server.restart()
    api = Api(server.url)
    state = api.state("demo")
    assert state["version"] > old["version"]
    assert objects_of(state)[state["rootUUID"]]["clsName"] == "Canvas"
    api.close()


def test_a_json_schema_file_means_the_same_as_its_yaml(jetstream_bin, start_server, tmp_path):
    import json
    as_json = tmp_path / "all-types.json"
    as_json.write_text(json.dumps(yaml.safe_load(TYPES_SCHEMA.read_text())))
    result = subprocess.run([str(jetstream_bin), "check-schema", str(as_json)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    from_yaml = start_server("--schema", str(TYPES_SCHEMA))
    from_json = start_server("--schema", str(as_json))
    served = [Api(s.url).http.get("/v1/schema").json() for s in (from_yaml, from_json)]
    assert served[0] == served[1]


BAD_SCHEMAS = {
    "unknown type": ("models:\n  Thing:\n    size: Huge\n", ["Thing", "size"]),
    "unknown class in a collection": ("models:\n  Thing:\n    parts: [Part]\n", ["Thing", "parts"]),
    "default breaks its constraint": (
        "models:\n  Thing:\n    n: { type: Int8, min: 1, max: 5, default: 9 }\n", ["Thing", "n"]),
    "default of the wrong type": (
        "models:\n  Thing:\n    label: { type: String, default: 5 }\n", ["Thing", "label"]),
    "empty enum": ("models:\n  Thing:\n    kind: { enum: [] }\n", ["Thing", "kind"]),
    "scope rule naming no class": (
        "models:\n  Thing:\n    n: Int\nscopes:\n  \"t-*\": { root: Nothing }\n", ["Nothing"]),
    "not a mapping": ("- just\n- a list\n", []),
}


@pytest.mark.parametrize("case", sorted(BAD_SCHEMAS))
def test_check_schema_rejects_each_kind_of_error_with_a_message(jetstream_bin, tmp_path, case):
    text, names = BAD_SCHEMAS[case]
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    result = subprocess.run([str(jetstream_bin), "check-schema", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0, f"{case}: accepted"
    message = result.stdout + result.stderr
    assert "broken.yaml" in message, message
    for name in names:
        assert name in message, f"{case}: {name} missing from {message!r}"


def test_flags_can_be_given_as_environment_variables(jetstream_bin, tmp_path):
    import os
    from gateway_server import GatewayServer
    from sse_stream import SSEStream
    server = GatewayServer(jetstream_bin, tmp_path / "data", [], log_dir=tmp_path)
    os.environ["JETSTREAM_HEARTBEAT_INTERVAL"] = "1"
    try:
        server.start()
    finally:
        del os.environ["JETSTREAM_HEARTBEAT_INTERVAL"]
    try:
        with SSEStream(server.url, "/v1/scopes/demo/events") as stream:
            assert stream.expect_event().type == "snapshot"
            stream.wait_for_comment("keep-alive", timeout=30)
    finally:
        server.stop()


def test_the_served_schema_loads_back_as_the_same_schema(jetstream_bin, types_api, start_server,
                                                         tmp_path):
    import json
    served = types_api.http.get("/v1/schema").json()
    copy = tmp_path / "served-schema.json"
    copy.write_text(json.dumps(served))
    result = subprocess.run([str(jetstream_bin), "check-schema", str(copy)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    again = start_server("--schema", str(copy))
    assert Api(again.url).http.get("/v1/schema").json() == served


def test_serve_raises_its_open_file_limit_to_the_hard_limit(jetstream_bin, tmp_path):
    """Ten thousand streams need ten thousand descriptors; Debian's default soft limit is 1024."""
    import resource
    import signal as signals

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(1024, hard)
    process = subprocess.Popen(
        [str(jetstream_bin), "serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--max-streams", "5000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard)))
    try:
        assert "listening on" in process.stdout.readline()
        limits = pathlib.Path(f"/proc/{process.pid}/limits").read_text()
        line = next(l for l in limits.splitlines() if l.startswith("Max open files"))
        assert line.split()[3:5] == [str(hard), str(hard)], line
    finally:
        process.send_signal(signals.SIGTERM)
        _, err = process.communicate(timeout=30)
    if hard < 5000 + 1024:
        assert "open-file limit is below --max-streams" in err
