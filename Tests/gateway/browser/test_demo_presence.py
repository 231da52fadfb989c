"""One event stream per page, and presence, in headless Chromium (Clients/js/jetstream.mjs and the
demo at /demo/, served by the real `jetstream serve`; docs/js-client.md, "One stream per page" and
"Presence").

- A page that follows nine scopes (the demo's and eight more opened with openScope) holds ONE event
  stream on the server (`jetstream_sse_streams_open`), and its POSTs still go through: with one
  HTTP/1.1 connection per stream, six streams would take every connection Chromium allows a host
  and the seventh scope's stream and every POST would wait behind them.
- Two tabs (separate browsers) on one canvas: each lists the other in its "who is here" row and
  draws the other's pointer where it is, moves it as it moves, hides it when the pointer leaves
  the canvas, and drops the other from the row when its page goes away (pagehide).

The page consoles must stay free of errors (test_demo's `tabs` fixture)."""
from __future__ import annotations

import time

import httpx
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from gateway_helpers import Api, scope_name
from test_demo import WAIT, Tab, browsers, tabs  # noqa: F401 - fixtures

OPEN_MORE = """
const [names, done] = [arguments[0], arguments[arguments.length - 1]];
import("/client/jetstream.mjs").then(async ({ openScope }) => {
  window.more = [];
  for (const name of names) window.more.push(await openScope(name, { create: { clsName: "Canvas" } }));
  done(null);
}).catch((error) => done(String(error)));
"""

ADD_EVERYWHERE = """
const done = arguments[arguments.length - 1];
const scopes = [demo.scope, ...window.more];
Promise.all(scopes.map((scope, i) => scope.change([
  { type: "change", uuid: scope.rootUUID, clsName: "Canvas", properties: { name: `posted ${i}` } },
]))).then((answers) => done(answers.map((answer) => answer.version)), (error) => done(String(error)));
"""

WHO_ELSE = "[...document.querySelectorAll('#here-list .who:not(.you)')].map((e) => e.textContent)"
POINTER = """
const pointer = [...document.querySelectorAll('#canvas .pointer')]
  .find((e) => e.querySelector('span').textContent === arguments[0]);
return pointer ? pointer.style.transform : null;
"""


def open_demo(tab: Tab, base_url: str, scope: str, label: str = "") -> None:
    query = f"scope={scope}" + (f"&name={label}" if label else "")
    tab.driver.get(f"{base_url}/demo/?{query}")
    tab.wait("window.demo && demo.ready && demo.scope.status === 'live'", "the demo opens the scope and goes live")


def open_streams(base_url: str) -> float:
    text = httpx.get(f"{base_url}/metrics", timeout=30).text
    line = next(row for row in text.splitlines() if row.startswith("jetstream_sse_streams_open "))
    return float(line.split()[1])


def wait_for(condition, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:.0f}s")
        time.sleep(0.1)


def test_nine_scopes_in_one_page_ride_one_stream_and_posts_go_through(start_server, tabs):
    own = start_server()
    a, _ = tabs
    api = Api(own.url)
    try:
        names = [scope_name() for _ in range(9)]
        open_demo(a, own.url, names[0])
        assert a.driver.execute_async_script(OPEN_MORE, names[1:]) is None
        a.wait("window.more.length === 8 && window.more.every((s) => s.status === 'live')",
               "the eight more scopes live")
        wait_for(lambda: open_streams(own.url) == 1, "exactly one event stream open on the server for the page")

        versions = a.driver.execute_async_script(ADD_EVERYWHERE)
        assert isinstance(versions, list) and len(versions) == 9, versions
        for i, name in enumerate(names):
            assert api.state(name)["fragments"][0]["properties"]["name"] == f"posted {i}"
        a.wait("[demo.scope, ...window.more].every((s) => s.pendingCount === 0)", "every POST confirmed by the stream")

        # Another writer's change reaches the last scope through the same stream.
        last = names[-1]
        root = api.state(last)["rootUUID"]
        version = api.apply(last, [{"type": "change", "uuid": root, "clsName": "Canvas",
                                    "properties": {"name": "from elsewhere"}}])["version"]
        a.wait("window.more[7].version === arguments[0] && "
               "window.more[7].get(window.more[7].rootUUID).properties.name === 'from elsewhere'",
               "the last scope follows the shared stream", WAIT, version)
        assert open_streams(own.url) == 1
    finally:
        api.close()


