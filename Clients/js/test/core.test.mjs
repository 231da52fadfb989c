// SyncCore, the pure state machine of docs/sync-protocol.md (no network, no timers), rule by rule,
// with the demo schema. Events are written by hand where the exact shape matters and produced by
// FakeServer (the shared model rules) where many are needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Schema, SyncCore, Rejection, applyChangeSet } from "../jetstream.mjs";
import {
  DEMO_SCHEMA, ROOT, uuid, canvasState, shapeProperties, objectsOf, addShape, setShape, removeShape,
  FakeServer, seededRandom,
} from "./fixtures.mjs";

const schema = new Schema(DEMO_SCHEMA);
const S1 = uuid(1), S2 = uuid(2), S3 = uuid(3), A = uuid(0xa), B = uuid(0xb);

/** A core loaded with a canvas of shapes S1 and S2 at `version`. */
function loaded(version = 0, clientId = "tab") {
  const core = new SyncCore(schema, { clientId });
  core.load(canvasState(version, [[S1, { x: 1 }], [S2, { x: 2 }]]));
  return core;
}

/** A `changeset` event as the server broadcasts it. */
function event(version, fragments, { removed = [], key } = {}) {
  return { version, fragments, removed, ...(key ? { idempotencyKey: key } : {}) };
}
const shapeChange = (id, properties) => ({ type: "change", uuid: id, clsName: "Shape", properties });
const shapeAdd = (id, overrides = {}) => ({ type: "add", uuid: id, clsName: "Shape", properties: shapeProperties(overrides) });
const canvasShapes = (shapes) => ({ type: "change", uuid: ROOT, clsName: "Canvas", properties: { shapes } });

/** Notification fragments as uuid → {type, properties}, to compare regardless of order. */
function notified(notification) {
  const result = {};
  for (const fragment of notification.fragments) result[fragment.uuid] = { type: fragment.type, properties: fragment.properties };
  return result;
}

test("load: the view is the loaded state and the notification adds every object", () => {
  const core = new SyncCore(schema, { clientId: "tab" });
  const notification = core.load(canvasState(7, [[S1, { x: 1 }]]));
  assert.equal(core.version, 7);
  assert.equal(core.rootUUID, ROOT);
  assert.deepEqual(core.view.get(S1).properties, shapeProperties({ x: 1 }));
  assert.equal(notification.local, false);
  assert.equal(notification.version, 7);
  assert.deepEqual(Object.keys(notified(notification)).sort(), [S1, ROOT].sort());
  assert.deepEqual(notification.removed, []);
});

test("L1: a local change is visible at once, keyed <clientId>:<n> in order, notified as local", () => {
  const core = loaded(3, "tab-1");
  const first = core.local(setShape(S1, { x: 10 }));
  assert.equal(first.set.key, "tab-1:1");
  assert.equal(first.set.status, "queued");
  assert.equal(core.view.get(S1).properties.x, 10);
  assert.equal(core.confirmed.get(S1).properties.x, 1, "confirmed is the server's state, untouched");
  assert.equal(first.notification.local, true);
  assert.equal(first.notification.version, 3);
  assert.deepEqual(notified(first.notification), { [S1]: { type: "change", properties: shapeProperties({ x: 10 }) } });
  assert.deepEqual(first.notification.removed, []);

  const second = core.local(addShape(S3, { x: 3 }));
  assert.equal(second.set.key, "tab-1:2");
  assert.deepEqual(core.pending.map((set) => set.key), ["tab-1:1", "tab-1:2"]);
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S1, S2, S3]);
  assert.deepEqual(notified(second.notification), {
    [S3]: { type: "add", properties: shapeProperties({ x: 3 }) },
    [ROOT]: { type: "change", properties: { name: null, shapes: [S1, S2, S3] } },
  });
  assert.equal(core.local(removeShape(S2)).set.key, "tab-1:3");
});

