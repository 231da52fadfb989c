"""Schema evolution, black box: one store served under successive schemas by the real
`jetstream serve` (stopped, then started again on the same data directory with another
`--schema`), and `jetstream check-schema NEW.yaml --data-dir D` against that store.

- Additive and widening changes just work: a new class, a new property (its default in `GET`, in
  snapshots, in events), a removed property (gone from states, events and history pages), a removed
  class nobody stored, a new enum value, wider bounds, `renamedFrom`.
- A tightening that stored values break: `check-schema` names every offending object and exits 1
  (text and `--format json`), `serve` refuses to start (exit 1, the same lines on stderr); each
  `onInvalid` choice (`default`, `clamp`, `null`, `remove-object`) makes the schema fit.
- A stream open across the change resumes with `event: reset` carrying the state under the new
  schema; `GET /v1/schema` has an `ETag` (a digest of the schema, `304` for `If-None-Match`); the
  server logs `schema changed` with the old and the new digest.

The stored log is never rewritten: after a refused start the old schema serves the same states. With
`JETSTREAM_TEST_STORE=postgres` the store is the data directory's PostgreSQL database and
`check-schema` gets `--database-url` instead of `--data-dir`.
"""
from __future__ import annotations

import copy
import json
import pathlib
import re
import subprocess
import time

import pytest
import yaml

import postgres_cluster
from gateway_helpers import (Api, add, as_event, assert_rejected, change, new_uuid, objects_of,
                             scope_name)
from gateway_server import ServerStartError
from sse_stream import SSEStream

# The schema every test starts from. `tags` and `label` are there for the clamp of strings and
# collections, `best` for what `remove-object` does to a to-one reference.
BASE = {
    "models": {
        "Board": {"title": "String?", "cards": ["Card"], "best": "Card?"},
        "Card": {
            "points": "Int32",
            "label": "String",
            "note": "String?",
            "kind": {"enum": ["red", "blue"]},
            "tags": ["String"],
        },
    },
    "scopes": {"board-*": {"root": "Board"}},
}

CHECK_TIMEOUT = 120
# The members of `check-schema --format json`'s object.
REPORT_KEYS = ("fits", "scopes", "objects", "fixed", "problems")
LOG_TIMEOUT = 30.0
SCHEMA_ETAG = re.compile(r'^"([0-9a-f]{16,})"$')


def evolve(schema: dict, **classes: dict | None) -> dict:
    """`schema` with some classes' properties changed: `Card={"rank": {...}, "note": None}` sets
    `rank` and removes `note`; a class given as None is removed, a new name is added."""
    result = copy.deepcopy(schema)
    models = result["models"]
    for name, properties in classes.items():
        if properties is None:
            models.pop(name, None)
            continue
        model = models.setdefault(name, {})
        for prop, spec in properties.items():
            if spec is None:
                model.pop(prop, None)
            else:
                model[prop] = spec
    return result


