// jetstream.mjs — the JavaScript client of Jetstream Gateway (browsers and Node 20+).
//
// One dependency-free ES module. It keeps a local copy of one scope in sync with the gateway:
// the server's state (`confirmed`), the local change sets not yet confirmed (`pending`), and the
// view the application sees (confirmed with every pending set re-applied). Local changes show at
// once and go to the server in order, one at a time, each with a fixed Idempotency-Key; server
// events rebase the view. The algorithm is CLIENTS.md's (docs/js-client.md), the same as the
// Swift client's.
//
//   import { openScope } from "/client/jetstream.mjs";
//   const scope = await openScope("canvas-1", { create: { clsName: "Canvas" } });
//   scope.subscribe(({ fragments, removed }) => render(scope));
//   const shape = scope.add("Shape", { x: 10, y: 20 });     // visible now, sent as an operation
//
// The module has three layers, each usable alone (the tests use them directly):
//   Schema / applyChangeSet  — the model rules of MODEL.md, mirrored from JetstreamModel;
//   SyncCore                 — the pure state machine of the algorithm (no I/O, no timers);
//   Scope (openScope)        — the transport: fetch-read SSE (EventSource fallback) and POSTs.

// ---------------------------------------------------------------------------------------------
// Errors

/** The error kinds of MODEL.md; the same strings the server answers in `fragmentReplies`. */
export const ErrorKind = Object.freeze({
  malformedFragment: "malformed-fragment",
  unknownClass: "unknown-class",
  unknownObject: "unknown-object",
  classMismatch: "class-mismatch",
  duplicateAdd: "duplicate-add",
  unknownProperty: "unknown-property",
  typeMismatch: "type-mismatch",
  outOfRange: "out-of-range",
  constraintViolation: "constraint-violation",
  nullNotAllowed: "null-not-allowed",
  missingReference: "missing-reference",
  wrongClass: "wrong-class",
  unattachedAdd: "unattached-add",
  limitExceeded: "limit-exceeded",
});

class FragmentError extends Error {
  constructor(type, message, property) {
    super(message);
    this.type = type;
    this.property = property;
  }
  get reply() {
    const error = { type: this.type, message: this.message };
    if (this.property !== undefined) error.property = this.property;
    return { error };
  }
}

/**
 * A change set the server (or, for obviously bad input, the client itself) refused. Its effect
 * has already been taken out of the view when the application sees it.
 */
export class Rejection extends Error {
  constructor({ status, problem, fragments, key, local = false }) {
    const detail = problem?.detail ?? problem?.title ?? `HTTP ${status}`;
    super(`change set refused (${status}${local ? ", checked locally" : ""}): ${detail}`);
    this.name = "Rejection";
    this.status = status;
    this.problem = problem ?? null;
    this.type = problem?.type ?? null;
    this.fragmentReplies = problem?.fragmentReplies ?? [];
    this.fragments = fragments;
    this.idempotencyKey = key;
    this.local = local;
  }
  /** Every reason in one line per failing fragment: "x: -1 is below min 0.0". */
  get reasons() {
    const lines = [];
    this.fragmentReplies.forEach((reply) => {
      if (reply?.error) {
        const { property, message, type } = reply.error;
        lines.push(`${property ? property + ": " : ""}${message ?? type}`);
      }
    });
    for (const error of this.problem?.errors ?? []) lines.push(`${error.path}: ${error.message ?? error.type}`);
    if (lines.length === 0) lines.push(this.problem?.detail ?? this.message);
    return lines;
  }
}

/** A request the client could not complete (unknown scope, 401/403, a bad schema): not retried. */
export class JetstreamError extends Error {
  constructor(message, { status = 0, problem = null } = {}) {
    super(message);
    this.name = "JetstreamError";
    this.status = status;
    this.problem = problem;
    this.type = problem?.type ?? null;
  }
}

// ---------------------------------------------------------------------------------------------
// Schema: what GET /v1/schema serves, read into property checkers that mirror JetstreamModel.

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const INTEGER_BOUNDS = {
  Int8: [-128, 127], Int16: [-32768, 32767], Int32: [-2147483648, 2147483647],
  Int64: [-(2 ** 63), 2 ** 63 - 1], Int: [-(2 ** 63), 2 ** 63 - 1],
  UInt8: [0, 255], UInt16: [0, 65535], UInt32: [0, 4294967295],
  UInt64: [0, 2 ** 64 - 1], UInt: [0, 2 ** 64 - 1], Color: [0, 4294967295],
};
const FLOAT_MAX = 3.4028234663852886e38;
const PRIMITIVES = new Set(["String", "Bool", "Float", "Double", "Date", ...Object.keys(INTEGER_BOUNDS)]);

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string": return "a string";
    case "number": return "a number";
    case "boolean": return "a boolean";
    case "object": return "an object";
    default: return typeof value;
  }
}

/** A lowercase UUID, or undefined when `value` is not a UUID string. */
function wireUUID(value) {
  return typeof value === "string" && UUID_PATTERN.test(value) ? value.toLowerCase() : undefined;
}

function globMatches(pattern, text) {
  const p = [...pattern], t = [...text];
  let pi = 0, ti = 0, star = -1, mark = 0;
  while (ti < t.length) {
    if (pi < p.length && (p[pi] === "?" || p[pi] === t[ti])) { pi++; ti++; }
    else if (pi < p.length && p[pi] === "*") { star = pi++; mark = ti; }
    else if (star >= 0) { pi = star + 1; ti = ++mark; }
    else return false;
  }
  while (pi < p.length && p[pi] === "*") pi++;
  return pi === p.length;
}

/** One property of a class: its type and constraints, and a checker for JSON values. */
class Property {
  constructor(name, spec) {
    this.name = name;
    let type = spec.type;
    this.nullable = spec.nullable === true;
    if (spec.enum !== undefined) {
      this.kind = "enum";
      this.enumValues = spec.enum;
    } else {
      if (typeof type !== "string") throw new JetstreamError(`schema: property ${name} has no type`);
      if (type.endsWith("?")) { this.nullable = true; type = type.slice(0, -1); }
      if (type.startsWith("[") && type.endsWith("]")) {
        this.kind = "collection";
        this.element = Property.scalar(type.slice(1, -1));
      } else {
        Object.assign(this, Property.scalar(type));
      }
    }
    this.min = spec.min; this.max = spec.max; this.maxLength = spec.maxLength; this.maxCount = spec.maxCount;
    this.pattern = spec.pattern === undefined ? undefined : new RegExp(`^(?:${spec.pattern})$`, "u");
    this.patternText = spec.pattern;
    if (spec.default !== undefined) this.defaultValue = spec.default;
    else if (this.nullable && this.kind !== "collection") this.defaultValue = null;
    else this.defaultValue = this.zero();
  }

  static scalar(type) {
    if (type === "String") return { kind: "string", typeName: type };
    if (type === "Bool") return { kind: "bool", typeName: type };
    if (type === "Float" || type === "Double" || type === "Date") return { kind: "number", typeName: type };
    if (INTEGER_BOUNDS[type]) return { kind: "integer", typeName: type, bounds: INTEGER_BOUNDS[type] };
    return { kind: "reference", typeName: type, className: type };
  }

  zero() {
    switch (this.kind) {
      case "collection": return [];
      case "string": return "";
      case "bool": return false;
      case "enum": return this.enumValues[0];
      case "reference": return null;
      default: return 0;
    }
  }