test("L1: a locally invalid set throws a local Rejection with the server's error kinds; nothing changes", () => {
  const core = loaded(0);
  const view = objectsOf(core.view);
  const cases = [
    // [fragments, expected per-fragment replies as {type, property}]
    [setShape(S1, { width: -1 }), [{ type: "out-of-range", property: "width" }]],
    [setShape(S1, { label: "x".repeat(201) }), [{ type: "constraint-violation", property: "label" }]],
    [setShape(S1, { kind: "hexagon" }), [{ type: "constraint-violation", property: "kind" }]],
    [setShape(S1, { x: "10" }), [{ type: "type-mismatch", property: "x" }]],
    [setShape(S1, { x: null }), [{ type: "null-not-allowed", property: "x" }]],
    [setShape(S1, { color: 2 ** 32 }), [{ type: "out-of-range", property: "color" }]],
    [setShape(S1, { colour: 1 }), [{ type: "unknown-property", property: "colour" }]],
    [setShape(uuid(99), { x: 1 }), [{ type: "unknown-object" }]],
    [[{ type: "change", uuid: S1, clsName: "Canvas", properties: {} }], [{ type: "class-mismatch" }]],
    [[{ type: "add", uuid: S3, clsName: "Shape", properties: {} }], [{ type: "unattached-add" }]],
    [[{ type: "add", uuid: S1, clsName: "Shape" }, canvasShapes({ insert: [S1] })], [{ type: "duplicate-add" }, null]],
    [[{ type: "add", uuid: S3, clsName: "Circle" }], [{ type: "unknown-class" }]],
    [[{ type: "remove", uuid: S1, clsName: "Shape" }], [{ type: "malformed-fragment" }]],
    [[canvasShapes({ insert: [uuid(99)] })], [{ type: "missing-reference", property: "shapes" }]],
    [[canvasShapes({ move: [S1] })], [{ type: "type-mismatch", property: "shapes" }]],
    // Every bad fragment gets its own error; the fine one gets {}.
    [[...setShape(S1, { width: -1 }), ...setShape(S2, { x: 5 }), ...setShape(S2, { y: true })],
      [{ type: "out-of-range", property: "width" }, null, { type: "type-mismatch", property: "y" }]],
  ];
  for (const [fragments, expected] of cases) {
    let thrown;
    try { core.local(fragments); } catch (error) { thrown = error; }
    const label = JSON.stringify(fragments);
    assert.ok(thrown instanceof Rejection, `a Rejection for ${label}, got ${thrown}`);
    assert.equal(thrown.local, true);
    assert.equal(thrown.status, 422);
    assert.equal(thrown.type, "/problems/invalid-change-set");
    assert.equal(thrown.fragments, fragments);
    assert.deepEqual(thrown.fragmentReplies.map((reply) => reply.error ? { type: reply.error.type, ...(reply.error.property !== undefined ? { property: reply.error.property } : {}) } : null),
      expected, label);
    for (const reply of thrown.fragmentReplies) if (reply.error) assert.equal(typeof reply.error.message, "string");
    assert.ok(thrown.reasons.length >= 1);
  }
  assert.deepEqual(objectsOf(core.view), view, "the view is unchanged");
  assert.deepEqual(objectsOf(core.view), objectsOf(core.confirmed));
  assert.equal(core.pending.length, 0);
  assert.deepEqual(core.view.get(S1).properties, shapeProperties({ x: 1 }));
  assert.equal(core.local(setShape(S1, { x: 5 })).set.key, "tab:1", "refused sets use no sequence number");
});

test("L2: one set in flight at a time, in creation order; a retried set keeps its key", () => {
  const core = loaded(0);
  const { set: first } = core.local(setShape(S1, { x: 10 }));
  const { set: second } = core.local(setShape(S2, { x: 20 }));
  assert.equal(core.nextToSend(), first);
  first.status = "inflight";
  assert.equal(core.nextToSend(), undefined, "nothing else while one is in flight");
  core.retry(first);
  assert.equal(first.status, "queued");
  assert.equal(core.nextToSend(), first, "the same set (same key) is sent again");
  first.status = "inflight";
  assert.equal(core.accepted(first, 1), null);
  assert.equal(core.nextToSend(), second);
});

test("R6: an accepted set stays in the view until the stream confirms it — no flicker", () => {
  const core = loaded(0);
  const { set } = core.local(setShape(S1, { x: 10 }));
  set.status = "inflight";
  const view = objectsOf(core.view);
  assert.equal(core.accepted(set, 1), null, "accepting changes nothing visible");
  assert.equal(set.status, "accepted");
  assert.equal(set.version, 1);
  assert.deepEqual(objectsOf(core.view), view);
  assert.equal(core.view.get(S1).properties.x, 10);
  assert.equal(core.pending.length, 1);
  // The echo (with the key) confirms it: the view still shows x = 10, nothing to notify.
  const notification = core.event(event(1, [shapeChange(S1, { x: 10 })], { key: set.key }));
  assert.deepEqual(notification.fragments, []);
  assert.deepEqual(notification.removed, []);
  assert.equal(core.pending.length, 0);
  assert.equal(core.version, 1);
  assert.equal(core.view.get(S1).properties.x, 10);
});

