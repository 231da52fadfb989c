// The schema's write rules in the client (docs/js-client.md, "Write rules"): `GET /v1/schema`'s
// class `rules` and property `write`/`immutable` are read (not taken for properties), inherited
// along `extends`, and a local edit that changes an `immutable` property of an object that existed
// before its change set is refused locally with `immutable` — a method's stub is not checked. The
// schema below is what the real gateway serves for a YAML schema with such rules (its long form).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Schema, SyncCore, Rejection, ErrorKind, applyChangeSet } from "../jetstream.mjs";
import { uuid } from "./fixtures.mjs";

const RULES_SCHEMA = Object.freeze({
  models: {
    Board: { title: { type: "String?" }, cards: { type: "[Card]" }, rules: { type: "String", default: "" } },
    Card: {
      rules: { write: "owner" },
      text: { type: "String", default: "" },
      author: { type: "String", default: "", immutable: true },
      points: { type: "Int16", default: 0, write: "role:editor" },
      tags: { type: "[String]", immutable: true },
    },
    Pinned: { extends: "Card" },
    Note: { extends: "Card", rules: { delete: "role:editor" } },
    Sticker: { extends: "Pinned" },
  },
  scopes: { "board-*": { root: "Board" } },
});

const schema = new Schema(RULES_SCHEMA);
const ROOT = uuid(0xb0), CARD = uuid(0xc1), NEW = uuid(0xc2);

/** A board holding one Card added before (author "ada", tags ["a", "b"]). */
function boardState(version = 1) {
  return {
    version, rootUUID: ROOT,
    fragments: [
      { type: "change", uuid: ROOT, clsName: "Board", properties: { title: null, cards: [CARD], rules: "" } },
      { type: "add", uuid: CARD, clsName: "Card", properties: { text: "first", author: "ada", points: 1, tags: ["a", "b"] } },
    ],
  };
}

function loaded() {
  const core = new SyncCore(schema, { clientId: "tab" });
  core.load(boardState());
  return core;
}

const cardChange = (properties) => [{ type: "change", uuid: CARD, clsName: "Card", properties }];

/** The local Rejection `run` throws, with its one failing fragment's error. */
function localRefusal(run) {
  let error;
  try { run(); } catch (caught) { error = caught; }
  assert.ok(error instanceof Rejection, `a local Rejection, got ${error}`);
  assert.equal(error.local, true);
  assert.equal(error.status, 422);
  return error.fragmentReplies.find((reply) => reply.error)?.error;
}

// -- the schema --------------------------------------------------------------------------------

test("schema: a class's `rules` member is its rules, not a property; absent keys are `any`", () => {
  const card = schema.modelClass("Card");
  assert.deepEqual({ ...card.rules }, { write: "owner", delete: "any" });
  assert.deepEqual({ ...card.ownRules }, { write: "owner", delete: "any" });
  assert.deepEqual([...card.properties.keys()], ["text", "author", "points", "tags"], "no property called rules");
});

test("schema: a property's `write` and `immutable` are kept on it; the defaults are `any` and false", () => {
  const card = schema.modelClass("Card");
  assert.equal(card.properties.get("author").immutable, true);
  assert.equal(card.properties.get("author").write, "any");
  assert.equal(card.properties.get("points").write, "role:editor");
  assert.equal(card.properties.get("points").immutable, false);
  assert.equal(card.properties.get("tags").immutable, true);
  assert.equal(card.properties.get("text").write, "any");
  assert.equal(card.properties.get("text").immutable, false);
});

test("schema: a member named `rules` with a `type` stays a property; its class has open rules", () => {
  const board = schema.modelClass("Board");
  assert.deepEqual([...board.properties.keys()], ["title", "cards", "rules"]);
  assert.equal(board.properties.get("rules").kind, "string");
  assert.deepEqual({ ...board.rules }, { write: "any", delete: "any" });
  assert.equal(board.ownRules, undefined);
});

test("schema: a subclass without rules has its nearest ancestor's; one with its own keeps them whole", () => {
  assert.deepEqual({ ...schema.modelClass("Pinned").rules }, { write: "owner", delete: "any" }, "Pinned extends Card");
  assert.equal(schema.modelClass("Pinned").ownRules, undefined);
  assert.deepEqual({ ...schema.modelClass("Sticker").rules }, { write: "owner", delete: "any" }, "Sticker extends Pinned extends Card");
  // Note's own rules replace Card's as a whole (as on the server): its write is `any` again.
  assert.deepEqual({ ...schema.modelClass("Note").rules }, { write: "any", delete: "role:editor" });
  assert.deepEqual([...schema.modelClass("Note").properties.keys()], ["text", "author", "points", "tags"], "inherited, rules not among them");
  assert.equal(schema.modelClass("Note").properties.get("author").immutable, true, "immutable is inherited with the property");
});

