"""deploy/: what can be validated without Docker (see deploy/README.md). The files parse, name
the endpoints and options the gateway really has, and the config files they ship are accepted
by `jetstream serve --config … --print-config`. Each shipped config trusts the proxy it ships
with, and a gateway on deploy/jetstream.yaml behind the shipped nginx tells its clients apart.
The several-nodes variant (compose-postgres.yaml, nginx/jetstream-cluster.conf,
kubernetes-postgres/) gives every node the database and no committed password, and real nginx
running the cluster config sends each scope to one of two real gateways and the scopes to both."""
from __future__ import annotations

import ipaddress
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import time
import urllib.parse

import httpx
import pytest
import yaml

from nginx_proxy import Nginx

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


# -- Several nodes on PostgreSQL: compose-postgres.yaml, nginx/jetstream-cluster.conf, -----------
# -- kubernetes-postgres/ ------------------------------------------------------------------------

CLUSTER_SITE = DEPLOY / "nginx" / "jetstream-cluster.conf"
UPSTREAM_SERVER = re.compile(r"^\s*server ([\w.-]+):(\d+);", re.MULTILINE)


def test_compose_postgres_runs_two_nodes_on_one_database():
    [compose] = load_all(DEPLOY / "compose-postgres.yaml")
    services = compose["services"]
    assert set(services) == {"postgres", "jetstream-1", "jetstream-2", "nginx"}
    nodes = {name: services[name] for name in ["jetstream-1", "jetstream-2"]}

    database = services["postgres"]
    assert database["image"].startswith("postgres:15")
    assert any(volume.endswith(":/var/lib/postgresql/data") for volume in database["volumes"])
    assert "pg_isready" in database["healthcheck"]["test"]
    # No password is committed: it is interpolated from the operator's env file, and compose
    # refuses to start without one (`:?`). The committed example is labelled as one and the real
    # file is ignored by git.
    password = database["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${POSTGRES_PASSWORD:?"), password
    example = (DEPLOY / "compose-postgres.env.example").read_text()
    assert "EXAMPLE ONLY" in example
    assert re.search(r"^POSTGRES_PASSWORD=\S+$", example, re.MULTILINE)
    assert "compose-postgres.env" in (DEPLOY / ".gitignore").read_text().splitlines()

    [single] = load_all(DEPLOY / "compose.yaml")
    nginx_address = services["nginx"]["networks"]["default"]["ipv4_address"]
    [subnet] = [pool["subnet"] for pool in compose["networks"]["default"]["ipam"]["config"]]
    [single_subnet] = [pool["subnet"] for pool in single["networks"]["default"]["ipam"]["config"]]
    assert ipaddress.ip_address(nginx_address) in ipaddress.ip_network(subnet)
    assert ipaddress.ip_network(subnet).is_private
    assert not ipaddress.ip_network(subnet).overlaps(ipaddress.ip_network(single_subnet))
    # The gateways resolve the database's name once: it keeps its address when recreated.
    database_address = database["networks"]["default"]["ipv4_address"]
    assert ipaddress.ip_address(database_address) in ipaddress.ip_network(subnet)
    assert database_address != nginx_address

    for name, node in nodes.items():
        assert node["image"] == single["services"]["jetstream"]["image"], name
        assert node["build"]["dockerfile"] == "deploy/Dockerfile", name
        environment = node["environment"]
        url = urllib.parse.urlsplit(environment["JETSTREAM_DATABASE_URL"])
        assert url.scheme in ("postgres", "postgresql"), url
        assert (url.hostname, url.port) == ("postgres", 5432), url       # the compose service
        assert url.path == "/" + database["environment"]["POSTGRES_DB"], url
        assert url.username == database["environment"]["POSTGRES_USER"], url
        assert url.password is None, "the password comes from PGPASSWORD, not the URL"
        assert environment["PGPASSWORD"] == password, name
        assert node["depends_on"]["postgres"]["condition"] == "service_healthy", name
        assert proxies(environment["JETSTREAM_TRUSTED_PROXY"]) == [nginx_address], name
        assert "./jetstream.yaml:/etc/jetstream/jetstream.yaml:ro" in node["volumes"], name
        assert node["stop_grace_period"] == single["services"]["jetstream"]["stop_grace_period"]

    nginx = services["nginx"]
    assert "./nginx/jetstream-cluster.conf:/etc/nginx/conf.d/default.conf:ro" in nginx["volumes"]
    assert {name: dependency["condition"] for name, dependency in nginx["depends_on"].items()} == {
        "jetstream-1": "service_healthy", "jetstream-2": "service_healthy"}
    # nginx's upstream names exactly the gateway services, on their port.
    upstreams = UPSTREAM_SERVER.findall(CLUSTER_SITE.read_text())
    assert sorted(upstreams) == [(name, "8080") for name in sorted(nodes)]