test("R6: an accepted set leaves once an event reaches its version, even without a key", () => {
  const core = loaded(0);
  const { set } = core.local(setShape(S1, { x: 10 }));
  set.status = "inflight";
  core.accepted(set, 2);
  const other = core.event(event(1, [shapeChange(S2, { y: 7 })]));
  assert.equal(core.pending.length, 1, "not yet: the server's state is at 1");
  assert.deepEqual(notified(other), { [S2]: { type: "change", properties: shapeProperties({ x: 2, y: 7 }) } });
  assert.equal(core.view.get(S1).properties.x, 10);
  core.event(event(2, [shapeChange(S1, { x: 10 })]));
  assert.equal(core.pending.length, 0);
  assert.equal(core.view.get(S1).properties.x, 10);
  // An answer that arrives after the stream already passed its version is dropped at once.
  const { set: late } = core.local(setShape(S2, { x: 30 }));
  late.status = "inflight";
  core.event(event(3, [shapeChange(S2, { x: 30 })]));
  assert.equal(core.pending.length, 1);
  core.accepted(late, 3);
  assert.equal(core.pending.length, 0);
});

test("E1: the own echo is recognised by idempotencyKey when it arrives BEFORE the POST answer", () => {
  const core = loaded(0, "tab-9");
  const { set } = core.local(addShape(S3, { x: 3 }));
  set.status = "inflight";
  const view = objectsOf(core.view);
  const echo = event(1, [shapeAdd(S3, { x: 3 }), canvasShapes([S1, S2, S3])], { key: "tab-9:1" });
  const notification = core.event(echo);
  assert.deepEqual(notification.fragments, [], "the view already showed it: nothing to notify");
  assert.deepEqual(notification.removed, []);
  assert.equal(notification.local, false);
  assert.equal(notification.version, 1);
  assert.deepEqual(core.pending, [], "the set is done");
  assert.equal(core.nextToSend(), undefined, "never sent again");
  assert.deepEqual(objectsOf(core.view), view);
  assert.deepEqual(objectsOf(core.view), objectsOf(core.confirmed));
  // The POST's 200 arrives afterwards: nothing changes.
  assert.equal(core.accepted(set, 1), null);
  assert.deepEqual(core.pending, []);
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S1, S2, S3]);
});

test("E1: another client's key does not confirm a local set", () => {
  const core = loaded(0, "tab");
  core.local(setShape(S1, { x: 10 }));
  core.event(event(1, [shapeChange(S1, { x: 99 })], { key: "other:1" }));
  assert.equal(core.pending.length, 1);
  assert.equal(core.view.get(S1).properties.x, 10, "the local set is re-applied over the remote value");
  assert.equal(core.confirmed.get(S1).properties.x, 99);
});

test("E1: a remote event while local sets are pending is rebased — both effects stay", () => {
  const core = loaded(0, "a");
  core.local(setShape(S1, { x: 10 }));
  core.local(addShape(A, { x: 5 }));
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S1, S2, A]);
  // Another client inserted B and moved S2 first; it also changed S1.y (a property we did not touch).
  const notification = core.event(event(1, [shapeAdd(B, { x: 6 }), canvasShapes([S2, S1, B]), shapeChange(S1, { y: 4 })]));
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S2, S1, B, A], "the server's order, then the local insert");
  assert.deepEqual(core.view.get(S1).properties, shapeProperties({ x: 10, y: 4 }));
  assert.deepEqual(core.view.get(A).properties, shapeProperties({ x: 5 }));
  assert.deepEqual(core.view.get(B).properties, shapeProperties({ x: 6 }));
  assert.deepEqual(notified(notification), {
    [B]: { type: "add", properties: shapeProperties({ x: 6 }) },
    [S1]: { type: "change", properties: shapeProperties({ x: 10, y: 4 }) },
    [ROOT]: { type: "change", properties: { name: null, shapes: [S2, S1, B, A] } },
  });
  assert.equal(core.pending.length, 2);
  // A remote write to a property a pending set also writes: the local value stays on top until
  // the server has ruled on the local set.
  core.event(event(2, [shapeChange(S1, { x: 77 })]));
  assert.equal(core.view.get(S1).properties.x, 10);
});

