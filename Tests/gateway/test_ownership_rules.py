"""Ownership and write rules of the schema (docs/model.md, "Ownership and write rules"), black box
against the real server with schemas/ownership.yaml and HS256 tokens made here with PyJWT.

The owner of an object is the token subject of the change set that added it (null when anonymous,
and for the root); `GET …/objects/{uuid}` shows it. A class's `rules: {write, delete}` and a
property's `write`/`immutable` refuse a change set with `forbidden`/`immutable` at the offending
fragment (422 invalid-change-set, nothing applied); a PATCH gets the same refusal at its JSON
Pointer; a method's fragments are judged as its caller's unless its service answers
`"actsAsServer": true`. Restore and revert act as the server. Owners survive a restart, from the
log and from a snapshot. Everything here runs on either store (`JETSTREAM_TEST_STORE=postgres`).

The schema: a Board root (`title` only for the role `editor`) holding Notes (`write`/`delete`:
owner; `serial` immutable; `children: [Note]`), Stickies (Notes with a colour, and their rules),
Memos (open, but `signature` only for the owner and `pinned` only for editors), Badges (only the
role `admin` adds or changes them) and Folders (open, holding Notes)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import jwt
import pytest

from gateway_helpers import (MERGE_PATCH, Api, add, assert_problem, assert_rejected, change,
                             new_uuid, objects_of, scope_name)

SECRET = "an-ownership-test-secret-of-more-than-32-bytes"
ISSUER = "https://issuer.test"
AUDIENCE = "jetstream-tests"
SCHEMA = "schemas/ownership.yaml"
WAIT = 60.0


# -- tokens and writers ----------------------------------------------------------------------

def claims_of(sub: str, roles=None, **extra) -> dict:
    # A day: the module's tokens are made when it is imported, which may be long before it runs.
    payload = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 86400,
               "jetstream": {"read": ["board-*"], "write": ["board-*"]}}
    if roles is not None:
        payload["roles"] = roles
    payload.update(extra)
    return payload


def as_(sub: str | None, roles=None, **extra) -> dict:
    """The headers of a request by `sub` holding `roles` (no token at all for None: anonymous)."""
    if sub is None:
        return {}
    return {"Authorization": f"Bearer {jwt.encode(claims_of(sub, roles, **extra), SECRET, algorithm='HS256')}"}


ADA, GRACE, ANONYMOUS = as_("ada"), as_("grace"), as_(None)


def server_args(base) -> list[str]:
    from conftest import HERE
    secret = base / "secret"
    secret.write_text(SECRET + "\n")
    return ["--schema", str(HERE / SCHEMA), "--jwt-secret-file", str(secret), "--jwt-issuer", ISSUER,
            "--jwt-audience", AUDIENCE, "--anonymous-read", "board-*", "--anonymous-write", "board-*"]


# -- a method service: answers with the fragments its caller passes in `args` --------------------

class Service:
    """`/apply` answers `{"fragments": args.fragments, "result": "done"}`, with `actsAsServer`
    only when `args` has it; every call's body is recorded."""

    def __init__(self):
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with service.lock:
                    service.calls.append(body)
                args = body["args"]
                answer = {"fragments": args["fragments"], "result": "done"}
                if "actsAsServer" in args:
                    answer["actsAsServer"] = args["actsAsServer"]
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self) -> int:
        with self.lock:
            return len(self.calls)

    def last_call(self) -> dict:
        with self.lock:
            return self.calls[-1]

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def service():
    running = Service()
    yield running
    running.close()


@pytest.fixture(scope="module")
def rules_server(jetstream_bin, tmp_path_factory, service):
    from conftest import ServerPool
    base = tmp_path_factory.mktemp("ownership")
    pool = ServerPool(jetstream_bin, base)
    yield pool(*server_args(base), "--method", f"apply={service.url}/apply")
    pool.stop_all()


@pytest.fixture(scope="module")
def api(rules_server):
    client = Api(rules_server.url)
    yield client
    client.close()


# -- helpers -----------------------------------------------------------------------------------

def new_board(api: Api, who: dict = ADA) -> tuple[str, str]:
    """A new board scope created by `who`: (name, root uuid)."""
    name = scope_name("board")
    response = api.create(name, {"clsName": "Board"}, headers=who)
    assert response.status_code == 201, response.text
    return name, response.json()["rootUUID"]


