"""The shared-canvas demo at /demo/ (Clients/js/demo on Clients/js/jetstream.mjs, served by the
real `jetstream serve`) in two headless Chromium browsers — two separate browser contexts, "tab A"
and "tab B" — driven through selenium with real clicks, keys and pointer drags.

Every test ends with both tabs equal to `GET /v1/scopes/{name}`: the client's view (objects by
UUID, the canvas's shape order), `demo.shapes()` and the DOM (one `.shape` per shape, placed,
sized, coloured and labelled as the model says). Edits are counted on the server: versions and the
change-set history with its Idempotency-Keys (`<clientId>:<n>`), so an edit sent twice or lost
fails. Each test's page console must be free of uncaught errors and console.error.

JETSTREAM_UPDATE_SCREENSHOT=1 also writes the two-tab screenshot to docs/images/demo-two-tabs.png.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import time

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from chromium_driver import chromium
from gateway_helpers import Api, add, change, new_uuid, objects_of, scope_name, shapes_of
from nginx_proxy import Nginx

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCREENSHOT = ROOT / "docs" / "images" / "demo-two-tabs.png"
WAIT = 60.0
WIDTH, HEIGHT = 1200, 760
COLORS = [0x93C5FDFF, 0xFCA5A5FF, 0x86EFACFF, 0xFDE68AFF, 0xC4B5FDFF, 0xF9A8D4FF]  # demo.mjs's

# One call: the page's state, for failure messages.
DESCRIBE = """
const d = window.demo, s = d && d.scope, toast = document.getElementById("toast");
return {url: location.href, onLine: navigator.onLine, ready: d ? d.ready : null, error: d ? d.error : null,
  badge: document.getElementById("badge")?.dataset.status, status: s?.status, version: s?.version,
  pending: s?.pendingCount, shapes: s ? d.shapes().length : null,
  dom: document.querySelectorAll("#canvas .shape").length, rejections: d ? d.rejections : null,
  toast: toast && !toast.hidden ? toast.textContent : null};
"""

# One call: the view, and every way the DOM disagrees with demo.shapes().
VIEW = """
const cssColor = (c) => (c === null || c === undefined ? "#e5e7eb" : `#${(c >>> 0).toString(16).padStart(8, "0")}`);
const probe = document.createElement("div");
const shapes = demo.shapes();
const problems = [];
const elements = new Map();
for (const element of document.querySelectorAll("#canvas .shape")) {
  if (elements.has(element.dataset.uuid)) problems.push(`${element.dataset.uuid} is in the DOM twice`);
  elements.set(element.dataset.uuid, element);
}
if (elements.size !== shapes.length) problems.push(`${elements.size} .shape elements for ${shapes.length} shapes`);
for (const shape of shapes) {
  const element = elements.get(shape.uuid);
  if (!element) { problems.push(`no element for ${shape.uuid}`); continue; }
  for (const [style, value] of [["left", shape.x], ["top", shape.y], ["width", shape.width], ["height", shape.height]]) {
    if (element.style[style] !== `${value}px`) problems.push(`${shape.uuid}: ${style} ${element.style[style]}, model ${value}`);
  }
  probe.style.background = cssColor(shape.color);
  if (element.style.backgroundColor !== probe.style.backgroundColor) problems.push(`${shape.uuid}: colour ${element.style.backgroundColor}, model ${probe.style.backgroundColor}`);
  if (element.querySelector(".label").textContent !== shape.label) problems.push(`${shape.uuid}: label ${element.querySelector(".label").textContent}, model ${shape.label}`);
  if (element.classList.contains("oval") !== (shape.kind === "oval")) problems.push(`${shape.uuid}: kind ${shape.kind}, class ${element.className}`);
}
return {version: demo.scope.version, pending: demo.scope.pendingCount, status: demo.scope.status,
        badge: document.getElementById("badge").dataset.status,
        snapshot: demo.scope.snapshot(), order: shapes.map((s) => s.uuid), problems};
