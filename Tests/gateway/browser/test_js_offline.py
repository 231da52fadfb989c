"""The JavaScript client's persistence (`openScope(name, {persist: true})`, Clients/js/stored-copy.mjs)
in headless Chromium against the real `jetstream serve`.

The page (offline.html) and the client's modules come from a small static server of this test on
its own origin — the modules are the bytes the gateway serves under /client/, fetched once — so a
tab can be reloaded while the gateway is down; the gateway allows that origin with --cors-origin.
IndexedDB, sessionStorage and Web Locks are the browser's own (tabs of one profile share them).

Edits made while the server is down survive `saved()` and a reload, show at once from storage
(status reconnecting), and reach the server exactly once after it starts again on the same data
directory and port: every Idempotency-Key of the client appears once in the server's change-set
history, and the view equals `GET`. Two tabs on one scope keep each other's pending sets; a closed
tab's sets are adopted by the next tab with their keys. A damaged stored record gives a clear
error and a fresh start from the server.
"""
from __future__ import annotations

import collections
import json
import pathlib
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import yaml

from chromium_driver import chromium
from gateway_helpers import Api, scope_name

PAGE = pathlib.Path(__file__).resolve().parent / "offline.html"
WAIT = 60.0
IMPORT = re.compile(r'from\s+"\./([a-z-]+\.mjs)"')


class StaticSite:
    """The page's origin: offline.html and the client modules as the gateway served them."""

    def __init__(self):
        self.files: dict[str, bytes] = {"/offline.html": PAGE.read_bytes()}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                body = site.files.get(self.path.split("?")[0])
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                kind = "text/html" if self.path.endswith(".html") else "text/javascript"
                self.send_response(200)
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def copy_client(self, gateway_url: str) -> None:
        """Every module /client/jetstream.mjs imports, directly or not, as the gateway serves it."""
        queue, seen = ["jetstream.mjs"], set()
        with httpx.Client(base_url=gateway_url, timeout=30) as http:
            while queue:
                name = queue.pop()
                if name in seen:
                    continue
                seen.add(name)
                response = http.get(f"/client/{name}")
                assert response.status_code == 200, f"/client/{name}: {response.status_code}"
                self.files[f"/client/{name}"] = response.content
                queue.extend(IMPORT.findall(response.text))
        assert "stored-copy.mjs" in seen, "the served client does not import stored-copy.mjs"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def site():
    static = StaticSite()
    yield static
    static.close()


@pytest.fixture
def gateway(start_server, site):
    server = start_server("--cors-origin", site.origin)
    site.copy_client(server.url)
    return server


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "chromium", console=True)
    yield driver
    driver.quit()


class Tab:
    """One tab (window) of the browser, showing offline.html."""

    def __init__(self, driver, handle: str, label: str):
        self.driver, self.handle, self.label = driver, handle, label

    def focus(self):
        self.driver.switch_to.window(self.handle)
        return self

    def value(self, expression: str, *args):
        self.focus()
        return self.driver.execute_script(f"return ({expression});", *args)

    def run(self, body: str, *args):
        """Runs an async function body in the page; returns its result (errors as AssertionError)."""
        self.focus()
        outcome = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            f"(async (...args) => {{ {body} }})(...Array.from(arguments).slice(0, -1))"
            ".then((value) => done({value}), (error) => done({error: `${error.name}: ${error.message}`}));",
            *args)
        assert "error" not in outcome, f"tab {self.label}: {outcome['error']}"
        return outcome["value"]

    def describe(self) -> dict:
        return self.value("window.harness ? harness.describe() : null")

    def wait(self, expression: str, what: str, timeout: float = WAIT, *args):
        deadline = time.monotonic() + timeout
        while True:
            value = self.value(expression, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"tab {self.label}: {what} within {timeout:.0f}s ({expression});"
                                     f" page: {json.dumps(self.describe())}")
            time.sleep(0.1)

    def load(self, origin: str):
        self.focus()
        self.driver.get(f"{origin}/offline.html")
        self.wait("window.harness !== undefined", "the page loads its module")

    def reload(self):
        self.focus()
        self.driver.refresh()
        self.wait("window.harness !== undefined", "the reloaded page loads its module")

    def open_scope(self, gateway_url: str, name: str):
        self.value("harness.open(arguments[0], arguments[1]), true", gateway_url, name)
        self.wait("harness.opened || harness.error", "openScope settles")
        state = self.describe()
        assert state["error"] is None, f"tab {self.label}: openScope failed: {state['error']}"
        return state

    def add_shape(self, x: int) -> str:
        return self.value("harness.scope.add('Shape', {x: arguments[0], y: 7})", x)

    def saved(self):
        self.run("await harness.scope.saved(); return true;")

    def snapshot(self) -> dict:
        return self.value("harness.scope.snapshot()")

    def console_errors(self) -> list[dict]:
        return [entry for entry in self.driver.get_log("browser")
                if entry.get("level") == "SEVERE" and entry.get("source") != "network"]