class Evolution:
    """One data directory served by `jetstream serve` under successive schemas (dicts written as
    YAML files), and checked with `jetstream check-schema` while no server runs."""

    def __init__(self, start_server, jetstream_bin: pathlib.Path, directory: pathlib.Path):
        self.start_server = start_server
        self.binary = jetstream_bin
        self.directory = directory
        self.server = None
        self.apis: list[Api] = []
        self.files = 0

    def write(self, schema: dict, name: str | None = None) -> pathlib.Path:
        self.files += 1
        path = self.directory / (name or f"schema-{self.files}.yaml")
        path.write_text(yaml.safe_dump(schema, sort_keys=False))
        return path

    def _path(self, schema: dict | pathlib.Path) -> pathlib.Path:
        return schema if isinstance(schema, pathlib.Path) else self.write(schema)

    def serve(self, schema: dict | pathlib.Path, *flags: str, same_port: bool = False) -> Api:
        """Stops the running server (SIGTERM) and starts it on the same store with `schema`."""
        args = ["--schema", str(self._path(schema)), *flags]
        if self.server is None:
            self.server = self.start_server(*args)
        else:
            port = self.server.port if same_port else 0
            self.stop()
            self.server.args = args
            self.server.start(port=port)
        api = Api(self.server.url)
        self.apis.append(api)
        return api

    def refused(self, schema: dict | pathlib.Path, *flags: str) -> str:
        """Starts `serve` with `schema`, which must refuse to start with exit status 1 before it
        listens; returns its stderr."""
        path = self._path(schema)
        self.stop()
        self.server.args = ["--schema", str(path), *flags]
        try:
            self.server.start()
        except ServerStartError:
            pass
        else:
            pytest.fail(f"serve started with {path.name} although stored values do not fit it; "
                        f"log:\n{self.server.log_tail()}")
        assert self.server.process.wait(timeout=30) == 1, self.server.log_tail()
        return self.server.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.server is not None and self.server.running:
            assert self.server.stop() == 0, self.server.log_tail()

    def store_args(self) -> list[str]:
        if postgres_cluster.store_is_postgres():
            return ["--database-url", postgres_cluster.database_url_for(self.server.data_dir)]
        return ["--data-dir", str(self.server.data_dir)]

    def check(self, schema: dict | pathlib.Path, *extra: str,
              store: bool = True) -> subprocess.CompletedProcess:
        """`jetstream check-schema FILE [store] [extra]` with the server stopped."""
        path = self._path(schema)
        self.stop()
        command = [str(self.binary), "check-schema", str(path)]
        if store:
            command += self.store_args()
        return subprocess.run([*command, *extra], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT)

    def check_json(self, schema: dict | pathlib.Path) -> tuple[int, dict]:
        result = self.check(schema, "--format", "json")
        try:
            report = json.loads(result.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"check-schema --format json printed no JSON object (exit "
                        f"{result.returncode}):\nstdout: {result.stdout}\nstderr: {result.stderr}")
        assert isinstance(report, dict) and set(REPORT_KEYS) <= set(report), report
        return result.returncode, report

    def log(self) -> str:
        """Everything the current (or last) start logged: stderr and stdout."""
        return (self.server.log_path.read_text(errors="replace") + "\n"
                + bytes(self.server.extra_stdout).decode(errors="replace"))

    def close(self) -> None:
        for api in self.apis:
            api.close()


@pytest.fixture
def evolution(start_server, jetstream_bin, tmp_path):
    store = Evolution(start_server, jetstream_bin, tmp_path)
    yield store
    store.close()


# -- data -----------------------------------------------------------------------------------------
class Board:
    def __init__(self, name: str, root: str, cards: list[str]):
        self.name, self.root, self.cards = name, root, cards


def new_board(api: Api, points: list[int], **card_properties) -> Board:
    """A board scope with one card per entry of `points`, each added in a change set of its own
    (so that a small `--snapshot-interval` leaves some in snapshots and some in the log)."""
    name = scope_name("board")
    response = api.create(name, {"clsName": "Board"})
    assert response.status_code == 201, response.text
    root = response.json()["rootUUID"]
    cards: list[str] = []
    for value in points:
        uuid = new_uuid()
        api.apply(name, [add(uuid, "Card", points=value, **card_properties),
                         change(root, "Board", cards=[*cards, uuid])])
        cards.append(uuid)
    return Board(name, root, cards)


def cards_of(state: dict) -> dict[str, dict]:
    return {uuid: o["properties"] for uuid, o in objects_of(state).items() if o["clsName"] == "Card"}


def map_cards(fragments: list[dict], edit) -> list[dict]:
    """The fragments with `edit(properties)` applied to every Card fragment's properties."""
    result = copy.deepcopy(fragments)
    for fragment in result:
        if fragment["clsName"] == "Card":
            fragment["properties"] = edit(dict(fragment.get("properties", {})))
    return result


def state_with_cards(state: dict, edit) -> dict:
    return {**copy.deepcopy(state), "fragments": map_cards(state["fragments"], edit)}


def history_with_cards(history: list[dict], edit) -> list[dict]:
    return [{**changeset, "fragments": map_cards(changeset["fragments"], edit)}
            for changeset in history]


