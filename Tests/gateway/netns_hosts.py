"""Test hosts in network namespaces, and partitions between them (faults between machines).

A `Lab` is a small network the tests own, built with `ip netns` and veth pairs (it needs root, as
the tests have here and in CI):

- each `network()` is a Linux bridge in the root namespace with a /24 of its own and the address
  .1 on the bridge, so that the test process reaches every host on it directly (it plays the
  clients, and runs psql);
- each `host()` is a network namespace with one veth per network it is on: the inner end carries
  the host's address, the outer end is a port of that network's bridge. A host has only its
  connected routes (no default route) and forwards nothing, nor does the root namespace on the
  lab's bridges, so a host cut from a network has no way around the cut;
- every neighbour entry is static (`nud permanent`), so no ARP failure ever reports a host
  unreachable: a partitioned peer is silent, no RST, no FIN, no ICMP, just no packets.

`partition(*links)` cuts links for a bounded time. By default (`mode="drop"`) both ends of each
link's veth get a `blackhole` qdisc, which drops every frame it is given and reports it sent: the
host's frames to the network and the network's frames to the host vanish while both ends keep
their carrier, as when a switch or a firewall in between drops everything — neither side's kernel
sees anything happen. (This machine's kernel has no netem, no tc actions and no bridge VLAN
filtering, and a bridge without STP puts a port set to "blocking" back to forwarding at once, so
the qdisc is the one silent drop at hand.) `mode="down"` sets the outer veth end down instead: the
host sees its link lose carrier, as with a pulled cable. The fault heals when its `with` block
ends, or at its deadline (a timer) if the block outlives it, whichever comes first.

Names are unique per lab (`jsn` + a random id: namespaces `jsn<id>-<host>`, bridges and veths
`jsn<id>b<n>` and `jsn<id>v<h><n>`, at most 15 characters), the subnets are two random 10.x.y.0/24
that no address or route of the machine overlaps. `close()` kills every process left in the lab's
namespaces (only processes the tests started there can be in them), deletes the veths, the
namespaces and the bridges; an atexit hook closes every lab a failed run left open.

`NetnsPostgres` runs a `PostgresCluster` inside a host (`ip netns exec NS runuser -u postgres --
pg_ctl …`, listening on the host's address, trusting the database network), `NetnsCluster` runs
gateway nodes each inside its own host, listening on its client-network address.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import ipaddress
import json
import os
import pathlib
import random
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time

from cluster_helpers import Cluster
from gateway_server import GatewayServer
from postgres_cluster import PostgresCluster

PREFIX = "jsn"               # every namespace and interface a lab makes starts with it
COMMAND_TIMEOUT = 30.0
MAX_FAULT_SECONDS = 60.0     # no fault outlives this, whatever its block does

_open_labs: set["Lab"] = set()
_open_lock = threading.Lock()


class LabError(AssertionError):
    pass


def unavailable() -> str | None:
    """Why a lab cannot be built here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "tc", "ss", "runuser") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (iproute2, util-linux)"
    return None