def first_tab(driver, label: str = "A") -> Tab:
    return Tab(driver, driver.current_window_handle, label)


def new_tab(driver, label: str) -> Tab:
    driver.switch_to.new_window("tab")
    return Tab(driver, driver.current_window_handle, label)


def keys_in_history(api: Api, name: str) -> list[str]:
    """The keys of the retained change sets (from the oldest retained when history was trimmed)."""
    response = api.history(name, 0)
    if response.status_code == 410:
        response = api.history(name, response.json()["oldestVersion"])
    assert response.status_code == 200, response.text
    return [entry["idempotencyKey"] for entry in response.json()["changesets"] if entry.get("idempotencyKey")]


def assert_each_once(api: Api, name: str, expected: set[str]) -> None:
    counts = collections.Counter(keys_in_history(api, name))
    duplicated = {key: count for key, count in counts.items() if count > 1}
    assert not duplicated, f"change sets applied more than once: {duplicated}"
    missing = expected - set(counts)
    assert not missing, f"change sets never applied: {sorted(missing)}"


def wait_for_server_state(tab: Tab, api: Api, name: str):
    """Polls until the tab has nothing pending, is live and shows the server's state."""
    deadline = time.monotonic() + WAIT
    while True:
        state = tab.describe()
        if state["pending"] == 0 and state["status"] == "live":
            server = api.state(name)
            server.pop("name", None)   # GET names the scope; a snapshot does not
            if tab.snapshot() == server:
                return server
        if time.monotonic() > deadline:
            raise AssertionError(f"tab {tab.label} never caught up with the server: {json.dumps(state)};"
                                 f" view {json.dumps(tab.snapshot())}")
        time.sleep(0.1)


def wait_for_records(tab: Tab, store: str, name: str, holds, what: str):
    """Polls the tab's IndexedDB store until its records of scope `name` satisfy `holds`."""
    deadline = time.monotonic() + WAIT
    while True:
        records = [r for r in tab.run(f"return await harness.records('{store}');") if r.get("scope") == name]
        if holds(records):
            return records
        assert time.monotonic() < deadline, f"tab {tab.label}: {what} within {WAIT:.0f}s; {store}: {records}"
        time.sleep(0.2)


def shape_uuids(snapshot: dict) -> list[str]:
    root = next(f for f in snapshot["fragments"] if f["uuid"] == snapshot["rootUUID"])
    return root["properties"]["shapes"]


def test_edits_made_offline_survive_a_reload_and_arrive_once(gateway, site, browser):
    api = Api(gateway.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, 2)
    tab = first_tab(browser)
    tab.load(site.origin)
    tab.open_scope(gateway.url, name)
    tab.wait("harness.scope.status === 'live'", "the scope goes live")
    # Nothing stored yet for a change made online: saved() resolves, and the set arrives.
    online = tab.add_shape(1)
    tab.saved()
    wait_for_server_state(tab, api, name)
    # Its record leaves storage with the confirmed state's next (lazy) write.
    wait_for_records(tab, "pending", name, lambda records: records == [], "the confirmed set leaves storage")

    api.close()
    port = gateway.port
    gateway.stop()
    tab.wait("harness.scope.status === 'reconnecting'", "the scope sees the server gone")
    added = [tab.add_shape(10 + i) for i in range(3)]
    tab.saved()
    before = tab.describe()
    assert before["pending"] == 3
    view = tab.snapshot()

    tab.reload()
    state = tab.open_scope(gateway.url, name)
    # The stored view at once, the server still down: same client id, same keys, same view.
    assert state["clientId"] == before["clientId"], "the tab's client id changed across its reload"
    assert state["keys"] == before["keys"]
    assert tab.snapshot() == view
    tab.wait("harness.scope.status === 'reconnecting'", "the stored scope reports the server unreachable")
    # A change made after the reload, still offline, continues the key sequence (no key reused).
    added.append(tab.add_shape(20))
    tab.saved()
    after = tab.describe()
    assert after["keys"][:3] == before["keys"] and len(after["keys"]) == 4
    assert len(set(after["keys"])) == 4

    gateway.start(port=port)
    api = Api(gateway.url)
    server = wait_for_server_state(tab, api, name)
    assert_each_once(api, name, set(after["keys"]))
    assert set([online, *added]) <= set(shape_uuids(server))
    # The stored copy caught up too: a reload (server up) shows the server's state, nothing pending.
    tab.reload()
    tab.open_scope(gateway.url, name)
    wait_for_server_state(tab, api, name)
    assert_each_once(api, name, set(after["keys"]))
    assert tab.console_errors() == []
    api.close()


