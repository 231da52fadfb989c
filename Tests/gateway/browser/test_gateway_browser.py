"""A real browser: headless Chromium (Debian's chromium + chromium-driver, through selenium)
follows a scope with EventSource, gets the snapshot and live change sets, and resumes after the
server restarts on the same port, without a snapshot or reset and without a gap."""
from __future__ import annotations

import json
import pathlib
import time

import pytest

from chromium_driver import chromium
from gateway_helpers import Api, as_event, change, scope_name

PAGE = pathlib.Path(__file__).resolve().parent / "eventsource.html"
WAIT = 60.0


@pytest.fixture
def browser(tmp_path):
    driver = chromium(tmp_path / "chromium")
    yield driver
    driver.quit()


def open_follower(driver, server_url: str, scope: str) -> None:
    """Loads the page on the gateway's own origin (so EventSource needs no CORS) and starts
    following the scope."""
    driver.get(f"{server_url}/healthz")
    driver.execute_script("document.open(); document.write(arguments[0]); document.close();",
                          PAGE.read_text())
    wait_until(driver, "window.jetstream !== undefined")
    driver.execute_script("window.jetstream.follow(arguments[0]);", f"/v1/scopes/{scope}/events")


def wait_until(driver, expression: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return {expression};")
        if value:
            return value
        if time.monotonic() > deadline:
            seen = driver.execute_script(
                "return window.jetstream && JSON.stringify({events: window.jetstream.events"
                ".map(e => [e.type, e.id]), opens: window.jetstream.opens, "
                "errors: window.jetstream.errors});")
            raise AssertionError(f"browser: {expression} never held; state {seen}")
        time.sleep(0.1)


def browser_events(driver) -> list[dict]:
    return driver.execute_script("return window.jetstream.events;")


def has_event(version: int) -> str:
    return f"window.jetstream.events.some(e => e.id === '{version}')"


def test_eventsource_gets_snapshot_live_sets_and_resumes_after_a_restart(start_server, browser):
    server = start_server()
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    first = api.add_shapes(name)[1]

    open_follower(browser, server.url, name)
    wait_until(browser, "window.jetstream.events.length >= 1")
    [snapshot] = browser_events(browser)
    assert snapshot["type"] == "snapshot"
    assert snapshot["id"] == str(first["version"])
    assert json.loads(snapshot["data"]) == api.state(name)

    answers = [api.add_shapes(name)[1],
               api.apply(name, [change(root, "Canvas", name="live")])]
    wait_until(browser, has_event(answers[-1]["version"]))

    # Graceful stop: the stream ends; the browser notices and keeps trying to reconnect.
    api.close()
    port = server.port
    assert server.stop() == 0
    wait_until(browser, "window.jetstream.errors >= 1")
    server.start(port=port)
    api = Api(server.url)
    answers.append(api.apply(name, [change(root, "Canvas", name="after restart")]))
    wait_until(browser, has_event(answers[-1]["version"]))
    answers.append(api.add_shapes(name)[1])
    wait_until(browser, has_event(answers[-1]["version"]))
    api.close()

    events = browser_events(browser)
    assert [e["type"] for e in events] == ["snapshot"] + ["changeset"] * len(answers)
    assert [int(e["id"]) for e in events[1:]] == [a["version"] for a in answers]
    for event, answer in zip(events[1:], answers):
        assert json.loads(event["data"]) == as_event(answer)
    assert browser.execute_script("return window.jetstream.opens;") >= 2


def test_eventsource_sees_the_scope_deleted(start_server, browser):
    server = start_server()
    api = Api(server.url)
    name = scope_name()
    api.create_canvas(name)
    open_follower(browser, server.url, name)
    wait_until(browser, "window.jetstream.events.length >= 1")
    assert api.http.delete(f"/v1/scopes/{name}").status_code == 204
    # A browser dispatches only events that carry a data line: `event: deleted` must have one.
    wait_until(browser, "window.jetstream.events.some(e => e.type === 'deleted')")
    api.close()


def test_a_page_that_starts_with_a_query_resume_point_reconnects_without_duplicates(
        start_server, browser):
    """A page can only pass its first resume point in the URL; when the browser reconnects it
    sends Last-Event-ID too, with the newer id, while the URL still carries the old one. The
    header wins, so nothing is delivered twice."""
    server = start_server()
    api = Api(server.url)
    name, state = api.create_canvas()
    root = state["rootUUID"]
    answers = [api.apply(name, [change(root, "Canvas", name=f"n{i}")]) for i in range(3)]
    resume = answers[0]["version"]

    driver = browser
    driver.get(f"{server.url}/healthz")
    driver.execute_script("document.open(); document.write(arguments[0]); document.close();",
                          PAGE.read_text())
    wait_until(driver, "window.jetstream !== undefined")
    driver.execute_script("window.jetstream.follow(arguments[0]);",
                          f"/v1/scopes/{name}/events?lastEventId={resume}")
    wait_until(driver, has_event(answers[-1]["version"]))

    api.close()
    port = server.port
    assert server.stop() == 0
    wait_until(driver, "window.jetstream.errors >= 1")
    server.start(port=port)
    api = Api(server.url)
    answers.append(api.apply(name, [change(root, "Canvas", name="after")]))
    wait_until(driver, has_event(answers[-1]["version"]))
    api.close()

    events = browser_events(driver)
    assert [(e["type"], int(e["id"])) for e in events] == [
        ("changeset", a["version"]) for a in answers[1:]]
