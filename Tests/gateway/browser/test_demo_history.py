"""The demo's Undo button and History slider (Clients/js/demo on scope.undo(), history(), stateAt()
and restore(), served by the real `jetstream serve`) in two headless Chromium browsers, driven with
real clicks and keys. Each test ends with both tabs equal to `GET /v1/scopes/{name}`, and the
page consoles free of errors (test_demo's `tabs` fixture)."""
from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from gateway_helpers import change, objects_of, shapes_of
from test_demo import COLORS, WAIT, Tab, browsers, converged, drag, seed, tabs  # noqa: F401 - fixtures

VISIBLE_TOAST = "!document.getElementById('toast').hidden ? document.getElementById('toast').textContent : ''"


def open_canvas(api, tabs, server, specs):
    name, _ = api.create_canvas()
    uuids = seed(api, name, specs)
    for tab in tabs:
        tab.open(server.url, name)
    return name, uuids


def click_undo(tab: Tab) -> None:
    before = tab.value("demo.messages.length")
    renders = tab.value("demo.renders")
    tab.click("#undo")
    tab.wait("!document.getElementById('undo').disabled && "
             "(demo.renders > arguments[0] || demo.messages.length > arguments[1])",
             "the undo is done", WAIT, renders, before)


def test_undo_button_undoes_this_tabs_edits_one_by_one_and_says_when_nothing_is_left(api, server, tabs):
    a, b = tabs
    name, (shape,) = open_canvas(api, tabs, server, [{"x": 80, "y": 60, "label": "s", "color": COLORS[0]}])
    a.select(shape)
    a.driver.find_elements(By.CSS_SELECTOR, "#swatches button")[2].click()
    a.wait("demo.scope.pendingCount === 0 && demo.scope.get(arguments[0]).properties.color === arguments[1]",
           "the colour is accepted", WAIT, shape, COLORS[2])
    a.type_into("f-label", "renamed")
    converged(api, name, a, b)
    assert b.model(shape)["label"] == "renamed"

    click_undo(a)
    b.wait("demo.scope.get(arguments[0]).properties.label === 's'", "B sees the label undone", WAIT, shape)
    assert a.model(shape)["color"] == COLORS[2], "the first undo leaves the colour"
    click_undo(a)
    b.wait("demo.scope.get(arguments[0]).properties.color === arguments[1]",
           "B sees the colour undone", WAIT, shape, COLORS[0])
    converged(api, name, a, b)
    click_undo(a)
    assert a.value(VISIBLE_TOAST) == "Nothing to undo."

    # An edit another window changed since cannot be undone: the page says so, nothing changes.
    a.select(shape)
    a.type_into("f-label", "mine")
    converged(api, name, a, b)
    api.apply(name, [change(shape, "Shape", label="theirs")])
    server_state = converged(api, name, a, b)
    a.driver.find_element(By.ID, "canvas").send_keys(Keys.CONTROL, "z")
    a.wait("demo.messages.length > 0 && demo.messages.at(-1).text.startsWith('Nothing left to undo')",
           "Ctrl+Z reports the conflict")
    assert converged(api, name, a, b) == server_state
    assert a.model(shape)["label"] == "theirs"
    # Each undo was one revert on the server, with the page's key.
    reverts = [entry for entry in api.history(name, 0).json()["changesets"] if "revertOf" in entry]
    client = a.client_id()
    assert [entry["idempotencyKey"] for entry in reverts] == [
        f"{client}:undo:{entry['revertOf']}" for entry in reverts]
    assert len(reverts) == 2


def test_history_slider_shows_the_past_read_only_and_restores_it(api, server, tabs):
    a, b = tabs
    name, (first,) = open_canvas(api, tabs, server, [{"x": 80, "y": 60, "label": "first"}])
    past = api.state(name)
    second = a.value("demo.scope.add('Shape', {x: 400, y: 200, label: 'second'})")
    a.value("demo.scope.set(arguments[0], {x: 300})", first)
    live = converged(api, name, a, b)

    a.click("#history-open")
    a.wait("!document.getElementById('history').hidden && demo.versions.length > 0", "the history opens")
    records = a.value("demo.versions")
    assert [record["version"] for record in records][-1] == live["version"]
    assert all(record["at"].endswith("Z") for record in records)
    # The slider with the keyboard: Home, then right to the seeded version.
    index = [record["version"] for record in records].index(past["version"])
    slider = a.driver.find_element(By.ID, "history-slider")
    slider.send_keys(Keys.HOME)
    for _ in range(index):
        slider.send_keys(Keys.ARROW_RIGHT)
    a.wait("demo.viewing === arguments[0]", "the page shows the seeded version", WAIT, past["version"])
    assert a.value("document.body.classList.contains('past')")
    assert a.value("[...document.querySelectorAll('#canvas .shape')].map((e) => [e.dataset.uuid, e.style.left])") == [
        [first, "80px"]], "the canvas as it was: one shape, where it was"
    assert a.value("document.getElementById('history-info').textContent").startswith(f"v{past['version']} ")
    assert a.value("document.getElementById('add-rect').disabled && document.getElementById('undo').disabled")

    # Read-only: a drag sends nothing; a live edit elsewhere does not disturb the past view.
    drag(a, a.shape(first), 120, 40)
    api.apply(name, [change(second, "Shape", label="edited live")])
    b.wait("demo.scope.get(arguments[0]).properties.label === 'edited live'", "B sees the live edit", WAIT, second)
    assert a.value("demo.scope.pendingCount") == 0
    assert a.value("document.querySelectorAll('#canvas .shape').length") == 1

    a.click("#history-restore")
    a.wait("demo.viewing === null && document.getElementById('history').hidden", "the restore goes back to live")
    restored = converged(api, name, a, b)
    assert objects_of(restored) == objects_of(past) and shapes_of(restored) == [first]
    assert restored["version"] > live["version"] + 1
    assert a.value("demo.messages.at(-1).text").startswith(f"Restored version {past['version']}")
    newest = api.history(name, restored["version"] - 1).json()["changesets"][-1]
    assert newest["restoredFrom"] == past["version"]

    # Back to live from the past without restoring: the live canvas, editable again.
    a.click("#history-open")
    a.wait("!document.getElementById('history').hidden", "the history opens again")
    slider = a.driver.find_element(By.ID, "history-slider")
    slider.send_keys(Keys.HOME)
    a.wait("demo.viewing !== null", "the page shows the oldest version")
    a.click("#history-live")
    a.wait("demo.viewing === null && document.getElementById('history').hidden", "back to live")
    assert not a.value("document.getElementById('add-rect').disabled")
    converged(api, name, a, b)
