// state.mjs — a scope's objects and the application of change sets to them.
//
// Owns: `ScopeState` (uuid → record; records are replaced, never changed in place, so a clone is
// cheap) and `applyChangeSet`, the server's rules of docs/model.md ("Applying a change set"): all
// or nothing, adds first, properties in order, unreachable objects leave, `unattached-add`. The
// same cases run here and in the Swift model (Tests/Fixtures/changeset-cases.json). Also the small
// value helpers the sync core shares (`cloneValue`, `cloneProperties`, `sameProperties`).

import { ErrorKind, FragmentError } from "./errors.mjs";
import { describe, wireUUID } from "./schema.mjs";

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
 * `checkImmutable`: refuse (`immutable`) a change to an `immutable` property of an object the set
 * did not add — what a client can know of the schema's write rules (owners and roles only the
 * server knows). Set for the client's own edits; not for a method's stub (a method may act as the
 * server) nor for what is already sent or accepted.
 *
 *   const outcome = applyChangeSet(state, schema, [{ type: "change", uuid, clsName: "Shape", properties: { x: 5 } }]);
 */
export function applyChangeSet(state, schema, fragments, { checkImmutable = false } = {}) {
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
      // A write is a value that changes: resending what the object holds passes, as on the server.
      if (checkImmutable && !addIndex.has(fragment.uuid)) {
        for (const property of modelClass.properties.values()) {
          if (!property.immutable || !(property.name in updates) || sameValue(object.properties[property.name], updates[property.name])) continue;
          throw new FragmentError(ErrorKind.immutable, `${modelClass.name}.${property.name} is immutable: its add set it, and it never changes after`, property.name);
        }
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

function sameValue(a, b) {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}

export function cloneValue(value) { return Array.isArray(value) ? value.slice() : value; }
export function cloneProperties(properties) {
  const copy = {};
  for (const [name, value] of Object.entries(properties)) copy[name] = cloneValue(value);
  return copy;
}

export function sameProperties(a, b) {
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