  get isReference() { return this.kind === "reference" || (this.kind === "collection" && this.element.kind === "reference"); }
  get referencedClass() { return this.kind === "collection" ? this.element.className : this.className; }

  /**
   * The value to store for `json`, or a thrown FragmentError. `current` is the value at this point
   * of the change set for a `change` (operations resolve against it); undefined in an `add`.
   */
  validate(json, current, classOf) {
    if (json === null) {
      if (this.kind === "collection") throw new FragmentError(ErrorKind.nullNotAllowed, "a collection is never null; send [] to empty it", this.name);
      if (!this.nullable) throw new FragmentError(ErrorKind.nullNotAllowed, `'${this.name}' is not nullable`, this.name);
      return null;
    }
    if (this.kind !== "collection") return this.scalar(json, this, this.name, classOf);
    if (json !== null && typeof json === "object" && !Array.isArray(json)) return this.operation(json, current, classOf);
    if (!Array.isArray(json)) throw new FragmentError(ErrorKind.typeMismatch, `expected an array, got ${describe(json)}`, this.name);
    if (this.maxCount !== undefined && json.length > this.maxCount) {
      throw new FragmentError(ErrorKind.constraintViolation, `${json.length} elements exceed maxCount ${this.maxCount}`, this.name);
    }
    return json.map((item, index) => {
      const label = `${this.name}[${index}]`;
      if (item === null && this.element.kind !== "reference") throw new FragmentError(ErrorKind.nullNotAllowed, "collection elements are never null", label);
      return this.scalar(item, this.element, label, classOf);
    });
  }

  /** An operations object ({insert, before, remove}) resolved against `current`. */
  operation(json, current, classOf) {
    if (current === undefined) {
      throw new FragmentError(ErrorKind.typeMismatch, "operations (insert/remove) are only allowed in a change; an add gives the whole array", this.name);
    }
    let insert, remove, before = null;
    for (const [key, value] of Object.entries(json)) {
      if (key === "insert" || key === "remove") {
        if (!Array.isArray(value)) throw new FragmentError(ErrorKind.typeMismatch, `'${key}' must be an array, got ${describe(value)}`, this.name);
        if (key === "insert") insert = value; else remove = value;
      } else if (key === "before") {
        before = value;
      } else {
        throw new FragmentError(ErrorKind.typeMismatch, `unknown key '${key}' in an operations object (allowed: remove, insert, before)`, this.name);
      }
    }
    if (insert === undefined && remove === undefined) {
      throw new FragmentError(ErrorKind.typeMismatch, "an operations object needs 'remove' or 'insert' (or both)", this.name);
    }
    const check = (item, label, inserted) => {
      if (item === null) throw new FragmentError(ErrorKind.nullNotAllowed, `${label}: collection elements are never null`, this.name);
      if (this.element.kind === "reference" && !inserted) {
        if (typeof item !== "string") throw new FragmentError(ErrorKind.typeMismatch, `${label}: expected a UUID string, got ${describe(item)}`, this.name);
        const uuid = wireUUID(item);
        if (uuid === undefined) throw new FragmentError(ErrorKind.typeMismatch, `${label}: '${item}' is not a UUID`, this.name);
        return uuid;
      }
      try {
        return this.scalar(item, this.element, this.name, classOf);
      } catch (error) {
        throw new FragmentError(error.type, `${label}: ${error.message}`, this.name);
      }
    };
    const removed = (remove ?? []).map((item, i) => check(item, `remove[${i}]`, false));
    const inserted = (insert ?? []).map((item, i) => check(item, `insert[${i}]`, true));
    const anchor = before === null ? null : check(before, "before", false);
    const result = applyOperation(current, { insert: inserted, remove: removed, before: anchor });
    if (this.maxCount !== undefined && result.length > this.maxCount) {
      throw new FragmentError(ErrorKind.constraintViolation, `the operations leave ${result.length} elements; maxCount is ${this.maxCount}`, this.name);
    }
    return result;
  }

  scalar(json, type, label, classOf) {
    const mismatch = (expected) => new FragmentError(ErrorKind.typeMismatch, `expected ${expected}, got ${describe(json)}`, label);
    switch (type.kind) {
      case "string": {
        if (typeof json !== "string") throw mismatch("a string");
        const length = [...json].length;
        if (this.maxLength !== undefined && length > this.maxLength) {
          throw new FragmentError(ErrorKind.constraintViolation, `${length} characters exceed maxLength ${this.maxLength}`, label);
        }
        if (this.pattern && !this.pattern.test(json)) {
          throw new FragmentError(ErrorKind.constraintViolation, `'${json}' does not match pattern ${this.patternText}`, label);
        }
        return json;
      }
      case "bool":
        if (typeof json !== "boolean") throw mismatch("a boolean");
        return json;
      case "number": {
        if (typeof json !== "number") throw mismatch("a number");
        if (!Number.isFinite(json) || (type.typeName === "Float" && (Math.abs(json) > FLOAT_MAX || (json !== 0 && Math.fround(json) === 0)))) {
          throw new FragmentError(ErrorKind.outOfRange, `${json} does not fit a ${type.typeName}`, label);
        }
        this.checkBounds(json, label);
        return json;
      }
      case "integer": {
        if (typeof json !== "number" || !Number.isInteger(json)) {
          throw new FragmentError(ErrorKind.typeMismatch, `expected an integer, got ${describe(json)}${typeof json === "number" ? ` (${json})` : ""}`, label);
        }
        const [low, high] = type.bounds;
        if (json < low || json > high) throw new FragmentError(ErrorKind.outOfRange, `${json} does not fit a ${type.typeName} (${low}…${high})`, label);
        this.checkBounds(json, label);
        return json;
      }
      case "enum": {
        const strings = typeof this.enumValues[0] === "string";
        if (strings ? typeof json !== "string" : !(typeof json === "number" && Number.isInteger(json))) {
          throw new FragmentError(ErrorKind.typeMismatch, `expected one of the enum's ${strings ? "strings" : "integers"}, got ${describe(json)}`, label);
        }
        if (!this.enumValues.includes(json)) {
          throw new FragmentError(ErrorKind.constraintViolation, `${JSON.stringify(json)} is not one of [${this.enumValues.join(", ")}]`, label);
        }
        return json;
      }
      case "reference": {
        if (typeof json !== "string") throw mismatch("a UUID string");
        const uuid = wireUUID(json);
        if (uuid === undefined) throw new FragmentError(ErrorKind.typeMismatch, `'${json}' is not a UUID`, label);
        const target = classOf(uuid);
        if (target === undefined) throw new FragmentError(ErrorKind.missingReference, `no object ${uuid} in the scope or the change set`, label);
        if (!target.isKindOf(type.className)) throw new FragmentError(ErrorKind.wrongClass, `${uuid} is a ${target.name}, expected a ${type.className}`, label);
        return uuid;
      }
      default:
        throw mismatch("a scalar");
    }
  }

  checkBounds(value, label) {
    if (this.min !== undefined && value < this.min) throw new FragmentError(ErrorKind.outOfRange, `${value} is below min ${this.min}`, label);
    if (this.max !== undefined && value > this.max) throw new FragmentError(ErrorKind.outOfRange, `${value} is above max ${this.max}`, label);
  }
}

