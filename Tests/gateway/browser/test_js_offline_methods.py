"""A server method call (`scope.call`, Clients/js/scope-copy.mjs) in a persisted scope
(`openScope(name, {persist: true})`) in headless Chromium against the real `jetstream serve`: made
while the server is down, between two change sets, stored with its kind, method, args and stub's
edits; shown again from storage after a reload; sent once with its key, in its place, when the
server is back — and the server's change set replaces the stub's edits. The page, the static
origin and the helpers are test_js_offline.py's.
"""
from __future__ import annotations

from gateway_helpers import Api
from test_js_offline import (  # noqa: F401 - fixtures
    assert_each_once, browser, first_tab, gateway, shape_uuids, site, wait_for_records, wait_for_server_state)

# A stub that puts the shapes in a row: not arrange's grid, so the server's result replaces it.
STUB_CALL = """
harness.call = harness.scope.call('arrange', {columns: 2}, {stub: (view) => {
  view.get(view.rootUUID).properties.shapes.forEach((uuid, i) => view.set(uuid, {x: 1000 + i, y: 5}));
}});
harness.call.catch(() => {});   // the page is reloaded before an answer: the promise goes with it
return true;
"""


def test_a_call_made_offline_is_stored_shown_after_a_reload_and_applied_once_in_order(gateway, site, browser):
    api = Api(gateway.url)
    name, _ = api.create_canvas()
    api.add_shapes(name, 3)
    tab = first_tab(browser)
    tab.load(site.origin)
    tab.open_scope(gateway.url, name)
    tab.wait("harness.scope.status === 'live'", "the scope goes live")

    api.close()
    port = gateway.port
    gateway.stop()
    tab.wait("harness.scope.status === 'reconnecting'", "the scope sees the server gone")
    added = tab.value("harness.scope.add('Shape', {x: 700, y: 700, width: 60})")
    tab.run(STUB_CALL)
    shapes = shape_uuids(tab.snapshot())
    assert [tab.value("harness.scope.get(arguments[0]).properties.x", uuid) for uuid in shapes] == [1000, 1001, 1002, 1003]
    tab.value("harness.scope.set(arguments[0], {label: 'after'}).catch(() => {}), true", added)
    tab.saved()
    before = tab.describe()
    assert before["pending"] == 3
    records = wait_for_records(tab, "pending", name, lambda records: len(records) == 3, "three stored records")
    by_key = {record["key"]: record for record in records}
    call = by_key[before["keys"][1]]
    assert (call.get("kind"), call.get("method"), call.get("args")) == ("method", "arrange", {"columns": 2}), call
    assert len(call["fragments"]) == 4, "the stub's edits are stored with the call"
    assert all("kind" not in by_key[key] for key in (before["keys"][0], before["keys"][2])), "change sets keep their records"
    view = tab.snapshot()

    tab.reload()
    state = tab.open_scope(gateway.url, name)
    assert state["keys"] == before["keys"]
    assert tab.snapshot() == view, "the stub's edits are shown again from storage"
    tab.wait("harness.scope.status === 'reconnecting'", "the stored scope reports the server unreachable")

    gateway.start(port=port)
    api = Api(gateway.url)
    server = wait_for_server_state(tab, api, name)
    assert_each_once(api, name, set(before["keys"]))
    entries = [entry for entry in api.history(name, 0).json()["changesets"] if entry.get("idempotencyKey") in before["keys"]]
    assert [entry["idempotencyKey"] for entry in entries] == before["keys"], "sent in order"
    assert [entry.get("method") for entry in entries] == [None, "arrange", None]
    # The server's grid (2 columns, cells of 120 x 120), not the stub's row; the label set after it.
    objects = {fragment["uuid"]: fragment["properties"] for fragment in server["fragments"]}
    assert [(objects[uuid]["x"], objects[uuid]["y"]) for uuid in shapes] == [(20, 20), (140, 20), (20, 140), (140, 140)]
    assert objects[added]["label"] == "after"
    wait_for_records(tab, "pending", name, lambda records: records == [], "the records leave storage")
    assert tab.console_errors() == []
    api.close()
