// errors.mjs — what the client reports when something is refused or cannot be done.
//
// Owns: `ErrorKind` (the per-fragment error kinds of docs/model.md, the strings the server answers
// in `fragmentReplies`), `FragmentError` (one fragment refused by the local model check; internal
// to schema.mjs and state.mjs), `Rejection` (a change set refused, by the server or locally),
// `JetstreamError` (a request the client could not complete) and `problemOf` (the problem+json
// a refusal carries, read by every module that sends requests). No imports.

/** The error kinds of docs/model.md; the same strings the server answers in `fragmentReplies`. */
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
  /** A write or removal the schema's `rules`/`write` reserve for the owner or a role (server only). */
  forbidden: "forbidden",
  /** A change to an `immutable` property of an object after its add (checked locally too). */
  immutable: "immutable",
});

export class FragmentError extends Error {
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
 * A change set the server (or, for obviously bad input, the client itself) refused, or a server
 * method call it refused (`method` names it; `fragments` are its stub's edits). Its effect has
 * already been taken out of the view when the application sees it.
 */
export class Rejection extends Error {
  constructor({ status, problem, fragments, key, local = false, method }) {
    const detail = problem?.detail ?? problem?.title ?? `HTTP ${status}`;
    super(`${method === undefined ? "change set" : `call of method ${method}`} refused (${status}${local ? ", checked locally" : ""}): ${detail}`);
    this.name = "Rejection";
    this.status = status;
    this.problem = problem ?? null;
    this.type = problem?.type ?? null;
    this.fragmentReplies = problem?.fragmentReplies ?? [];
    this.fragments = fragments;
    this.idempotencyKey = key;
    this.local = local;
    /** The server method whose call this refuses; undefined for a change set. */
    this.method = method;
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
    // A method's refusal says why in `reason` (422 method-rejected).
    if (lines.length === 0) lines.push(this.problem?.reason ?? this.problem?.detail ?? this.message);
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

/** The problem+json of a refusal, or `{status, title}` when its body is none. */
export async function problemOf(response) {
  try { return await response.json(); } catch { return { status: response.status, title: response.statusText }; }
}