test("E1: two clients inserting into shapes at the same version both keep their shape, in the server's order", () => {
  const server = new FakeServer(schema, canvasState(0, [[S1, {}]]));
  const a = new SyncCore(schema, { clientId: "a" });
  const b = new SyncCore(schema, { clientId: "b" });
  a.load(server.snapshot());
  b.load(server.snapshot());
  const { set: setA } = a.local(addShape(A, { x: 1 }));
  const { set: setB } = b.local(addShape(B, { x: 2 }));
  // B's POST reaches the server first, then A's.
  assert.equal(server.post(setB.fragments, setB.key).version, 1);
  assert.equal(server.post(setA.fragments, setA.key).version, 2);
  a.accepted(setA, 2);
  // A sees B's event while its own set is still pending: both shapes, B first, A re-applied.
  a.event(server.events[0]);
  assert.deepEqual(a.view.get(ROOT).properties.shapes, [S1, B, A]);
  a.event(server.events[1]);
  b.event(server.events[0]);
  b.event(server.events[1]);
  for (const core of [a, b]) {
    assert.deepEqual(core.view.get(ROOT).properties.shapes, [S1, B, A]);
    assert.equal(core.pending.length, 0);
    assert.deepEqual(objectsOf(core.view), objectsOf(server.state));
  }
});

test("R6: a rejected set rolls back with a notification of what was restored; later sets stay", () => {
  const core = loaded(0);
  const { set: resize } = core.local(setShape(S1, { width: 50 }));
  const { set: add } = core.local(addShape(S3, { x: 3 }));
  resize.status = "inflight";
  const rollback = core.rejected(resize);
  assert.deepEqual(notified(rollback), { [S1]: { type: "change", properties: shapeProperties({ x: 1 }) } },
    "exactly the restored object: the later set's objects are unchanged");
  assert.deepEqual(rollback.removed, []);
  assert.equal(rollback.local, false);
  assert.deepEqual(core.pending, [add]);
  assert.equal(core.view.get(S1).properties.width, 100);
  assert.deepEqual(core.view.get(S3).properties, shapeProperties({ x: 3 }));
  assert.equal(core.nextToSend(), add, "later sets are still sent");
  // Rejecting the add takes the shape out again.
  const second = core.rejected(add);
  assert.deepEqual(second.removed, [S3]);
  assert.deepEqual(notified(second), { [ROOT]: { type: "change", properties: { name: null, shapes: [S1, S2] } } });
  assert.deepEqual(objectsOf(core.view), objectsOf(core.confirmed));
  assert.equal(core.rejected(add), null, "a set no longer pending is ignored");
});

test("E1: a pending set that no longer applies after a rebase stays pending and invisible, then leaves on rejection", () => {
  const core = loaded(0);
  const { set: move } = core.local(setShape(S1, { x: 50 }));
  const { set: later } = core.local(setShape(S2, { x: 60 }));
  // Another client removed S1.
  const notification = core.event(event(1, [canvasShapes([S2])], { removed: [S1] }));
  assert.deepEqual(notification.removed, [S1]);
  assert.deepEqual(notified(notification), { [ROOT]: { type: "change", properties: { name: null, shapes: [S2] } } });
  assert.equal(core.view.get(S1), undefined, "the move no longer applies: it is invisible");
  assert.equal(core.view.get(S2).properties.x, 60, "the later set still applies");
  assert.deepEqual(core.pending, [move, later], "but it stays until the server answers");
  assert.equal(core.nextToSend(), move);
  const rejection = core.rejected(move);
  assert.deepEqual(rejection.fragments, []);
  assert.deepEqual(rejection.removed, [], "nothing visible changes: it was already invisible");
  assert.deepEqual(core.pending, [later]);
  assert.equal(core.view.get(S2).properties.x, 60);
});

test("R1: gap detection — an event past version + 1 is a gap, an old one is ignored", () => {
  const core = loaded(1);
  const view = objectsOf(core.view);
  assert.deepEqual(core.event(event(3, [shapeChange(S1, { x: 9 })])), { gap: true });
  assert.equal(core.version, 1);
  assert.deepEqual(objectsOf(core.view), view);
  assert.equal(core.view.get(S1).properties.x, 1, "nothing of the gapped event is applied");
  assert.equal(core.event(event(1, [shapeChange(S1, { x: 8 })])), null, "already applied");
  assert.equal(core.event(event(0, [shapeChange(S1, { x: 8 })])), null);
  assert.equal(core.view.get(S1).properties.x, 1);
  const applied = core.event(event(2, [shapeChange(S1, { x: 7 })]));
  assert.equal(applied.version, 2);
  assert.equal(core.version, 2);
  assert.equal(core.view.get(S1).properties.x, 7);
});

