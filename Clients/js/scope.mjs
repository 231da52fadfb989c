// scope.mjs — what the application holds: `openScope` and the `Scope` handle.
//
// Owns: `openScope` (a handle on the connection's copy of a scope, loaded first when new) and
// `Scope` (one handle: its listeners, its `presence` view, its close). Every handle on a scope
// shares one copy, every copy of a page one connection. Under them:
//   connection.mjs     Connection   one per page, base URL and client id: the token, the window's
//                                   presence client id, the page's lifecycle, the copies, the stream,
//                                   the schema (read again when the server may have changed it)
//   scope-copy.mjs     ScopeCopy    one per scope and connection: loading, sending change sets
//                                   and method calls (their stubs' StubView), status and
//                                   notifications, the scope's events
//   scope-past.mjs     ScopePast    the copy's past: undo, restore, a state at a version, history
//   presence.mjs       Presence     the copy's presence: who else is here in the scope
//   stored-copy.mjs    StoredCopy   with `persist`: the copy in IndexedDB, the tab's client id
//   shared-stream.mjs  SharedStream the connection's one `GET /v1/events?scope=…` for all its copies
// What to do after a stream ends or a POST is answered is decided by the pure policies of
// connection-state.mjs; the view is SyncCore's (sync-core.mjs).

import { JetstreamError } from "./errors.mjs";
import { Connection } from "./connection.mjs";
import { persistenceMissing, tabClientId } from "./stored-copy.mjs";

/**
 * Opens a scope: loads the schema and the scope's state, then follows it and sends local
 * changes. Resolves once the state is loaded (the stream connects in the background; see
 * `status`). Fails with a `JetstreamError` for an unknown scope (unless `create` is given), a
 * scope name no schema rule admits, or 401/403.
 *
 * Every scope opened with the same `baseURL`, `clientId`, `token`, `fetch` and `transport` (by
 * default: every scope a page opens from one origin) shares one connection: ONE event stream,
 * one token, one presence client id. Opening a scope that connection already follows shares its
 * copy; each call returns its own handle, and the copy lives until its last handle is closed.
 *
 * Options: `baseURL` (default "": this origin), `token` (a string or a function, possibly async,
 * called with `{refresh}`), `create` (`{clsName, properties}`: PUT the scope when it is missing),
 * `heartbeatInterval` (seconds, default 15: the stream is dropped after two silent intervals),
 * `backoff` (`{initial, max}` ms, default 500 / 30 000), `transport` ("auto" | "fetch" |
 * "eventsource"), `clientId` (this window's id: the prefix of Idempotency-Keys and the presence
 * client id; default: random), `fetch` (an implementation), `undoLimit` (how many own accepted
 * change sets `undo` remembers, default 100), `presenceTTL` (seconds a presence lasts unrefreshed,
 * 1–300, default 30), `persist` (keep the copy in IndexedDB: it opens from there at once, offline
 * too, and local changes survive a reload; docs/js-client.md, "Offline and persistence"). The
 * stream's options (heartbeat, backoff) are the first opener's, and so is `persist` for a copy.
 *
 * With `persist`, the client id is this tab's (kept in sessionStorage, held with a Web Lock
 * while the page lives) unless `clientId` is given; it fails with a `JetstreamError` where
 * IndexedDB or Web Locks are missing (Node), or when another tab holds the given `clientId`.
 */
export async function openScope(name, options = {}) {
  if (options.persist) {
    const missing = persistenceMissing();
    if (missing) throw new JetstreamError(`openScope('${name}', {persist: true}): ${missing}`);
    options = { ...options, clientId: await tabClientId(options.clientId) };
  }
  return new Scope(await Connection.for(options).open(name, options));
}

/**
 * One synced scope, made by `openScope`: a handle on the connection's copy of the scope. Handles
 * on the same copy see the same state, pending sets and presence; `close()` ends this handle (its
 * listeners stop), and the copy with the last one.
 */