def insert(uuid: str) -> dict:
    return {"insert": [uuid], "before": None}


def remove(uuid: str) -> dict:
    return {"remove": [uuid]}


def post(api: Api, name: str, fragments: list[dict], who: dict, key: str | None = None) -> httpx.Response:
    headers = dict(who)
    if key is not None:
        headers["Idempotency-Key"] = key
    return api.post(name, fragments, headers=headers)


def applied(api: Api, name: str, fragments: list[dict], who: dict) -> dict:
    response = post(api, name, fragments, who)
    assert response.status_code == 200, f"refused: {response.status_code} {response.text[:800]}"
    return response.json()


def add_to(api: Api, name: str, parent: str, parent_cls: str, collection: str, cls: str, who: dict,
           **properties) -> str:
    """Adds an object of `cls` to `parent`'s `collection`, written by `who`; its uuid."""
    uuid = new_uuid()
    applied(api, name, [add(uuid, cls, **properties),
                        change(parent, parent_cls, **{collection: insert(uuid)})], who)
    return uuid


def add_note(api: Api, name: str, root: str, who: dict, **properties) -> str:
    return add_to(api, name, root, "Board", "notes", "Note", who, **({"text": "first"} | properties))


def get_object(api: Api, name: str, uuid: str) -> dict:
    response = api.get_object(name, uuid)
    assert response.status_code == 200, response.text
    return response.json()


def owner(api: Api, name: str, uuid: str) -> str | None:
    body = get_object(api, name, uuid)
    assert "owner" in body, body
    return body["owner"]


def props(api: Api, name: str, uuid: str) -> dict:
    return objects_of(api.state(name))[uuid]["properties"]


def refused(response: httpx.Response, expected: list[str | None], prop: str | None = None) -> list[dict]:
    """A 422 invalid-change-set with `expected` error kinds per fragment; the first refusal names
    `prop` (a removal: the property it was dropped from), or no property at all."""
    replies = assert_rejected(response, expected)
    error = replies[next(i for i, kind in enumerate(expected) if kind is not None)]["error"]
    if prop is None:
        assert "property" not in error or error["property"] is None, error
    else:
        assert error.get("property") == prop, error
    return replies


def assert_nothing_applied(api: Api, name: str, before: dict) -> None:
    """The scope is as it was: same version and state, and no change set (so no event) after it."""
    assert api.state(name) == before
    page = api.history(name, before["version"])
    assert page.status_code == 200, page.text
    assert page.json()["changesets"] == [], page.json()


def call(api: Api, name: str, who: dict, fragments: list[dict], key: str | None = None,
         **args) -> httpx.Response:
    headers = dict(who)
    if key is not None:
        headers["Idempotency-Key"] = key
    return api.http.post(f"/v1/scopes/{name}/methods/apply",
                         json={"args": {"fragments": fragments, **args}}, headers=headers)


# -- the schema shows its rules ----------------------------------------------------------------

def test_the_schema_shows_class_rules_and_property_write_and_immutable(api):
    response = api.http.get("/v1/schema")
    assert response.status_code == 200, response.text
    models = response.json()["models"]
    assert models["Note"]["rules"] == {"write": "owner", "delete": "owner"}
    assert models["Note"]["serial"] == {"type": "String", "immutable": True}
    assert models["Note"]["text"] == {"type": "String"}
    assert models["Badge"]["rules"] == {"write": "role:admin"}
    assert models["Memo"]["signature"] == {"type": "String", "write": "owner"}
    assert models["Board"]["title"] == {"type": "String", "write": "role:editor"}
    assert "rules" not in models["Memo"] and "rules" not in models["Board"]


# -- owners ------------------------------------------------------------------------------------

def test_the_owner_is_the_subject_that_added_the_object_null_when_anonymous_and_for_the_root(api):
    name, root = new_board(api, ADA)
    note = add_note(api, name, root, ADA)
    memo = add_to(api, name, root, "Board", "memos", "Memo", ANONYMOUS, text="anyone's")
    folder = add_to(api, name, root, "Board", "folders", "Folder", GRACE, label="grace's")
    assert owner(api, name, note) == "ada"
    assert owner(api, name, memo) is None
    assert owner(api, name, folder) == "grace"
    # The root came with the scope, which ada created: it has no owner.
    assert owner(api, name, root) is None
    # A change by someone else does not move ownership.
    applied(api, name, [change(folder, "Folder", label="renamed by ada")], ADA)
    assert owner(api, name, folder) == "grace"
    body = get_object(api, name, note)
    assert body["clsName"] == "Note" and body["properties"]["text"] == "first"