def test_a_stored_copy_older_than_the_servers_history_catches_up_with_a_reset(start_server, site, browser):
    server = start_server("--cors-origin", site.origin, "--history-limit", "3", "--snapshot-interval", "2")
    site.copy_client(server.url)
    api = Api(server.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, 2)
    tab = first_tab(browser)
    tab.load(site.origin)
    tab.open_scope(server.url, name)
    stored = wait_for_server_state(tab, api, name)["version"]
    wait_for_records(tab, "states", name, lambda records: [r["version"] for r in records] == [stored],
                     "the state is stored")
    tab.reload()   # the page no longer follows the scope; others write on
    for _ in range(12):
        api.add_shapes(name)
    deadline = time.monotonic() + WAIT
    while api.history(name, stored).status_code != 410:
        assert time.monotonic() < deadline, "history was never pruned"
        time.sleep(0.2)
    api.close()
    port = server.port
    server.stop()

    tab.open_scope(server.url, name)
    assert tab.value("harness.scope.version") == stored, "not the stored state"
    tab.wait("harness.scope.status === 'reconnecting'", "the stored scope reports the server unreachable")
    added = tab.add_shape(50)
    tab.saved()
    keys = tab.describe()["keys"]
    assert len(keys) == 1

    server.start(port=port)
    api = Api(server.url)
    # The stream cannot resume from the stored version: the reset brings the state, the pending
    # set is sent again with its key and applied once.
    state = wait_for_server_state(tab, api, name)
    assert state["version"] > stored + 12
    assert added in shape_uuids(state)
    assert_each_once(api, name, set(keys))
    assert tab.console_errors() == []
    api.close()


BOARD = {
    "models": {
        "Board": {"title": "String?", "cards": ["Card"]},
        "Card": {"points": "Int32", "label": "String"},
    },
    "scopes": {"board-*": {"root": "Board"}},
}


def test_a_stored_copy_in_an_old_schema_is_loaded_again_in_the_new_one(start_server, site, browser, tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(BOARD))
    evolved = json.loads(json.dumps(BOARD))
    evolved["models"]["Card"]["note"] = "String?"
    new.write_text(yaml.safe_dump(evolved))
    server = start_server("--schema", str(old), "--cors-origin", site.origin)
    site.copy_client(server.url)
    api = Api(server.url)
    name = scope_name("board")
    assert api.create(name, {"clsName": "Board"}).status_code == 201
    tab = first_tab(browser)
    tab.load(site.origin)
    tab.open_scope(server.url, name)
    tab.value("harness.scope.add('Card', {points: 1, label: 'before'})")
    stored = wait_for_server_state(tab, api, name)["version"]
    wait_for_records(tab, "states", name, lambda records: [r["version"] for r in records] == [stored],
                     "the state is stored")
    old_tag = tab.value("harness.scope.schemaTag")
    api.close()
    port = server.port
    server.stop()

    tab.reload()
    tab.open_scope(server.url, name)
    assert tab.value("harness.scope.version") == stored
    assert tab.value("harness.scope.schemaTag") == old_tag
    card = tab.value("harness.scope.add('Card', {points: 2, label: 'offline'})")
    tab.saved()
    keys = tab.describe()["keys"]

    server.args = ["--schema", str(new), "--cors-origin", site.origin]
    server.start(port=port)
    api = Api(server.url)
    # The new schema's state (every card has `note` now) replaces the stored one; the pending set
    # is re-applied and sent once.
    state = wait_for_server_state(tab, api, name)
    assert tab.value("harness.scope.schemaTag") != old_tag
    assert all("note" in f["properties"] for f in state["fragments"] if f["clsName"] == "Card")
    assert card in state["fragments"][0]["properties"]["cards"]
    assert_each_once(api, name, set(keys))
    wait_for_records(tab, "states", name, lambda records: [r.get("schemaTag") for r in records]
                     == [tab.value("harness.scope.schemaTag")], "the state is stored in the new schema")
    assert tab.console_errors() == []
    api.close()