/**
 * Applies a collection operation to an array (HTTP-API.md, "Collection operations"): every
 * occurrence of each removed value leaves; then the inserted values, in order and each once, go
 * before the first occurrence of `before`, or at the end when it is null or gone. An inserted
 * value already present is moved.
 *
 *   applyOperation(["a", "b", "c"], { insert: ["c"], before: "a" })   // ["c", "a", "b"]
 */
export function applyOperation(elements, { insert = [], remove = [], before = null } = {}) {
  const inserted = [...new Set(insert)];
  const leaving = new Set([...inserted, ...remove]);
  const result = leaving.size === 0 ? elements.slice() : elements.filter((element) => !leaving.has(element));
  if (inserted.length === 0) return result;
  const anchor = before === null ? -1 : result.indexOf(before);
  result.splice(anchor < 0 ? result.length : anchor, 0, ...inserted);
  return result;
}

/** A model class: its properties (inherited ones first) and its ancestors. */
class ModelClass {
  constructor(name) {
    this.name = name;
    this.properties = new Map();
    this.ancestors = [];
    this.references = [];
  }
  isKindOf(name) { return this.name === name || this.ancestors.includes(name); }
}

/**
 * The model schema as `GET /v1/schema` serves it: classes with typed properties and the scope
 * rules. The client checks local changes with it before applying them optimistically.
 *
 *   const schema = new Schema(await (await fetch("/v1/schema")).json());
 *   schema.rootClass("canvas-1").name   // "Canvas"
 */
export class Schema {
  constructor(json) {
    if (!json || typeof json.models !== "object") throw new JetstreamError("schema: expected {models, scopes}");
    this.json = json;
    this.classes = new Map();
    for (const name of Object.keys(json.models)) this.classes.set(name, new ModelClass(name));
    for (const name of Object.keys(json.models)) {
      const modelClass = this.classes.get(name);
      const chain = [];
      for (let next = name; next !== undefined; next = json.models[next]?.extends) {
        if (chain.includes(next) || !json.models[next]) break;
        chain.push(next);
      }
      modelClass.ancestors = chain.slice(1);
      for (const ancestor of chain.reverse()) {
        for (const [property, propertySpec] of Object.entries(json.models[ancestor])) {
          if (property !== "extends") modelClass.properties.set(property, new Property(property, propertySpec));
        }
      }
      modelClass.references = [...modelClass.properties.values()].filter((p) => p.isReference);
    }
    this.subclasses = new Map();
    for (const modelClass of this.classes.values()) {
      for (const ancestor of modelClass.ancestors) {
        if (!this.subclasses.has(ancestor)) this.subclasses.set(ancestor, []);
        this.subclasses.get(ancestor).push(modelClass.name);
      }
    }
    this.scopes = Object.entries(json.scopes ?? {}).map(([pattern, rule]) => ({ pattern, root: rule.root }));
    this.reachable = new Map();
  }

  /** The class named `name`, or undefined. */
  modelClass(name) { return this.classes.get(name); }

  /** The root class of the first scope rule whose glob matches `scopeName`. */
  rootClass(scopeName) {
    const rule = this.scopes.find((candidate) => globMatches(candidate.pattern, scopeName));
    return rule ? this.classes.get(rule.root) : undefined;
  }

  /** Whether a scope rooted at `root` may hold a `className` (reachable through references). */
  allows(className, root) {
    if (!this.reachable.has(root.name)) {
      const found = new Set([root.name]);
      const queue = [root.name];
      while (queue.length > 0) {
        for (const property of this.classes.get(queue.pop()).references) {
          const target = property.referencedClass;
          for (const candidate of [target, ...(this.subclasses.get(target) ?? [])]) {
            if (!found.has(candidate)) { found.add(candidate); queue.push(candidate); }
          }
        }
      }
      this.reachable.set(root.name, found);
    }
    return this.reachable.get(root.name).has(className);
  }
}

// ---------------------------------------------------------------------------------------------
// State and the application of change sets (MODEL.md, "Applying a change set").

/**
 * A scope's objects: uuid → {uuid, clsName, properties}. Records are never changed in place (a
 * write replaces the record), so `clone()` is a shallow copy of the map and a clone can be
 * thrown away when a change set is refused.
 */
export class ScopeState {
  constructor(rootUUID, version = 0, objects = new Map()) {
    this.rootUUID = rootUUID;
    this.version = version;
    this.objects = objects;
  }

  /** A state from a snapshot, a reset or `GET /v1/scopes/{name}`: `{version, rootUUID, fragments}`. */
  static fromJSON(json) {
    const state = new ScopeState(json.rootUUID, json.version);
    for (const fragment of json.fragments) {
      state.objects.set(fragment.uuid, { uuid: fragment.uuid, clsName: fragment.clsName, properties: { ...fragment.properties } });
    }
    return state;
  }

  clone() { return new ScopeState(this.rootUUID, this.version, new Map(this.objects)); }

  /** A state holding only the objects of `uuids` that this one has. */
  subset(uuids) {
    const objects = new Map();
    for (const uuid of uuids) { const object = this.objects.get(uuid); if (object) objects.set(uuid, object); }
    return new ScopeState(this.rootUUID, this.version, objects);
  }

  get(uuid) { return this.objects.get(uuid); }

  /** Applies a change set the server accepted (normalised fragments and `removed`), in place. */
  applyAccepted({ version, fragments, removed = [] }) {
    for (const fragment of fragments) {
      const existing = this.objects.get(fragment.uuid);
      const properties = fragment.type === "add" || !existing ? { ...fragment.properties } : { ...existing.properties, ...fragment.properties };
      this.objects.set(fragment.uuid, { uuid: fragment.uuid, clsName: fragment.clsName, properties });
    }
    for (const uuid of removed) this.objects.delete(uuid);
    if (version !== undefined) this.version = version;
  }

  /** The UUIDs of every object reachable from the root. */
  reachable(schema) {
    const seen = new Set();
    const stack = [this.rootUUID];
    while (stack.length > 0) {
      const uuid = stack.pop();
      if (seen.has(uuid)) continue;
      const object = this.objects.get(uuid);
      if (!object) continue;
      seen.add(uuid);
      for (const property of schema.modelClass(object.clsName)?.references ?? []) {
        const value = object.properties[property.name];
        if (Array.isArray(value)) { for (const target of value) if (!seen.has(target)) stack.push(target); }
        else if (value) stack.push(value);
      }
    }
    return seen;
  }

  /** The state as `GET` serves it: root first as a change, the others as adds, in pre-order. */
  toJSON(schema) {
    const fragments = [];
    const seen = new Set();
    const visit = (uuid) => {
      if (seen.has(uuid) || !this.objects.has(uuid)) return;
      seen.add(uuid);
      const object = this.objects.get(uuid);
      fragments.push({ type: uuid === this.rootUUID ? "change" : "add", uuid, clsName: object.clsName, properties: { ...object.properties } });
      for (const property of schema.modelClass(object.clsName)?.references ?? []) {
        const value = object.properties[property.name];
        for (const target of Array.isArray(value) ? value : value ? [value] : []) visit(target);
      }
    };
    visit(this.rootUUID);
    return { version: this.version, rootUUID: this.rootUUID, fragments };
  }
}