def pointer_at(tab: Tab, label: str):
    return tab.driver.execute_script(POINTER, label)


def test_each_tab_sees_the_others_pointer_and_who_is_here(server, api, tabs):
    a, b = tabs
    name, _ = api.create_canvas()
    open_demo(a, server.url, name, "Ada")
    open_demo(b, server.url, name, "Bob")
    a.wait(f"{WHO_ELSE}.join() === 'Bob'", "A lists Bob as here")
    b.wait(f"{WHO_ELSE}.join() === 'Ada'", "B lists Ada as here")
    assert a.value("document.querySelector('#here-list .you').textContent") == "Ada (you)"
    assert a.value("document.querySelectorAll('#canvas .pointer').length") == 0, "no pointer before one moves"

    # A's pointer over the canvas, moved in steps: B draws it where A's pointer is, last step last.
    canvas = a.driver.find_element(By.ID, "canvas")
    width, height = a.value("[document.getElementById('canvas').getBoundingClientRect().width, "
                            "document.getElementById('canvas').getBoundingClientRect().height]")
    chain = ActionChains(a.driver, duration=0)
    steps = [(-200 + 10 * i, -100 + 5 * i) for i in range(30)]
    for dx, dy in steps:
        chain.move_to_element_with_offset(canvas, dx, dy)
    chain.perform()
    dx, dy = steps[-1]
    expected_x, expected_y = width / 2 + dx, height / 2 + dy

    def near_last_step():
        transform = pointer_at(b, "Ada")
        if not transform:
            return False
        x, y = (float(part.strip().removesuffix("px")) for part in
                transform.removeprefix("translate(").removesuffix(")").split(","))
        return abs(x - expected_x) <= 2 and abs(y - expected_y) <= 2

    wait_for(near_last_step, f"B draws Ada's pointer at ({expected_x}, {expected_y}); it shows {pointer_at(b, 'Ada')}")
    sent = a.value("demo.pointerUpdates")
    assert 1 <= sent <= len(steps) + 1, f"{sent} presence updates for {len(steps)} moves"
    assert pointer_at(a, "Ada") is None, "a tab does not draw its own pointer"

    # B's pointer shows in A too, then leaves the canvas: gone from A, B still listed as here.
    b_canvas = b.driver.find_element(By.ID, "canvas")
    ActionChains(b.driver, duration=0).move_to_element_with_offset(b_canvas, 50, 40).perform()
    a.wait("[...document.querySelectorAll('#canvas .pointer span')].some((e) => e.textContent === 'Bob')",
           "A draws Bob's pointer")
    ActionChains(b.driver, duration=0).move_to_element(b.driver.find_element(By.ID, "badge")).perform()
    a.wait("![...document.querySelectorAll('#canvas .pointer span')].some((e) => e.textContent === 'Bob')",
           "Bob's pointer leaves A's canvas with Bob's pointer")
    assert a.value(f"{WHO_ELSE}.join()") == "Bob", "Bob is still here"

    # A's page goes away (pagehide: a DELETE kept alive past the page): B no longer lists Ada.
    a.driver.get("about:blank")
    b.wait(f"{WHO_ELSE}.length === 0 && document.querySelectorAll('#canvas .pointer').length === 0",
           "Ada gone from B's row and canvas")
    members = api.http.get(f"/v1/scopes/{name}/presence").json()["members"]
    assert [member["data"]["label"] for member in members] == ["Bob"]