def test_the_cluster_site_config_hashes_by_scope_with_the_sse_tuning_of_the_single_one():
    site = CLUSTER_SITE.read_text()
    upstream = re.search(r"upstream jetstream \{(.*?)\}", site, re.DOTALL).group(1)
    assert re.search(r"^\s*hash \$scope consistent;", upstream, re.MULTILINE), upstream
    # A balancing method must come before keepalive, or nginx ignores it for cached connections.
    assert upstream.index("hash $scope") < upstream.index("keepalive 32;")
    assert re.search(r"map \$uri \$scope \{\s*~\^/v1/scopes/\(\?<name>\[\^/\]\+\) +\$name;", site)
    # Every directive of the single-node site's server block (SSE tuning, forwarded headers,
    # /metrics kept internal) is in the cluster's too.
    single = (DEPLOY / "nginx" / "jetstream.conf").read_text()
    server_block = single[single.index("server {"):]
    directives = [line.split("#")[0].strip() for line in server_block.splitlines()]
    for directive in filter(None, directives):
        assert directive in site, directive
    for directive in ["proxy_buffering off;", "proxy_read_timeout 1h;",
                      'proxy_set_header Forwarded "";', "keepalive 32;"]:
        assert directive in site, directive


def test_the_image_carries_libpq_for_the_postgresql_store():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    build, runtime = dockerfile.split("FROM debian:bookworm-slim")
    assert "libpq-dev" in build
    assert re.search(r"\blibpq5\b", runtime)


def kubernetes_postgres_pods() -> dict:
    [pods] = load_all(DEPLOY / "kubernetes-postgres" / "statefulset.yaml")
    return pods


