// Shared fixtures of the JS client's tests: the demo schema as `GET /v1/schema` serves it,
// deterministic UUIDs, scope states in the `GET /v1/scopes/{name}` shape, and a tiny in-memory
// "server" that turns posted change sets into the events the real one broadcasts.
import { ScopeState, applyChangeSet } from "../jetstream.mjs";

/** `GET /v1/schema` of `jetstream serve` without `--schema` (the built-in demo schema). */
export const DEMO_SCHEMA = Object.freeze({
  models: {
    Canvas: { name: { type: "String?" }, shapes: { type: "[Shape]" } },
    Shape: {
      x: { type: "Float" },
      y: { type: "Float" },
      width: { type: "Float", default: 100.0, min: 0.0 },
      height: { type: "Float", default: 100.0, min: 0.0 },
      color: { type: "Color?" },
      label: { type: "String", default: "", maxLength: 200 },
      kind: { enum: ["rect", "oval"], default: "rect" },
    },
  },
  scopes: { demo: { root: "Canvas" }, "canvas-*": { root: "Canvas" } },
});

/** A fixed, valid, lowercase UUID for a small number: uuid(1) = "00000000-0000-4000-8000-000000000001". */
export function uuid(n) {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

/** The root Canvas of every state built here. */
export const ROOT = uuid(0xc0ffee);

/** A Shape's full properties: the schema's defaults with `overrides`. */
export function shapeProperties(overrides = {}) {
  return { x: 0, y: 0, width: 100, height: 100, color: null, label: "", kind: "rect", ...overrides };
}

/**
 * A scope state as `GET` serves it: the Canvas root holding `shapes` (a list of
 * `[uuid, overrides]`) in order.
 */
export function canvasState(version = 0, shapes = [], { name = null } = {}) {
  return {
    version,
    rootUUID: ROOT,
    fragments: [
      { type: "change", uuid: ROOT, clsName: "Canvas", properties: { name, shapes: shapes.map(([id]) => id) } },
      ...shapes.map(([id, overrides]) => ({ type: "add", uuid: id, clsName: "Shape", properties: shapeProperties(overrides) })),
    ],
  };
}

/** The objects of a ScopeState as a plain map uuid → {clsName, properties}, for deepEqual. */
export function objectsOf(state) {
  const objects = {};
  for (const [id, object] of state.objects) objects[id] = { clsName: object.clsName, properties: { ...object.properties } };
  return objects;
}

/** The fragments adding a Shape `id` at the end of the canvas (or before `before`). */
export function addShape(id, overrides = {}, before = null) {
  return [
    { type: "add", uuid: id, clsName: "Shape", properties: overrides },
    { type: "change", uuid: ROOT, clsName: "Canvas", properties: { shapes: { insert: [id], before } } },
  ];
}

/** The fragment setting properties of Shape `id`. */
export function setShape(id, properties) {
  return [{ type: "change", uuid: id, clsName: "Shape", properties }];
}

/** The fragment taking Shape `id` out of the canvas (so it leaves the scope). */
export function removeShape(id) {
  return [{ type: "change", uuid: ROOT, clsName: "Canvas", properties: { shapes: { remove: [id] } } }];
}

/**
 * An in-memory stand-in for the gateway's change-set endpoint: applies posted sets with the
 * shared model rules, answers a repeated Idempotency-Key with its first outcome, and records
 * the `changeset` events it would broadcast (normalised fragments, `removed`, the key).
 */
export class FakeServer {
  constructor(schema, json = canvasState()) {
    this.schema = schema;
    this.state = ScopeState.fromJSON(json);
    this.events = [];
    this.outcomes = new Map();
  }
  get version() { return this.state.version; }
  post(fragments, key) {
    if (key !== undefined && this.outcomes.has(key)) return this.outcomes.get(key);
    const staged = this.state.clone();
    const result = applyChangeSet(staged, this.schema, fragments);
    let outcome;
    if (result.ok) {
      this.state = staged;
      const event = { version: staged.version, fragments: result.fragments, removed: result.removed };
      if (key !== undefined) event.idempotencyKey = key;
      this.events.push(JSON.parse(JSON.stringify(event)));
      outcome = { status: 200, version: staged.version };
    } else {
      outcome = { status: 422, replies: result.replies };
    }
    if (key !== undefined) this.outcomes.set(key, outcome);
    return outcome;
  }
  /** The state as `GET` serves it. */
  snapshot() { return this.state.toJSON(this.schema); }
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