def whole_history(api: Api, name: str) -> list[dict]:
    """Every change set of the scope after version 0, read two at a time (several pages)."""
    changesets: list[dict] = []
    since = 0
    while True:
        response = api.history(name, since, limit=2)
        assert response.status_code == 200, response.text
        page = response.json()["changesets"]
        if not page:
            return changesets
        changesets += page
        since = page[-1]["version"]


def past_state(api: Api, name: str, version: int) -> dict:
    """`GET /v1/scopes/{name}?version=N` (docs/history.md): the state as it was."""
    response = api.http.get(f"/v1/scopes/{name}", params={"version": version})
    assert response.status_code == 200, response.text
    assert response.json()["version"] == version
    return response.json()


def without(properties: dict, *names: str) -> dict:
    return {key: value for key, value in properties.items() if key not in names}


def renamed(properties: dict, old: str, new: str) -> dict:
    return {(new if key == old else key): value for key, value in properties.items()}


def card_property_names(fragments: list[dict]) -> set[str]:
    return {key for f in fragments if f["clsName"] == "Card" for key in f.get("properties", {})}


def events_path(name: str) -> str:
    return f"/v1/scopes/{name}/events"


def snapshot_event(url: str, name: str) -> dict:
    with SSEStream(url, events_path(name)) as stream:
        event = stream.expect_event()
        assert event.type == "snapshot", event
        return event.json()


# -- 1. additive and widening changes --------------------------------------------------------------
def test_a_new_class_can_be_used_at_once(evolution):
    api = evolution.serve(BASE)
    board = new_board(api, [1, 2])
    before = api.state(board.name)
    assert api.create(scope_name("sticker"), {"clsName": "Sticker"}).status_code == 404

    with_stickers = evolve(BASE, Sticker={"text": "String"},
                           Board={"stickers": ["Sticker"]})
    with_stickers["scopes"]["sticker-*"] = {"root": "Sticker"}
    api = evolution.serve(with_stickers)
    state = api.state(board.name)
    root = objects_of(state)[board.root]["properties"]
    assert root["stickers"] == []
    assert cards_of(state) == cards_of(before)
    sticker = new_uuid()
    api.apply(board.name, [add(sticker, "Sticker", text="hello"),
                           change(board.root, "Board", stickers=[sticker])])
    assert objects_of(api.state(board.name))[sticker]["properties"] == {"text": "hello"}
    response = api.create(scope_name("sticker"), {"clsName": "Sticker", "properties": {"text": "x"}})
    assert response.status_code == 201, response.text


def test_a_new_property_gets_its_default_in_states_snapshots_and_events(evolution):
    api = evolution.serve(BASE, "--snapshot-interval", "2")
    board = new_board(api, [1, 2, 3])  # versions 1-3: a snapshot at 2, version 3 in the log
    api.apply(board.name, [change(board.cards[0], "Card", points=4)])
    before = api.state(board.name)

    ranked = evolve(BASE, Card={"rank": {"type": "Int16", "default": 7}})
    api = evolution.serve(ranked, "--snapshot-interval", "2")
    expected = state_with_cards(before, lambda p: {**p, "rank": 7})
    assert api.state(board.name) == expected
    assert snapshot_event(evolution.server.url, board.name) == expected

    with SSEStream(evolution.server.url, events_path(board.name)) as stream:
        assert stream.expect_event().json() == expected
        answers = [api.apply(board.name, [change(board.cards[1], "Card", points=9)]),
                   api.apply(board.name, [change(board.cards[2], "Card", rank=2)])]
        assert [e.json() for e in stream.take(2)] == [as_event(a) for a in answers]
    after = api.state(board.name)
    ranks = {uuid: props["rank"] for uuid, props in cards_of(after).items()}
    assert ranks == {board.cards[0]: 7, board.cards[1]: 7, board.cards[2]: 2}

    # Snapshots written under the new schema load back the same.
    api = evolution.serve(ranked, "--snapshot-interval", "2")
    assert api.state(board.name) == after
    assert snapshot_event(evolution.server.url, board.name) == after