test("R7: reset replaces confirmed, requeues unacknowledged sets, keeps the in-flight one, drops the confirmed ones", () => {
  const core = loaded(1);
  const { set: done } = core.local(setShape(S1, { x: 10 }));
  const { set: ahead } = core.local(setShape(S1, { y: 20 }));
  const { set: flying } = core.local(setShape(S2, { x: 30 }));
  const { set: queued } = core.local(addShape(S3, { x: 3 }));
  done.status = "inflight"; core.accepted(done, 2);
  ahead.status = "inflight"; core.accepted(ahead, 5);
  flying.status = "inflight";
  assert.equal(core.pending.length, 4);
  // The reset carries version 3: it includes `done` (x = 10) and a remote label on S2.
  const notification = core.reset(canvasState(3, [[S1, { x: 10 }], [S2, { x: 2, label: "remote" }]]));
  assert.equal(core.version, 3);
  assert.deepEqual(core.pending, [ahead, flying, queued], "accepted at <= 3 dropped");
  assert.equal(ahead.status, "queued", "accepted after the reset's version: sent again with its key");
  assert.equal(flying.status, "inflight", "the in-flight one stays in flight");
  assert.equal(queued.status, "queued");
  assert.deepEqual(core.view.get(S1).properties, shapeProperties({ x: 10, y: 20 }));
  assert.deepEqual(core.view.get(S2).properties, shapeProperties({ x: 30, label: "remote" }));
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S1, S2, S3]);
  assert.equal(notification.local, false);
  assert.equal(notification.version, 3);
  assert.deepEqual(notified(notification), { [S2]: { type: "change", properties: shapeProperties({ x: 30, label: "remote" }) } });
  assert.equal(core.nextToSend(), undefined, "still one at a time");
  core.accepted(flying, 4);
  assert.equal(core.nextToSend(), ahead);
  assert.equal(ahead.key, "tab:2", "with its original key");
});

test("R7: a reset that removed objects notifies them as removed", () => {
  const core = loaded(0);
  const notification = core.reset(canvasState(4, [[S2, { x: 2 }], [S3, { x: 3 }]]));
  assert.deepEqual(notification.removed, [S1]);
  assert.deepEqual(notified(notification), {
    [S3]: { type: "add", properties: shapeProperties({ x: 3 }) },
    [ROOT]: { type: "change", properties: { name: null, shapes: [S2, S3] } },
  });
});

test("N1: one notification per event, carrying exactly the changed objects with all their properties", () => {
  const core = loaded(0);
  const first = core.event(event(1, [shapeChange(S1, { x: 5 }), shapeChange(S1, { y: 6 }), shapeAdd(S3), canvasShapes([S1, S2, S3])]));
  assert.deepEqual(notified(first), {
    [S1]: { type: "change", properties: shapeProperties({ x: 5, y: 6 }) },
    [S3]: { type: "add", properties: shapeProperties() },
    [ROOT]: { type: "change", properties: { name: null, shapes: [S1, S2, S3] } },
  });
  assert.equal(first.fragments.length, 3, "S1 once, though two fragments changed it");
  assert.deepEqual(first.removed, []);
  const second = core.event(event(2, [canvasShapes([S1, S3])], { removed: [S2] }));
  assert.deepEqual(second.removed, [S2]);
  assert.deepEqual(Object.keys(notified(second)), [ROOT]);
  const same = core.event(event(3, [shapeChange(S1, { x: 5 })]));
  assert.deepEqual(same.fragments, [], "a write of the value the view already has changes nothing");
  assert.equal(same.version, 3);
  // The notified properties are copies: a subscriber cannot change the view through them.
  const third = core.event(event(4, [canvasShapes([S3, S1])]));
  third.fragments[0].properties.shapes.push("junk");
  assert.deepEqual(core.view.get(ROOT).properties.shapes, [S3, S1]);
});

// -- References between non-root objects (a schema with several paths to one object) -------------

