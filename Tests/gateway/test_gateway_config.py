"""`jetstream serve --config FILE.yaml` and `--print-config`: every option from the file, with
flags > environment > file > defaults."""
from __future__ import annotations

import os
import subprocess

import yaml

from gateway_helpers import Api
from sse_stream import SSEStream


def print_config(binary, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JETSTREAM_")}
    environment.update(env or {})
    return subprocess.run([str(binary), "serve", *args, "--print-config"], capture_output=True,
                          text=True, env=environment, timeout=60)


def test_print_config_shows_the_defaults_as_yaml(jetstream_bin):
    result = print_config(jetstream_bin)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert config["host"] == "127.0.0.1" and config["port"] == 8080
    assert config["heartbeat-interval"] == 15 and config["idempotency-ttl"] == 604800
    assert config["access-log"] is True and config["drain-delay"] == 0
    assert config["history-limit"] == 10000 and config["max-body-bytes"] == 1 << 20


def test_flags_beat_environment_beat_file_beat_defaults(jetstream_bin, tmp_path):
    config_file = tmp_path / "jetstream.yaml"
    config_file.write_text("port: 1111\nhistory-limit: 222\nheartbeat-interval: 3\n"
                           "log-format: json\naccess-log: false\nhost: '::'\n")
    result = print_config(jetstream_bin, "--config", str(config_file), "--port", "3333",
                          env={"JETSTREAM_PORT": "2222", "JETSTREAM_HISTORY_LIMIT": "444"})
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert config["port"] == 3333                 # flag over environment and file
    assert config["history-limit"] == 444         # environment over file
    assert config["heartbeat-interval"] == 3      # file over default
    assert config["log-format"] == "json" and config["access-log"] is False and config["host"] == "::"
    assert config["max-objects"] == 100000        # default


def test_the_printed_configuration_loads_back_unchanged(jetstream_bin, tmp_path):
    first = print_config(jetstream_bin, "--resume-buffer", "17", "--grace-period", "4.5")
    assert first.returncode == 0, first.stderr
    config_file = tmp_path / "printed.yaml"
    config_file.write_text(first.stdout)
    second = print_config(jetstream_bin, "--config", str(config_file))
    assert second.returncode == 0, second.stderr
    assert yaml.safe_load(second.stdout) == yaml.safe_load(first.stdout)


def test_the_config_file_may_be_named_in_the_environment(jetstream_bin, tmp_path):
    config_file = tmp_path / "env.yaml"
    config_file.write_text("max-fragments: 12\n")
    result = print_config(jetstream_bin, env={"JETSTREAM_CONFIG": str(config_file)})
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["max-fragments"] == 12


def test_auth_proxy_and_limit_options_from_the_file(jetstream_bin, tmp_path):
    # A repeatable option is one comma-separated value, as in its environment variable.
    config_file = tmp_path / "access.yaml"
    config_file.write_text('trusted-proxy: "127.0.0.1, 10.0.0.0/8"\nmax-streams-per-client: 7\n'
                           "cors-origin: https://a.example,https://b.example\nrate-limit: 5\n")
    result = print_config(jetstream_bin, "--config", str(config_file))
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    assert config["trusted-proxy"] == "127.0.0.1,10.0.0.0/8"
    assert config["cors-origin"] == "https://a.example,https://b.example"
    assert config["max-streams-per-client"] == 7 and config["rate-limit"] == 5
    assert config["max-streams"] == 10000 and config["rate-burst"] == ""
    bad = tmp_path / "bad-proxy.yaml"
    bad.write_text("trusted-proxy: 10.0.0.0/33\n")
    result = print_config(jetstream_bin, "--config", str(bad))
    assert result.returncode != 0 and "10.0.0.0/33" in result.stderr


def test_an_unknown_key_is_refused_naming_it(jetstream_bin, tmp_path):
    config_file = tmp_path / "typo.yaml"
    config_file.write_text("port: 1\nhearbeat-interval: 2\n")
    result = print_config(jetstream_bin, "--config", str(config_file))
    assert result.returncode != 0
    assert "hearbeat-interval" in result.stderr


def test_a_bad_value_or_file_is_refused_naming_it(jetstream_bin, tmp_path):
    bad_value = tmp_path / "bad.yaml"
    bad_value.write_text("port: eighty\n")
    result = print_config(jetstream_bin, "--config", str(bad_value))
    assert result.returncode == 78 and "port" in result.stderr and "eighty" in result.stderr
    not_a_mapping = tmp_path / "list.yaml"
    not_a_mapping.write_text("- port\n")
    result = print_config(jetstream_bin, "--config", str(not_a_mapping))
    assert result.returncode == 78 and "mapping" in result.stderr
    result = print_config(jetstream_bin, "--config", str(tmp_path / "missing.yaml"))
    assert result.returncode == 78 and "missing.yaml" in result.stderr


def test_a_server_runs_with_the_file_settings(start_server, tmp_path):
    config_file = tmp_path / "serve.yaml"
    config_file.write_text("heartbeat-interval: 1\nmax-fragments: 2\n")
    server = start_server("--config", str(config_file))
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    from gateway_helpers import change
    response = api.post(name, [change(root, "Canvas", name=str(n)) for n in range(3)])
    assert response.status_code in (413, 422), response.text
    with SSEStream(server.url, f"/v1/scopes/{name}/events") as stream:
        stream.expect_event()
        stream.wait_for_comment("keep-alive", timeout=30)
    api.close()