def test_a_removed_property_leaves_states_events_and_history(evolution):
    api = evolution.serve(BASE, "--snapshot-interval", "2")
    board = new_board(api, [1, 2, 3], note="old note")
    api.apply(board.name, [change(board.cards[1], "Card", points=5, note="changed note")])
    before = api.state(board.name)
    history = whole_history(api, board.name)
    past = past_state(api, board.name, 3)
    assert "note" in card_property_names(before["fragments"])
    assert len(history) == 4

    api = evolution.serve(evolve(BASE, Card={"note": None}), "--snapshot-interval", "2")
    expected = state_with_cards(before, lambda p: without(p, "note"))
    assert api.state(board.name) == expected
    assert whole_history(api, board.name) == history_with_cards(
        history, lambda p: without(p, "note"))
    assert past_state(api, board.name, 3) == state_with_cards(past, lambda p: without(p, "note"))

    with SSEStream(evolution.server.url, events_path(board.name)) as stream:
        assert stream.expect_event().json() == expected
        card = new_uuid()
        answers = [
            api.apply(board.name, [change(board.cards[0], "Card", points=6)]),
            api.apply(board.name, [add(card, "Card", points=1),
                                   change(board.root, "Board", cards=[*board.cards, card])]),
        ]
        events = [e.json() for e in stream.take(2)]
    assert events == [as_event(a) for a in answers]
    for event in events:
        assert "note" not in card_property_names(event["fragments"]), event
    assert "note" not in card_property_names(api.state(board.name)["fragments"])
    assert "note" not in card_property_names(
        [f for changeset in whole_history(api, board.name) for f in changeset["fragments"]])


def test_a_removed_class_that_nothing_stored_is_dropped(evolution):
    api = evolution.serve(evolve(BASE, Unused={"n": "Int"}, Board={"unused": "Unused?"}))
    board = new_board(api, [1, 2])
    before = api.state(board.name)

    api = evolution.serve(BASE)
    assert api.state(board.name) == {
        **before, "fragments": [
            {**f, "properties": without(f["properties"], "unused")} if f["clsName"] == "Board"
            else f for f in before["fragments"]]}
    assert "Unused" not in api.http.get("/v1/schema").json()["models"]


def test_a_new_enum_value_is_accepted(evolution):
    api = evolution.serve(BASE)
    board = new_board(api, [1, 2], kind="blue")
    assert_rejected(api.post(board.name, [change(board.cards[0], "Card", kind="green")]),
                    ["constraint-violation"])
    before = api.state(board.name)

    api = evolution.serve(evolve(BASE, Card={"kind": {"enum": ["red", "blue", "green"]}}))
    assert api.state(board.name) == before
    api.apply(board.name, [change(board.cards[0], "Card", kind="green")])
    kinds = {uuid: props["kind"] for uuid, props in cards_of(api.state(board.name)).items()}
    assert kinds == {board.cards[0]: "green", board.cards[1]: "blue"}


def test_wider_bounds_accept_what_the_old_ones_refused(evolution):
    bounded = evolve(BASE, Card={"points": {"type": "Int32", "max": 5}})
    api = evolution.serve(bounded)
    board = new_board(api, [4, 5])
    assert_rejected(api.post(board.name, [change(board.cards[0], "Card", points=8)]),
                    ["out-of-range"])
    before = api.state(board.name)

    api = evolution.serve(evolve(BASE, Card={"points": {"type": "Int32", "max": 10}}))
    assert api.state(board.name) == before
    api.apply(board.name, [change(board.cards[0], "Card", points=8)])
    assert cards_of(api.state(board.name))[board.cards[0]]["points"] == 8
    assert_rejected(api.post(board.name, [change(board.cards[1], "Card", points=11)]),
                    ["out-of-range"])