"""


class Tab:
    """One browser (its own context) showing the demo."""

    def __init__(self, driver, label: str):
        self.driver, self.label = driver, label

    def value(self, expression: str, *args):
        return self.driver.execute_script(f"return ({expression});", *args)

    def describe(self) -> str:
        try:
            return json.dumps(self.driver.execute_script(DESCRIBE))
        except Exception as error:  # noqa: BLE001 - only for a message
            return f"(page state unavailable: {error})"

    def wait(self, expression: str, what: str, timeout: float = WAIT, *args):
        deadline = time.monotonic() + timeout
        while True:
            value = self.value(expression, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"tab {self.label}: {what} within {timeout:.0f}s "
                                     f"({expression}); page: {self.describe()}")
            time.sleep(0.1)

    def open(self, base_url: str, scope: str, transport: str = "auto") -> None:
        self.driver.get(f"{base_url}/demo/?scope={scope}&transport={transport}")
        self.wait("window.demo && demo.ready && demo.scope.status === 'live' "
                  "&& document.getElementById('badge').dataset.status === 'live'",
                  "the demo opens the scope and goes live")
        # A mark a reload would lose: the page must survive a server restart without one.
        self.driver.execute_script("window.__testPage = arguments[0];", f"{scope}/{self.label}")

    def page_identity(self):
        return self.value("[window.__testPage, performance.timeOrigin]")

    def shape(self, uuid: str):
        return self.driver.find_element(By.CSS_SELECTOR, f'#canvas .shape[data-uuid="{uuid}"]')

    def model(self, uuid: str) -> dict | None:
        return self.value("demo.scope.get(arguments[0])?.properties ?? null", uuid)

    def click(self, css: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, css).click()

    def select(self, uuid: str) -> None:
        """A real click on the shape (pointerdown/up without a move: selects, sends nothing)."""
        self.shape(uuid).click()
        self.wait("!document.getElementById('inspector').hidden && "
                  "document.querySelector('#canvas .shape.selected')?.dataset.uuid === arguments[0]",
                  "the click selects the shape", WAIT, uuid)

    def type_into(self, field: str, text: str) -> None:
        """Replaces an inspector field's text by typing, then Tab (the change event sends)."""
        element = self.driver.find_element(By.ID, field)
        element.click()
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(text, Keys.TAB)

    def selected_uuid(self) -> str:
        return self.value("document.querySelector('#canvas .shape.selected')?.dataset.uuid")

    def client_id(self) -> str:
        return self.value("demo.scope.core.clientId")

    def set_viewport(self, width: int, height: int) -> None:
        """Sizes the window so that the page gets `width` × `height` CSS pixels."""
        self.driver.set_window_size(width, height)
        inner = self.value("[innerWidth, innerHeight]")
        if inner != [width, height]:
            outer = self.driver.get_window_size()
            self.driver.set_window_size(outer["width"] + width - inner[0],
                                        outer["height"] + height - inner[1])
        assert self.value("[innerWidth, innerHeight]") == [width, height]

    def set_offline(self, offline: bool) -> None:
        """DevTools network emulation: new requests fail and `navigator.onLine` turns false (the
        page's open event stream keeps flowing: Chromium does not cut it)."""
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    def console_errors(self) -> list[dict]:
        """Uncaught errors and console.error of the page (failed requests are the network's)."""
        return [entry for entry in self.driver.get_log("browser")
                if entry.get("level") == "SEVERE" and entry.get("source") != "network"]


# -- fixtures ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browsers(tmp_path_factory):
    base = tmp_path_factory.mktemp("chromium")
    drivers = []
    try:
        for label in "AB":
            drivers.append(chromium(base / label, console=True))
        yield drivers
    finally:
        for driver in drivers:
            driver.quit()


@pytest.fixture
def tabs(browsers):
    pair = [Tab(driver, label) for driver, label in zip(browsers, "AB")]
    for tab in pair:
        tab.set_viewport(WIDTH, HEIGHT)
        tab.set_offline(False)
        tab.driver.get_log("browser")  # what earlier tests left
    yield pair
    errors = {}
    for tab in pair:
        tab.set_offline(False)
        errors[tab.label] = tab.console_errors()
        tab.driver.get("about:blank")  # ends the page's event stream
    assert not any(errors.values()), f"errors in the pages' consoles: {errors}"


@pytest.fixture(scope="module")
def proxy(server, tmp_path_factory):
    nginx = Nginx(tmp_path_factory.mktemp("nginx"), server.port).start()
    yield nginx
    # Fast: a browser keeps its aborted event stream open, so a graceful stop would wait for it.
    nginx.stop(fast=True)


@pytest.fixture(params=["direct", "nginx"])
def base_url(request, server) -> str:
    """Where the browsers load the demo from: the gateway itself, or nginx with the shipped
    deploy/nginx/jetstream.conf in front of it."""
    return server.url if request.param == "direct" else request.getfixturevalue("proxy").url