export class Scope {
  constructor(copy) {
    this.copy = copy;
    this.name = copy.name;
    this.closed = false;
    /** The unsubscribers of this handle's listeners, called at its close. */
    this.own = new Set();
    const handle = this;
    /** Who else is here (docs/js-client.md, "Presence"). */
    this.presence = Object.freeze({
      /** Shows `data` (a JSON object, ≤ 4 KiB) to the others; resolves once stored. */
      set: (data) => (handle.closed ? Promise.reject(handle.closedError()) : copy.presence.set(data)),
      /** Takes this window's presence out of the scope. */
      leave: () => copy.presence.leave(),
      /** The other clients present: `[{client, subject, data}]`, this window excluded. */
      get others() { return copy.presence.others; },
      /** This window's presence client id. */
      get client() { return copy.presence.client; },
      /** Calls `listener(others, change)` when the others change; returns the unsubscriber. */
      subscribe: (listener) => handle.track(copy.presence.listeners, listener),
    });
  }

  /** The version of the server state the view is based on. */
  get version() { return this.copy.version; }
  /** The root object's UUID. */
  get rootUUID() { return this.copy.rootUUID; }
  /** Local change sets not yet confirmed by the stream. */
  get pendingCount() { return this.copy.pendingCount; }
  /** "connecting" | "live" | "reconnecting" | "closed" ("closed" once this handle is). */
  get status() { return this.closed ? "closed" : this.copy.status; }
  /** While reconnecting: 0 at once, k during the k-th backoff in a row. */
  get reconnectAttempt() { return this.closed ? 0 : this.copy.reconnectAttempt; }
  /**
   * The ETag of the schema local changes are checked with (undefined when the server sends
   * none). It changes when the server turns out to serve another schema: read again after every
   * reconnection and with every reset (docs/js-client.md, "Schema changes").
   */
  get schemaTag() { return this.copy.connection.schemaTag; }
  /** How many of this client's own accepted change sets an `undo()` may still try. */
  get undoableCount() { return this.copy.past.undoableCount; }
  /**
   * With `persist`: what could not be read from the stored copy at open (another format, damaged),
   * as a `JetstreamError` — the scope then started from the server; it also reaches `subscribe`
   * as a notification with `error` just after `openScope` resolves. Else undefined.
   */
  get storageError() { return this.copy.storageError; }
  /** Whether the copy is kept in IndexedDB (`persist`). */
  get persisted() { return this.copy.stored !== null; }

  /**
   * Resolves once every local change made so far through any handle on this copy is stored in
   * IndexedDB (a reload or a closed tab after it loses none of them). Rejects with a
   * `JetstreamError` when the scope was not opened with `persist`, or a write failed.
   */
  saved() { return this.copy.saved(); }

  /** For tests and tools: the copy's SyncCore, and the shared stream's EventSource while it uses one. */
  get core() { return this.copy.core; }
  get eventSource() { return this.copy.connection.stream.eventSource; }

  /** An object of the view, as `{uuid, clsName, properties}` (a copy), or undefined. */
  get(uuid) { return this.copy.get(uuid); }
  /** The view as `GET` would serve it: `{version, rootUUID, fragments}` in pre-order. */
  snapshot() { return this.copy.snapshot(); }

  /**
   * Calls `listener({version, local, fragments, removed, rejection?, schemaChanged?})` once per
   * applied server event, local change or rollback; `schemaChanged` marks the reset that brought
   * the scope's state in a new schema. Returns the function that unsubscribes.
   */
  subscribe(listener) { return this.track(this.copy.listeners, listener); }
  /** Calls `listener(status, {attempt})` on every status change. Returns the unsubscriber. */
  onStatus(listener) { return this.track(this.copy.statusListeners, listener); }
  /** Calls `listener(rejection)` for every change set the server refused (already rolled back). */
  onRejected(listener) { return this.track(this.copy.rejectionListeners, listener); }

