// schema.mjs — the model schema and the checks of one value against it.
//
// Owns: `Schema` (what `GET /v1/schema` serves: classes with typed properties, their write rules —
// a class's `rules`, a property's `write` and `immutable` — and the scope rules), the property
// checkers that mirror JetstreamModel (types, ranges, enums, string constraints, references and
// their classes), `applyOperation` (a collection operation resolved against the current array: a
// check of a `change` resolves it where it stands, so it lives with the checks) and the UUID
// helpers of the wire (`wireUUID`, `randomUUID`). Applying whole change sets to a state is
// state.mjs's.

import { ErrorKind, FragmentError, JetstreamError } from "./errors.mjs";

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const INTEGER_BOUNDS = {
  Int8: [-128, 127], Int16: [-32768, 32767], Int32: [-2147483648, 2147483647],
  Int64: [-(2 ** 63), 2 ** 63 - 1], Int: [-(2 ** 63), 2 ** 63 - 1],
  UInt8: [0, 255], UInt16: [0, 65535], UInt32: [0, 4294967295],
  UInt64: [0, 2 ** 64 - 1], UInt: [0, 2 ** 64 - 1], Color: [0, 4294967295],
};
const FLOAT_MAX = 3.4028234663852886e38;

export function describe(value) {
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
export function wireUUID(value) {
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
    // Who may change it on an existing object, and whether its add fixes it for good (the server
    // judges `write`; the client checks `immutable` on its own edits, state.mjs).
    this.write = typeof spec.write === "string" ? spec.write : "any";
    this.immutable = spec.immutable === true;
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
 * Applies a collection operation to an array (docs/model.md, "Collection operations"): every
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

/** The rules of a class that has none, nor an ancestor with some: open to every writer. */
const OPEN_RULES = Object.freeze({ write: "any", delete: "any" });

/**
 * Whether a class member named `rules` is the class's rules rather than a property called `rules`:
 * a mapping without `type` or `enum` (a property's long form always has one), as the server reads it.
 */
function isClassRules(spec) {
  return spec !== null && typeof spec === "object" && !Array.isArray(spec) && spec.type === undefined && spec.enum === undefined;
}

/** `{write, delete}` of a class's `rules` member; an absent key is `any`, as on the server. */
function classRules(spec) {
  const rule = (value) => (typeof value === "string" ? value : "any");
  return Object.freeze({ write: rule(spec.write), delete: rule(spec.delete) });
}

/**
 * A model class: its properties (inherited ones first), its ancestors, and its write rules
 * (`rules`: its own `{write, delete}`, else its nearest ancestor's, else both `any`; `ownRules`:
 * what it declares itself, undefined when nothing).
 */
class ModelClass {
  constructor(name) {
    this.name = name;
    this.properties = new Map();
    this.ancestors = [];
    this.references = [];
    this.ownRules = undefined;
    this.rules = OPEN_RULES;
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
      const ownRules = (className) => {
        const spec = json.models[className].rules;
        return isClassRules(spec) ? classRules(spec) : undefined;
      };
      modelClass.ownRules = ownRules(name);
      // A class without rules of its own has its nearest ancestor's (chain: itself first).
      modelClass.rules = chain.map(ownRules).find((rules) => rules !== undefined) ?? OPEN_RULES;
      for (const ancestor of chain.reverse()) {
        for (const [property, propertySpec] of Object.entries(json.models[ancestor])) {
          if (property === "extends" || (property === "rules" && isClassRules(propertySpec))) continue;
          modelClass.properties.set(property, new Property(property, propertySpec));
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

/** A random (version 4) UUID, lowercase: crypto.randomUUID where there is one. */
export function randomUUID() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  const bytes = new Uint8Array(16);
  if (globalThis.crypto?.getRandomValues) globalThis.crypto.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