# -- class `write: owner` ----------------------------------------------------------------------

def test_a_change_by_another_subject_is_forbidden_names_the_property_and_applies_nothing(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    memo = add_to(api, name, root, "Board", "memos", "Memo", ADA, text="memo")
    before = api.state(name)
    # A fine fragment first: the whole set goes, not just the forbidden fragment.
    response = post(api, name, [change(memo, "Memo", text="grace was here"),
                                change(note, "Note", text="grace's text")], GRACE)
    replies = refused(response, [None, "forbidden"], prop="text")
    assert "owner" in replies[1]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    # Anonymous writers are not the owner either.
    refused(post(api, name, [change(note, "Note", text="nobody's")], ANONYMOUS), ["forbidden"], prop="text")
    assert_nothing_applied(api, name, before)


def test_the_owner_may_change_and_a_value_set_to_what_it_holds_passes_every_rule(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, serial="S-1")
    answer = applied(api, name, [change(note, "Note", text="ada's second")], ADA)
    assert answer["subject"] == "ada"
    assert props(api, name, note)["text"] == "ada's second"
    # grace resends the whole object as it is (serial included): nothing is written, nothing refused.
    applied(api, name, [change(note, "Note", text="ada's second", serial="S-1", children=[])], GRACE)
    assert props(api, name, note) == {"text": "ada's second", "serial": "S-1", "children": []}
    # ...but the moment one value differs, it is refused.
    refused(post(api, name, [change(note, "Note", text="other", serial="S-1", children=[])], GRACE),
            ["forbidden"], prop="text")


def test_an_object_added_anonymously_is_open_to_every_writer(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ANONYMOUS, text="public")
    assert owner(api, name, note) is None
    for who, text in [(GRACE, "by grace"), (ADA, "by ada"), (ANONYMOUS, "by nobody")]:
        applied(api, name, [change(note, "Note", text=text)], who)
        assert props(api, name, note)["text"] == text
    # Its `delete: owner` does not bind anyone either.
    applied(api, name, [change(root, "Board", notes=remove(note))], GRACE)
    assert api.get_object(name, note).status_code == 404


# -- property `write: owner` -------------------------------------------------------------------

def test_a_property_for_the_owner_only_in_an_open_class(api):
    name, root = new_board(api)
    memo = add_to(api, name, root, "Board", "memos", "Memo", ADA, text="draft", signature="ada")
    # The add set `signature`: the adder is its owner.
    assert props(api, name, memo) == {"text": "draft", "signature": "ada", "pinned": False}
    applied(api, name, [change(memo, "Memo", text="edited by grace")], GRACE)
    before = api.state(name)
    replies = refused(post(api, name, [change(memo, "Memo", signature="grace")], GRACE),
                      ["forbidden"], prop="signature")
    assert "signature" in replies[0]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    applied(api, name, [change(memo, "Memo", signature="ada, again")], ADA)
    assert props(api, name, memo) == {"text": "edited by grace", "signature": "ada, again", "pinned": False}


# -- role rules --------------------------------------------------------------------------------

def test_a_role_rule_on_a_property_checks_the_tokens_roles(api):
    name, root = new_board(api)
    before = api.state(name)
    for who in (ADA, as_("ada", roles=[]), as_("ada", roles=["viewer", "admin"]), ANONYMOUS):
        replies = refused(post(api, name, [change(root, "Board", title="mine")], who), ["forbidden"], prop="title")
        assert "editor" in replies[0]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    # Any subject holding the role may; the root has no owner to compare with.
    applied(api, name, [change(root, "Board", title="by an editor")], as_("grace", roles=["viewer", "editor"]))
    assert props(api, name, root)["title"] == "by an editor"


def test_a_role_rule_on_a_class_binds_adding_and_changing_but_not_removing(api):
    name, root = new_board(api)
    before = api.state(name)
    badge = new_uuid()
    fragments = [add(badge, "Badge", label="gold"), change(root, "Board", badges=insert(badge))]
    response = post(api, name, fragments, as_("grace", roles=["editor"]))
    body = assert_problem(response, 422, "invalid-change-set")
    first = body["fragmentReplies"][0]
    assert first.get("error", {}).get("type") == "forbidden", body
    assert "admin" in first["error"]["message"], body
    assert_nothing_applied(api, name, before)

    # An admin adds it; another admin (not its owner: the rule is a role) changes it.
    applied(api, name, fragments, as_("root", roles=["admin"]))
    assert owner(api, name, badge) == "root"
    applied(api, name, [change(badge, "Badge", label="silver")], as_("grace", roles=["admin"]))
    before = api.state(name)
    refused(post(api, name, [change(badge, "Badge", label="bronze")], ADA), ["forbidden"], prop="label")
    # Its owner without the role may not either.
    refused(post(api, name, [change(badge, "Badge", label="bronze")], as_("root")), ["forbidden"], prop="label")
    assert_nothing_applied(api, name, before)
    # Its `delete` is the default `any`: anyone takes it off the board.
    applied(api, name, [change(root, "Board", badges=remove(badge))], ADA)
    assert api.get_object(name, badge).status_code == 404


def test_a_role_rule_on_a_property_binds_what_an_add_sets_there(api):
    name, root = new_board(api)
    before = api.state(name)
    memo = new_uuid()
    fragments = [add(memo, "Memo", text="pinned", pinned=True), change(root, "Board", memos=insert(memo))]
    refused(post(api, name, fragments, GRACE), ["forbidden", None], prop="pinned")
    assert_nothing_applied(api, name, before)
    applied(api, name, fragments, as_("grace", roles=["editor"]))
    assert props(api, name, memo)["pinned"] is True
    # An add that leaves it alone needs no role; changing it later does.
    plain = add_to(api, name, root, "Board", "memos", "Memo", GRACE, text="plain")
    refused(post(api, name, [change(plain, "Memo", pinned=True)], GRACE), ["forbidden"], prop="pinned")
    applied(api, name, [change(plain, "Memo", pinned=True)], as_("ada", roles=["editor"]))


def test_a_subclass_without_rules_of_its_own_has_its_superclasss(api):
    name, root = new_board(api)
    sticky = add_to(api, name, root, "Board", "notes", "Sticky", ADA, text="sticky", color="red", serial="S")
    assert owner(api, name, sticky) == "ada"
    before = api.state(name)
    # Its own property and an inherited one: the Note's `write: owner`; the inherited immutable.
    refused(post(api, name, [change(sticky, "Sticky", color="blue")], GRACE), ["forbidden"], prop="color")
    refused(post(api, name, [change(sticky, "Sticky", text="grace's")], GRACE), ["forbidden"], prop="text")
    refused(post(api, name, [change(sticky, "Sticky", serial="T")], ADA), ["immutable"], prop="serial")
    refused(post(api, name, [change(root, "Board", notes=remove(sticky))], GRACE), ["forbidden"], prop="notes")
    assert_nothing_applied(api, name, before)
    applied(api, name, [change(sticky, "Sticky", color="blue")], ADA)


def test_roles_of_the_wrong_type_are_401(api):
    name, root = new_board(api)
    for roles in ("editor", [1, 2], {"editor": True}):
        response = post(api, name, [change(root, "Board", title="x")], as_("grace", roles=roles))
        detail = assert_problem(response, 401)["detail"]
        assert "roles" in detail, detail
    assert api.state(name)["version"] == 0


# -- immutable ---------------------------------------------------------------------------------

def test_an_immutable_property_is_set_by_the_add_and_never_changes_after(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, serial="S-1")
    assert props(api, name, note)["serial"] == "S-1"
    before = api.state(name)
    # Not even its owner changes it.
    replies = refused(post(api, name, [change(note, "Note", text="fine", serial="S-2")], ADA),
                      ["immutable"], prop="serial")
    assert "immutable" in replies[0]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    # The same value is no change: it passes, with the rest of the fragment.
    applied(api, name, [change(note, "Note", text="fine", serial="S-1")], ADA)
    assert props(api, name, note) == {"text": "fine", "serial": "S-1", "children": []}
    # An add that leaves it at its default has set it all the same.
    blank = add_note(api, name, root, ADA)
    assert props(api, name, blank)["serial"] == ""
    refused(post(api, name, [change(blank, "Note", serial="late")], ADA), ["immutable"], prop="serial")
    # A property of an anonymous object, with no owner to check, is still immutable.
    open_note = add_note(api, name, root, ANONYMOUS, serial="open")
    refused(post(api, name, [change(open_note, "Note", serial="changed")], GRACE), ["immutable"], prop="serial")


# -- delete rules ------------------------------------------------------------------------------

def test_removing_another_subjects_object_is_forbidden_at_the_detaching_fragment(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    memo = add_to(api, name, root, "Board", "memos", "Memo", ADA, text="memo")
    before = api.state(name)
    response = post(api, name, [change(memo, "Memo", text="fine"),
                                change(root, "Board", notes=remove(note))], GRACE)
    replies = refused(response, [None, "forbidden"], prop="notes")
    assert note in replies[1]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    assert get_object(api, name, note)["uuid"] == note
    # Its owner removes it.
    answer = applied(api, name, [change(root, "Board", notes=remove(note))], ADA)
    assert answer["removed"] == [note]
    assert api.get_object(name, note).status_code == 404


def test_a_removal_that_cascades_to_another_subjects_object_is_forbidden(api):
    name, root = new_board(api)
    # grace's open folder, in which ada puts a note of her own.
    folder = add_to(api, name, root, "Board", "folders", "Folder", GRACE, label="shared")
    note = add_to(api, name, folder, "Folder", "notes", "Note", ADA, text="ada's, in grace's folder")
    assert (owner(api, name, folder), owner(api, name, note)) == ("grace", "ada")
    before = api.state(name)
    # Removing the folder (which anyone may) would take ada's note with it.
    # Reported at the fragment that detached the folder, naming the property it was dropped from.
    replies = refused(post(api, name, [change(root, "Board", folders=remove(folder))], GRACE), ["forbidden"],
                      prop="folders")
    assert note in replies[0]["error"]["message"], replies
    assert_nothing_applied(api, name, before)
    # Taking only the note out of the open folder is its removal too.
    refused(post(api, name, [change(folder, "Folder", notes=remove(note))], GRACE), ["forbidden"], prop="notes")
    assert_nothing_applied(api, name, before)
    # The note's owner may remove the folder: both leave.
    answer = applied(api, name, [change(root, "Board", folders=remove(folder))], ADA)
    assert sorted(answer["removed"]) == sorted([folder, note])


def test_moving_another_subjects_object_that_stays_in_the_scope_is_no_removal(api):
    name, root = new_board(api)
    folder = add_to(api, name, root, "Board", "folders", "Folder", GRACE, label="shared")
    note = add_note(api, name, root, ADA)
    # From the board into the folder in one set: the note never leaves the scope.
    answer = applied(api, name, [change(root, "Board", notes=remove(note)),
                                 change(folder, "Folder", notes=insert(note))], GRACE)
    assert answer["removed"] == []
    assert owner(api, name, note) == "ada"


# -- adding under someone else's parent --------------------------------------------------------

def test_adding_a_child_under_another_subjects_object_is_a_forbidden_change_of_the_parent(api):
    name, root = new_board(api)
    parent = add_note(api, name, root, ADA)
    before = api.state(name)
    child = new_uuid()
    response = post(api, name, [add(child, "Note", text="grace's child"),
                                change(parent, "Note", children=insert(child))], GRACE)
    refused(response, [None, "forbidden"], prop="children")
    assert_nothing_applied(api, name, before)
    assert api.get_object(name, child).status_code == 404
    # The parent's owner adds a child; so may grace add hers under the open board.
    mine = add_to(api, name, parent, "Note", "children", "Note", ADA, text="ada's child")
    assert owner(api, name, mine) == "ada"
    assert owner(api, name, add_note(api, name, root, GRACE)) == "grace"


# -- PATCH -------------------------------------------------------------------------------------

def patch(api: Api, name: str, uuid: str, body: dict, who: dict, key: str | None = None) -> httpx.Response:
    headers = dict(who)
    if key is not None:
        headers["Idempotency-Key"] = key
    return api.patch_object(name, uuid, body, content_type=MERGE_PATCH, headers=headers)


def patch_errors(response: httpx.Response) -> list[tuple[str, str]]:
    body = assert_problem(response, 422, "invalid-change-set")
    errors = body.get("errors")
    assert isinstance(errors, list) and errors, body
    for error in errors:
        assert isinstance(error.get("message"), str) and error["message"], body
    return [(error["path"], error["type"]) for error in errors]


def test_a_merge_patch_is_judged_by_the_same_rules(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, serial="S-1")
    memo = add_to(api, name, root, "Board", "memos", "Memo", ADA, text="memo", signature="ada")
    before = api.state(name)
    assert patch_errors(patch(api, name, note, {"text": "grace's"}, GRACE)) == [("/text", "forbidden")]
    assert patch_errors(patch(api, name, memo, {"signature": "grace"}, GRACE)) == [("/signature", "forbidden")]
    assert patch_errors(patch(api, name, note, {"serial": "S-2"}, ADA)) == [("/serial", "immutable")]
    assert patch_errors(patch(api, name, root, {"title": "t"}, ADA)) == [("/title", "forbidden")]
    # Nested objects: a merge into ada's note through the board, a child added under it, and a
    # removal (the array is given whole) — the last one's pointer is the member or the target.
    assert patch_errors(patch(api, name, root, {"notes": [{"uuid": note, "text": "grace's"}]}, GRACE)) == [
        ("/notes/0/text", "forbidden")]
    assert patch_errors(patch(api, name, note, {"children": [{"uuid": new_uuid(), "text": "c"}]}, GRACE)) == [
        ("/children", "forbidden")]
    [(path, kind)] = patch_errors(patch(api, name, root, {"notes": []}, GRACE))
    assert kind == "forbidden" and path == "/notes", (path, kind)
    assert_nothing_applied(api, name, before)
    # What the rules allow goes through the same endpoint.
    assert patch(api, name, note, {"text": "ada's"}, ADA).status_code == 200
    assert patch(api, name, memo, {"text": "grace's memo text"}, GRACE).status_code == 200
    assert patch(api, name, root, {"title": "t"}, as_("ada", roles=["editor"])).status_code == 200
    assert props(api, name, note)["text"] == "ada's"
    assert props(api, name, memo) == {"text": "grace's memo text", "signature": "ada", "pinned": False}


# -- idempotency -------------------------------------------------------------------------------

def test_a_keyed_retry_of_a_refused_set_replays_the_same_422(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    before = api.state(name)
    fragments = [change(note, "Note", text="grace's")]
    key = new_uuid()
    first = post(api, name, fragments, GRACE, key=key)
    refused(first, ["forbidden"], prop="text")
    again = post(api, name, fragments, GRACE, key=key)
    refused(again, ["forbidden"], prop="text")
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.json() == first.json()
    assert_nothing_applied(api, name, before)
    # Keys are per subject: the owner's request with the same key and body is hers, and applies.
    mine = post(api, name, fragments, ADA, key=key)
    assert mine.status_code == 200, mine.text
    assert mine.headers.get("idempotent-replayed") in (None, "false")
    assert props(api, name, note)["text"] == "grace's"
    before = api.state(name)

    patch_key = new_uuid()
    first = patch(api, name, note, {"text": "grace's patch"}, GRACE, key=patch_key)
    assert patch_errors(first) == [("/text", "forbidden")]
    again = patch(api, name, note, {"text": "grace's patch"}, GRACE, key=patch_key)
    assert patch_errors(again) == [("/text", "forbidden")]
    assert again.headers.get("idempotent-replayed") == "true" and again.json() == first.json()
    assert_nothing_applied(api, name, before)


# -- methods over HTTP -------------------------------------------------------------------------

def test_a_hooks_fragments_are_judged_as_its_caller_and_it_sees_the_whole_token(api, service):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    before = api.state(name)
    grace = claims_of("grace", roles=["viewer"], team="blue")
    grace_headers = {"Authorization": f"Bearer {jwt.encode(grace, SECRET, algorithm='HS256')}"}
    response = call(api, name, grace_headers, [change(note, "Note", text="via a method")])
    body = assert_problem(response, 422, "invalid-change-set")
    # The service was called with the caller's subject and the token's whole payload.
    sent = service.last_call()
    assert sent["subject"] == "grace" and sent["claims"] == grace, sent
    replies = body.get("fragmentReplies")
    assert isinstance(replies, list) and replies[0]["error"]["type"] == "forbidden", body
    assert replies[0]["error"].get("property") == "text", body
    assert_nothing_applied(api, name, before)

    # The owner calls it: applied, one change set recorded as the method's and ada's.
    answer = call(api, name, ADA, [change(note, "Note", text="via a method")])
    assert answer.status_code == 200, answer.text
    assert answer.json()["method"] == "apply" and answer.json()["result"] == "done"
    assert props(api, name, note)["text"] == "via a method"
    assert service.last_call()["claims"]["sub"] == "ada"
    # An anonymous caller: no claims.
    call(api, name, ANONYMOUS, [])
    assert service.last_call()["claims"] is None and service.last_call()["subject"] is None


def test_a_hook_is_judged_with_the_callers_roles(api, service):
    name, root = new_board(api)
    before = api.state(name)
    title = [change(root, "Board", title="by method")]
    refused_call = call(api, name, as_("grace", roles=["viewer"]), title)
    assert_problem(refused_call, 422, "invalid-change-set")
    assert service.last_call()["claims"]["roles"] == ["viewer"]
    assert_nothing_applied(api, name, before)
    done = call(api, name, as_("grace", roles=["editor"]), title)
    assert done.status_code == 200, done.text
    assert service.last_call()["claims"]["roles"] == ["editor"]
    assert props(api, name, root)["title"] == "by method"
    # A hook's add of a class reserved for a role: the caller needs it too.
    badge = new_uuid()
    badge_fragments = [add(badge, "Badge", label="x"), change(root, "Board", badges=insert(badge))]
    before = api.state(name)
    assert_problem(call(api, name, GRACE, badge_fragments), 422, "invalid-change-set")
    assert_nothing_applied(api, name, before)


def test_a_hook_that_acts_as_the_server_is_bound_by_no_rule_and_its_adds_are_the_callers(api, service):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, serial="S-1")
    # An explicit false is the default: judged as the caller.
    before = api.state(name)
    assert_problem(call(api, name, GRACE, [change(note, "Note", text="x")], actsAsServer=False),
                   422, "invalid-change-set")
    assert_nothing_applied(api, name, before)

    badge = new_uuid()
    fragments = [change(note, "Note", text="set by the server", serial="S-9"),
                 change(root, "Board", title="server title", badges=insert(badge)),
                 add(badge, "Badge", label="given")]
    answer = call(api, name, GRACE, fragments, actsAsServer=True)
    assert answer.status_code == 200, answer.text
    assert answer.json()["subject"] == "grace"
    assert props(api, name, note) == {"text": "set by the server", "serial": "S-9", "children": []}
    assert props(api, name, root)["title"] == "server title"
    # What it added is the caller's, even though the caller could not have added it.
    assert owner(api, name, badge) == "grace"
    assert owner(api, name, note) == "ada"
    # Removing ada's note as the server: allowed too.
    answer = call(api, name, GRACE, [change(root, "Board", notes=remove(note))], actsAsServer=True)
    assert answer.status_code == 200, answer.text
    assert api.get_object(name, note).status_code == 404


@pytest.mark.parametrize("flag", ["yes", 1, {}])
def test_a_hooks_acts_as_server_that_is_not_a_boolean_fails_the_call(api, service, flag):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    before = api.state(name)
    response = call(api, name, ADA, [change(note, "Note", text="x")], actsAsServer=flag)
    problem = assert_problem(response, 502, "method-failed")
    assert "actsAsServer" in problem["detail"], problem
    assert_nothing_applied(api, name, before)


def test_a_keyed_retry_of_a_refused_method_call_replays_the_same_422(api, service):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA)
    before = api.state(name)
    key = new_uuid()
    fragments = [change(note, "Note", text="grace's")]
    first = call(api, name, GRACE, fragments, key=key)
    assert_problem(first, 422, "invalid-change-set")
    calls = service.count()
    again = call(api, name, GRACE, fragments, key=key)
    assert_problem(again, 422, "invalid-change-set")
    assert again.headers.get("idempotent-replayed") == "true" and again.json() == first.json()
    assert service.count() == calls, "a replay does not call the service again"
    assert_nothing_applied(api, name, before)


# -- restore and revert act as the server ------------------------------------------------------

def restore(api: Api, name: str, version: int, who: dict) -> httpx.Response:
    return api.http.post(f"/v1/scopes/{name}/restore", json={"version": version}, headers=who)


def revert(api: Api, name: str, version: int, who: dict) -> httpx.Response:
    return api.http.post(f"/v1/scopes/{name}/changesets/{version}/revert", headers=who)


def test_restore_and_revert_are_bound_by_no_rule_and_what_they_re_add_is_the_restorers(api):
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, text="one", serial="S-1")
    at_one = api.state(name)["version"]
    changed = applied(api, name, [change(note, "Note", text="two")], ADA)["version"]
    # grace may not write ada's note, but a revert of ada's change is the server's.
    reverted = revert(api, name, changed, GRACE)
    assert reverted.status_code == 200, reverted.text
    assert props(api, name, note)["text"] == "one" and owner(api, name, note) == "ada"

    # ada removes her note; grace restores the version that had it: it is back, and grace's.
    removed = applied(api, name, [change(root, "Board", notes=remove(note))], ADA)
    assert removed["removed"] == [note]
    restored = restore(api, name, at_one, GRACE)
    assert restored.status_code == 200, restored.text
    assert restored.json()["subject"] == "grace"
    assert props(api, name, note) == {"text": "one", "serial": "S-1", "children": []}
    assert owner(api, name, note) == "grace"
    # Now grace's: grace writes it, ada may not.
    applied(api, name, [change(note, "Note", text="grace's now")], GRACE)
    refused(post(api, name, [change(note, "Note", text="ada's again")], ADA), ["forbidden"], prop="text")

    # A revert that brings an object back (ada's removal of another note): the reverter's.
    other = add_note(api, name, root, ADA, text="other")
    gone = applied(api, name, [change(root, "Board", notes=remove(other))], ADA)["version"]
    back = revert(api, name, gone, GRACE)
    assert back.status_code == 200, back.text
    assert owner(api, name, other) == "grace"


