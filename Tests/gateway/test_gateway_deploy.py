"""deploy/: what can be validated without Docker (see deploy/README.md). The files parse, name
the endpoints and options the gateway really has, and the config files they ship are accepted
by `jetstream serve --config … --print-config`. Each shipped config trusts the proxy it ships
with, and a gateway on deploy/jetstream.yaml behind the shipped nginx tells its clients apart."""
from __future__ import annotations

import ipaddress
import json
import os
import pathlib
import socket
import subprocess
import time

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
    assert proxies(config["trusted-proxy"]) == ["127.0.0.1", "::1"]


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


def proxies(value: str) -> list[str]:
    """The entries of a trusted-proxy value (comma-separated), each a valid address or CIDR."""
    entries = [entry.strip() for entry in str(value).split(",") if entry.strip()]
    for entry in entries:
        ipaddress.ip_network(entry, strict=False)   # raises for anything else
    return entries


def test_every_shipped_config_trusts_the_proxy_it_ships_with(jetstream_bin, tmp_path):
    # The config file: nginx on the same host, upstream 127.0.0.1:8080.
    shipped = yaml.safe_load((DEPLOY / "jetstream.yaml").read_text())
    assert proxies(shipped["trusted-proxy"]) == ["127.0.0.1", "::1"]

    # compose: the gateway trusts exactly nginx's fixed address on the pinned subnet, and that
    # value (environment) overrides the mounted file's.
    [compose] = load_all(DEPLOY / "compose.yaml")
    services = compose["services"]
    trusted = proxies(services["jetstream"]["environment"]["JETSTREAM_TRUSTED_PROXY"])
    nginx_address = services["nginx"]["networks"]["default"]["ipv4_address"]
    [subnet] = [pool["subnet"] for pool in compose["networks"]["default"]["ipam"]["config"]]
    assert trusted == [nginx_address]
    assert ipaddress.ip_address(nginx_address) in ipaddress.ip_network(subnet)
    assert ipaddress.ip_network(subnet).is_private
    assert "./jetstream.yaml:/etc/jetstream/jetstream.yaml:ro" in services["jetstream"]["volumes"]
    config_file = tmp_path / "compose-jetstream.yaml"
    config_file.write_text((DEPLOY / "jetstream.yaml").read_text())
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JETSTREAM_")}
    environment["JETSTREAM_TRUSTED_PROXY"] = services["jetstream"]["environment"]["JETSTREAM_TRUSTED_PROXY"]
    result = subprocess.run([str(jetstream_bin), "serve", "--config", str(config_file), "--print-config"],
                            capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    assert proxies(yaml.safe_load(result.stdout)["trusted-proxy"]) == [nginx_address]

    # Kubernetes: a sidecar (loopback) or an ingress controller in the pod CIDR (private ranges).
    [configmap] = load_all(DEPLOY / "kubernetes" / "configmap.yaml")
    config = accepted_config(jetstream_bin, configmap["data"]["jetstream.yaml"], tmp_path)
    ranges = proxies(config["trusted-proxy"])
    networks = [ipaddress.ip_network(entry, strict=False) for entry in ranges]
    assert all(network.is_private for network in networks)
    for address in ["127.0.0.1", "::1", "10.244.1.7", "172.17.0.5", "192.168.3.4", "fd12::7"]:
        assert any(ipaddress.ip_address(address) in network for network in networks), address
    assert not any(ipaddress.ip_address("203.0.113.9") in network for network in networks)

    # nginx appends the peer it was connected from to X-Forwarded-For and drops a client's own
    # Forwarded (which the gateway would prefer).
    site = (DEPLOY / "nginx" / "jetstream.conf").read_text()
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site
    assert 'proxy_set_header Forwarded "";' in site
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            assert "does not trust" not in path.read_text(errors="replace"), path


class Stream:
    """An event-stream request through nginx from a chosen loopback address (nginx sees it as
    the client's address and appends it to X-Forwarded-For)."""

    def __init__(self, nginx, source: str, headers: dict[str, str] | None = None):
        self.sock = socket.create_connection(("127.0.0.1", nginx.port), timeout=30,
                                             source_address=(source, 0))
        head = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        self.sock.sendall((f"GET /v1/scopes/demo/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           f"Accept: text/event-stream\r\n{head}\r\n").encode())
        received = b""
        deadline = time.monotonic() + 30
        while b"\r\n\r\n" not in received:
            assert time.monotonic() < deadline, received
            chunk = self.sock.recv(65536)
            assert chunk, f"closed before a response head: {received!r}"
            received += chunk
        self.head, _, self.body = received.partition(b"\r\n\r\n")
        self.status = int(self.head.split(b" ", 2)[1])
        if self.status != 200:
            while b"too-many-streams" not in self.body and time.monotonic() < deadline:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.body += chunk

    def close(self) -> None:
        self.sock.close()


def access_clients(log_path: pathlib.Path) -> list[str]:
    clients = []
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("label") == "jetstream.access":
                clients.append(entry["client"])
    return clients


def test_clients_behind_the_shipped_nginx_are_told_apart(start_server, tmp_path):
    """deploy/jetstream.yaml as shipped (listen address, port, data directory and the stream limit
    overridden by flags) behind deploy/nginx/jetstream.conf: nginx connects from 127.0.0.1, the
    browsers from 127.0.0.2 and 127.0.0.3. Without the trusted proxy every stream would count
    against nginx's 127.0.0.1 and the third one would be refused whoever opened it."""
    from nginx_proxy import Nginx

    server = start_server("--config", str(DEPLOY / "jetstream.yaml"), "--drain-delay", "0",
                          "--max-streams-per-client", "2")
    nginx = Nginx(tmp_path / "nginx", server.port).start()
    streams: list[Stream] = []
    try:
        streams += [Stream(nginx, "127.0.0.2"), Stream(nginx, "127.0.0.2")]
        assert [s.status for s in streams] == [200, 200]
        refused = Stream(nginx, "127.0.0.2")
        streams.append(refused)
        assert refused.status == 429 and b"too-many-streams" in refused.body, refused.head
        # Another client still gets its streams.
        streams.append(Stream(nginx, "127.0.0.3"))
        assert streams[-1].status == 200, streams[-1].head
        # Forwarding headers a client sends itself do not give it another bucket: nginx appends
        # the real peer to X-Forwarded-For and drops Forwarded.
        streams.append(Stream(nginx, "127.0.0.3", {"X-Forwarded-For": "198.51.100.1",
                                                   "Forwarded": "for=198.51.100.2"}))
        assert streams[-1].status == 200, streams[-1].head
        spoofed = Stream(nginx, "127.0.0.3", {"X-Forwarded-For": "198.51.100.3",
                                              "Forwarded": "for=198.51.100.4"})
        streams.append(spoofed)
        assert spoofed.status == 429 and b"too-many-streams" in spoofed.body, spoofed.head
    finally:
        for stream in streams:
            stream.close()
        nginx.stop()

    # The access log names the browsers, never nginx or an address a client made up.
    deadline = time.monotonic() + 30
    while True:
        clients = access_clients(server.log_path)
        if clients.count("127.0.0.2") >= 3 and clients.count("127.0.0.3") >= 3:
            break
        assert time.monotonic() < deadline, clients
        time.sleep(0.1)
    assert set(clients) == {"127.0.0.2", "127.0.0.3"}, clients