def test_renamed_from_carries_stored_values_to_the_new_name(evolution):
    api = evolution.serve(BASE, "--snapshot-interval", "2")
    board = new_board(api, [3, 1, 2])
    api.apply(board.name, [change(board.cards[1], "Card", points=4)])
    before = api.state(board.name)
    history = whole_history(api, board.name)
    past = past_state(api, board.name, 3)

    renaming = evolve(BASE, Card={"points": None,
                                  "score": {"type": "Int32", "renamedFrom": "points"}})
    api = evolution.serve(renaming, "--snapshot-interval", "2")
    expected = state_with_cards(before, lambda p: renamed(p, "points", "score"))
    state = api.state(board.name)
    assert state == expected
    assert cards_of(state)[board.cards[0]]["score"] == 3
    assert "points" not in card_property_names(state["fragments"])
    assert snapshot_event(evolution.server.url, board.name) == expected
    # History is read through the same translation.
    assert whole_history(api, board.name) == history_with_cards(
        history, lambda p: renamed(p, "points", "score"))
    assert past_state(api, board.name, 3) == state_with_cards(
        past, lambda p: renamed(p, "points", "score"))

    served = api.http.get("/v1/schema").json()["models"]["Card"]
    assert served["score"]["renamedFrom"] == "points"
    assert "points" not in served
    api.apply(board.name, [change(board.cards[0], "Card", score=5)])
    api = evolution.serve(renaming, "--snapshot-interval", "2")
    scores = {uuid: props["score"] for uuid, props in cards_of(api.state(board.name)).items()}
    assert scores == {board.cards[0]: 5, board.cards[1]: 4, board.cards[2]: 2}


# -- 2. a tightening that stored values break ------------------------------------------------------
TIGHT_POINTS = {"type": "Int32", "max": 5}


class Offenders:
    """Two boards, three cards with points above 5 among them; board A's `best` is one of them,
    board B's `best` one that fits."""

    def __init__(self, evolution: Evolution):
        api = evolution.serve(BASE, "--snapshot-interval", "2")
        self.a = new_board(api, [1, 8, 9, 5])
        self.b = new_board(api, [6, 2])
        api.apply(self.a.name, [change(self.a.root, "Board", best=self.a.cards[1])])
        api.apply(self.b.name, [change(self.b.root, "Board", best=self.b.cards[1])])
        self.before = {board.name: api.state(board.name) for board in (self.a, self.b)}
        # uuid -> (scope, stored points)
        self.offending = {self.a.cards[1]: (self.a.name, 8), self.a.cards[2]: (self.a.name, 9),
                          self.b.cards[0]: (self.b.name, 6)}
        self.fitting = [self.a.cards[0], self.a.cards[3], self.b.cards[1]]
        self.objects = 2 + 6

    @property
    def problems(self) -> set[tuple]:
        return {(scope, uuid, "Card", "points", value)
                for uuid, (scope, value) in self.offending.items()}


def problem_line(text: str, uuid: str) -> str:
    lines = [line for line in text.splitlines() if uuid in line]
    assert len(lines) == 1, f"expected one line naming {uuid}:\n{text}"
    return lines[0]


def test_a_tightening_stored_values_break_is_named_by_check_schema_and_refused_by_serve(
        evolution):
    data = Offenders(evolution)
    tight = evolution.write(evolve(BASE, Card={"points": TIGHT_POINTS}), "tight.yaml")

    # Without a store the file itself is fine.
    result = evolution.check(tight, store=False)
    assert result.returncode == 0, result.stdout + result.stderr

    result = evolution.check(tight)
    text = result.stdout + result.stderr
    assert result.returncode == 1, text
    lines = {}
    for uuid, (scope, value) in data.offending.items():
        line = problem_line(text, uuid)
        assert f"'{scope}'" in line and "Card.points" in line, line
        assert f"stored {value}" in line and "out-of-range" in line, line
        lines[uuid] = line
    for uuid in data.fitting:
        assert uuid not in text, text
    assert re.search(r"\b3 objects in 2 scopes do not fit \S*tight\.yaml", text), text

    code, report = evolution.check_json(tight)
    assert code == 1, report
    assert report["fits"] is False
    assert (report["scopes"], report["objects"], report["fixed"]) == (2, data.objects, 0), report
    problems = report["problems"]
    assert {(p["scope"], p["uuid"], p["class"], p["property"], p["value"])
            for p in problems} == data.problems, problems
    assert len(problems) == 3, problems
    for problem in problems:
        assert problem["kind"] == "out-of-range", problem
        assert isinstance(problem["reason"], str) and problem["reason"], problem

    stderr = evolution.refused(tight)
    for uuid, line in lines.items():
        assert line in stderr, f"serve's stderr lacks {line!r}:\n{stderr}"

    # Nothing was changed by the refusals: the old schema serves the same states.
    api = evolution.serve(BASE)
    for name, state in data.before.items():
        assert api.state(name) == state