function parseFragment(json) {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new FragmentError(ErrorKind.malformedFragment, `a fragment must be an object, got ${describe(json)}`);
  }
  for (const key of Object.keys(json)) {
    if (!["type", "uuid", "clsName", "properties"].includes(key)) throw new FragmentError(ErrorKind.malformedFragment, `unknown fragment key '${key}'`);
  }
  if (json.type === undefined) throw new FragmentError(ErrorKind.malformedFragment, "the fragment has no 'type'");
  if (json.type !== "add" && json.type !== "change") throw new FragmentError(ErrorKind.malformedFragment, `'type' must be "add" or "change", got ${JSON.stringify(json.type)}`);
  if (json.uuid === undefined) throw new FragmentError(ErrorKind.malformedFragment, "the fragment has no 'uuid'");
  const uuid = wireUUID(json.uuid);
  if (uuid === undefined) throw new FragmentError(ErrorKind.malformedFragment, `'uuid' must be a UUID string, got ${JSON.stringify(json.uuid)}`);
  if (json.clsName === undefined) throw new FragmentError(ErrorKind.malformedFragment, "the fragment has no 'clsName'");
  if (typeof json.clsName !== "string" || json.clsName === "") throw new FragmentError(ErrorKind.malformedFragment, "'clsName' must be a non-empty string");
  const properties = json.properties ?? {};
  if (properties === null || typeof properties !== "object" || Array.isArray(properties)) {
    throw new FragmentError(ErrorKind.malformedFragment, `'properties' must be an object, got ${describe(properties)}`);
  }
  return { type: json.type, uuid, clsName: json.clsName, properties };
}

/**
 * Applies a change set to `state` **in place**, all or nothing, with the server's rules: adds
 * first, then properties in order (collection operations resolved where they stand), then
 * objects no longer reachable from the root leave. Returns `{ok: true, fragments, removed,
 * previous}` (normalised fragments; `previous`: uuid → the record before the set, undefined for
 * an added one) or `{ok: false, replies}` with one `{}` or `{error: {type, message, property}}`
 * per fragment — then `state` is as it was.
 *
 *   const outcome = applyChangeSet(state, schema, [{ type: "change", uuid, clsName: "Shape", properties: { x: 5 } }]);
 */
export function applyChangeSet(state, schema, fragments) {
  // Every write goes through the journal, so a refusal can put the state back as it was.
  const previous = new Map();
  const write = (uuid, record) => {
    if (!previous.has(uuid)) previous.set(uuid, state.objects.get(uuid));
    if (record === undefined) state.objects.delete(uuid); else state.objects.set(uuid, record);
  };
  const root = state.objects.get(state.rootUUID);
  const rootClass = root && schema.modelClass(root.clsName);
  const errors = new Array(fragments.length).fill(undefined);
  const parsed = new Array(fragments.length);
  const normalised = new Array(fragments.length);
  const addIndex = new Map();
  let lostReference = false;

  fragments.forEach((json, index) => {
    try {
      const fragment = parseFragment(json);
      parsed[index] = fragment;
      if (fragment.type !== "add") return;
      const modelClass = schema.modelClass(fragment.clsName);
      if (!modelClass) throw new FragmentError(ErrorKind.unknownClass, `the schema has no class ${fragment.clsName}`);
      if (!rootClass || !schema.allows(modelClass.name, rootClass)) {
        throw new FragmentError(ErrorKind.unknownClass, `a scope rooted at ${rootClass?.name} cannot hold a ${modelClass.name}`);
      }
      if (addIndex.has(fragment.uuid)) throw new FragmentError(ErrorKind.duplicateAdd, `${fragment.uuid} is already added by fragment ${addIndex.get(fragment.uuid)}`);
      if (state.objects.has(fragment.uuid)) throw new FragmentError(ErrorKind.duplicateAdd, `an object ${fragment.uuid} already exists`);
      const properties = {};
      for (const property of modelClass.properties.values()) properties[property.name] = cloneValue(property.defaultValue);
      write(fragment.uuid, { uuid: fragment.uuid, clsName: modelClass.name, properties });
      addIndex.set(fragment.uuid, index);
    } catch (error) {
      if (!(error instanceof FragmentError)) throw error;
      errors[index] = error;
    }
  });

  const classOf = (uuid) => { const object = state.objects.get(uuid); return object && schema.modelClass(object.clsName); };
  fragments.forEach((_, index) => {
    if (errors[index]) return;
    const fragment = parsed[index];
    try {
      const object = state.objects.get(fragment.uuid);
      if (!object) throw new FragmentError(ErrorKind.unknownObject, `no object ${fragment.uuid} in the scope or the change set`);
      if (fragment.type === "change" && addIndex.has(fragment.uuid) && addIndex.get(fragment.uuid) > index) {
        throw new FragmentError(ErrorKind.unknownObject, `${fragment.uuid} is added later in the change set (fragment ${addIndex.get(fragment.uuid)})`);
      }
      const modelClass = schema.modelClass(object.clsName);
      if (modelClass.name !== fragment.clsName) throw new FragmentError(ErrorKind.classMismatch, `${fragment.uuid} is a ${modelClass.name}, not a ${fragment.clsName}`);
      const updates = {};
      for (const [name, value] of Object.entries(fragment.properties)) {
        const property = modelClass.properties.get(name);
        if (!property) throw new FragmentError(ErrorKind.unknownProperty, `${modelClass.name} has no property '${name}'`, name);
        const current = fragment.type === "change" ? object.properties[name] : undefined;
        updates[name] = property.validate(value, current, classOf);
      }
      const properties = { ...object.properties };
      const changed = {};
      for (const property of modelClass.properties.values()) {
        if (!(property.name in updates)) continue;
        const old = properties[property.name];
        const value = updates[property.name];
        if (property.isReference && lostReferenceBetween(old, value)) lostReference = true;
        properties[property.name] = value;
        changed[property.name] = cloneValue(value);
      }
      write(fragment.uuid, { uuid: fragment.uuid, clsName: modelClass.name, properties });
      normalised[index] = {
        type: fragment.type, uuid: fragment.uuid, clsName: modelClass.name,
        properties: fragment.type === "add" ? cloneProperties(properties) : changed,
      };
    } catch (error) {
      if (!(error instanceof FragmentError)) throw error;
      errors[index] = error;
    }
  });
  const rejection = () => {
    for (const [uuid, record] of previous) {
      if (record === undefined) state.objects.delete(uuid); else state.objects.set(uuid, record);
    }
    return { ok: false, replies: errors.map((error) => (error ? error.reply : {})) };
  };
  if (errors.some(Boolean)) return rejection();

  let removed = [];
  if (lostReference || addIndex.size > 0) {
    const reachable = state.reachable(schema);
    for (const [uuid, index] of addIndex) {
      if (!reachable.has(uuid)) errors[index] = new FragmentError(ErrorKind.unattachedAdd, `the added ${state.objects.get(uuid).clsName} is not reachable from the root`);
    }
    if (errors.some(Boolean)) return rejection();
    if (lostReference) {
      for (const uuid of state.objects.keys()) if (!reachable.has(uuid)) removed.push(uuid);
      for (const uuid of removed) write(uuid, undefined);
      removed.sort();
    }
  }
  state.version += 1;
  return { ok: true, fragments: normalised, removed, previous };
}