  /**
   * Applies a change set to the view now and sends it. Resolves `{version}` when the server
   * accepts it; rejects with a `Rejection` when the server (or the local schema check) refuses
   * it — its effect is then gone from the view.
   */
  change(fragments) { return this.closed ? Promise.reject(this.closedError()) : this.copy.change(fragments); }

  /**
   * Adds an object and inserts it into a collection (or sets a reference) of `parent` (default:
   * the root) — `key` defaults to the parent's first property that can hold the class; `before`
   * is a UUID to insert before (default: the end). Returns the new UUID at once; a locally
   * invalid object throws a `Rejection`; a server refusal reaches `onRejected`.
   *
   *   const id = scope.add("Shape", { x: 10, y: 10, color: 0xff0000ff });
   */
  add(clsName, properties, options) {
    if (this.closed) throw this.closedError();
    return this.copy.add(clsName, properties, options);
  }

  /**
   * Calls the server method `method` with `args` (any JSON; docs/methods.md): sent in order with
   * the local changes, with its own fixed Idempotency-Key. Resolves the server's answer (`{version,
   * method, result, fragments, removed, …}`); rejects with a `Rejection` (`method` set) when the
   * server refuses it (404 unknown-method, 422 method-rejected with `problem.reason`, 422
   * invalid-change-set, 502 method-failed, 504 method-timeout, 412). `stub(view)`, when given,
   * runs at once on a `StubView` of the view (`get`, `set`, `add`, `remove`, `change`,
   * `rootUUID`): its edits show
   * now and give way to the server's change set when it comes; a refusal rolls them back (and
   * reaches `onRejected`). Without a stub nothing shows until the server's change set arrives.
   *
   *   const { result } = await scope.call("arrange", { columns: 3 }, { stub: (view) => layOut(view) });
   */
  call(method, args, options) { return this.closed ? Promise.reject(this.closedError()) : this.copy.call(method, args, options); }

  /** Sets properties of one object. Same outcome as `change`. */
  set(uuid, properties) { return this.closed ? Promise.reject(this.closedError()) : this.copy.set(uuid, properties); }
  /** Removes an object from every collection or reference that holds it. Same outcome as `change`. */
  remove(uuid) { return this.closed ? Promise.reject(this.closedError()) : this.copy.remove(uuid); }

  /** See `ScopePast.undo` (scope-past.mjs; docs/js-client.md, "Undo and the past"). */
  undo() { return this.closed ? Promise.reject(this.closedError()) : this.copy.past.undo(); }
  /** See `ScopePast.restore`. */
  restore(version, options) { return this.closed ? Promise.reject(this.closedError()) : this.copy.past.restore(version, options); }
  /** See `ScopePast.stateAt`. */
  stateAt(version) { return this.copy.past.stateAt(version); }
  /** See `ScopePast.history`. */
  history(options) { return this.copy.past.history(options); }

  /**
   * Stops this handle: its listeners hear "closed" and nothing after. The copy stops with its last
   * handle (pending sets not yet sent are dropped — with `persist` they stay stored and are sent
   * by the next open — and this window's presence leaves the scope).
   */
  close() {
    if (this.closed) return;
    const wasClosed = this.copy.closed;
    const statusListeners = [...this.own].filter((entry) => entry.set === this.copy.statusListeners).map((entry) => entry.listener);
    this.closed = true;
    for (const { set, listener } of this.own) set.delete(listener);
    this.own.clear();
    this.copy.connection.release(this.copy);
    if (!wasClosed) for (const listener of statusListeners) listener("closed", { attempt: 0 });
  }

  track(set, listener) {
    if (this.closed) return () => {};
    const entry = { set, listener };
    set.add(listener);
    this.own.add(entry);
    return () => { set.delete(listener); this.own.delete(entry); };
  }

  closedError() { return new JetstreamError(`scope ${this.name} is closed`); }
}