def test_check_schema_exits_0_when_the_schema_fits_the_stored_data(evolution):
    data = Offenders(evolution)
    wider = evolution.write(evolve(BASE, Card={"points": {"type": "Int32", "max": 10}}),
                            "wider.yaml")
    result = evolution.check(wider)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text
    assert re.search(r"wider\.yaml fits the stored data: 2 scopes, "
                     rf"{data.objects} objects \(0 values fixed by onInvalid\)", text), text
    code, report = evolution.check_json(wider)
    assert code == 0, report
    assert {key: report.get(key) for key in REPORT_KEYS} == {
        "fits": True, "scopes": 2, "objects": data.objects, "fixed": 0, "problems": []}, report
    api = evolution.serve(wider)
    for name, state in data.before.items():
        assert api.state(name) == state


INVALID_FILES = {
    "unknown type": {"type": "Huge"},
    "onInvalid null on a property that is not nullable": {
        "type": "Int32", "max": 5, "onInvalid": "null"},
    "unknown onInvalid choice": {"type": "Int32", "max": 5, "onInvalid": "explode"},
}


@pytest.mark.parametrize("case", sorted(INVALID_FILES))
def test_check_schema_exits_2_for_an_invalid_file_with_or_without_a_store(evolution, case):
    evolution.serve(BASE)
    bad = evolution.write(evolve(BASE, Card={"points": INVALID_FILES[case]}), "broken.yaml")
    for store in (False, True):
        result = evolution.check(bad, store=store)
        message = result.stdout + result.stderr
        assert result.returncode == 2, f"store={store}: {message}"
        assert "broken.yaml" in message and "Card" in message and "points" in message, message


@pytest.mark.embedded_store
def test_check_schema_exits_2_when_the_data_directory_holds_no_store(jetstream_bin, tmp_path):
    schema = tmp_path / "base.yaml"
    schema.write_text(yaml.safe_dump(BASE))
    for directory in (tmp_path / "empty", tmp_path / "missing"):
        if directory.name == "empty":
            directory.mkdir()
        result = subprocess.run([str(jetstream_bin), "check-schema", str(schema),
                                 "--data-dir", str(directory)],
                                capture_output=True, text=True, timeout=CHECK_TIMEOUT)
        message = result.stdout + result.stderr
        assert result.returncode == 2, message
        assert str(directory) in message, message
    # Checking never creates a store.
    assert list((tmp_path / "empty").iterdir()) == []
    assert not (tmp_path / "missing").exists()


