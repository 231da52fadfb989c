"""The demo's "Tidy up" button (Clients/js/demo on scope.call("arrange", {}, {stub}), served by the
real `jetstream serve`) in two headless Chromium browsers, driven with real clicks. The server's
`arrange` lays the shapes out in a grid (docs/methods.md); the page's stub lays out the same grid at
once. Each test ends with both tabs equal to `GET /v1/scopes/{name}`, the grid on the server, one
change set made by the method in the history, and the page consoles free of errors (test_demo's
`tabs` fixture)."""
from __future__ import annotations

import math

from test_demo import (  # noqa: F401 - fixtures
    COLORS, WAIT, Tab, base_url, browsers, canvas_in_both_tabs, converged, history, proxy, tabs)

VISIBLE_TOAST = "!document.getElementById('toast').hidden ? document.getElementById('toast').textContent : ''"

SPECS = [
    {"x": 610, "y": 400, "width": 140, "height": 90, "label": "one", "color": COLORS[0]},
    {"x": 35, "y": 300, "width": 110, "height": 110, "kind": "oval", "label": "two"},
    {"x": 420, "y": 45, "width": 160, "height": 70, "label": "three", "color": COLORS[2]},
    {"x": 250, "y": 520, "width": 90, "height": 90, "label": "four"},
    {"x": 820, "y": 130, "width": 120, "height": 60, "kind": "oval", "label": "five", "color": COLORS[4]},
]


def grid(specs: list[dict]) -> list[tuple[float, float]]:
    """Where `arrange` with `{}` puts each shape, in the canvas's order."""
    columns = max(1, math.ceil(math.sqrt(len(specs))))
    width = max(spec["width"] for spec in specs) + 20
    height = max(spec["height"] for spec in specs) + 20
    return [(20 + (i % columns) * width, 20 + (i // columns) * height) for i in range(len(specs))]


def places(state: dict, uuids: list[str]) -> list[tuple[float, float]]:
    objects = {fragment["uuid"]: fragment["properties"] for fragment in state["fragments"]}
    return [(objects[uuid]["x"], objects[uuid]["y"]) for uuid in uuids]


def tab_places(tab: Tab, uuids: list[str]) -> list[tuple[float, float]]:
    return [tuple(point) for point in tab.value(
        "arguments[0].map((uuid) => [demo.scope.get(uuid).properties.x, demo.scope.get(uuid).properties.y])", uuids)]


def arrange_sets(api, name: str, since: int) -> list[dict]:
    return [entry for entry in history(api, name, since) if entry.get("method") == "arrange"]


def test_tidy_up_in_one_tab_lays_out_the_grid_in_both_as_one_change_set(base_url, api, tabs):
    a, b = tabs
    name, uuids, start = canvas_in_both_tabs(api, tabs, base_url, SPECS)
    assert a.value("document.getElementById('tidy').disabled") is False

    a.click("#tidy")
    a.wait("demo.tidyResults.length === 1", "the server answers the Tidy up")
    assert a.value("demo.tidyResults[0]") == {"moved": 5, "columns": 3}
    server = converged(api, name, a, b)
    assert places(server, uuids) == grid(SPECS)
    assert tab_places(b, uuids) == grid(SPECS)
    assert server["version"] == start + 1
    [entry] = history(api, name, start)
    assert entry["method"] == "arrange"
    assert entry["idempotencyKey"].startswith(a.client_id() + ":"), entry
    assert a.value("document.getElementById('tidy').disabled") is False

    # Tidy again: already a grid, so nothing moves and no version is made.
    a.click("#tidy")
    a.wait("demo.tidyResults.length === 2", "the second Tidy up is answered")
    assert a.value("demo.tidyResults[1]") == {"moved": 0, "columns": 3}
    assert converged(api, name, a, b)["version"] == start + 1


def test_tidy_up_shows_the_grid_at_once_and_is_sent_once_when_the_tab_is_back_online(server, api, tabs):
    a, b = tabs
    name, uuids, start = canvas_in_both_tabs(api, tabs, server.url, SPECS)
    a.set_offline(True)
    a.wait("navigator.onLine === false", "the emulated network goes offline")

    a.click("#tidy")
    # The stub: the shapes jump at once, model and DOM, while the call cannot reach the server.
    a.wait("arguments[0].every((uuid, i) => { const p = demo.scope.get(uuid).properties, "
           "e = document.querySelector(`.shape[data-uuid='${uuid}']`); "
           "return p.x === arguments[1][i][0] && p.y === arguments[1][i][1] "
           "&& e.style.left === `${p.x}px` && e.style.top === `${p.y}px`; })",
           "the grid shows at once in tab A", WAIT, uuids, grid(SPECS))
    assert a.value("document.getElementById('tidy').disabled") is True, "disabled while in flight"
    assert a.value("demo.scope.pendingCount") == 1
    assert api.state(name)["version"] == start, "nothing reached the server"
    assert tab_places(b, uuids) == [(spec["x"], spec["y"]) for spec in SPECS]

    a.set_offline(False)
    a.wait("demo.tidyResults.length === 1", "the call is answered once the tab is back")
    server_state = converged(api, name, a, b)
    assert places(server_state, uuids) == grid(SPECS)
    assert server_state["version"] == start + 1
    [entry] = arrange_sets(api, name, start)
    assert entry["idempotencyKey"].startswith(a.client_id() + ":"), entry
    assert a.value("document.getElementById('tidy').disabled") is False


def test_a_refused_arrange_springs_back_and_the_toast_gives_the_reason(server, api, tabs):
    a, b = tabs
    name, uuids, start = canvas_in_both_tabs(api, tabs, server.url, SPECS)
    # The button always asks for {}: a refusal is provoked through the page's scope, with the
    # button's stub, so the same path (onRejected, the toast) shows it.
    a.value("void demo.scope.call('arrange', {columns: 0}, {stub: (view) => "
            "view.set(arguments[0], {x: 5, y: 5})}).catch(() => {})", uuids[0])
    a.wait("demo.rejections.length === 1", "the refusal reaches the page")
    [refusal] = a.value("demo.rejections")
    assert refusal["method"] == "arrange" and refusal["status"] == 422, refusal
    toast = a.value(VISIBLE_TOAST)
    assert toast.startswith("Tidy up refused by the server") and "columns" in toast, toast
    assert tab_places(a, uuids)[0] == (SPECS[0]["x"], SPECS[0]["y"]), "the stub's move is rolled back"
    assert converged(api, name, a, b)["version"] == start
    assert arrange_sets(api, name, start) == []