def run(*argv: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(list(argv), input=input, capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        raise LabError(f"{' '.join(argv)} did not finish within {COMMAND_TIMEOUT}s") from expired
    if check and result.returncode != 0:
        raise LabError(f"{' '.join(argv)} exited with {result.returncode}: {result.stderr.strip()}")
    return result


def namespaces() -> set[str]:
    """Every named network namespace (`ip netns list`)."""
    return {line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line}


def interfaces() -> set[str]:
    """Every interface of the root namespace."""
    return {link["ifname"] for link in json.loads(run("ip", "-j", "link", "show").stdout or "[]")}


def _taken_networks() -> list[ipaddress.IPv4Network]:
    taken = [ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False)
             for link in json.loads(run("ip", "-j", "-4", "addr", "show").stdout or "[]")
             for a in link.get("addr_info", [])]
    for route in json.loads(run("ip", "-j", "-4", "route", "show", "table", "all").stdout or "[]"):
        destination = route.get("dst", "default")
        if destination != "default":
            taken.append(ipaddress.ip_network(destination, strict=False))
    with _open_lock:
        taken += [n.subnet for lab in _open_labs for n in lab.networks.values()]
    return taken


def _free_subnet(rng: random.Random,
                 also_taken: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    taken = _taken_networks() + also_taken
    for _ in range(1000):
        candidate = ipaddress.ip_network(f"10.{rng.randrange(64, 255)}.{rng.randrange(256)}.0/24")
        if not any(candidate.overlaps(other) for other in taken):
            return candidate
    raise LabError(f"no free 10.x.y.0/24 (taken: {taken})")


@dataclasses.dataclass
class Network:
    name: str
    subnet: ipaddress.IPv4Network
    bridge: str
    mac: str
    hosts: list["Host"] = dataclasses.field(default_factory=list)

    @property
    def root_address(self) -> str:
        """The root namespace's (the test process') address on this network."""
        return str(self.subnet[1])


@dataclasses.dataclass
class Link:
    """A host's place on a network: `inner` (in the host's namespace, with `address`) and `outer`
    (a port of the network's bridge in the root namespace)."""
    host: "Host"
    network: Network
    outer: str
    inner: str
    address: str
    mac: str

    def __str__(self) -> str:
        return f"{self.host.name}<->{self.network.name}"


class Host:
    """A network namespace with a link to each of its networks."""

    def __init__(self, lab: "Lab", name: str, namespace: str):
        self.lab, self.name, self.namespace = lab, name, namespace
        self.links: dict[str, Link] = {}

    @property
    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside this host."""
        return ["ip", "netns", "exec", self.namespace]

    def address(self, network: Network | str) -> str:
        return self.links[network if isinstance(network, str) else network.name].address

    def link(self, network: Network | str) -> Link:
        return self.links[network if isinstance(network, str) else network.name]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(*self.prefix, *argv, check=check)

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        """A process inside this host; `Lab.close()` kills it if it still runs."""
        process = subprocess.Popen([*self.prefix, *argv], **kwargs)
        self.lab.processes.append(process)
        return process

    def pids(self) -> list[int]:
        result = run("ip", "netns", "pids", self.namespace, check=False)
        return [int(pid) for pid in result.stdout.split() if pid.isdigit()]

    def routes(self) -> list[dict]:
        return json.loads(run("ip", "-n", self.namespace, "-j", "-4", "route", "show",
                              "table", "all").stdout or "[]")

    def tcp_sockets(self, peer: str | None = None) -> list[dict[str, str]]:
        """This host's TCP sockets (`ss -tn`), optionally only those to `peer` ("addr:port")."""
        return tcp_sockets(self.prefix, peer)

    def __repr__(self) -> str:
        return f"Host({self.name}, {self.namespace}, " + ", ".join(
            f"{name}={link.address}" for name, link in self.links.items()) + ")"


def tcp_sockets(prefix: list[str], peer: str | None = None) -> list[dict[str, str]]:
    """TCP sockets (`ss -tnH`) of the namespace a command prefix runs in: state, recv_q, send_q,
    local, peer; only those to `peer` ("addr:port") when given."""
    command = [*prefix, "ss", "-tnH", "state", "all"]
    if peer is not None:
        command += ["dst", peer]
    rows = []
    for line in run(*command).stdout.splitlines():
        fields = line.split()
        if len(fields) >= 5:
            rows.append(dict(zip(("state", "recv_q", "send_q", "local", "peer"), fields[:5])))
    return rows


class Fault:
    """Links cut together; healed at the end of the `with` block or at the deadline, whichever
    comes first (both end it once)."""

    def __init__(self, lab: "Lab", links: tuple[Link, ...], mode: str, max_seconds: float):
        assert links and mode in ("drop", "down"), (links, mode)
        assert 0 < max_seconds <= MAX_FAULT_SECONDS, max_seconds
        self.lab, self.links, self.mode, self.max_seconds = lab, links, mode, max_seconds
        self.cut_at: float | None = None       # time.monotonic() before the first link was cut
        self.healed_at: float | None = None    # … after the last one was restored
        self._cut: list[Link] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @property
    def active(self) -> bool:
        return self.cut_at is not None and self.healed_at is None

    def cut(self) -> "Fault":
        with self._lock:
            assert self.cut_at is None, "a fault is cut once"
            self._timer = threading.Timer(self.max_seconds, self.heal)
            self._timer.daemon = True
            self._timer.start()
            self.lab.faults.append(self)
            self.cut_at = time.monotonic()
        try:
            for link in self.links:
                self._cut.append(link)     # before: a half-applied cut is healed too
                self.lab._set_link(link, up=False, mode=self.mode)
        except BaseException:
            self.heal()
            raise
        return self

    def heal(self) -> None:
        with self._lock:
            if self.cut_at is None or self.healed_at is not None:
                return
            errors = []
            for link in self._cut:
                try:
                    self.lab._set_link(link, up=True, mode=self.mode)
                    if self.lab.link_state(link) != "open":
                        errors.append(f"{link} is {self.lab.link_state(link)}")
                except LabError as error:
                    errors.append(error)
            self.healed_at = time.monotonic()
            if self._timer is not None:
                self._timer.cancel()
        if errors:
            raise LabError(f"healing {self}: {errors}")

    def hold(self, seconds: float) -> None:
        """Keeps the fault until `seconds` after the cut (the fault's length, not a wait for a
        condition); never past its deadline."""
        assert self.cut_at is not None
        remaining = min(seconds, self.max_seconds) - (time.monotonic() - self.cut_at)
        if remaining > 0:
            time.sleep(remaining)

    def __enter__(self) -> "Fault":
        return self.cut()

    def __exit__(self, *exc) -> None:
        self.heal()

    def __str__(self) -> str:
        return f"{self.mode} {', '.join(str(link) for link in self.links)}"


class Lab:
    """Networks and hosts in namespaces; a context manager (or `close()`)."""

    def __init__(self, seed: int | None = None):
        reason = unavailable()
        if reason:
            raise LabError(reason)
        self.id = secrets.token_hex(3)
        self.rng = random.Random(seed)
        self.networks: dict[str, Network] = {}
        self.hosts: dict[str, Host] = {}
        self.faults: list[Fault] = []
        self.processes: list[subprocess.Popen] = []
        self.made_namespaces: list[str] = []
        self.made_bridges: list[str] = []
        self.made_veths: list[str] = []        # their outer ends, in the root namespace
        self._macs = 0
        self.closed = False
        with _open_lock:
            _open_labs.add(self)

    # -- building ---------------------------------------------------------------------------
    def _mac(self) -> str:
        self._macs += 1
        assert self._macs < 256
        return "02:6a:" + ":".join(self.id[i:i + 2] for i in (0, 2, 4)) + f":{self._macs:02x}"

    def network(self, name: str) -> Network:
        assert name not in self.networks and re.fullmatch(r"[a-z0-9]{1,10}", name), name
        subnet = _free_subnet(self.rng, [n.subnet for n in self.networks.values()])
        network = Network(name, subnet, f"{PREFIX}{self.id}b{len(self.networks)}", self._mac())
        run("ip", "link", "add", "name", network.bridge, "address", network.mac, "type", "bridge",
            "forward_delay", "0", "stp_state", "0")
        self.made_bridges.append(network.bridge)
        # Nothing routed between the lab's networks through the root namespace, whatever the
        # machine's ip_forward; no IPv6 (no neighbour discovery or router solicitation traffic).
        _write_sysctl(f"net/ipv4/conf/{network.bridge}/forwarding", "0")
        _write_sysctl(f"net/ipv6/conf/{network.bridge}/disable_ipv6", "1")
        run("ip", "addr", "add", f"{network.root_address}/{subnet.prefixlen}",
            "dev", network.bridge)
        run("ip", "link", "set", network.bridge, "up")
        self.networks[name] = network
        return network

    def host(self, name: str, *networks: Network) -> Host:
        """A namespace on `networks` with the next free address of each (from .10 on)."""
        assert name not in self.hosts and re.fullmatch(r"[a-z0-9]{1,12}", name), name
        assert networks and len(self.hosts) < 240
        host = Host(self, name, f"{PREFIX}{self.id}-{name}")
        run("ip", "netns", "add", host.namespace)
        self.made_namespaces.append(host.namespace)
        self.hosts[name] = host
        run(*host.prefix, "sysctl", "-qw", "net.ipv4.ip_forward=0",
            "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "-n", host.namespace, "link", "set", "lo", "up")
        index = len(self.hosts) - 1
        for number, network in enumerate(networks):
            link = Link(host, network, outer=f"{PREFIX}{self.id}v{index:02x}{number}",
                        inner=f"eth-{network.name}", mac=self._mac(),
                        address=str(network.subnet[10 + len(network.hosts)]))
            run("ip", "link", "add", link.outer, "address", self._mac(), "type", "veth",
                "peer", "name", link.inner, "address", link.mac, "netns", host.namespace)
            self.made_veths.append(link.outer)
            _write_sysctl(f"net/ipv6/conf/{link.outer}/disable_ipv6", "1")
            run("ip", "link", "set", link.outer, "master", network.bridge, "up")
            run("ip", "-n", host.namespace, "addr", "add",
                f"{link.address}/{network.subnet.prefixlen}", "dev", link.inner)
            run("ip", "-n", host.namespace, "link", "set", link.inner, "up")
            host.links[network.name] = link
            self._neighbours(link)
            network.hosts.append(host)
        unexpected = [r for r in host.routes() if r.get("type", "unicast") == "unicast"
                      and r.get("table", "main") == "main" and r.get("protocol") != "kernel"]
        assert not unexpected, f"{host}: routes beyond its networks: {unexpected}"
        return host

    def _neighbours(self, link: Link) -> None:
        """Static neighbour entries between the new link's host, the root namespace and every
        host already on the network: nothing ever resolves (or fails to resolve) an address."""
        network = link.network
        run("ip", "neigh", "replace", link.address, "lladdr", link.mac, "dev", network.bridge,
            "nud", "permanent")
        mine = [f"neigh replace {network.root_address} lladdr {network.mac} dev {link.inner} "
                f"nud permanent"]
        for other in network.hosts:
            theirs = other.link(network)
            mine.append(f"neigh replace {theirs.address} lladdr {theirs.mac} dev {link.inner} "
                        f"nud permanent")
            run("ip", "-n", other.namespace, "neigh", "replace", link.address, "lladdr", link.mac,
                "dev", theirs.inner, "nud", "permanent")
        run("ip", "-n", link.host.namespace, "-batch", "-", input="\n".join(mine) + "\n")

    # -- faults -----------------------------------------------------------------------------
    def partition(self, *links: Link, mode: str = "drop",
                  max_seconds: float = MAX_FAULT_SECONDS) -> Fault:
        """`with lab.partition(host.link(db), max_seconds=20) as fault: …` — see the module."""
        return Fault(self, links, mode, max_seconds)

    def _set_link(self, link: Link, up: bool, mode: str) -> None:
        if mode == "down":
            run("ip", "link", "set", link.outer, "up" if up else "down")
            return
        ends = [[], link.host.prefix]   # the outer end (root namespace), the inner (the host's)
        for prefix, name in zip(ends, (link.outer, link.inner)):
            if up:
                # Not checked: an end a half-applied cut never reached has nothing to delete
                # (heal then checks that the link is open).
                run(*prefix, "tc", "qdisc", "del", "dev", name, "root", check=False)
            else:
                run(*prefix, "tc", "qdisc", "replace", "dev", name, "root", "blackhole")

    def link_state(self, link: Link) -> str:
        """"open", "dropping" (both ends' qdisc is a black hole) or "down" (the outer end)."""
        outer = json.loads(run("ip", "-j", "link", "show", "dev", link.outer).stdout)[0]
        if "UP" not in outer.get("flags", []):
            return "down"
        kinds = {json.loads(run(*prefix, "tc", "-j", "qdisc", "show", "dev", name).stdout)[0]
                 ["kind"] for prefix, name in (([], link.outer), (link.host.prefix, link.inner))}
        return "dropping" if kinds == {"blackhole"} else "open" if "blackhole" not in kinds else \
            f"half dropping ({kinds})"

    # -- teardown ---------------------------------------------------------------------------
    def close(self) -> None:
        """Heals every fault, kills what still runs in the lab's namespaces, deletes everything
        the lab made. Safe to call more than once; raises (after doing all it can) when something
        could not be removed."""
        if self.closed:
            return
        self.closed = True
        problems: list[str] = []
        for fault in self.faults:
            try:
                fault.heal()
            except LabError as error:
                problems.append(str(error))
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for host in self.hosts.values():
            for pid in host.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + COMMAND_TIMEOUT
        for host in self.hosts.values():
            while host.pids() and time.monotonic() < deadline:
                time.sleep(0.05)
            if host.pids():
                problems.append(f"{host.namespace}: processes {host.pids()} survived SIGKILL")
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        # The outer ends first: deleting one end of a veth deletes both at once, whereas a
        # deleted namespace's interfaces go away asynchronously.
        for name in self.made_veths:
            if name in interfaces():
                result = run("ip", "link", "del", name, check=False)
                if result.returncode:
                    problems.append(result.stderr.strip())
        for namespace in self.made_namespaces:
            result = run("ip", "netns", "del", namespace, check=False)
            if result.returncode and namespace in namespaces():
                problems.append(result.stderr.strip())
        for name in self.made_bridges:
            if name in interfaces():
                result = run("ip", "link", "del", name, check=False)
                if result.returncode:
                    problems.append(result.stderr.strip())
        with _open_lock:
            _open_labs.discard(self)
        left = self.leftovers()
        if left or problems:
            raise LabError(f"lab {self.id} not torn down: left {left}; {problems}")

    def leftovers(self) -> list[str]:
        """Whatever of this lab still exists: namespaces and root-namespace interfaces."""
        mark = f"{PREFIX}{self.id}"
        return sorted([n for n in namespaces() if n.startswith(mark)]
                      + [n for n in interfaces() if n.startswith(mark)])

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _write_sysctl(path: str, value: str) -> None:
    pathlib.Path("/proc/sys", path).write_text(value)


@atexit.register
def _close_open_labs() -> None:
    with _open_lock:
        labs = list(_open_labs)
    for lab in labs:
        with contextlib.suppress(Exception):
            lab.close()


# -- PostgreSQL and gateway nodes inside hosts ---------------------------------------------------
class NetnsPostgres(PostgresCluster):
    """A private PostgreSQL cluster running inside `host`, listening on its address on `network`,
    trusting connections from that network (the gateway nodes and the test process)."""

    def __init__(self, host: Host, network: Network):
        super().__init__(command_prefix=host.prefix, host=host.address(network))
        self.network = network

    def _write_settings(self) -> None:
        super()._write_settings()
        hba = self.data / "pg_hba.conf"
        line = f"host all all {self.network.subnet} trust\n"
        text = hba.read_text()
        if line not in text:
            hba.write_text(text + line)


class NetnsCluster(Cluster):
    """Gateway nodes on one database, each inside its own host, listening on its address on the
    client network (`node_hosts[i]` runs node i)."""

    def __init__(self, binary: pathlib.Path, base: pathlib.Path, postgres: PostgresCluster,
                 node_hosts: list[Host], clients: Network, args: tuple[str, ...] = ()):
        super().__init__(binary, base, postgres, args)
        self.node_hosts, self.clients = node_hosts, clients

    def start(self, count: int) -> "NetnsCluster":
        """Starts `count` more nodes at once, on the next hosts."""
        first = len(self.nodes)
        assert first + count <= len(self.node_hosts), "more nodes than hosts"
        new = [GatewayServer(self.binary, self.base / f"node-{i}",
                             ["--database-url", self.url, *self.args], log_dir=self.base,
                             command_prefix=self.node_hosts[i].prefix,
                             host=self.node_hosts[i].address(self.clients))
               for i in range(first, first + count)]
        self.nodes += new
        errors: list[BaseException] = []

        def start(node: GatewayServer) -> None:
            try:
                node.start()
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=start, args=(node,), daemon=True) for node in new]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert not any(t.is_alive() for t in threads), "a node did not start within 180s"
        assert not errors, f"nodes in namespaces: {errors}"
        return self

    def host_of(self, node: GatewayServer) -> Host:
        return self.node_hosts[self.nodes.index(node)]