def test_check_schema_exits_2_when_the_database_holds_no_store(jetstream_bin, tmp_path, postgres):
    """The PostgreSQL counterpart: a dry run reads, it never creates the store's tables."""
    schema = tmp_path / "base.yaml"
    schema.write_text(yaml.safe_dump(BASE))
    database = postgres.create_database()
    tables = ("select table_schema || '.' || table_name from information_schema.tables "
              "where table_schema not in ('pg_catalog', 'information_schema')")
    result = subprocess.run([str(jetstream_bin), "check-schema", str(schema),
                             "--database-url", postgres.url(database)],
                            capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    message = result.stdout + result.stderr
    assert result.returncode == 2, message
    assert postgres.query(tables, dbname=database) == [], message


ON_INVALID = {
    "default": ({"type": "Int32", "max": 5, "default": 1, "onInvalid": "default"}, 1),
    "clamp": ({"type": "Int32", "max": 5, "onInvalid": "clamp"}, 5),
    "null": ({"type": "Int32", "nullable": True, "max": 5, "onInvalid": "null"}, None),
    "remove-object": ({"type": "Int32", "max": 5, "onInvalid": "remove-object"}, "removed"),
}


def fixed_state(data: Offenders, name: str, replacement) -> dict:
    """The state of scope `name` as the `onInvalid` choice leaves it."""
    state = copy.deepcopy(data.before[name])
    if replacement != "removed":
        for fragment in state["fragments"]:
            if fragment["uuid"] in data.offending:
                fragment["properties"]["points"] = replacement
        return state
    state["fragments"] = [f for f in state["fragments"] if f["uuid"] not in data.offending]
    root = next(f for f in state["fragments"] if f["uuid"] == state["rootUUID"])
    properties = root["properties"]
    properties["cards"] = [c for c in properties["cards"] if c not in data.offending]
    if properties["best"] in data.offending:
        properties["best"] = None
    return state


@pytest.mark.parametrize("choice", sorted(ON_INVALID))
def test_on_invalid_makes_a_tightening_fit(evolution, choice):
    data = Offenders(evolution)
    spec, replacement = ON_INVALID[choice]
    fixing = evolution.write(evolve(BASE, Card={"points": spec}), f"fix-{choice}.yaml")

    result = evolution.check(fixing)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text
    assert re.search(rf"fix-{re.escape(choice)}\.yaml fits the stored data: 2 scopes, \d+ objects "
                     r"\(3 values fixed by onInvalid\)", text), text
    code, report = evolution.check_json(fixing)
    assert code == 0, report
    assert (report["fits"], report["scopes"], report["fixed"], report["problems"]) == (
        True, 2, 3, []), report

    api = evolution.serve(fixing)
    for name in data.before:
        expected = fixed_state(data, name, replacement)
        assert api.state(name) == expected
        assert snapshot_event(evolution.server.url, name) == expected
    if replacement == "removed":
        for uuid, (scope, _) in data.offending.items():
            assert api.get_object(scope, uuid).status_code == 404
    assert_rejected(api.post(data.a.name, [change(data.a.cards[0], "Card", points=8)]),
                    ["out-of-range"])

    # The same on the next start: the fix is how loading reads the stored values.
    api = evolution.serve(fixing)
    for name in data.before:
        assert api.state(name) == fixed_state(data, name, replacement)


def test_clamp_cuts_strings_to_max_length_and_collections_to_max_count(evolution):
    api = evolution.serve(BASE)
    board = new_board(api, [1])
    long, short = board.cards[0], new_uuid()
    api.apply(board.name, [change(long, "Card", label="abcdefgh", tags=["a", "b", "c", "d"]),
                           add(short, "Card", label="abc", tags=["x"]),
                           change(board.root, "Board", cards=[long, short])])
    before = api.state(board.name)
    strict = {"label": {"type": "String", "maxLength": 5},
              "tags": {"type": ["String"], "maxCount": 2}}

    code, report = evolution.check_json(evolve(BASE, Card=strict))
    assert code == 1 and report["fits"] is False, report
    assert {(p["scope"], p["uuid"], p["class"], p["property"], json.dumps(p["value"]), p["kind"])
            for p in report["problems"]} == {
        (board.name, long, "Card", "label", '"abcdefgh"', "constraint-violation"),
        (board.name, long, "Card", "tags", '["a", "b", "c", "d"]', "constraint-violation")}

    clamping = evolve(BASE, Card={name: {**spec, "onInvalid": "clamp"}
                                  for name, spec in strict.items()})
    code, report = evolution.check_json(clamping)
    assert (code, report["fits"], report["fixed"], report["problems"]) == (0, True, 2, []), report
    api = evolution.serve(clamping)
    assert api.state(board.name) == state_with_cards(
        before, lambda p: {**p, "label": "abcde", "tags": ["a", "b"]} if p["label"] == "abcdefgh"
        else p)


# -- 3. a stream open across the change --------------------------------------------------------
@pytest.mark.parametrize("resume", ["current", "older"])
def test_a_stream_open_across_a_schema_change_resumes_with_a_reset(evolution, resume):
    api = evolution.serve(BASE)
    board = new_board(api, [1, 2, 3])
    with SSEStream(evolution.server.url, events_path(board.name)) as stream:
        snapshot = stream.expect_event()
        assert snapshot.type == "snapshot"
        answer = api.apply(board.name, [change(board.cards[0], "Card", points=4)])
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(answer["version"]))

        ranked = evolve(BASE, Card={"rank": {"type": "Int16", "default": 7}})
        api = evolution.serve(ranked, same_port=True)
        assert [e.type for e in stream.read_to_end()] == ["closing"]
    last_event_id = event.id if resume == "current" else snapshot.id

    state = api.state(board.name)
    assert state["version"] == answer["version"]
    assert all(props["rank"] == 7 for props in cards_of(state).values()), state
    with SSEStream(evolution.server.url, events_path(board.name),
                   {"Last-Event-ID": last_event_id}) as stream:
        reset = stream.expect_event()
        assert (reset.type, reset.id) == ("reset", str(state["version"]))
        assert reset.json() == state
        live = api.apply(board.name, [change(board.cards[1], "Card", rank=3)])
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(live["version"]))
        assert event.json() == as_event(live)
    # A resume point written under the new schema resumes as usual.
    later = api.apply(board.name, [change(board.cards[2], "Card", rank=4)])
    with SSEStream(evolution.server.url, events_path(board.name),
                   {"Last-Event-ID": event.id}) as stream:
        event = stream.expect_event()
        assert (event.type, event.id) == ("changeset", str(later["version"]))
        assert event.json() == as_event(later)