def test_two_tabs_keep_each_others_pending_sets_and_a_closed_tabs_are_adopted(gateway, site, browser):
    api = Api(gateway.url)
    name, _ = api.create_canvas()
    a = first_tab(browser, "A")
    a.load(site.origin)
    a.open_scope(gateway.url, name)
    b = new_tab(browser, "B")
    b.load(site.origin)
    b.open_scope(gateway.url, name)
    for tab in (a, b):
        tab.wait("harness.scope.status === 'live'", "the scope goes live")
    assert a.describe()["clientId"] != b.describe()["clientId"]

    # Online, concurrently: both tabs edit, one is reloaded in between.
    made = {"A": [], "B": []}
    for i in range(3):
        made["A"].append(a.add_shape(100 + i))
        made["B"].append(b.add_shape(200 + i))
    b.saved()
    b.reload()
    b.open_scope(gateway.url, name)
    made["B"].append(b.add_shape(203))
    a.saved()
    b.saved()

    # Offline: both edit; B is reloaded and keeps only its own sets (A is alive: not adopted).
    api.close()
    port = gateway.port
    gateway.stop()
    for tab in (a, b):
        tab.wait("harness.scope.status === 'reconnecting'", "the scope sees the server gone")
    for i in range(2):
        made["A"].append(a.add_shape(300 + i))
        made["B"].append(b.add_shape(400 + i))
    a.saved()
    b.saved()
    keys_a = a.describe()["keys"]
    keys_b = b.describe()["keys"]
    b.reload()
    b.open_scope(gateway.url, name)
    assert b.describe()["keys"] == keys_b, "B's pending sets changed across its reload"
    made["A"].append(a.add_shape(302))
    a.saved()
    keys_a = a.describe()["keys"]

    # A closes with pending sets: the next tab to open the scope adopts them with their keys.
    a.focus()
    browser.close()
    c = Tab(browser, b.handle, "B'")
    c.reload()
    state = c.open_scope(gateway.url, name)
    assert set(keys_a) | set(keys_b) == set(state["keys"]), f"adopted: {state['keys']}"
    for uuid in made["A"] + made["B"]:
        assert c.value("harness.scope.get(arguments[0]) !== undefined", uuid), f"{uuid} not in the view"

    gateway.start(port=port)
    api = Api(gateway.url)
    server = wait_for_server_state(c, api, name)
    assert_each_once(api, name, set(keys_a) | set(keys_b))
    assert set(made["A"] + made["B"]) <= set(shape_uuids(server))
    assert len(keys_in_history(api, name)) == len(set(keys_in_history(api, name)))
    assert c.value("harness.rejections.length") == 0
    api.close()


def test_a_damaged_stored_copy_gives_a_clear_error_and_a_fresh_start(gateway, site, browser):
    api = Api(gateway.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, 3)
    tab = first_tab(browser)
    tab.load(site.origin)
    tab.open_scope(gateway.url, name)
    tab.add_shape(5)
    tab.saved()
    wait_for_server_state(tab, api, name)
    version = tab.value("harness.scope.version")
    # The confirmed state is written lazily: wait until it is stored at the scope's version.
    wait_for_records(tab, "states", name, lambda records: any(r["version"] == version for r in records),
                     "the confirmed state is stored at the scope's version")

    base = gateway.url
    tab.run("await harness.put('states', [{baseURL: args[0], scope: args[1], format: 1, version: 'garbage', objects: 7}]);"
            "await harness.put('pending', [{baseURL: args[0], scope: args[1], key: 'x:1', format: 99, fragments: 'no'}]);"
            "return true;", base, name)
    tab.reload()
    state = tab.open_scope(base, name)
    assert state["storageError"] and "could not be read" in state["storageError"], state
    assert "stored state" in state["storageError"] and "pending change set (x:1)" in state["storageError"]
    tab.wait("harness.errors.length > 0", "the error reaches subscribe")
    server = wait_for_server_state(tab, api, name)
    assert tab.snapshot() == server
    # The damaged records are gone; the state is stored again, readable.
    wait_for_records(tab, "pending", name, lambda records: records == [], "the damaged pending record is deleted")
    wait_for_records(tab, "states", name, lambda records: [r["version"] for r in records] == [server["version"]],
                     "the state is stored again")
    assert tab.console_errors() == []
    api.close()


def test_saved_needs_persist_and_clear_stored_scopes_empties_the_stores(gateway, site, browser):
    api = Api(gateway.url)
    name, _ = api.create_canvas()
    tab = first_tab(browser)
    tab.load(site.origin)
    message = tab.run(
        "const scope = await harness.jetstream.openScope(args[1], {baseURL: args[0]});"
        "try { await scope.saved(); return 'resolved'; } catch (e) { return `${e.name}: ${e.message}`; }"
        " finally { scope.close(); }", gateway.url, name)
    assert message.startswith("JetstreamError:") and "persist" in message
    # clearStoredScopes empties the stores.
    tab.open_scope(gateway.url, name)
    tab.add_shape(1)
    tab.saved()
    assert len(tab.run("return await harness.records('clients');")) == 1
    tab.run("harness.scope.close(); await harness.jetstream.clearStoredScopes(); return true;")
    for store in ("states", "pending", "clients", "schemas"):
        assert tab.run(f"return (await harness.records('{store}')).length;") == 0, store
    api.close()