function lostReferenceBetween(old, value) {
  if (Array.isArray(old)) {
    if (old.length === 0) return false;
    const kept = new Set(value);
    return old.some((uuid) => !kept.has(uuid)) || value.length < old.length;
  }
  return old !== null && old !== undefined && old !== value;
}

function cloneValue(value) { return Array.isArray(value) ? value.slice() : value; }
function cloneProperties(properties) {
  const copy = {};
  for (const [name, value] of Object.entries(properties)) copy[name] = cloneValue(value);
  return copy;
}

function sameProperties(a, b) {
  if (a === b) return true;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    const x = a[key], y = b[key];
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length || x.some((item, i) => item !== y[i])) return false;
    } else if (x !== y) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// SyncCore: confirmed state + pending sets (CLIENTS.md, "The algorithm"). Pure: no I/O, no clock.

/**
 * The client's state machine. `confirmed` is the server's state at `version`; `pending` holds
 * local change sets in creation order; `view` is confirmed with every pending set re-applied.
 * Every method returns the notification for subscribers (or null when nothing visible changed):
 * `{version, local, fragments, removed}` where `fragments` are the objects whose view changed
 * (as `add`/`change` with all their properties) and `removed` the UUIDs that left the view.
 *
 *   const core = new SyncCore(schema, { clientId: "tab-1" });
 *   core.load(await (await fetch("/v1/scopes/canvas-1")).json());
 *   const { set } = core.local([{ type: "change", uuid, clsName: "Shape", properties: { x: 1 } }]);
 *   // …POST set.fragments with Idempotency-Key set.key…, then core.accepted(set, 42)
 */
export class SyncCore {
  constructor(schema, { clientId = randomUUID() } = {}) {
    this.schema = schema;
    this.clientId = clientId;
    this.sequence = 0;
    this.confirmed = null;
    this.view = null;
    this.pending = [];
    /** UUIDs the pending sets changed in the current view: a rebase may change them back. */
    this.pendingTouched = new Set();
    /** Whether every pending set applied at the last rebuild (local() adds only sets that apply). */
    this.allPendingApplied = true;
  }

  get version() { return this.confirmed?.version ?? 0; }
  get rootUUID() { return this.confirmed?.rootUUID; }

  /** Starts from a state (`GET`, snapshot). */
  load(json) {
    const before = this.view;
    this.confirmed = ScopeState.fromJSON(json);
    return this.recompute(before, { version: this.version, local: false }, null);
  }

  /**
   * Rule 1: a local change set, checked against the view and applied to it at once. Returns
   * `{set, notification}`; throws a `Rejection` (local: true) when the set cannot apply.
   */
  local(fragments) {
    // The view is applied to in place; while nothing is pending it is `confirmed` itself.
    if (this.view === this.confirmed) this.view = this.confirmed.clone();
    const outcome = applyChangeSet(this.view, this.schema, fragments);
    if (!outcome.ok) {
      throw new Rejection({
        status: 422, local: true, fragments,
        problem: { type: "/problems/invalid-change-set", title: "Change set rejected", status: 422,
                   detail: "checked locally against the schema; nothing was sent", fragmentReplies: outcome.replies },
      });
    }
    const set = { key: `${this.clientId}:${++this.sequence}`, fragments, status: "queued", version: undefined };
    this.pending.push(set);
    this.view.version = this.version;
    const before = new ScopeState(this.rootUUID, this.version, new Map([...outcome.previous].filter(([, record]) => record)));
    const touched = touchedBy([outcome]);
    for (const uuid of touched) this.pendingTouched.add(uuid);
    return { set, notification: this.describe(before, touched, { version: this.version, local: true }) };
  }

  /** The next set to send, when none is in flight. */
  nextToSend() {
    if (this.pending.some((set) => set.status === "inflight")) return undefined;
    return this.pending.find((set) => set.status === "queued");
  }

  /** Rule 3: accepted at `version`; kept until the stream's confirmed state reaches it. */
  accepted(set, version) {
    set.status = "accepted";
    set.version = version;
    return version <= this.version ? this.drop(set) : null;
  }

  /** Rule 4: refused by the server; its effect leaves the view. */
  rejected(set) { return this.drop(set); }

  /** Rule 5: back to the queue (network error, 5xx), to be sent again with the same key. */
  retry(set) { if (set.status === "inflight") set.status = "queued"; }

  /**
   * Rules 6 and 7: a `changeset` event. Returns `{gap: true}` when it is ahead of `version + 1`
   * (the caller reconnects), null for one already applied, else the notification.
   */
  event(event) {
    if (event.version <= this.version) return null;
    if (event.version > this.version + 1) return { gap: true };
    const touched = new Set([...event.fragments.map((f) => f.uuid), ...(event.removed ?? [])]);
    const info = { version: event.version, local: false };
    const own = event.idempotencyKey;
    if (this.view !== this.confirmed && this.independentOfPending(event, touched, own)) {
      // The event changes only values of objects the pending sets neither wrote nor name, and
      // every one of them applies: re-applying them would give the view plus the event, so apply
      // it to both and skip the rebuild (a drag keeps a set pending while others' edits stream in).
      const before = this.view.subset(touched);
      this.confirmed.applyAccepted(event);
      this.view.applyAccepted(event);
      return this.describe(before, touched, info);
    }
    // Without pending sets the view is `confirmed` itself, changed in place below: keep the
    // records the event replaces (records are never changed in place) to tell what changed.
    const before = this.view === this.confirmed ? this.confirmed.subset(touched) : this.view;
    this.confirmed.applyAccepted(event);
    this.pending = this.pending.filter((set) => set.key !== own && !(set.status === "accepted" && set.version <= event.version));
    return this.recompute(before, info, touched);
  }

  /**
   * Whether an event leaves every pending set as it is and the view's reachability alone: it
   * removes nothing and writes no reference (what stays in a scope depends on every path to an
   * object, not only on the objects an event touches); none of the pending sets is its own echo
   * or accepted; all applied at the last rebuild; none wrote or names a touched object.
   */
  independentOfPending(event, touched, key) {
    if (!this.allPendingApplied || (event.removed?.length ?? 0) > 0) return false;
    for (const fragment of event.fragments) {
      const references = this.schema.modelClass(fragment.clsName)?.references;
      if (!references || references.some((property) => property.name in fragment.properties)) return false;
    }
    for (const set of this.pending) {
      if (set.key === key || set.status === "accepted") return false;
      set.uuids ??= uuidsIn(set.fragments);
      for (const uuid of touched) if (set.uuids.has(uuid) || this.pendingTouched.has(uuid)) return false;
    }
    return true;
  }

  /** Rule 8: a `reset` (or snapshot): new confirmed state; every unacknowledged set is sent again. */
  reset(json) {
    const before = this.view;
    this.confirmed = ScopeState.fromJSON(json);
    this.pending = this.pending.filter((set) => !(set.status === "accepted" && set.version <= this.version));
    for (const set of this.pending) if (set.status === "accepted") set.status = "queued";
    return this.recompute(before, { version: this.version, local: false }, null);
  }

  drop(set) {
    if (!this.pending.includes(set)) return null;
    const before = this.view;
    this.pending = this.pending.filter((candidate) => candidate !== set);
    return this.recompute(before, { version: this.version, local: false }, new Set());
  }

