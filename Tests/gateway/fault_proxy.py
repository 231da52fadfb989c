"""A TCP fault proxy for the test suites, in the spirit of Toxiproxy, standard library only.

Why it exists: the cluster suites need a slow or broken link between gateway nodes and PostgreSQL,
and the kernels the suites run on have no `netem` (no `tc qdisc ... delay/loss`). So the link is
made here, in user space: clients connect to the proxy on 127.0.0.1, the proxy connects to the
upstream on 127.0.0.1, and the faults below are applied to the bytes in between.

    with FaultProxy(upstream=("127.0.0.1", pg_port)).start() as proxy:
        ...point the nodes at proxy.port...
        proxy.set_latency(0.1, jitter=0.05)
        proxy.black_hole(); proxy.heal(); proxy.reset_all()
        proxy.drop_randomly(0.2, seed=7)
        proxy.stats.accepted

Run as a program, it is one proxy for another process (the Swift and JavaScript client tests start
it as a child), faults fixed by flags:

    python3 Tests/gateway/fault_proxy.py --upstream 127.0.0.1:8080 \
        [--latency S] [--jitter S] [--drop P] [--drop-within S] [--seed N] [--max-drops N]

It listens on a free port of 127.0.0.1 and prints one line, `fault proxy listening on
127.0.0.1:PORT`, once connections can come. It runs until SIGTERM or SIGINT, or until its stdin
ends: a parent that keeps the write end of a pipe open and dies takes the proxy with it (so
stdin from /dev/null stops it at once). Then it closes and prints its final `stats` as one line
of JSON (`{"accepted": …, "dropped": …}`), and exits 0, or 1 if its thread had died of an error.

How it works: one daemon thread (named `fault-proxy-<port>`) runs a selector loop over the
listening socket and every proxied connection; there is no per-connection thread and no busy
loop (the loop sleeps in `select` until a socket is ready or a delayed chunk falls due). The
fault methods hand their change to that thread and wait until it is applied, so when one returns
the fault is in force, and it holds until another method changes it. Bytes move in chunks as they
arrive (at most 64 KiB each); at most 1 MiB waits per direction before the proxy stops reading its
source, so a slow reader pushes back on its writer as TCP would.

Faults:
- `set_latency(delay, jitter=0, seed=None)`: every chunk, in each direction, is held
  `delay ± jitter` seconds (uniform) after it arrived. A chunk never overtakes the one before it
  in its direction: jitter varies the delay, it never reorders bytes. Chunks already waiting keep
  the delay they were given.
- `black_hole()`: bytes in both directions of every connection, open or new, are read and
  dropped (chunks still waiting for their latency too); nothing is forwarded, and no FIN or RST
  is sent to either side, whatever the other side does: a client waiting for an answer sees
  silence, never EOF. New connections are accepted (the handshake completes) and the upstream is
  not even connected.
- `heal()`: clears every fault (latency, black hole, random drops, drops not yet made). Every
  connection that lived through a black hole (open when it began or opened during it) is reset
  then, with RST: bytes it sent were dropped, so its stream cannot be resumed (PostgreSQL's
  protocol could not carry on after lost bytes), and a reset makes its client reconnect, as it
  would once a real partition outlasted its TCP timeouts. Connections opened after `heal()` pass
  bytes through.
- `reset_all()`: every open connection is closed now with RST (SO_LINGER 0) on both sides. A
  one-off: later connections are not affected.
- `drop_randomly(probability, seed=None, within=1.0, at_most=None)`: each connection accepted
  from now on is, with that probability, reset (both sides, RST) at a uniformly random time in
  [0, within) seconds after it was accepted (unless it ended before). With `at_most`, no more
  than that many connections are dropped from now on, so a test that needs its clients to get
  through in the end can bound the damage. `drop_randomly(0)` stops choosing new victims.

Without faults the proxy is transparent: a FIN from one side is forwarded as a FIN to the other
after the bytes before it (half-closed connections work), the connection ends when both
directions have ended, and an RST or error on one side resets the other (an upstream that
refuses the connection resets the client).

`stats` is a snapshot: connections accepted and open, bytes forwarded each way, bytes swallowed,
connections reset by the proxy (by any cause, including errors on one side), and among them those
reset by a random drop (`dropped`: a test can check its faults really happened). `close()` closes
every socket and joins the thread (within 5 s), and raises if that thread had died of an error
(a bug here must not pass for a fault); it is idempotent, and the proxy is a context manager.
Only IPv4 loopback addresses are used.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import errno
import heapq
import ipaddress
import itertools
import json
import os
import random
import select
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any, Callable

CHUNK = 64 * 1024
QUEUE_LIMIT = 1024 * 1024
CALL_TIMEOUT = 5.0
JOIN_TIMEOUT = 5.0
THREAD_PREFIX = "fault-proxy"

# Sides of a connection, and the direction that reads from each: direction d reads side d and
# writes side 1 - d.
CLIENT, UPSTREAM = 0, 1
UP, DOWN = 0, 1  # client → upstream, upstream → client
_DOOM = 2  # timer kind: a random drop falls due
_EOF = None  # queued in place of bytes: forward a FIN
_WAKE, _LISTEN = object(), object()


@dataclasses.dataclass(frozen=True)
class Stats:
    accepted: int = 0
    open: int = 0
    bytes_up: int = 0  # forwarded client → upstream
    bytes_down: int = 0  # forwarded upstream → client
    swallowed: int = 0  # dropped by a black hole, either direction
    resets: int = 0  # connections the proxy ended with RST
    dropped: int = 0  # of those, ended by a random drop (drop_randomly)


class _Link:
    """One proxied connection; touched only by the proxy's thread."""

    def __init__(self, client: socket.socket, upstream: socket.socket | None, holed: bool):
        self.socks = [client, upstream]
        self.holed = holed
        self.connecting = upstream is not None
        self.closed = False
        self.queues = (collections.deque(), collections.deque())  # (due, bytes | _EOF)
        self.queued = [0, 0]
        self.last_due = [0.0, 0.0]
        self.read_open = [True, upstream is not None]
        self.write_blocked = [False, False]
        self.finished = [False, False]  # direction's FIN delivered
        self.timer: list[float | None] = [None, None]
        self.doom: float | None = None
        self.masks: dict[socket.socket, int] = {}