// Board{items: [Item]}, Item{partner: Item?}: an Item stays in the scope while any path reaches it.
const graph = new Schema({
  models: { Board: { items: { type: "[Item]" } }, Item: { label: { type: "String" }, partner: { type: "Item?" } } },
  scopes: { "board-*": { root: "Board" } },
});
const board = uuid(0xb0a), I = uuid(0x11), J = uuid(0x12), K = uuid(0x13);
const item = (id, partner = null) => ({ type: "add", uuid: id, clsName: "Item", properties: { label: id.slice(-2), partner } });

test("E1: an event that re-attaches an object a pending set detached is rebased like any other", () => {
  const core = new SyncCore(graph, { clientId: "g" });
  core.load({ version: 0, rootUUID: board, fragments: [
    { type: "change", uuid: board, clsName: "Board", properties: { items: [I, J] } }, item(I), item(J)] });
  // Locally: take I out of the board — nothing else reaches it, so it leaves the view.
  const { notification } = core.local([{ type: "change", uuid: board, clsName: "Board", properties: { items: { remove: [I] } } }]);
  assert.deepEqual(notification.removed, [I]);
  // Remotely (valid on the server, where I is still on the board): J's partner becomes I.
  core.event({ version: 1, fragments: [{ type: "change", uuid: J, clsName: "Item", properties: { partner: I } }], removed: [] });
  // Re-applying the local set on the server's state: I leaves the board but J still reaches it.
  const rebuilt = core.confirmed.clone();
  assert.equal(applyChangeSet(rebuilt, graph, core.pending[0].fragments).ok, true);
  assert.ok(rebuilt.get(I), "the rebuilt view keeps I (reachable through J.partner)");
  assert.deepEqual(objectsOf(core.view), objectsOf(rebuilt), "the view is confirmed + pending re-applied");
  assert.ok(core.view.get(I), `no dangling reference: J.partner names ${I}, which must be in the view`);
});

test("E1: an event that detaches an object a pending set left reachable only through it is rebased like any other", () => {
  // I is on no board list; J and K both reach it through `partner`.
  const core = new SyncCore(graph, { clientId: "g" });
  core.load({ version: 0, rootUUID: board, fragments: [
    { type: "change", uuid: board, clsName: "Board", properties: { items: [J, K] } }, item(J, I), item(K, I), item(I)] });
  // Locally: J lets go of I; K still reaches it, so it stays.
  core.local([{ type: "change", uuid: J, clsName: "Item", properties: { partner: null } }]);
  assert.ok(core.view.get(I));
  // Remotely: K lets go of I too (on the server J still reaches it, so nothing is removed there).
  core.event({ version: 1, fragments: [{ type: "change", uuid: K, clsName: "Item", properties: { partner: null } }], removed: [] });
  // Re-applying the local set on the server's state: nothing reaches I any more.
  const rebuilt = core.confirmed.clone();
  assert.equal(applyChangeSet(rebuilt, graph, core.pending[0].fragments).ok, true);
  assert.equal(rebuilt.get(I), undefined, "the rebuilt view drops I");
  assert.deepEqual(objectsOf(core.view), objectsOf(rebuilt), "the view is confirmed + pending re-applied (no unreachable object left)");
});

// -- Convergence: several cores, one FakeServer, random schedules (seeded, bounded) ------------

/**
 * One client: a SyncCore, how far it has read the server's events, and a "mirror" of its view
 * built only from its notifications — which must equal the view after every step (so every
 * notification carries every changed object, and nothing that did not change). After every step
 * the view must also be what docs/sync-protocol.md defines: confirmed with every pending set
 * that still applies re-applied in order.
 */
class Client {
  constructor(id, server) {
    this.core = new SyncCore(server.schema, { clientId: id });
    this.server = server;
    this.read = server.events.length;
    this.mirror = new Map();
    this.notify(this.core.load(server.snapshot()));
  }
  notify(notification) {
    if (notification !== null) {
      assert.ok(!notification.gap, "no gaps: events are delivered in order");
      for (const fragment of notification.fragments) {
        const before = this.mirror.get(fragment.uuid);
        assert.notDeepEqual(before, { clsName: fragment.clsName, properties: fragment.properties }, `a notified object that did not change: ${fragment.uuid}`);
        this.mirror.set(fragment.uuid, { clsName: fragment.clsName, properties: structuredClone(fragment.properties) });
      }
      for (const removed of notification.removed) {
        assert.ok(this.mirror.has(removed), `a removed object that was not there: ${removed}`);
        this.mirror.delete(removed);
      }
    }
    const view = objectsOf(this.core.view);
    assert.deepEqual(Object.fromEntries(this.mirror), view, "the notifications rebuild the view exactly");
    const rebuilt = this.core.confirmed.clone();
    for (const set of this.core.pending) {
      const staged = rebuilt.clone();
      if (applyChangeSet(staged, this.core.schema, set.fragments).ok) rebuilt.objects = staged.objects;
    }
    assert.deepEqual(view, objectsOf(rebuilt), "the view is confirmed + the pending sets that apply");
  }
}