  /**
   * The view rebuilt: confirmed, then every pending set that still applies, in order. What may
   * have changed: `touched` (null: everything), and what pending sets touched before and now.
   */
  recompute(before, info, touched) {
    let view = this.confirmed;
    const outcomes = [];
    if (this.pending.length > 0) {
      view = this.confirmed.clone();
      for (const set of this.pending) {
        const outcome = applyChangeSet(view, this.schema, set.fragments);
        // A set that no longer applies stays pending, invisible, until the server answers it.
        if (outcome.ok) outcomes.push(outcome);
      }
      this.allPendingApplied = outcomes.length === this.pending.length;
      view.version = this.confirmed.version;
    }
    this.view = view;
    const nowTouched = touchedBy(outcomes);
    let candidates;
    if (before === null || touched === null) {
      candidates = new Set([...(before?.objects.keys() ?? []), ...view.objects.keys()]);
    } else {
      candidates = new Set([...touched, ...this.pendingTouched, ...nowTouched]);
    }
    this.pendingTouched = nowTouched;
    return this.describe(before, candidates, info);
  }

  /** The notification for what changed among `candidates` between `before` and the view. */
  describe(before, candidates, info) {
    const fragments = [];
    const removed = [];
    for (const uuid of candidates) {
      const now = this.view.objects.get(uuid);
      const then = before?.objects.get(uuid);
      if (now === undefined) { if (then !== undefined) removed.push(uuid); continue; }
      if (then !== undefined && (then === now || (then.clsName === now.clsName && sameProperties(then.properties, now.properties)))) continue;
      fragments.push({ type: then === undefined ? "add" : "change", uuid, clsName: now.clsName, properties: cloneProperties(now.properties) });
    }
    return { ...info, fragments, removed };
  }
}

