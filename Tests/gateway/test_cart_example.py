"""`CartServer` (Examples/CartServer): a server of one's own on the gateway's library, with two
Swift methods that keep a cart's `totalPrice` equal to the sum of its items. Started as a process
(built with the gateway), driven over HTTP: the total after adds and removals, refusals with
nothing applied, and eight concurrent `addItem` calls with no lost update."""
from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import httpx
import pytest

from gateway_helpers import assert_problem, built_executable, new_uuid, objects_of


@pytest.fixture
def cart_server(jetstream_bin, tmp_path):
    binary = built_executable(jetstream_bin, "CartServer")
    process = subprocess.Popen([str(binary), "--port", "0", "--data-dir", str(tmp_path / "cart-data")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # the server prints one line once it listens
    match = re.match(r"cart server listening on port (\d+)", line)
    if not match:
        process.kill()
        raise AssertionError(f"no listening line: {line!r} {process.stderr.read()[-2000:]}")
    client = httpx.Client(base_url=f"http://127.0.0.1:{match.group(1)}", timeout=30)
    yield client
    client.close()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def call(client: httpx.Client, name: str, method: str, args) -> httpx.Response:
    return client.post(f"/v1/scopes/{name}/methods/{method}", json={"args": args})


def cart(client: httpx.Client, name: str) -> tuple[list[dict], float]:
    state = client.get(f"/v1/scopes/{name}").json()
    objects = objects_of(state)
    root = objects[state["rootUUID"]]["properties"]
    return [objects[uuid]["properties"] for uuid in root["items"]], root["totalPrice"]


def test_methods_keep_the_total_equal_to_the_items(cart_server):
    name = "cart-" + new_uuid()[:8]
    assert cart_server.put(f"/v1/scopes/{name}", json={"root": {"clsName": "Cart"}}).status_code == 201
    tea = call(cart_server, name, "addItem", {"name": "tea", "price": 3.5, "quantity": 2})
    assert tea.status_code == 200, tea.text
    assert tea.json()["method"] == "addItem" and tea.json()["result"]["totalPrice"] == 7.0
    cake = call(cart_server, name, "addItem", {"name": "cake", "price": 4.25})
    assert cake.json()["result"]["totalPrice"] == 11.25
    items, total = cart(cart_server, name)
    assert [item["name"] for item in items] == ["tea", "cake"] and total == 11.25

    removed = call(cart_server, name, "removeItem", {"item": tea.json()["result"]["item"]})
    assert removed.status_code == 200 and removed.json()["result"] == {"totalPrice": 4.25}
    items, total = cart(cart_server, name)
    assert [item["name"] for item in items] == ["cake"] and total == 4.25

    version = cart_server.get(f"/v1/scopes/{name}").json()["version"]
    problem = assert_problem(call(cart_server, name, "addItem", {"name": "tea", "price": -1}), 422,
                             "method-rejected")
    assert problem["reason"] == "addItem needs a price of 0 or more"
    assert_problem(call(cart_server, name, "removeItem", {"item": new_uuid()}), 422, "method-rejected")
    assert_problem(call(cart_server, name, "arrange", {}), 404, "unknown-method")
    assert cart_server.get(f"/v1/scopes/{name}").json()["version"] == version


def test_concurrent_adds_lose_no_update(cart_server):
    name = "cart-" + new_uuid()[:8]
    assert cart_server.put(f"/v1/scopes/{name}", json={"root": {"clsName": "Cart"}}).status_code == 201
    failures: list[str] = []

    def shopper(index: int) -> None:
        with httpx.Client(base_url=str(cart_server.base_url), timeout=30) as own:
            for round_number in range(10):
                answer = call(own, name, "addItem", {"name": f"s{index}-{round_number}", "price": index + 1})
                if answer.status_code != 200:
                    failures.append(answer.text)

    threads = [threading.Thread(target=shopper, args=(index,)) for index in range(8)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert time.monotonic() - started < 120 and not failures, failures[:3]
    items, total = cart(cart_server, name)
    assert len(items) == 80
    assert total == sum(10 * (index + 1) for index in range(8)) == sum(item["price"] for item in items)


def test_clients_cannot_write_the_total_or_a_price_directly(cart_server):
    """The schema's write rules keep `totalPrice` and `price` for the role `cashier`, which no
    client of the cart has: a change set setting them is refused as `forbidden`, nothing applied;
    the methods act as the server and may."""
    name = "cart-" + new_uuid()[:8]
    assert cart_server.put(f"/v1/scopes/{name}", json={"root": {"clsName": "Cart"}}).status_code == 201
    tea = call(cart_server, name, "addItem", {"name": "tea", "price": 3.5})
    assert tea.status_code == 200, tea.text
    state = cart_server.get(f"/v1/scopes/{name}").json()
    root = state["rootUUID"]
    item = tea.json()["result"]["item"]
    for fragment in ({"type": "change", "uuid": root, "clsName": "Cart", "properties": {"totalPrice": 0}},
                     {"type": "change", "uuid": item, "clsName": "Item", "properties": {"price": 0}}):
        problem = assert_problem(cart_server.post(f"/v1/scopes/{name}/changesets", json={"fragments": [fragment]}),
                                 422, "invalid-change-set")
        error = problem["fragmentReplies"][0]["error"]
        assert error["type"] == "forbidden" and error["property"] in ("totalPrice", "price"), error
        assert "cashier" in error["message"]
    # What a client may write is still open: the item's name.
    renamed = cart_server.post(f"/v1/scopes/{name}/changesets", json={"fragments": [
        {"type": "change", "uuid": item, "clsName": "Item", "properties": {"name": "green tea"}}]})
    assert renamed.status_code == 200, renamed.text
    items, total = cart(cart_server, name)
    assert [(entry["name"], entry["price"]) for entry in items] == [("green tea", 3.5)] and total == 3.5