class FaultProxy:
    def __init__(self, upstream: tuple[str, int]):
        host, port = upstream
        if not ipaddress.IPv4Address(host).is_loopback:
            raise ValueError(f"upstream must be an IPv4 loopback address, not {host}")
        self.upstream = (host, int(port))
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._stopping = False
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._counts = Stats()
        self._calls: collections.deque[Callable[[], None]] = collections.deque()
        # Loop state, touched only by the proxy's thread (or before it starts).
        self._links: set[_Link] = set()
        self._timers: list[tuple[float, int, _Link, int]] = []
        self._seq = itertools.count()
        self._latency = 0.0
        self._jitter = 0.0
        self._jitter_rng = random.Random()
        self._black_hole = False
        self._drop_probability = 0.0
        self._drop_within = 1.0
        self._drop_rng = random.Random()
        self._drops_left: int | None = None  # None: no bound

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> "FaultProxy":
        if self._thread is not None or self._closed:
            raise RuntimeError("a FaultProxy starts once")
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, _LISTEN)
        self._sel.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._thread = threading.Thread(target=self._run, name=f"{THREAD_PREFIX}-{self.port}",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._listener is None:
            raise RuntimeError("the proxy has not been started")
        return self._listener.getsockname()[1]

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def error(self) -> BaseException | None:
        """What stopped the proxy's thread, if it died of an unexpected error."""
        return self._error

    @property
    def stats(self) -> Stats:
        with self._lock:
            return self._counts

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        self._wake()
        thread.join(JOIN_TIMEOUT)
        if thread.is_alive():
            raise RuntimeError(f"{thread.name} did not stop within {JOIN_TIMEOUT} s")
        if self._error is not None:
            raise RuntimeError(f"{thread.name} had died of an error") from self._error

    def __enter__(self) -> "FaultProxy":
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- faults ----------------------------------------------------------------------------

    def set_latency(self, delay: float, jitter: float = 0.0, seed: int | None = None) -> None:
        if delay < 0 or jitter < 0:
            raise ValueError("delay and jitter are durations, ≥ 0")

        def apply() -> None:
            self._latency, self._jitter = float(delay), float(jitter)
            self._jitter_rng = random.Random(seed)
        self._call(apply)

    def black_hole(self) -> None:
        def apply() -> None:
            self._black_hole = True
            for link in list(self._links):
                if not link.holed:
                    link.holed = True
                    for d in (UP, DOWN):
                        self._bump(swallowed=link.queued[d])
                        link.queues[d].clear()
                        link.queued[d] = 0
                        link.write_blocked[d] = False
                        link.timer[d] = None
                    self._interest(link)
        self._call(apply)

    def heal(self) -> None:
        def apply() -> None:
            self._black_hole = False
            self._latency = self._jitter = self._drop_probability = 0.0
            for link in list(self._links):
                link.doom = None
                if link.holed:
                    self._reset(link)
        self._call(apply)

    def reset_all(self) -> int:
        """Resets every open connection; returns how many."""
        def apply() -> int:
            links = list(self._links)
            for link in links:
                self._reset(link)
            return len(links)
        return self._call(apply)

    def drop_randomly(self, probability: float, seed: int | None = None,
                      within: float = 1.0, at_most: int | None = None) -> None:
        if not 0.0 <= probability <= 1.0 or within <= 0 or (at_most is not None and at_most < 0):
            raise ValueError("probability in [0, 1], within > 0 seconds, at_most ≥ 0")

        def apply() -> None:
            self._drop_probability, self._drop_within = float(probability), float(within)
            self._drop_rng = random.Random(seed)
            self._drops_left = at_most
        self._call(apply)

    # --- hand-off to the proxy's thread ----------------------------------------------------

    def _call(self, fn: Callable[[], Any]) -> Any:
        thread = self._thread
        if thread is None or not thread.is_alive() or self._closed:
            raise RuntimeError(f"the proxy is not running (error: {self._error!r})")
        done = threading.Event()
        box: dict[str, Any] = {}

        def job() -> None:
            try:
                box["result"] = fn()
            except BaseException as error:  # handed back to the caller
                box["error"] = error
            finally:
                done.set()
        self._calls.append(job)
        self._wake()
        if not done.wait(CALL_TIMEOUT):
            raise TimeoutError(f"the proxy did not apply the change within {CALL_TIMEOUT} s")
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # full: the loop is waking anyway; closed: the loop is gone

    def _bump(self, **deltas: int) -> None:
        if any(deltas.values()):
            with self._lock:
                self._counts = dataclasses.replace(
                    self._counts, **{k: getattr(self._counts, k) + v for k, v in deltas.items()})

    # --- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping:
                timeout = None
                if self._timers:
                    timeout = max(0.0, self._timers[0][0] - time.monotonic())
                for key, mask in self._sel.select(timeout):
                    if key.data is _WAKE:
                        self._drain_wake()
                    elif key.data is _LISTEN:
                        self._accept()
                    else:
                        link, side = key.data
                        if not link.closed and mask & selectors.EVENT_WRITE:
                            self._writable(link, side)
                        if not link.closed and mask & selectors.EVENT_READ:
                            self._readable(link, side)
                        if not link.closed:
                            self._interest(link)
                while self._calls and not self._stopping:
                    self._calls.popleft()()
                self._fire_timers()
        except BaseException as error:
            self._error = error
        finally:
            self._teardown()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _accept(self) -> None:
        for _ in range(64):
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # e.g. ECONNABORTED: the client gave up before we accepted
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream, refused = None, False
            if not self._black_hole:
                upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                upstream.setblocking(False)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                refused = upstream.connect_ex(self.upstream) not in (0, errno.EINPROGRESS)
            link = _Link(client, upstream, holed=self._black_hole)
            self._links.add(link)
            self._bump(accepted=1, open=1)
            if refused:
                self._reset(link)
                continue
            if (self._drop_probability and self._drops_left != 0
                    and self._drop_rng.random() < self._drop_probability):
                link.doom = time.monotonic() + self._drop_rng.uniform(0.0, self._drop_within)
                heapq.heappush(self._timers, (link.doom, next(self._seq), link, _DOOM))
            self._interest(link)

    def _readable(self, link: _Link, side: int) -> None:
        try:
            data = link.socks[side].recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            self._reset(link)
            return
        if not data:
            link.read_open[side] = False  # stays readable at EOF: stop asking
            if not link.holed:
                self._enqueue(link, side, _EOF)
        elif link.holed:
            self._bump(swallowed=len(data))
        else:
            self._enqueue(link, side, data)

    def _writable(self, link: _Link, side: int) -> None:
        if side == UPSTREAM and link.connecting:
            error = link.socks[UPSTREAM].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                self._reset(link)
                return
            link.connecting = False
            link.read_open[UPSTREAM] = True
            if not link.holed:
                self._flush(link, UP)
        else:
            self._flush(link, 1 - side)

    def _enqueue(self, link: _Link, d: int, data: bytes | None) -> None:
        now = time.monotonic()
        delay = self._latency
        if self._jitter:
            delay += self._jitter_rng.uniform(-self._jitter, self._jitter)
        # Never before the chunk ahead of it: jitter must not reorder a direction's bytes.
        due = max(now + max(delay, 0.0), link.last_due[d])
        link.last_due[d] = due
        link.queues[d].append((due, data))
        if data:
            link.queued[d] += len(data)
        self._flush(link, d)

    def _flush(self, link: _Link, d: int) -> None:
        """Sends what has fallen due in direction d, until the destination would block."""
        link.write_blocked[d] = False
        if d == UP and link.connecting:
            return  # sent once the upstream connection is up
        dst, queue = link.socks[1 - d], link.queues[d]
        now = time.monotonic()
        while queue:
            due, data = queue[0]
            if due > now:
                if link.timer[d] != due:
                    link.timer[d] = due
                    heapq.heappush(self._timers, (due, next(self._seq), link, d))
                return
            if data is _EOF:
                queue.popleft()
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    self._reset(link)
                    return
                link.finished[d] = True
                if all(link.finished):
                    self._close(link, rst=False)
                return
            try:
                sent = dst.send(data)
            except BlockingIOError:
                link.write_blocked[d] = True
                return
            except OSError:
                self._reset(link)
                return
            link.queued[d] -= sent
            self._bump(**{"bytes_up" if d == UP else "bytes_down": sent})
            if sent < len(data):
                queue[0] = (due, data[sent:])
                link.write_blocked[d] = True
                return
            queue.popleft()

    def _fire_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            due, _, link, kind = heapq.heappop(self._timers)
            if link.closed:
                continue
            if kind == _DOOM:
                # The bound is checked when a drop falls due, not when it is chosen: a chosen
                # connection that ended by itself first must not use up the budget.
                if link.doom == due and self._drops_left != 0:
                    self._reset(link)
                    self._bump(dropped=1)
                    if self._drops_left is not None:
                        self._drops_left -= 1
                continue
            if link.timer[kind] == due:
                link.timer[kind] = None
            if not link.holed:
                self._flush(link, kind)
            if not link.closed:
                self._interest(link)

    def _interest(self, link: _Link) -> None:
        """Registers each socket of the link for what it is waiting for, and nothing more."""
        for side in (CLIENT, UPSTREAM):
            sock = link.socks[side]
            if sock is None:
                continue
            connecting = side == UPSTREAM and link.connecting
            mask = 0
            if link.read_open[side] and not connecting and link.queued[side] < QUEUE_LIMIT:
                mask |= selectors.EVENT_READ
            if connecting or link.write_blocked[1 - side]:
                mask |= selectors.EVENT_WRITE
            old = link.masks.get(sock, 0)
            if mask == old:
                continue
            if not old:
                self._sel.register(sock, mask, (link, side))
            elif not mask:
                self._sel.unregister(sock)
            else:
                self._sel.modify(sock, mask, (link, side))
            link.masks[sock] = mask

    def _reset(self, link: _Link) -> None:
        if not link.closed:
            self._close(link, rst=True)
            self._bump(resets=1)

    def _close(self, link: _Link, rst: bool) -> None:
        link.closed = True
        self._links.discard(link)
        self._bump(open=-1)
        for sock in link.socks:
            if sock is None:
                continue
            if link.masks.get(sock):
                self._sel.unregister(sock)
            if rst:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            sock.close()
        link.masks.clear()

    def _teardown(self) -> None:
        for link in list(self._links):
            self._close(link, rst=False)
        self._timers.clear()
        while self._calls:  # a caller racing close(): answer it rather than let it time out
            self._calls.popleft()()
        self._sel.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()


# --- command line -------------------------------------------------------------------------------


def _upstream(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        if not sep or not ipaddress.IPv4Address(host).is_loopback or not 0 < int(port) < 65536:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"an IPv4 loopback HOST:PORT, not {text!r}") from None
    return host, int(port)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="fault_proxy.py",
        description="A TCP fault proxy on a free port of 127.0.0.1 in front of --upstream. Prints "
        "'fault proxy listening on 127.0.0.1:PORT' when ready, runs until SIGTERM, SIGINT or the "
        "end of stdin, then prints its stats as one JSON line.")
    parser.add_argument("--upstream", required=True, type=_upstream, metavar="HOST:PORT",
                        help="where connections go (IPv4 loopback)")
    parser.add_argument("--latency", type=float, default=0.0, metavar="S",
                        help="seconds each chunk is held, each direction (default 0)")
    parser.add_argument("--jitter", type=float, default=0.0, metavar="S",
                        help="± seconds of uniform jitter on the latency; never reorders bytes")
    parser.add_argument("--drop", type=float, default=0.0, metavar="P",
                        help="probability that a new connection is reset (RST, both sides)")
    parser.add_argument("--drop-within", type=float, default=1.0, metavar="S",
                        help="a dropped connection is reset within S seconds of its accept "
                        "(uniform; default 1)")
    parser.add_argument("--max-drops", type=int, metavar="N",
                        help="drop no more than N connections in all (default: no bound)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="seed of the jitter and the drops (default: random)")
    args = parser.parse_args(argv)
    if args.latency < 0 or args.jitter < 0:
        parser.error("--latency and --jitter are durations, ≥ 0")
    if not 0.0 <= args.drop <= 1.0 or args.drop_within <= 0:
        parser.error("--drop is a probability in [0, 1], --drop-within > 0 seconds")
    if args.max_drops is not None and args.max_drops < 0:
        parser.error("--max-drops is a count, ≥ 0")
    return args


def _wait_for_the_end(proxy: FaultProxy) -> None:
    """Returns at SIGTERM or SIGINT, at the end of stdin, or when the proxy's thread died.

    The signals only write to a wake-up pipe (no Python code runs in a handler while the main
    thread waits), and select() rather than a selector watches stdin: epoll refuses regular files
    and /dev/null, select does not.
    """
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)  # the wake-up fd does the work
    # A parent may start us with them blocked (Foundation's Process passes on the mask of the
    # thread that launched it, which blocks most signals): SIGTERM would then never arrive.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    watched = [wake_r]
    try:
        if sys.stdin is not None:
            watched.append(sys.stdin.fileno())
    except (OSError, ValueError):
        pass  # no stdin at all: only a signal ends the proxy
    while proxy.error is None:
        ready, _, _ = select.select(watched, [], [], 1.0)
        if wake_r in ready:
            return
        if len(watched) > 1 and watched[1] in ready:
            try:
                if not os.read(watched[1], 65536):
                    return
            except OSError:
                return


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    proxy = FaultProxy(upstream=args.upstream).start()
    status = 0
    try:
        if args.latency or args.jitter:
            proxy.set_latency(args.latency, jitter=args.jitter, seed=args.seed)
        if args.drop:
            proxy.drop_randomly(args.drop, seed=args.seed, within=args.drop_within,
                                at_most=args.max_drops)
        print(f"fault proxy listening on 127.0.0.1:{proxy.port}", flush=True)
        _wait_for_the_end(proxy)
    finally:
        try:
            proxy.close()
        except RuntimeError as error:
            print(f"fault proxy: {error}: {error.__cause__!r}", file=sys.stderr, flush=True)
            status = 1
        print(json.dumps(dataclasses.asdict(proxy.stats)), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