/** Random local edits on the demo canvas: add (anywhere), move, relabel, remove shapes. */
function canvasEdits(random, pick, fresh) {
  return (view) => {
    const shapes = view.get(ROOT).properties.shapes;
    const kind = random();
    if (kind < 0.4 || shapes.length === 0) return addShape(fresh(), { x: Math.floor(random() * 100) }, random() < 0.5 ? null : pick(shapes));
    if (kind < 0.8) return setShape(pick(shapes), { x: Math.floor(random() * 100), label: `s${Math.floor(random() * 9)}` });
    return removeShape(pick(shapes));
  };
}

/** Random local edits on the board graph: items on and off the board, partners set and cleared. */
function graphEdits(random, pick, fresh) {
  return (view) => {
    const items = [...view.objects.values()].filter((object) => object.clsName === "Item").map((object) => object.uuid);
    const listed = view.get(board).properties.items;
    const kind = random();
    if (kind < 0.25 || items.length === 0) {
      const id = fresh();
      return [item(id), { type: "change", uuid: board, clsName: "Board", properties: { items: { insert: [id], before: listed.length && random() < 0.5 ? pick(listed) : null } } }];
    }
    if (kind < 0.45 && listed.length > 0) return [{ type: "change", uuid: board, clsName: "Board", properties: { items: { remove: [pick(listed)] } } }];
    if (kind < 0.6) return [{ type: "change", uuid: board, clsName: "Board", properties: { items: { insert: [pick(items)] } } }];
    if (kind < 0.85) return [{ type: "change", uuid: pick(items), clsName: "Item", properties: { partner: random() < 0.3 ? null : pick(items) } }];
    return [{ type: "change", uuid: pick(items), clsName: "Item", properties: { label: `l${Math.floor(random() * 9)}` } }];
  };
}

function runSchedule(seed, steps, { schema: model, state, edits }) {
  const random = seededRandom(seed);
  const pick = (items) => items[Math.floor(random() * items.length)];
  let next = 100;
  const fresh = () => uuid(next++);
  const edit = edits(random, pick, fresh);
  const server = new FakeServer(model, state);
  const clients = ["a", "b", "c"].map((id) => new Client(`${id}${seed}`, server));
  const inflight = new Map(); // client → {set, outcome}
  const step = (client, action) => {
    const core = client.core;
    if (action === "local") {
      let local;
      try { local = core.local(edit(core.view)); } catch (error) { if (error instanceof Rejection) return; throw error; }
      client.notify(local.notification);
    } else if (action === "send") {
      const flying = inflight.get(client);
      if (flying) {
        // The answer arrives, or the response is lost (a network error) and the set goes back to
        // the queue: resent with its key, the server replays the first outcome.
        inflight.delete(client);
        if (random() < 0.2) { core.retry(flying.set); return; }
        if (flying.outcome.status === 200) client.notify(core.accepted(flying.set, flying.outcome.version));
        else client.notify(core.rejected(flying.set));
        return;
      }
      const set = core.nextToSend();
      if (!set) return;
      set.status = "inflight";
      inflight.set(client, { set, outcome: server.post(set.fragments, set.key) });
    } else if (client.read < server.events.length) {
      client.notify(core.event(server.events[client.read++]));
    }
  };
  for (let i = 0; i < steps; i++) step(pick(clients), pick(["local", "send", "event", "event"]));
  // Drain: every set answered, every event read (bounded).
  for (let round = 0; round < 10_000; round++) {
    const busy = clients.filter((client) => client.core.pending.length > 0 || client.read < server.events.length);
    if (busy.length === 0) break;
    for (const client of busy) { step(client, "send"); step(client, "event"); }
  }
  return { server, clients };
}