# -- helpers ----------------------------------------------------------------------------------------

def seed(api: Api, name: str, specs: list[dict]) -> list[str]:
    """Appends shapes with the given properties to the canvas in one change set."""
    state = api.state(name)
    uuids = [new_uuid() for _ in specs]
    fragments = [add(uuid, "Shape", **spec) for uuid, spec in zip(uuids, specs)]
    fragments.append(change(state["rootUUID"], "Canvas", shapes=shapes_of(state) + uuids))
    api.apply(name, fragments)
    return uuids


def canvas_in_both_tabs(api: Api, tabs, base_url: str, specs: list[dict]) -> tuple[str, list[str], int]:
    """A new canvas with a shape per spec, open in both tabs: its name, the shapes' UUIDs and the
    version the tabs start from."""
    name, _ = api.create_canvas()
    uuids = seed(api, name, specs)
    for tab in tabs:
        tab.open(base_url, name)
    return name, uuids, api.state(name)["version"]


def converged(api: Api, name: str, *tabs: Tab, timeout: float = WAIT) -> dict:
    """Waits until every tab shows exactly `GET /v1/scopes/{name}`: same version, nothing pending,
    the same objects (by UUID) and shape order, the DOM rendering that model, badge live."""
    deadline = time.monotonic() + timeout
    while True:
        server = api.state(name)
        problems = []
        for tab in tabs:
            view = tab.driver.execute_script(VIEW)
            snapshot = view["snapshot"]
            if view["version"] != server["version"] or view["pending"] != 0:
                problems.append(f"{tab.label}: version {view['version']} (server "
                                f"{server['version']}), {view['pending']} pending")
            if snapshot["rootUUID"] != server["rootUUID"]:
                problems.append(f"{tab.label}: root {snapshot['rootUUID']}")
            elif objects_of(snapshot) != objects_of(server):
                mine, theirs = objects_of(snapshot), objects_of(server)
                differing = sorted(u for u in mine.keys() | theirs.keys()
                                   if mine.get(u) != theirs.get(u))
                problems.append(f"{tab.label}: objects differ: " + "; ".join(
                    f"{u}: tab {mine.get(u)} server {theirs.get(u)}" for u in differing[:3]))
            elif shapes_of(snapshot) != shapes_of(server) or view["order"] != shapes_of(server):
                problems.append(f"{tab.label}: shape order differs")
            problems += [f"{tab.label}: DOM {p}" for p in view["problems"][:5]]
            if (view["status"], view["badge"]) != ("live", "live"):
                problems.append(f"{tab.label}: status {view['status']}, badge {view['badge']}")
        if not problems:
            return server
        if time.monotonic() > deadline:
            raise AssertionError(f"the tabs did not converge to GET /v1/scopes/{name} within "
                                 f"{timeout:.0f}s: {problems}; pages: "
                                 + "; ".join(f"{t.label} {t.describe()}" for t in tabs))
        time.sleep(0.2)


def history(api: Api, name: str, since: int) -> list[dict]:
    response = api.history(name, since)
    assert response.status_code == 200, response.text
    return response.json()["changesets"]