/** Every UUID a list of fragments writes or names (lowercased), for `independentOfPending`. */
function uuidsIn(fragments) {
  const found = new Set();
  const visit = (value) => {
    if (typeof value === "string") { const uuid = wireUUID(value); if (uuid) found.add(uuid); }
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  visit(fragments);
  return found;
}

function touchedBy(outcomes) {
  const touched = new Set();
  for (const outcome of outcomes) {
    for (const fragment of outcome.fragments) touched.add(fragment.uuid);
    for (const uuid of outcome.removed) touched.add(uuid);
  }
  return touched;
}

// ---------------------------------------------------------------------------------------------
// Backoff and the SSE parser

/**
 * Exponential backoff with full jitter (CLIENTS.md rule 7): a random delay in
 * [0, min(max, initial × 2^attempt)) milliseconds.
 *
 *   backoffDelay(0)   // 0…500 ms;   backoffDelay(10)  // 0…30 000 ms
 */
export function backoffDelay(attempt, { initial = 500, max = 30000 } = {}, random = Math.random) {
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/**
 * A resumable parser of `text/event-stream` (the WHATWG rules): feed it text as it arrives; it
 * calls `onEvent({type, id, data})` per complete event and `onComment()` per comment line.
 */
export class SSEParser {
  constructor(onEvent, onComment = () => {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.buffer = "";
    this.reset();
  }
  reset() { this.type = ""; this.data = []; this.id = undefined; }
  feed(text) {
    const buffer = this.buffer + text;
    const newline = /\r\n|\r|\n/g;
    let start = 0;
    // A long line arrives in many pieces: search only what was not searched before (less one
    // character, which may be a \r waiting for its \n).
    newline.lastIndex = Math.max(0, this.buffer.length - 1);
    for (let match = newline.exec(buffer); match !== null; match = newline.exec(buffer)) {
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (match[0] === "\r" && match.index + 1 === buffer.length) break;
      this.line(buffer.slice(start, match.index));
      start = match.index + match[0].length;
    }
    this.buffer = buffer.slice(start);
  }
  line(line) {
    if (line === "") {
      if (this.data.length > 0 || this.type !== "") {
        this.onEvent({ type: this.type || "message", id: this.id, data: this.data.join("\n") });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) { this.onComment(line.slice(1)); return; }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
  }
}

// ---------------------------------------------------------------------------------------------
// Scope: the transport around SyncCore.

function randomUUID() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  const bytes = new Uint8Array(16);
  if (globalThis.crypto?.getRandomValues) globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

async function problemOf(response) {
  try { return await response.json(); } catch { return { status: response.status, title: response.statusText }; }
}

/** Statuses after which a change set is refused for good (rule 4); others are retried (rule 5). */
const FINAL_STATUSES = new Set([400, 403, 404, 409, 412, 413, 415, 422]);

/**
 * Opens a scope: loads the schema and the scope's state, then follows its event stream and
 * sends local changes. Resolves once the state is loaded (the stream connects in the background;
 * see `status`). Fails with a `JetstreamError` for an unknown scope (unless `create` is given),
 * a scope name no schema rule admits, or 401/403.
 *
 * Options: `baseURL` (default "": this origin), `token` (a string or a function, possibly async,
 * called with `{refresh}`), `create` (`{clsName, properties}`: PUT the scope when it is missing),
 * `heartbeatInterval` (seconds, default 15: the stream is dropped after two silent intervals),
 * `backoff` (`{initial, max}` ms, default 500 / 30 000), `transport` ("auto" | "fetch" |
 * "eventsource"), `clientId` (the prefix of Idempotency-Keys), `fetch` (an implementation).
 */
export async function openScope(name, options = {}) {
  const scope = new Scope(name, options);
  await scope.open();
  return scope;
}

/** One synced scope; made by `openScope`. */
export class Scope {
  constructor(name, options) {
    this.name = name;
    this.options = options;
    this.baseURL = (options.baseURL ?? "").replace(/\/$/, "");
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.listeners = new Set();
    this.statusListeners = new Set();
    this.rejectionListeners = new Set();
    this.status = "connecting";
    this.closed = false;
    this.abort = new AbortController();
    this.streamAttempt = 0;
    this.sendAttempt = 0;
    this.waiters = new Map();
    this.wake = null;
    this.token = undefined;
  }

  // -- public API ------------------------------------------------------------------------------

  /** The version of the server state the view is based on. */
  get version() { return this.core.version; }
  /** The root object's UUID. */
  get rootUUID() { return this.core.rootUUID; }
  /** Local change sets not yet confirmed by the stream. */
  get pendingCount() { return this.core.pending.length; }

  /** An object of the view, as `{uuid, clsName, properties}` (a copy), or undefined. */
  get(uuid) {
    const object = this.core.view.get(wireUUID(uuid) ?? uuid);
    return object && { uuid: object.uuid, clsName: object.clsName, properties: cloneProperties(object.properties) };
  }

  /** The view as `GET` would serve it: `{version, rootUUID, fragments}` in pre-order. */
  snapshot() { return this.core.view.toJSON(this.core.schema); }

  /**
   * Calls `listener({version, local, fragments, removed, rejection?})` once per applied server
   * event, local change or rollback. Returns the function that unsubscribes.
   */
  subscribe(listener) { this.listeners.add(listener); return () => this.listeners.delete(listener); }

  /** Calls `listener(status)` on every status change. Returns the function that unsubscribes. */
  onStatus(listener) { this.statusListeners.add(listener); return () => this.statusListeners.delete(listener); }

  /** Calls `listener(rejection)` for every change set the server refused (already rolled back). */
  onRejected(listener) { this.rejectionListeners.add(listener); return () => this.rejectionListeners.delete(listener); }

  /**
   * Applies a change set to the view now and sends it. Resolves `{version}` when the server
   * accepts it; rejects with a `Rejection` when the server (or the local schema check) refuses
   * it — its effect is then gone from the view.
   */
  change(fragments) {
    try {
      return this.enqueue(fragments);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Adds an object and inserts it into a collection (or sets a reference) of `parent` (default:
   * the root) — `key` defaults to the parent's first property that can hold the class; `before`
   * is a UUID to insert before (default: the end). Returns the new UUID at once; a locally
   * invalid object throws a `Rejection`; a server refusal reaches `onRejected`.
   *
   *   const id = scope.add("Shape", { x: 10, y: 10, color: 0xff0000ff });
   */
  add(clsName, properties = {}, { parent = this.rootUUID, key, before = null, uuid = randomUUID() } = {}) {
    const parentObject = this.core.view.get(parent);
    if (!parentObject) throw new JetstreamError(`no object ${parent} to add to`);
    const parentClass = this.core.schema.modelClass(parentObject.clsName);
    const addedClass = this.core.schema.modelClass(clsName);
    const property = key !== undefined ? parentClass.properties.get(key)
      : [...parentClass.properties.values()].find((p) => p.isReference && addedClass?.isKindOf(p.referencedClass));
    if (!property) throw new JetstreamError(`${parentObject.clsName} has no property ${key !== undefined ? `'${key}'` : `that holds a ${clsName}`}`);
    const link = property.kind === "collection" ? { insert: [uuid], before } : uuid;
    const promise = this.enqueue([
      { type: "add", uuid, clsName, properties },
      { type: "change", uuid: parent, clsName: parentObject.clsName, properties: { [property.name]: link } },
    ]);
    promise.catch(() => {});
    return uuid;
  }

  /** Sets properties of one object. Same outcome as `change`. */
  set(uuid, properties) {
    const object = this.core.view.get(wireUUID(uuid) ?? uuid);
    if (!object) return Promise.reject(new JetstreamError(`no object ${uuid} in scope ${this.name}`));
    return this.change([{ type: "change", uuid: object.uuid, clsName: object.clsName, properties }]);
  }

  /** Removes an object from every collection or reference that holds it. Same outcome as `change`. */
  remove(uuid) {
    const target = wireUUID(uuid) ?? uuid;
    const fragments = [];
    for (const object of this.core.view.objects.values()) {
      const properties = {};
      for (const property of this.core.schema.modelClass(object.clsName)?.references ?? []) {
        const value = object.properties[property.name];
        if (Array.isArray(value) ? value.includes(target) : value === target) {
          properties[property.name] = Array.isArray(value) ? { remove: [target] } : null;
        }
      }
      if (Object.keys(properties).length > 0) fragments.push({ type: "change", uuid: object.uuid, clsName: object.clsName, properties });
    }
    if (fragments.length === 0) return Promise.reject(new JetstreamError(`no object holds ${uuid}`));
    return this.change(fragments);
  }

  /** Stops following the scope. Pending sets not yet sent are dropped. */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.eventSource?.close();
    if (typeof removeEventListener === "function") {
      removeEventListener("online", this.onlineHandler);
      removeEventListener("offline", this.offlineHandler);
    }
    this.setStatus("closed");
    for (const { reject } of this.waiters.values()) reject(new JetstreamError(`scope ${this.name} was closed`));
    this.waiters.clear();
  }

  // -- opening ---------------------------------------------------------------------------------

  async open() {
    this.token = await this.resolveToken(false);
    const schemaResponse = await this.request("GET", "/v1/schema");
    if (!schemaResponse.ok) throw new JetstreamError(`GET /v1/schema: HTTP ${schemaResponse.status}`, { status: schemaResponse.status, problem: await problemOf(schemaResponse) });
    const schema = new Schema(await schemaResponse.json());
    if (!schema.rootClass(this.name)) throw new JetstreamError(`the schema has no scope rule for '${this.name}'`);
    this.core = new SyncCore(schema, { clientId: this.options.clientId });
    const path = `/v1/scopes/${encodeURIComponent(this.name)}`;
    let response = await this.request("GET", path);
    if (response.status === 404 && this.options.create) {
      const { clsName = schema.rootClass(this.name).name, properties = {}, uuid } = this.options.create;
      const root = { clsName, properties, ...(uuid ? { uuid } : {}) };
      const created = await this.request("PUT", path, { root });
      if (created.status !== 201 && created.status !== 409) {
        throw new JetstreamError(`PUT ${path}: HTTP ${created.status}`, { status: created.status, problem: await problemOf(created) });
      }
      response = created.status === 201 ? created : await this.request("GET", path);
    }
    if (!response.ok) {
      const problem = await problemOf(response);
      throw new JetstreamError(`GET ${path}: ${problem?.detail ?? `HTTP ${response.status}`}`, { status: response.status, problem });
    }
    this.emit(this.core.load(await response.json()));
    // Back online (a browser's `online` event): retry now instead of at the end of a backoff.
    // Offline: drop the stream, so the status says so and it resumes from `version` on return.
    this.onlineHandler = () => { this.streamAttempt = 0; this.wakeStream?.(); this.kick(true); };
    this.offlineHandler = () => this.dropStream?.();
    if (typeof addEventListener === "function") {
      addEventListener("online", this.onlineHandler);
      addEventListener("offline", this.offlineHandler);
    }
    this.followStream();
    this.sendLoop();
  }

  async resolveToken(refresh) {
    const token = this.options.token;
    if (typeof token === "function") return await token({ refresh });
    return token;
  }

  request(method, path, body, headers = {}) {
    const all = { Accept: "application/json", ...headers };
    if (this.token) all.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) all["Content-Type"] = "application/json";
    return this.fetch(this.baseURL + path, { method, headers: all, body: body === undefined ? undefined : JSON.stringify(body), signal: this.abort.signal, cache: "no-store" });
  }

  // -- status and notifications ----------------------------------------------------------------

  setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    for (const listener of this.statusListeners) listener(status);
  }

  emit(notification) {
    if (!notification || notification.gap) return;
    if (!notification.local && !notification.rejection && !notification.deleted && !notification.error
        && notification.fragments.length === 0 && notification.removed.length === 0) return;
    for (const listener of this.listeners) {
      try { listener(notification); } catch (error) { console.error("jetstream: a subscriber threw", error); }
    }
  }

  /**
   * Wakes the sender: an idle sender always (a local change, a reset); one waiting out a backoff
   * only with `retryNow` (the browser came back online), so edits made while the server is
   * down do not each cause a retry.
   */
  kick(retryNow = false) {
    this.wake?.();
    if (retryNow) { this.sendAttempt = 0; this.wakeBackoff?.(); }
  }

  // -- sending (rules 2–5) ---------------------------------------------------------------------

  async sendLoop() {
    while (!this.closed) {
      const set = this.core.nextToSend();
      if (!set) { await new Promise((resolve) => { this.wake = resolve; }); this.wake = null; continue; }
      set.status = "inflight";
      let response;
      try {
        response = await this.request("POST", `/v1/scopes/${encodeURIComponent(this.name)}/changesets`,
          { fragments: set.fragments }, { "Idempotency-Key": set.key });
      } catch (error) {
        if (this.closed) return;
        this.core.retry(set);
        await this.sendBackoff(undefined);
        continue;
      }
      if (response.status === 200) {
        const body = await response.json().catch(() => ({}));
        this.sendAttempt = 0;
        this.settle(set, { version: body.version });
        this.emit(this.core.accepted(set, body.version));
      } else if (response.status === 401) {
        this.core.retry(set);
        this.token = await this.resolveToken(true).catch(() => this.token);
        await this.sendBackoff(undefined);
      } else if (FINAL_STATUSES.has(response.status)) {
        const problem = await problemOf(response);
        this.sendAttempt = 0;
        const rejection = new Rejection({ status: response.status, problem, fragments: set.fragments, key: set.key });
        const notification = this.core.rejected(set);
        this.emit({ ...(notification ?? { version: this.version, local: false, fragments: [], removed: [] }), rejection });
        for (const listener of this.rejectionListeners) listener(rejection);
        this.settle(set, undefined, rejection);
      } else {
        this.core.retry(set);
        await this.sendBackoff(response.headers.get("Retry-After"));
      }
    }
  }

  settle(set, value, error) {
    const waiter = this.waiters.get(set);
    if (!waiter) return;
    this.waiters.delete(set);
    if (error) waiter.reject(error); else waiter.resolve(value);
  }

  async sendBackoff(retryAfter) {
    const seconds = Number(retryAfter);
    const delay = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : backoffDelay(this.sendAttempt++, this.options.backoff);
    await Promise.race([sleep(delay, this.abort.signal), new Promise((resolve) => { this.wakeBackoff = resolve; })]);
    this.wakeBackoff = null;
  }

  // -- the stream (rules 6–8) ------------------------------------------------------------------

  async followStream() {
    const useEventSource = this.options.transport === "eventsource" ||
      (this.options.transport !== "fetch" && typeof ReadableStream === "undefined" && typeof EventSource === "function");
    let endedAtOnce = false;
    while (!this.closed) {
      const started = Date.now();
      let outcome;
      try {
        outcome = useEventSource ? await this.readWithEventSource() : await this.readWithFetch();
      } catch (error) {
        outcome = { retry: true, error };
      }
      if (this.closed) return;
      if (outcome.deleted) { this.deleted(); return; }
      if (outcome.fatal) { this.fail(outcome.fatal); return; }
      if (outcome.refreshToken) this.token = await this.resolveToken(true).catch(() => this.token);
      if (Date.now() - started > 60000) this.streamAttempt = 0;
      this.setStatus("reconnecting");
      // A draining server answers every new stream with `closing` at once (and a token provider
      // with no valid token left gets `auth-expired` at once): after one reconnection at once, a
      // connection that ends as fast again backs off instead of spinning.
      const spinning = outcome.immediate && endedAtOnce && Date.now() - started < 1000;
      endedAtOnce = Boolean(outcome.immediate);
      if (!outcome.immediate || spinning) {
        const delay = backoffDelay(this.streamAttempt++, this.options.backoff);
        await Promise.race([sleep(delay, this.abort.signal), new Promise((resolve) => { this.wakeStream = resolve; })]);
        this.wakeStream = null;
      }
    }
  }

  /** Handles one SSE event; returns an outcome that ends the connection, or undefined. */
  handle(type, data) {
    switch (type) {
      case "changeset": {
        const event = JSON.parse(data);
        const notification = this.core.event(event);
        if (notification?.gap) return { immediate: true };
        this.emit(notification);
        return undefined;
      }
      case "snapshot":
      case "reset":
        this.emit(this.core.reset(JSON.parse(data)));
        this.kick(true);   // rule 8: every unacknowledged set is sent again, now
        return undefined;
      case "deleted": return { deleted: true };
      case "closing": return { immediate: true };
      case "auth-expired": return { refreshToken: true, immediate: true };
      case "error": return { retry: true };
      default: return undefined;
    }
  }

  streamPath() {
    return `/v1/scopes/${encodeURIComponent(this.name)}/events`;
  }

  async readWithFetch() {
    const controller = new AbortController();
    const abortStream = () => controller.abort();
    this.dropStream = abortStream;
    this.abort.signal.addEventListener("abort", abortStream, { once: true });
    const silence = 2 * 1000 * (this.options.heartbeatInterval ?? 15);
    let watchdog;
    const arm = () => { clearTimeout(watchdog); watchdog = setTimeout(() => controller.abort(), silence); };
    try {
      const headers = { Accept: "text/event-stream", "Last-Event-ID": String(this.version) };
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      arm();
      const response = await this.fetch(this.baseURL + this.streamPath(), { headers, signal: controller.signal, cache: "no-store" });
      if (response.status === 401) return { refreshToken: true };
      if (response.status === 404) return { deleted: true };
      if (response.status === 403) return { fatal: new JetstreamError(`not allowed to read scope ${this.name}`, { status: 403, problem: await problemOf(response) }) };
      if (!response.ok || !response.body) return { retry: true };
      this.setStatus("live");
      let outcome;
      const parser = new SSEParser(({ type, data }) => { outcome ??= this.handle(type, data); });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (done) return outcome ?? { retry: true };
        parser.feed(value);
        if (outcome) { controller.abort(); return outcome; }
      }
    } finally {
      clearTimeout(watchdog);
      this.abort.signal.removeEventListener("abort", abortStream);
    }
  }

  readWithEventSource() {
    return new Promise((resolve) => {
      const query = new URLSearchParams({ lastEventId: String(this.version) });
      if (this.token) query.set("access_token", this.token);
      const base = this.baseURL || globalThis.location?.origin || "";
      const source = new EventSource(`${base}${this.streamPath()}?${query}`);
      this.eventSource = source;
      const finish = (outcome) => { source.close(); this.eventSource = null; resolve(outcome); };
      this.dropStream = () => finish({ retry: true });
      source.onopen = () => this.setStatus("live");
      source.onerror = () => finish({ retry: true });
      for (const type of ["changeset", "snapshot", "reset", "deleted", "closing", "auth-expired", "error"]) {
        source.addEventListener(type, (event) => {
          if (type === "error" && !(event instanceof MessageEvent)) return;
          const outcome = this.handle(type, event.data ?? "");
          if (outcome) finish(outcome);
        });
      }
      this.abort.signal.addEventListener("abort", () => finish({}), { once: true });
    });
  }

  deleted() {
    this.closed = true;
    this.abort.abort();
    this.setStatus("closed");
    const error = new JetstreamError(`scope ${this.name} was deleted`, { status: 404 });
    this.emit({ version: this.version, local: false, fragments: [], removed: [], deleted: true });
    for (const { reject } of this.waiters.values()) reject(error);
    this.waiters.clear();
  }

  fail(error) {
    this.closed = true;
    this.abort.abort();
    this.setStatus("closed");
    this.emit({ version: this.version, local: false, fragments: [], removed: [], error });
    for (const { reject } of this.waiters.values()) reject(error);
    this.waiters.clear();
  }

  /** Rule 1: applies locally (throwing a local `Rejection`) and queues the set for sending. */
  enqueue(fragments) {
    if (this.closed) throw new JetstreamError(`scope ${this.name} is closed`);
    const { set, notification } = this.core.local(fragments);
    const promise = new Promise((resolve, reject) => this.waiters.set(set, { resolve, reject }));
    this.emit(notification);
    this.kick();
    return promise;
  }
}