test("schema: the new error kinds", () => {
  assert.equal(ErrorKind.forbidden, "forbidden");
  assert.equal(ErrorKind.immutable, "immutable");
});

// -- the local check of `immutable` -------------------------------------------------------------

test("local: changing an immutable property of an existing object is refused locally, naming the property; nothing is queued or shown", () => {
  const core = loaded();
  const error = localRefusal(() => core.local(cardChange({ text: "edited", author: "bob" })));
  assert.equal(error.type, "immutable");
  assert.equal(error.property, "author");
  assert.match(error.message, /Card\.author is immutable/);
  assert.equal(core.pending.length, 0, "nothing queued");
  assert.deepEqual(core.view.get(CARD).properties, { text: "first", author: "ada", points: 1, tags: ["a", "b"] }, "the view as it was");
});

test("local: an immutable collection is refused when its operations change it, accepted when they leave it as it is", () => {
  const core = loaded();
  assert.equal(localRefusal(() => core.local(cardChange({ tags: { insert: ["c"] } }))).type, "immutable");
  assert.equal(localRefusal(() => core.local(cardChange({ tags: ["b", "a"] }))).type, "immutable", "a new order is a change");
  core.local(cardChange({ tags: { insert: ["b"] } }));   // "b" moved to the end, where it is already
  core.local(cardChange({ tags: ["a", "b"] }));
  assert.equal(core.pending.length, 2);
  assert.deepEqual(core.view.get(CARD).properties.tags, ["a", "b"]);
});

test("local: setting an immutable property to the value it has passes; the other properties change", () => {
  const core = loaded();
  core.local(cardChange({ author: "ada", text: "edited", points: 5 }));
  assert.equal(core.pending.length, 1);
  assert.deepEqual(core.view.get(CARD).properties, { text: "edited", author: "ada", points: 5, tags: ["a", "b"] },
    "write rules (owner, role) are the server's to judge: the client does not know owners");
});

test("local: an object added by the same change set may be given any value, in its add and in a later change of the set", () => {
  const core = loaded();
  core.local([
    { type: "add", uuid: NEW, clsName: "Card", properties: { author: "ada" } },
    { type: "change", uuid: NEW, clsName: "Card", properties: { author: "bob", tags: ["x"] } },
    { type: "change", uuid: ROOT, clsName: "Board", properties: { cards: { insert: [NEW] } } },
  ]);
  assert.deepEqual(core.view.get(NEW).properties, { text: "", author: "bob", points: 0, tags: ["x"] });
  // In the next set it existed before: immutable now (the server sees it so too).
  assert.equal(localRefusal(() => core.local([{ type: "change", uuid: NEW, clsName: "Card", properties: { author: "eve" } }])).type, "immutable");
});

test("local: a method's stub is not checked (a method may act as the server)", () => {
  const core = loaded();
  const { set } = core.local(cardChange({ author: "bob" }), { method: "reassign", args: { to: "bob" } });
  assert.equal(set.kind, "method");
  assert.equal(core.view.get(CARD).properties.author, "bob", "the stub's edit shown");
});

test("local: a subclass's inherited immutable property is checked too", () => {
  const core = new SyncCore(schema, { clientId: "tab" });
  const state = boardState();
  state.fragments[1].clsName = "Sticker";
  core.load(state);
  assert.equal(localRefusal(() => core.local([{ type: "change", uuid: CARD, clsName: "Sticker", properties: { author: "x" } }])).type, "immutable");
});

test("applyChangeSet checks immutable only when asked: the server's sets and rebuilds apply as they are", () => {
  const core = loaded();
  const state = core.confirmed.clone();
  const asked = applyChangeSet(state, schema, cardChange({ author: "bob" }), { checkImmutable: true });
  assert.equal(asked.ok, false);
  assert.deepEqual(asked.replies, [{ error: { type: "immutable", message: "Card.author is immutable: its add set it, and it never changes after", property: "author" } }]);
  assert.equal(state.get(CARD).properties.author, "ada");
  const unasked = applyChangeSet(state, schema, cardChange({ author: "bob" }));
  assert.equal(unasked.ok, true);
  assert.equal(state.get(CARD).properties.author, "bob");
});

test("a validation error of the same fragment comes first, as on the server", () => {
  const core = loaded();
  const error = localRefusal(() => core.local(cardChange({ author: 5 })));
  assert.equal(error.type, "type-mismatch");
});
