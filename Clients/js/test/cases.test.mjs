// The shared change-set cases (Tests/Fixtures/changeset-cases.json, also run by the Swift model
// tests): the JS client must resolve every one exactly as the server does — the resulting objects
// and removed UUIDs of an accepted set, the per-fragment error kinds of a refused one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Schema, ScopeState, applyChangeSet } from "../jetstream.mjs";

const path = fileURLToPath(new URL("../../../Tests/Fixtures/changeset-cases.json", import.meta.url));

if (!existsSync(path)) {
  test("the shared change-set cases exist", () => {
    assert.fail(`${path} is missing: the JS client cannot be checked against the Swift model's cases`);
  });
} else {
  const json = JSON.parse(readFileSync(path, "utf8"));
  const schema = new Schema(json.schema);

  /** uuid → {clsName, properties} of a state in the `{rootUUID, fragments}` shape (or a ScopeState). */
  const objectsOf = (state) => {
    const objects = {};
    for (const [uuid, object] of state.objects) objects[uuid] = { clsName: object.clsName, properties: { ...object.properties } };
    return objects;
  };
  /** A reply reduced to what must match: null for `{}`, else {type, property} (not the message). */
  const errorOf = (reply) => (reply?.error ? { type: reply.error.type, property: reply.error.property } : null);

  test("the shared change-set cases: there are some, with unique names", () => {
    assert.ok(Array.isArray(json.cases) && json.cases.length > 0, "no cases");
    const names = json.cases.map((item) => item.name);
    assert.equal(new Set(names).size, names.length, "duplicate case names");
  });

  // Cases that hinge on a JSON number's literal form, which JSON.parse cannot keep: in JS `5.0`
  // is the number 5, and JSON.stringify sends it as `5`, which the server accepts as well. For
  // these the JS client accepts the value; the Swift model (reading the literal) refuses it.
  const LITERAL_FORM = new Set(["type-mismatch: 5.0 is not an integer literal"]);

  test("the literal-form exceptions name existing cases", () => {
    const names = new Set(json.cases.map((item) => item.name));
    for (const name of LITERAL_FORM) assert.ok(names.has(name), `no case named ${JSON.stringify(name)} any more`);
  });

  for (const item of json.cases) {
    // A case with a subject as its author hinges on owners and roles, which only the server knows:
    // the client leaves `write`/`delete` rules to it, so it accepts what the server may refuse.
    if (typeof item.author === "object" && item.expect.replies?.some((reply) => reply.error?.type === "forbidden")) {
      test(`${item.name} (JS: owners and roles are the server's to judge, so the client lets it through)`, () => {
        const outcome = applyChangeSet(ScopeState.fromJSON({ version: 0, ...item.state }), schema, item.changeset, { checkImmutable: true });
        assert.equal(outcome.ok, true, JSON.stringify(outcome.replies));
      });
      continue;
    }
    if (LITERAL_FORM.has(item.name)) {
      test(`${item.name} (JS: the literal is lost at JSON.parse, so the value is accepted)`, () => {
        const state = ScopeState.fromJSON({ version: 0, ...item.state });
        const outcome = applyChangeSet(state, schema, item.changeset);
        assert.equal(outcome.ok, true, JSON.stringify(outcome.replies));
        assert.ok(item.expect.replies.every((reply) => !reply.error || reply.error.type === "type-mismatch"));
      });
      continue;
    }
    test(item.name, () => {
      const state = ScopeState.fromJSON({ version: 0, ...item.state });
      const before = objectsOf(state);
      const staged = state.clone();
      // "local": a client's own edit, which the client checks for `immutable` too.
      const outcome = applyChangeSet(staged, schema, item.changeset, { checkImmutable: item.author === "local" });
      assert.deepEqual(objectsOf(state), before, "the original state is untouched (applied to a clone)");
      if (item.expect.replies !== undefined) {
        assert.equal(outcome.ok, false, `refused on the server, accepted here: ${JSON.stringify(outcome.fragments)}`);
        assert.deepEqual(outcome.replies.map(errorOf), item.expect.replies.map(errorOf));
        assert.deepEqual(objectsOf(staged), before, "a refused set changes nothing");
      } else {
        assert.equal(outcome.ok, true, `accepted on the server, refused here: ${JSON.stringify(outcome.replies)}`);
        const expected = objectsOf(ScopeState.fromJSON({ version: 0, ...item.expect.state }));
        assert.equal(staged.rootUUID, item.expect.state.rootUUID);
        assert.deepEqual(objectsOf(staged), expected);
        assert.deepEqual([...outcome.removed].sort(), [...(item.expect.removed ?? [])].sort(), "removed");
        if (item.expect.fragments !== undefined) {
          // What the server broadcasts (a collection as one operations object against the state
          // before) is what this client applies to its confirmed state: it must reach the same state.
          const received = ScopeState.fromJSON({ version: 0, ...item.state });
          const applied = applyChangeSet(received, schema, item.expect.fragments);
          assert.equal(applied.ok, true, `the broadcast fragments do not apply: ${JSON.stringify(applied.replies)}`);
          assert.deepEqual(objectsOf(received), expected, "the broadcast fragments give the same state");
        }
      }
    });
  }
}
