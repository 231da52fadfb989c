"""deploy/: what can be validated without Docker (see deploy/README.md). The files parse, name
the endpoints and options the gateway really has, and the config files they ship are accepted
by `jetstream serve --config … --print-config`."""
from __future__ import annotations

import os
import pathlib
import subprocess

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load_all(path: pathlib.Path) -> list[dict]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document is not None]


def accepted_config(binary, config_text: str, tmp_path: pathlib.Path) -> dict:
    config_file = tmp_path / "config.yaml"
    config_file.write_text(config_text)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JETSTREAM_")}
    result = subprocess.run([str(binary), "serve", "--config", str(config_file), "--print-config"],
                            capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_the_shipped_config_file_is_accepted(jetstream_bin, tmp_path):
    config = accepted_config(jetstream_bin, (DEPLOY / "jetstream.yaml").read_text(), tmp_path)
    assert config["host"] == "::" and config["port"] == 8080
    assert config["data-dir"] == "/var/lib/jetstream" and config["log-format"] == "json"
    assert config["drain-delay"] == 5 and config["grace-period"] == 20


def test_compose_runs_the_gateway_behind_nginx(tmp_path):
    [compose] = load_all(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert set(services) == {"jetstream", "nginx"}
    assert services["jetstream"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert "./nginx/jetstream.conf:/etc/nginx/conf.d/default.conf:ro" in services["nginx"]["volumes"]
    assert services["nginx"]["depends_on"]["jetstream"]["condition"] == "service_healthy"
    assert "jetstream:8080" in (DEPLOY / "nginx" / "jetstream.conf").read_text()


def test_kubernetes_manifests_probe_drain_and_mount_the_config(jetstream_bin, tmp_path):
    documents = [doc for name in ["configmap.yaml", "deployment.yaml", "service.yaml"]
                 for doc in load_all(DEPLOY / "kubernetes" / name)]
    kinds = {doc["kind"]: doc for doc in documents}
    assert set(kinds) == {"ConfigMap", "Deployment", "PersistentVolumeClaim", "Service"}
    [kustomization] = load_all(DEPLOY / "kubernetes" / "kustomization.yaml")
    assert kustomization["resources"] == ["configmap.yaml", "deployment.yaml", "service.yaml"]

    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    assert container["args"] == ["--config", "/etc/jetstream/jetstream.yaml"]

    config = accepted_config(jetstream_bin, kinds["ConfigMap"]["data"]["jetstream.yaml"], tmp_path)
    # The kill timeout covers preStop + drain-delay + grace-period.
    prestop = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
    assert pod["terminationGracePeriodSeconds"] > prestop + config["drain-delay"] + config["grace-period"]
    assert config["port"] == container["ports"][0]["containerPort"]
    assert kinds["Service"]["spec"]["ports"][0]["targetPort"] == "http"


def test_systemd_unit_and_dockerfile_use_the_real_command_and_paths():
    unit = (DEPLOY / "systemd" / "jetstream.service").read_text()
    assert "ExecStart=/usr/local/bin/jetstream serve --config /etc/jetstream/jetstream.yaml" in unit
    assert "StateDirectory=jetstream" in unit and "KillSignal=SIGTERM" in unit
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    for package in ["libnghttp2-14", "zlib1g", "libsqlite3-0"]:
        assert package in dockerfile
    assert 'ENTRYPOINT ["/usr/local/bin/jetstream", "serve"]' in dockerfile
    assert "ENV JETSTREAM_CONFIG=/etc/jetstream/jetstream.yaml" in dockerfile
    assert "COPY deploy/jetstream.yaml /etc/jetstream/jetstream.yaml" in dockerfile