def test_kubernetes_postgres_overlay_runs_two_replicas_on_the_secret():
    [kustomization] = load_all(DEPLOY / "kubernetes-postgres" / "kustomization.yaml")
    assert "../kubernetes" in kustomization["resources"]
    # The example Secret (placeholder URL) is never applied from here.
    assert not any("secret" in str(entry) for entry in kustomization["resources"])
    [secret] = load_all(DEPLOY / "kubernetes-postgres" / "secret.example.yaml")
    assert secret["kind"] == "Secret" and "EXAMPLE ONLY" in (
        DEPLOY / "kubernetes-postgres" / "secret.example.yaml").read_text()

    pods = kubernetes_postgres_pods()
    assert pods["kind"] == "StatefulSet" and pods["spec"]["replicas"] == 2
    assert pods["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert pods["spec"]["serviceName"] == "jetstream-nodes"
    [container] = pods["spec"]["template"]["spec"]["containers"]
    [variable] = [v for v in container["env"] if v["name"] == "JETSTREAM_DATABASE_URL"]
    reference = variable["valueFrom"]["secretKeyRef"]
    # Not optional: a pod without the database must not start on a pod-local store.
    assert "optional" not in reference or reference["optional"] is False
    assert reference["name"] == secret["metadata"]["name"]
    assert reference["key"] in secret["stringData"]
    example = urllib.parse.urlsplit(secret["stringData"][reference["key"]])
    assert example.scheme in ("postgres", "postgresql") and "CHANGE-ME" in example.password


def kustomize(directory: pathlib.Path) -> dict[str, list[dict]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the kustomizations are not rendered")
    result = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    kinds: dict[str, list[dict]] = {}
    for document in yaml.safe_load_all(result.stdout):
        kinds.setdefault(document["kind"], []).append(document)
    return kinds


def test_kubernetes_postgres_overlay_renders_without_a_volume_claim_and_keeps_probes_and_drain():
    single = kustomize(DEPLOY / "kubernetes")
    assert set(single) == {"ConfigMap", "Deployment", "PersistentVolumeClaim", "Service"}
    assert single["Deployment"][0]["spec"]["replicas"] == 1

    kinds = kustomize(DEPLOY / "kubernetes-postgres")
    assert set(kinds) == {"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "StatefulSet"}
    # The gateway pods are a StatefulSet's (stable names for nginx); the Deployment is nginx's.
    assert [d["metadata"]["name"] for d in kinds["Deployment"]] == ["jetstream-nginx"]
    [deployment] = kinds["StatefulSet"]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [variable] = [v for v in container["env"] if v["name"] == "JETSTREAM_DATABASE_URL"]
    assert variable["valueFrom"]["secretKeyRef"] == {"name": "jetstream-database", "key": "url"}
    assert not any("persistentVolumeClaim" in volume for volume in pod["volumes"]), pod["volumes"]
    mounts = {mount["name"] for mount in container["volumeMounts"]}
    assert mounts <= {volume["name"] for volume in pod["volumes"]}
    # The single node's probes and drain, unchanged.
    [single_deployment] = single["Deployment"]
    single_pod = single_deployment["spec"]["template"]["spec"]
    [single_container] = single_pod["containers"]
    for key in ["livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "args", "ports"]:
        assert container[key] == single_container[key], key
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert pod["terminationGracePeriodSeconds"] == single_pod["terminationGracePeriodSeconds"]
    [budget] = kinds["PodDisruptionBudget"]
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]


K8S_SITE = DEPLOY / "kubernetes-postgres" / "nginx-jetstream.conf"


def upstream_block(site: str) -> tuple[str, str, str]:
    """(before, the `upstream jetstream { … }` block, after) of a site config."""
    start = site.index("upstream jetstream {")
    end = site.index("}\n", start) + 2
    return site[:start], site[start:end], site[end:]


def test_kubernetes_postgres_puts_nginx_routing_by_scope_in_front_of_the_pods():
    """The Service clients use selects nginx pods, whose site is the cluster config (routing by
    scope, SSE tuning, fail-over) with an upstream naming each gateway pod of the StatefulSet by
    its stable name, re-resolved."""
    kinds = kustomize(DEPLOY / "kubernetes-postgres")
    [nginx_deployment] = kinds["Deployment"]
    [gateways] = kinds["StatefulSet"]
    services = {s["metadata"]["name"]: s for s in kinds["Service"]}
    assert set(services) == {"jetstream", "jetstream-nodes"}
    assert gateways["spec"]["serviceName"] == "jetstream-nodes"
    gateway_labels = gateways["spec"]["template"]["metadata"]["labels"]
    nginx_pod = nginx_deployment["spec"]["template"]
    # Clients reach nginx; nginx reaches every ready gateway pod, one DNS record each.
    assert services["jetstream"]["spec"]["selector"].items() <= nginx_pod["metadata"]["labels"].items()
    assert not services["jetstream"]["spec"]["selector"].items() <= gateway_labels.items()
    nodes = services["jetstream-nodes"]["spec"]
    assert nodes["clusterIP"] == "None" and not nodes.get("publishNotReadyAddresses", False)
    assert nodes["selector"].items() <= gateway_labels.items()
    assert [p["port"] for p in nodes["ports"]] == [8080]
    # nginx mounts the generated ConfigMap holding nginx-jetstream.conf as its default site.
    [container] = nginx_pod["spec"]["containers"]
    [mount] = container["volumeMounts"]
    assert mount["mountPath"] == "/etc/nginx/conf.d"
    [volume] = [v for v in nginx_pod["spec"]["volumes"] if v["name"] == mount["name"]]
    [config] = [c for c in kinds["ConfigMap"] if c["metadata"]["name"] == volume["configMap"]["name"]]
    assert volume["configMap"]["items"] == [{"key": "jetstream.conf", "path": "default.conf"}]
    site = config["data"]["jetstream.conf"]
    assert site == K8S_SITE.read_text()
    # `server … resolve` needs nginx 1.27.3 or later.
    version = tuple(int(part) for part in container["image"].split(":")[1].split("-")[0].split("."))
    assert version >= (1, 27, 3), container["image"]

    # Everything but the upstream block is the cluster config, byte for byte.
    cluster_before, _, cluster_after = upstream_block(CLUSTER_SITE.read_text())
    before, upstream, after = upstream_block(site)
    assert before.endswith(cluster_before[cluster_before.index("# The scope a request is about"):])
    assert after.endswith(cluster_after) and "resolver kube-dns.kube-system" in after
    assert re.search(r"^\s*hash \$scope consistent;", upstream, re.MULTILINE)
    assert upstream.index("hash $scope") < upstream.index("keepalive 32;")
    assert re.search(r"^\s*zone jetstream \d+k;", upstream, re.MULTILINE)
    # One server line per pod, each the pod's own name: nginx hashes on names and takes the
    # addresses of one name in turn, so a name with several pods would spread each scope.
    servers = re.findall(r"^\s*server (\S+) resolve;", upstream, re.MULTILINE)
    assert servers == [f"jetstream-{i}.jetstream-nodes.default.svc.cluster.local:8080"
                       for i in range(gateways["spec"]["replicas"])], servers


def test_the_kubernetes_site_passes_nginx_t_with_static_upstreams(tmp_path):
    """The nginx here (Debian's 1.22) has no `server … resolve`: with those lines and the resolver
    replaced by static servers, the rest of the Kubernetes site passes `nginx -t`."""
    site = K8S_SITE.read_text()
    ports = iter(range(8081, 8100))
    site, servers = re.subn(r"server jetstream-\d+\.jetstream-nodes\S+ resolve;",
                            lambda _: f"server 127.0.0.1:{next(ports)};", site)
    site, resolvers = re.subn(r"\nresolver(_timeout)? [^\n]*;", "", site)
    site, listens = re.subn(r"listen 80;", "listen 127.0.0.1:18080;", site)
    site, ipv6 = re.subn(r"\n\s*listen \[::\]:80;", "", site)
    assert (servers, resolvers, listens, ipv6) == (2, 2, 1, 1)
    nginx = Nginx(tmp_path / "nginx-k8s", upstream_port=8081)
    (nginx.prefix / "jetstream.conf").write_text(site)
    result = nginx.check()
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


class ClusterNginx(Nginx):
    """Real nginx running deploy/nginx/jetstream-cluster.conf, its `server jetstream-N:8080` lines
    pointed at gateways on 127.0.0.1 (in order) and its listen port substituted."""

    def __init__(self, prefix: pathlib.Path, upstream_ports: list[int]):
        super().__init__(prefix, upstream_port=upstream_ports[0])   # main config, port, command
        text = CLUSTER_SITE.read_text()
        names = [name for name, _ in UPSTREAM_SERVER.findall(text)]
        assert len(names) == len(upstream_ports), names
        for name, port in zip(names, upstream_ports):
            text = text.replace(f"server {name}:8080;", f"server 127.0.0.1:{port};")
        text, listens = re.subn(r"listen 80;", f"listen 127.0.0.1:{self.port};", text)
        text, ipv6 = re.subn(r"\n\s*listen \[::\]:80;", "", text)
        assert (listens, ipv6) == (1, 1), "deploy/nginx/jetstream-cluster.conf changed shape"
        (prefix / "jetstream.conf").write_text(text)


def test_the_cluster_site_config_passes_nginx_t(tmp_path):
    result = ClusterNginx(tmp_path / "nginx-t", [8081, 8082]).check()
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr and "test is successful" in result.stderr


def scope_paths(log_path: pathlib.Path) -> list[str]:
    """The request paths (no query) of a gateway's access log."""
    paths = []
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("label") == "jetstream.access":
                paths.append(entry["message"].split(" ")[1].split("?")[0])
    return paths


def test_nginx_sends_each_scope_to_one_node_and_spreads_scopes_over_both(start_server, tmp_path):
    """Two gateways behind real nginx running deploy/nginx/jetstream-cluster.conf. Each has a
    store of its own here (the routing is under test, not the shared store), so a request that
    reached the wrong node would find no scope: every write, read, history and stream of a scope
    succeeds only if they all meet on the node that created it, whichever client sends them. The
    access logs show each scope on exactly one node and the scopes on both."""
    from gateway_helpers import change, scope_name
    from sse_stream import SSEStream

    flags = ["--drain-delay", "0", "--heartbeat-interval", "1", "--log-format", "json"]
    nodes = [start_server(*flags), start_server(*flags)]
    nginx = ClusterNginx(tmp_path / "nginx", [node.port for node in nodes]).start()
    names = [scope_name("canvas-route") for _ in range(24)]
    # Two browsers: the hash is on the scope, not on the client.
    clients = [httpx.Client(base_url=nginx.url, timeout=60.0,
                            transport=httpx.HTTPTransport(local_address=address))
               for address in ["127.0.0.2", "127.0.0.3"]]
    try:
        for name in names:
            created = clients[0].put(f"/v1/scopes/{name}", json={"root": {"clsName": "Canvas"}})
            assert created.status_code == 201, created.text
            root = created.json()["rootUUID"]
            written = clients[1].post(f"/v1/scopes/{name}/changesets", json={
                "fragments": [change(root, "Canvas", name="routed")]})
            assert written.status_code == 200, written.text
            version = written.json()["version"]
            state = clients[0].get(f"/v1/scopes/{name}")
            assert state.status_code == 200 and state.json()["version"] == version, state.text
            history = clients[1].get(f"/v1/scopes/{name}/changesets", params={"since": 0})
            assert history.status_code == 200, history.text
            with SSEStream(nginx.url, f"/v1/scopes/{name}/events") as stream:
                assert stream.status == 200
                event = stream.expect_event(timeout=30)
                assert (event.type, int(event.id)) == ("snapshot", version)
        # Paths outside a scope hash on the whole URI and are served too.
        assert clients[0].get("/v1/scopes", params={"limit": 1}).status_code == 200

        def homes() -> dict[str, set[int]]:
            found: dict[str, set[int]] = {name: set() for name in names}
            for index, node in enumerate(nodes):
                for path in scope_paths(node.log_path):
                    parts = path.split("/")
                    if len(parts) > 3 and parts[3] in found:
                        found[parts[3]].add(index)
            return found

        deadline = time.monotonic() + 30
        while not all(homes().values()):
            assert time.monotonic() < deadline, homes()
            time.sleep(0.1)
        home = homes()
        assert all(len(indices) == 1 for indices in home.values()), home
        owners = {name: next(iter(indices)) for name, indices in home.items()}
        assert set(owners.values()) == {0, 1}, f"every scope on one node: {owners}"

        # A stopped node's scopes go to the other node (any node serves any client): it answers
        # them itself, from its own store here, instead of nginx answering 502.
        nodes[0].stop()
        for name in names:
            response = clients[0].get(f"/v1/scopes/{name}")
            expected = 404 if owners[name] == 0 else 200
            assert response.status_code == expected, (name, response.status_code, response.text)
            if expected == 404:
                assert response.json()["type"] == "/problems/not-found", response.text
    finally:
        for client in clients:
            client.close()
        nginx.stop()