# -- 4. the schema's ETag -----------------------------------------------------------------------
def schema_etag(api: Api) -> str:
    response = api.http.get("/v1/schema")
    assert response.status_code == 200, response.text
    etag = response.headers.get("etag")
    assert etag is not None and SCHEMA_ETAG.match(etag), f"ETag {etag!r}"
    return etag


def test_the_schema_has_an_etag_that_changes_with_the_schema(evolution):
    api = evolution.serve(BASE)
    etag = schema_etag(api)
    response = api.http.get("/v1/schema", headers={"If-None-Match": etag})
    assert response.status_code == 304, response.text
    assert response.content == b""
    assert api.http.get("/v1/schema", headers={"If-None-Match": '"0123456789abcdef0"'}
                        ).status_code == 200

    api = evolution.serve(BASE)
    assert schema_etag(api) == etag
    assert api.http.get("/v1/schema", headers={"If-None-Match": etag}).status_code == 304

    api = evolution.serve(evolve(BASE, Card={"rank": {"type": "Int16", "default": 7}}))
    changed = schema_etag(api)
    assert changed != etag
    response = api.http.get("/v1/schema", headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert "rank" in response.json()["models"]["Card"]
    assert api.http.get("/v1/schema", headers={"If-None-Match": changed}).status_code == 304


def test_the_served_schema_shows_renamed_from_and_on_invalid(evolution):
    api = evolution.serve(evolve(BASE, Card={
        "points": None,
        "score": {"type": "Int8", "renamedFrom": "points"},
        "rank": {"type": "Int16", "min": 0, "max": 10, "onInvalid": "clamp"}}))
    card = api.http.get("/v1/schema").json()["models"]["Card"]
    assert card["score"]["renamedFrom"] == "points"
    assert (card["rank"]["onInvalid"], card["rank"]["min"], card["rank"]["max"]) == ("clamp", 0, 10)


# -- 5. the log ---------------------------------------------------------------------------------
def schema_changed_lines(evolution: Evolution) -> list[str]:
    return [line for line in evolution.log().splitlines() if "schema changed" in line]


def test_a_restart_with_another_schema_logs_the_old_and_new_digest(evolution):
    api = evolution.serve(BASE)
    new_board(api, [1])
    old = SCHEMA_ETAG.match(schema_etag(api)).group(1)
    assert schema_changed_lines(evolution) == []

    evolution.serve(BASE)
    assert schema_changed_lines(evolution) == []

    api = evolution.serve(evolve(BASE, Card={"rank": {"type": "Int16", "default": 7}}))
    new = SCHEMA_ETAG.match(schema_etag(api)).group(1)
    deadline = time.monotonic() + LOG_TIMEOUT
    while not schema_changed_lines(evolution):
        assert time.monotonic() < deadline, f"no 'schema changed' line:\n{evolution.log()}"
        time.sleep(0.1)
    [line] = schema_changed_lines(evolution)
    assert old in line and new in line, line