def drag(tab: Tab, element, dx: int, dy: int, steps: int = 5) -> None:
    """A real pointer drag: press on the element's centre, move in steps, release."""
    actions = ActionChains(tab.driver, duration=30)
    actions.click_and_hold(element)
    for _ in range(steps):
        actions.move_by_offset(dx // steps, dy // steps)
    actions.release().perform()


# -- the tests --------------------------------------------------------------------------------------

@pytest.mark.parametrize("transport_b", ["fetch", "eventsource"])
def test_shapes_added_concurrently_in_two_tabs_all_appear_in_both_once(base_url, api, tabs, transport_b):
    """Tab B reads the stream with fetch, or with the EventSource fallback (?lastEventId=)."""
    a, b = tabs
    name = scope_name()
    a.open(base_url, name)  # creates the scope (PUT), as a first visitor's page does
    b.open(base_url, name, transport=transport_b)
    assert b.value("demo.scope.eventSource instanceof EventSource") is (transport_b == "eventsource")
    start = api.state(name)["version"]
    added = {"A": [], "B": []}
    # Interleaved A, B, A, B…: half through the toolbar's buttons (a real click; the page selects
    # the new shape), half through the client API, so each tab's sets race the other's.
    for i in range(20):
        for tab, by_click in ((a, i % 2 == 0), (b, i % 2 == 1)):
            if by_click:
                before = tab.value("demo.scope.pendingCount + demo.renders")
                tab.click("#add-rect" if i % 4 < 2 else "#add-oval")
                tab.wait("demo.scope.pendingCount + demo.renders > arguments[0]",
                         "the click adds a shape", WAIT, before)
                added[tab.label].append(tab.selected_uuid())
            else:
                added[tab.label].append(tab.value(
                    "demo.scope.add('Shape', {x: arguments[0], y: arguments[1], label: arguments[2]})",
                    40 + 20 * i, 40 + 10 * i, f"{tab.label}{i}"))
    everything = added["A"] + added["B"]
    assert len(set(everything)) == 40 and None not in everything, added
    server = converged(api, name, a, b)
    assert sorted(shapes_of(server)) == sorted(everything)
    # Each add is one change set, applied once: 40 versions, no more, no fewer.
    assert server["version"] == start + 40
    keys = [entry.get("idempotencyKey") for entry in history(api, name, start)]
    assert len(keys) == 40 and len(set(keys)) == 40, keys
    for tab in tabs:
        assert len(tab.value("demo.shapes()")) == 40
        assert tab.value("document.querySelectorAll('#canvas .shape').length") == 40


def test_a_drag_and_a_resize_in_one_tab_show_in_the_other(base_url, api, tabs):
    a, b = tabs
    name, (shape, other), start = canvas_in_both_tabs(api, tabs, base_url, [
        {"x": 80, "y": 60, "width": 140, "height": 90, "label": "drag me", "color": COLORS[0]},
        {"x": 460, "y": 120, "width": 110, "height": 110, "kind": "oval", "color": COLORS[2]}])

    drag(a, a.shape(shape), 100, 60)
    a.wait("demo.scope.get(arguments[0]).properties.x === 180 && "
           "demo.scope.get(arguments[0]).properties.y === 120",
           "the drag moves the shape by (100, 60)", WAIT, shape)
    assert a.value("document.querySelector('.shape.dragging') === null")
    b.wait("demo.scope.get(arguments[0])?.properties.x === 180 && "
           "demo.scope.get(arguments[0])?.properties.y === 120",
           "tab A's drag reaches tab B", WAIT, shape)
    server = converged(api, name, a, b)
    props = objects_of(server)[shape]["properties"]
    assert (props["x"], props["y"], props["width"], props["height"]) == (180, 120, 140, 90)
    moved_at = server["version"]
    assert moved_at > start  # sent during the drag (throttled) and at the release

    drag(a, a.shape(shape).find_element(By.CSS_SELECTOR, ".handle"), 40, 30)
    a.wait("demo.scope.get(arguments[0]).properties.width === 180 && "
           "demo.scope.get(arguments[0]).properties.height === 120",
           "the corner drag resizes the shape by (40, 30)", WAIT, shape)
    b.wait("demo.scope.get(arguments[0])?.properties.width === 180 && "
           "demo.scope.get(arguments[0])?.properties.height === 120",
           "the resize reaches tab B", WAIT, shape)
    server = converged(api, name, a, b)
    props = objects_of(server)[shape]["properties"]
    assert (props["x"], props["y"], props["width"], props["height"]) == (180, 120, 180, 120)
    assert server["version"] > moved_at
    untouched = objects_of(server)[other]["properties"]
    assert (untouched["x"], untouched["y"], untouched["width"]) == (460, 120, 110)


def test_a_refused_edit_springs_back_with_the_reason_visible(base_url, api, tabs):
    a, b = tabs
    name, (first, second), start = canvas_in_both_tabs(api, tabs, base_url, [
        {"x": 60, "y": 60, "width": 140, "height": 90, "label": "first", "color": COLORS[1]},
        {"x": 300, "y": 200, "width": 140, "height": 90, "label": "second", "color": COLORS[3]}])

    # (a) Obviously bad input: refused in the browser against the schema, nothing sent.
    a.select(first)
    a.type_into("f-width", "-5")
    toast = a.wait("document.getElementById('toast').hidden ? null : "
                   "document.getElementById('toast').textContent",
                   "the refusal is shown")
    assert "width" in toast and "below min" in toast, toast
    [rejection] = a.value("demo.rejections")
    assert rejection["local"] is True and rejection["status"] == 422, rejection
    assert a.model(first)["width"] == 140
    assert a.shape(first).value_of_css_property("width") == "140px"
    assert a.value("document.getElementById('f-width').value") == "140"
    assert a.value("demo.scope.pendingCount") == 0
    time.sleep(0.5)
    assert api.state(name)["version"] == start, "a locally refused edit reached the server"

    # (b) Refused by the server: B relabels `second` while offline; A deletes it meanwhile.
    b.set_offline(True)
    b.wait("navigator.onLine === false", "the emulated network goes offline")
    b.select(second)
    b.type_into("f-label", "renamed offline")
    b.wait("demo.scope.get(arguments[0]).properties.label === 'renamed offline' && "
           "document.querySelector(`.shape[data-uuid='${arguments[0]}'] .label`).textContent "
           "=== 'renamed offline'", "the offline edit shows at once", WAIT, second)
    assert b.value("demo.scope.pendingCount") >= 1
    a.select(second)
    a.click("#delete")
    a.wait("!document.querySelector(`.shape[data-uuid='${arguments[0]}']`)",
           "the deleted shape leaves tab A", WAIT, second)
    deleted = converged(api, name, a)
    assert second not in objects_of(deleted)

    b.set_offline(False)
    b.wait("demo.rejections.length >= 1", "the server's refusal reaches tab B")
    [refusal] = b.value("demo.rejections")
    assert refusal["local"] is False and refusal["status"] == 422, refusal
    toast = b.wait("document.getElementById('toast').hidden ? null : "
                   "document.getElementById('toast').textContent", "tab B shows the refusal")
    assert "Refused by the server" in toast and second in toast, toast
    assert any(second in reason for reason in refusal["reasons"]), refusal
    final = converged(api, name, a, b)
    assert b.model(second) is None
    assert final["version"] == start + 1  # only A's delete
    assert all("renamed offline" not in json.dumps(entry) for entry in history(api, name, 0))


def test_both_tabs_resume_without_reload_after_the_server_is_killed_and_restarted(
        start_server, tabs):
    a, b = tabs
    server = start_server()
    api = Api(server.url)
    name, (first, second), start = canvas_in_both_tabs(api, tabs, server.url, [
        {"x": 60, "y": 80, "width": 140, "height": 90, "label": "first", "color": COLORS[0]},
        {"x": 320, "y": 160, "width": 110, "height": 110, "kind": "oval", "label": "second"}])
    pages = [tab.page_identity() for tab in tabs]
    api.close()

    port = server.port
    server.kill()
    for tab in tabs:
        tab.wait("document.getElementById('badge').dataset.status === 'reconnecting'",
                 "the badge shows the lost connection")
    # A edits while the server is gone: a swatch, the inspector, the toolbar. They show at once.
    a.select(first)
    a.click(f"#swatches button[data-color='{COLORS[4]}']")
    a.type_into("f-label", "edited while down")
    a.click("#add-oval")
    added = a.selected_uuid()
    assert added not in (first, second, None)
    a.wait("demo.scope.get(arguments[0]).properties.color === arguments[1] && "
           "demo.scope.get(arguments[0]).properties.label === 'edited while down' && "
           "document.querySelectorAll('#canvas .shape').length === 3",
           "the offline edits show at once", WAIT, first, COLORS[4])
    assert a.value("demo.scope.pendingCount") == 3
    time.sleep(1.0)

    server.start(port=port)
    api = Api(server.url)
    final = converged(api, name, a, b)
    assert [tab.page_identity() for tab in tabs] == pages, "a tab reloaded"
    props = objects_of(final)[first]["properties"]
    assert (props["color"], props["label"]) == (COLORS[4], "edited while down")
    assert shapes_of(final) == [first, second, added]
    # Each of A's change sets reached the server exactly once, in order.
    client = a.client_id()
    keys = [entry.get("idempotencyKey") for entry in history(api, name, start)]
    assert keys == [f"{client}:{n}" for n in (1, 2, 3)], keys
    assert final["version"] == start + 3
    api.close()


def test_an_offline_tab_queues_its_edits_and_sends_each_once_on_return(base_url, api, tabs):
    a, b = tabs
    name, (first, second), start = canvas_in_both_tabs(api, tabs, base_url, [
        {"x": 60, "y": 80, "width": 140, "height": 90, "label": "first", "color": COLORS[0]},
        {"x": 320, "y": 160, "width": 140, "height": 90, "label": "second", "color": COLORS[1]}])

    b.set_offline(True)
    offline_at = time.monotonic()
    b.wait("navigator.onLine === false", "the emulated network goes offline")
    b.select(first)
    b.click(f"#swatches button[data-color='{COLORS[5]}']")          # 1: colour
    b.type_into("f-label", "queued")                                  # 2: label
    b.type_into("f-x", "400")                                         # 3: x
    b.click("#add-rect")                                              # 4: a new shape
    added = b.selected_uuid()
    b.value("demo.scope.set(arguments[0], {kind: 'oval'}).catch(() => {}), 0", second)  # 5: kind
    b.wait("demo.scope.get(arguments[0]).properties.label === 'queued' && "
           "demo.scope.get(arguments[0]).properties.x === 400 && "
           "demo.scope.get(arguments[1]).properties.kind === 'oval' && "
           "document.querySelectorAll('#canvas .shape').length === 3",
           "the queued edits show at once", WAIT, first, second)
    assert b.value("demo.scope.pendingCount") == 5
    b.wait("document.getElementById('pending').textContent === '5 pending'",
           "the page shows the pending count", 5)
    time.sleep(max(0.0, 5.0 - (time.monotonic() - offline_at)))
    assert api.state(name)["version"] == start, "an edit left an offline tab"
    assert a.model(first)["label"] == "first"

    b.set_offline(False)
    final = converged(api, name, a, b)
    assert final["version"] == start + 5
    client = b.client_id()
    sets = history(api, name, start)
    assert [entry.get("idempotencyKey") for entry in sets] == [
        f"{client}:{n}" for n in range(1, 6)], sets
    props = objects_of(final)[first]["properties"]
    assert (props["color"], props["label"], props["x"]) == (COLORS[5], "queued", 400)
    assert objects_of(final)[second]["properties"]["kind"] == "oval"
    assert shapes_of(final) == [first, second, added]
    # None sent twice: the page saw exactly five successful POSTs (a resend of an applied set
    # would be a sixth, answered from the server's idempotency record).
    posts = b.value("performance.getEntriesByType('resource').filter((e) => "
                    "e.name.endsWith('/changesets') && e.responseStatus === 200).length")
    assert posts == 5


def test_screenshot_of_two_tabs_on_one_canvas(server, api, tabs, tmp_path):
    from PIL import Image

    a, b = tabs
    specs = [
        {"x": 60, "y": 50, "width": 170, "height": 100, "label": "Sketch", "color": COLORS[0]},
        {"x": 300, "y": 70, "width": 120, "height": 120, "kind": "oval", "label": "Idea",
         "color": COLORS[3]},
        {"x": 500, "y": 50, "width": 180, "height": 90, "label": "Review", "color": COLORS[2]},
        {"x": 740, "y": 130, "width": 150, "height": 90, "label": "Tests", "color": COLORS[5]},
        {"x": 90, "y": 250, "width": 130, "height": 130, "kind": "oval", "color": COLORS[1]},
        {"x": 300, "y": 270, "width": 200, "height": 110, "label": "Ship it", "color": COLORS[4]},
        {"x": 590, "y": 280, "width": 110, "height": 110, "kind": "oval", "label": "Docs",
         "color": COLORS[0]},
        {"x": 420, "y": 470, "width": 280, "height": 70, "label": "Two windows, one canvas",
         "color": COLORS[3]},
    ]
    name, uuids, _ = canvas_in_both_tabs(api, tabs, server.url, specs)
    a.select(uuids[5])  # "Ship it"
    converged(api, name, a, b)
    shots = []
    for tab in tabs:
        path = tmp_path / f"demo-tab-{tab.label}.png"
        assert tab.driver.save_screenshot(str(path)), path
        shots.append(Image.open(path).convert("RGB"))
    gap = 16
    composed = Image.new("RGB", (sum(s.width for s in shots) + gap, max(s.height for s in shots)),
                         (71, 85, 105))
    composed.paste(shots[0], (0, 0))
    composed.paste(shots[1], (shots[0].width + gap, 0))
    out = tmp_path / "demo-two-tabs.png"
    composed.save(out, optimize=True)
    assert shots[0].size == shots[1].size and shots[0].width >= WIDTH * 0.9, [s.size for s in shots]
    if os.environ.get("JETSTREAM_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, SCREENSHOT)