const MODELS = {
  "the demo canvas": { schema, state: canvasState(0, [[S1, { x: 1 }], [S2, { x: 2 }]]), edits: canvasEdits },
  "a board of items with partner references": {
    schema: graph,
    state: { version: 0, rootUUID: board, fragments: [{ type: "change", uuid: board, clsName: "Board", properties: { items: [J, K] } }, item(J, I), item(K), item(I)] },
    edits: graphEdits,
  },
};

for (const [label, model] of Object.entries(MODELS)) {
  test(`three SyncCores fed the same events end equal, and equal to the server (${label})`, () => {
    let rejections = 0;
    for (let seed = 1; seed <= 25; seed++) {
      const { server, clients } = runSchedule(seed, 120, model);
      const expected = objectsOf(server.state);
      for (const client of clients) {
        assert.equal(client.core.pending.length, 0, `seed ${seed}: ${client.core.clientId} still has pending sets`);
        assert.equal(client.core.version, server.version, `seed ${seed}`);
        assert.deepEqual(objectsOf(client.core.view), expected, `seed ${seed}: ${client.core.clientId} diverged`);
      }
      const keys = server.events.map((e) => e.idempotencyKey);
      assert.equal(new Set(keys).size, keys.length, `seed ${seed}: a key applied twice`);
      rejections += [...server.outcomes.values()].filter((outcome) => outcome.status !== 200).length;
    }
    assert.ok(rejections > 0, "the schedules include sets the server refuses");
  });
}

test("a method call: the stub's edits are its pending entry, replaced by the server's change set (answer or echo)", () => {
  // The answer at the next version: applied to confirmed at once, the stub's edits gone.
  const core = loaded(3, "tab");
  const { set, notification } = core.local(setShape(S1, { x: 999 }), { method: "arrange", args: {} });
  assert.equal(set.kind, "method");
  assert.equal(set.method, "arrange");
  assert.equal(core.view.get(S1).properties.x, 999);
  assert.equal(notification.local, true);
  set.status = "inflight";
  const answered = core.callAnswered(set, { version: 4, fragments: [shapeChange(S1, { x: 20 }), shapeChange(S2, { x: 140 })], removed: [] });
  assert.equal(core.version, 4);
  assert.deepEqual(core.pending, []);
  assert.equal(core.view.get(S1).properties.x, 20);
  assert.deepEqual(Object.keys(notified(answered)).sort(), [S1, S2].sort());
  assert.equal(core.event(event(4, [shapeChange(S1, { x: 20 }), shapeChange(S2, { x: 140 })], { key: set.key })), null, "its echo is stale");

  // An answer further ahead: the entry holds the server's fragments until the stream gets there.
  const behind = loaded(3, "tab");
  const call = behind.local(setShape(S1, { x: 999 }), { method: "arrange", args: {} }).set;
  behind.callAnswered(call, { version: 6, fragments: [shapeChange(S1, { x: 20 })], removed: [] });
  assert.equal(call.status, "accepted");
  assert.equal(behind.view.get(S1).properties.x, 20, "the server's edit, not the stub's");
  behind.event(event(4, [shapeChange(S2, { x: 5 })]));
  behind.event(event(5, [shapeChange(S2, { x: 6 })]));
  assert.equal(behind.view.get(S1).properties.x, 20);
  behind.event(event(6, [shapeChange(S1, { x: 20 })], { key: call.key }));
  assert.deepEqual(behind.pending, []);
  assert.equal(behind.view, behind.confirmed);

  // No change on the server: the stub's edits go.
  const unchanged = loaded(3, "tab");
  const noop = unchanged.local(setShape(S1, { x: 999 }), { method: "arrange", args: {} }).set;
  const dropped = unchanged.callAnswered(noop, { version: 3, fragments: [], removed: [] });
  assert.deepEqual(unchanged.pending, []);
  assert.equal(unchanged.view.get(S1).properties.x, 1);
  assert.deepEqual(Object.keys(notified(dropped)), [S1]);

  // Its echo first (the answer still on its way): the server's set replaces the stub's edits.
  const echoed = loaded(3, "tab");
  const first = echoed.local(setShape(S1, { x: 999 }), { method: "arrange", args: {} }).set;
  echoed.event(event(4, [shapeChange(S1, { x: 20 })], { key: first.key }));
  assert.deepEqual(echoed.pending, []);
  assert.equal(echoed.view.get(S1).properties.x, 20);
  assert.equal(echoed.callAnswered(first, { version: 4, fragments: [shapeChange(S1, { x: 20 })], removed: [] }), null);
});