# -- owners survive a restart ------------------------------------------------------------------

def owned_board(api: Api) -> tuple[str, str, str, dict[str, str | None]]:
    """A board with objects of ada, grace and nobody: (name, ada's note, the anonymous memo,
    uuid → owner)."""
    name, root = new_board(api)
    note = add_note(api, name, root, ADA, serial="S-1")
    child = add_to(api, name, note, "Note", "children", "Note", ADA, text="child")
    memo = add_to(api, name, root, "Board", "memos", "Memo", ANONYMOUS, text="anyone's")
    folder = add_to(api, name, root, "Board", "folders", "Folder", GRACE, label="grace's")
    return name, note, memo, {root: None, note: "ada", child: "ada", memo: None, folder: "grace"}


def assert_owners_hold(api: Api, name: str, note: str, owners: dict[str, str | None]) -> None:
    assert {uuid: owner(api, name, uuid) for uuid in owners} == owners
    before = api.state(name)
    refused(post(api, name, [change(note, "Note", text="grace's")], GRACE), ["forbidden"], prop="text")
    root = before["rootUUID"]
    refused(post(api, name, [change(root, "Board", notes=remove(note))], GRACE), ["forbidden"], prop="notes")
    assert_nothing_applied(api, name, before)
    applied(api, name, [change(note, "Note", text="still ada's")], ADA)


def test_owners_survive_a_restart_from_the_log(start_server, tmp_path):
    server = start_server(*server_args(tmp_path))
    api = Api(server.url)
    name, note, _, owners = owned_board(api)
    api.close()
    server.restart()
    api = Api(server.url)
    assert_owners_hold(api, name, note, owners)
    api.close()


def test_owners_survive_a_restart_from_a_snapshot(start_server, tmp_path):
    server = start_server(*server_args(tmp_path), "--history-limit", "3", "--snapshot-interval", "2")
    api = Api(server.url)
    name, note, memo, owners = owned_board(api)
    # Open writes until the sets that added the owned objects are gone from the log: the owners
    # can then only come from a snapshot.
    for index in range(6):
        applied(api, name, [change(memo, "Memo", text=f"write {index}")], ANONYMOUS)
    deadline = time.monotonic() + WAIT
    while api.history(name, 0).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert_problem(api.history(name, 0), 410, "history-gone")
    api.close()
    server.restart()
    api = Api(server.url)
    assert_owners_hold(api, name, note, owners)
    api.close()
