// scope.mjs — the transport: scopes followed over HTTP around SyncCores, on one shared stream.
//
// Owns: `openScope` and `Scope` (what the application holds), and under them
//   Connection    one per page, base URL and client id: the token, the window's presence client
//                 id, the page's lifecycle (hidden, gone), the copies and the shared stream
//   ScopeCopy     one per scope and connection, however many `Scope` handles share it: loading
//                 the schema and the state (creating the scope when asked), sending pending change
//                 sets one at a time with their keys, status and notifications, the past of the
//                 scope (undo, restore, a state at a version, history pages)
//   SharedStream  the connection's one `GET /v1/events?scope=…` for all its copies (fetch
//                 streaming, EventSource fallback, the silence watchdog), opened again from every
//                 scope's version when a scope joins or leaves
//   Presence      who else is here in a scope (`PUT/DELETE …/presence/{client}`, `event: presence`)
// What to do after a stream ends or a POST is answered is decided by the pure policies of
// connection-state.mjs; the view is SyncCore's (sync-core.mjs).

import { JetstreamError, Rejection } from "./errors.mjs";
import { Schema, randomUUID, wireUUID } from "./schema.mjs";
import { cloneProperties } from "./state.mjs";
import { SyncCore } from "./sync-core.mjs";
import { backoffDelay, pause } from "./backoff.mjs";
import { ReconnectionPolicy, SendRetryPolicy, StreamEnd, StreamScopes, UndoHistory, endOfEvent } from "./connection-state.mjs";
import { SSEParser } from "./sse-parser.mjs";

/** How often `undo` and `restore` send their request before they give up (same key each time). */
const POST_TRIES = 5;
/** A connection end of this side's own making: the shared stream's scopes changed. */
const SWITCH = "switch";
/** The stream refused one of its scopes (404, 403 naming it): that scope stops, the rest go on. */
const REFUSED_SCOPE = "refused-scope";

/** The JSON of an event's data, or undefined when it is not JSON. */
function readJSON(data) {
  try { return JSON.parse(data); } catch { return undefined; }
}

async function problemOf(response) {
  try { return await response.json(); } catch { return { status: response.status, title: response.statusText }; }
}

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
 * 1–300, default 30). The stream's options (heartbeat, backoff) are the first opener's.
 */
export async function openScope(name, options = {}) {
  return Connection.for(options).open(name, options);
}

/**
 * A page's connection to one gateway as one client (docs/js-client.md, "One stream per page"):
 * made by the first `openScope` with its options, forgotten when its last scope closes.
 */
class Connection {
  /** The live connections, found again by the options that make one. */
  static all = [];

  static for(options) {
    const given = (options.baseURL ?? "").replace(/\/$/, "");
    // "" is this page's origin: the same connection as a page that spells it out.
    const origin = globalThis.location?.origin;
    const key = {
      baseURL: given === "" && origin && origin !== "null" ? origin : given, clientId: options.clientId,
      token: options.token, fetch: options.fetch, transport: options.transport ?? "auto",
    };
    const same = (connection) => Object.keys(key).every((name) => connection.key[name] === key[name]);
    let connection = Connection.all.find(same);
    if (!connection) {
      connection = new Connection(key, options);
      Connection.all.push(connection);
    }
    return connection;
  }

  constructor(key, options) {
    this.key = key;
    this.options = options;
    this.baseURL = key.baseURL;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    /** This window's presence client id: the given clientId, else one random id per connection. */
    this.clientId = options.clientId ?? randomUUID();
    /** name → `{copy, handles, ready}`: the copy, how many handles hold (or wait for) it. */
    this.copies = new Map();
    this.token = undefined;
    this.tokenReady = null;
    this.refreshing = null;
    this.stream = new SharedStream(this);
    this.lifecycle = null;
  }

  /** A handle on the copy of `name`, loaded first when this connection does not follow it yet. */
  async open(name, options) {
    let entry = this.copies.get(name);
    if (!entry || entry.copy.closed) {
      const copy = new ScopeCopy(name, options, this);
      entry = { copy, handles: 0, ready: copy.open() };
      this.copies.set(name, entry);
    }
    entry.handles += 1;
    try {
      await entry.ready;
    } catch (error) {
      entry.handles -= 1;
      if (this.copies.get(name) === entry) this.copies.delete(name);
      this.forgetIfIdle();
      throw error;
    }
    if (entry.copy.closed) {
      // Deleted (or refused) between loading and this caller's turn: as if opened just after.
      entry.handles -= 1;
      return this.open(name, options);
    }
    this.watchPage();
    return new Scope(entry.copy);
  }

  /** A handle was closed: the copy goes when it was the last. */
  release(copy) {
    const entry = this.copies.get(copy.name);
    if (!entry || entry.copy !== copy) return;
    entry.handles -= 1;
    if (entry.handles > 0) return;
    this.copies.delete(copy.name);
    copy.close();
    this.forgetIfIdle();
  }

  /** The copy stopped for good (deleted, forbidden): a later `openScope` loads it again. */
  stopped(copy) {
    if (this.copies.get(copy.name)?.copy === copy) this.copies.delete(copy.name);
    this.forgetIfIdle();
  }

  forgetIfIdle() {
    if (this.copies.size > 0) return;
    Connection.all = Connection.all.filter((connection) => connection !== this);
    this.unwatchPage();
  }

  /** The token, asked of the provider once for the whole connection. */
  async ensureToken() {
    if (typeof this.options.token !== "function") { this.token = this.options.token; return this.token; }
    this.tokenReady ??= (async () => { this.token = await this.options.token({ refresh: false }); })();
    try {
      await this.tokenReady;
    } catch (error) {
      this.tokenReady = null;   // the next open asks again
      throw error;
    }
    return this.token;
  }

  /**
   * A new token after a 401 or auth-expired: one question to the provider however many requests
   * met the old token at once; a provider that throws leaves the old token in place.
   */
  refreshToken() {
    if (typeof this.options.token !== "function") return Promise.resolve(this.token);
    this.refreshing ??= (async () => {
      try { this.token = await this.options.token({ refresh: true }); } catch { /* keep the old one */ }
      this.refreshing = null;
      return this.token;
    })();
    return this.refreshing;
  }

  /**
   * Presence follows the page: a hidden page (another tab, minimised) or one being left takes
   * this window's presence out of every scope at once; visible again, it comes back.
   */
  watchPage() {
    if (this.lifecycle || typeof addEventListener !== "function") return;
    const doc = globalThis.document;
    const copies = () => [...this.copies.values()].map((entry) => entry.copy);
    const away = () => copies().forEach((copy) => copy.presence.away());
    const back = () => copies().forEach((copy) => copy.presence.back());
    const visibility = () => (doc.visibilityState === "hidden" ? away() : back());
    this.lifecycle = { away, back, visibility };
    addEventListener("pagehide", away);
    addEventListener("pageshow", back);
    doc?.addEventListener?.("visibilitychange", visibility);
  }

  unwatchPage() {
    if (!this.lifecycle) return;
    removeEventListener("pagehide", this.lifecycle.away);
    removeEventListener("pageshow", this.lifecycle.back);
    globalThis.document?.removeEventListener?.("visibilitychange", this.lifecycle.visibility);
    this.lifecycle = null;
  }
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
  /** How many of this client's own accepted change sets an `undo()` may still try. */
  get undoableCount() { return this.copy.undoableCount; }
  /** For tests and tools: the copy's SyncCore, and the shared stream's EventSource while it uses one. */
  get core() { return this.copy.core; }
  get eventSource() { return this.copy.connection.stream.eventSource; }

  /** An object of the view, as `{uuid, clsName, properties}` (a copy), or undefined. */
  get(uuid) { return this.copy.get(uuid); }
  /** The view as `GET` would serve it: `{version, rootUUID, fragments}` in pre-order. */
  snapshot() { return this.copy.snapshot(); }

  /**
   * Calls `listener({version, local, fragments, removed, rejection?})` once per applied server
   * event, local change or rollback. Returns the function that unsubscribes.
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

  /** Sets properties of one object. Same outcome as `change`. */
  set(uuid, properties) { return this.closed ? Promise.reject(this.closedError()) : this.copy.set(uuid, properties); }
  /** Removes an object from every collection or reference that holds it. Same outcome as `change`. */
  remove(uuid) { return this.closed ? Promise.reject(this.closedError()) : this.copy.remove(uuid); }

  /** See `ScopeCopy.undo` (docs/js-client.md, "Undo and the past"). */
  undo() { return this.closed ? Promise.reject(this.closedError()) : this.copy.undo(); }
  /** See `ScopeCopy.restore`. */
  restore(version, options) { return this.closed ? Promise.reject(this.closedError()) : this.copy.restore(version, options); }
  /** See `ScopeCopy.stateAt`. */
  stateAt(version) { return this.copy.stateAt(version); }
  /** See `ScopeCopy.history`. */
  history(options) { return this.copy.history(options); }

  /**
   * Stops this handle: its listeners hear "closed" and nothing after. The copy stops with its last
   * handle (pending sets not yet sent are dropped, this window's presence leaves the scope).
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

/** The state of one scope for one connection, shared by every `Scope` handle on it. */
class ScopeCopy {
  constructor(name, options, connection) {
    this.name = name;
    this.options = options;
    this.connection = connection;
    this.baseURL = connection.baseURL;
    this.fetch = connection.fetch;
    this.listeners = new Set();
    this.statusListeners = new Set();
    this.rejectionListeners = new Set();
    this.status = "connecting";
    /** While reconnecting: 0 at once, k during the k-th backoff in a row. */
    this.reconnectAttempt = 0;
    this.closed = false;
    this.abort = new AbortController();
    this.sending = new SendRetryPolicy();
    this.waiters = new Map();
    this.wake = null;
    this.undoHistory = new UndoHistory(options.undoLimit ?? 100);
    /** Undos run one after another, so two never pick the same set. */
    this.undoing = Promise.resolve();
    /** Numbers the keys of restores (`<clientId>:restore:<n>`). */
    this.restores = 0;
    this.presence = new Presence(this, options.presenceTTL ?? 30);
  }

  get token() { return this.connection.token; }
  get version() { return this.core.version; }
  get rootUUID() { return this.core.rootUUID; }
  get pendingCount() { return this.core.pending.length; }

  get(uuid) {
    const object = this.core.view.get(wireUUID(uuid) ?? uuid);
    return object && { uuid: object.uuid, clsName: object.clsName, properties: cloneProperties(object.properties) };
  }

  snapshot() { return this.core.view.toJSON(this.core.schema); }

  change(fragments) {
    try {
      return this.enqueue(fragments);
    } catch (error) {
      return Promise.reject(error);
    }
  }

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

  set(uuid, properties) {
    const object = this.core.view.get(wireUUID(uuid) ?? uuid);
    if (!object) return Promise.reject(new JetstreamError(`no object ${uuid} in scope ${this.name}`));
    return this.change([{ type: "change", uuid: object.uuid, clsName: object.clsName, properties }]);
  }

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

  // -- the past (docs/js-client.md, "Undo and the past") ----------------------------------------

  /** How many of this client's own accepted change sets an `undo()` may still try. */
  get undoableCount() { return this.undoHistory.count; }

  /**
   * Reverts this client's most recent own change set that can still be reverted: first waits
   * until every local set made so far is answered, then asks `POST …/changesets/{V}/revert` for
   * the most recent own version V (the versions come from the answers to this client's POSTs,
   * change sets and restores; never from an undo, so undo twice reverts two different sets). A
   * `409 revert-conflict` (a later set touched the same properties) or a revert that changes
   * nothing passes V over and tries the next older one; a V no longer retained forgets it and every
   * older one. Resolves `{version, revertOf, skipped}` — the new version, the V it reverted and
   * the versions passed over (`{version, reason: "conflict" | "unchanged" | "gone" | "refused",
   * conflicts?}`), also forgotten — or `null` when nothing was left to undo. Rejects with a
   * `JetstreamError` when the server cannot be asked (V stays a candidate; the next undo sends
   * the same Idempotency-Key, `<clientId>:undo:<V>`, so a revert is never applied twice).
   */
  undo() {
    const run = this.undoing.then(() => this.undoNow());
    this.undoing = run.catch(() => {});
    return run;
  }

  /**
   * Sets the scope back to its state at `version` with `POST …/restore` (one new change set, made
   * by this client, so `undo()` can revert it). Resolves the server's answer `{version,
   * fragments, removed, …}` (empty `fragments` and `removed`: it was already that state, no new
   * version). Rejects with a `JetstreamError` (`status`, `problem`): 404 `version-not-found`, 410
   * `history-gone` (`problem.oldestVersion`), 412 for an `ifMatch` the scope is past.
   */
  async restore(version, { ifMatch } = {}) {
    await this.answered();
    const key = `${this.core.clientId}:restore:${++this.restores}`;
    const headers = ifMatch === undefined ? {} : { "If-Match": `"${ifMatch}"` };
    const { response, body } = await this.postWithKey(`${this.scopePath()}/restore`, { version }, key, headers);
    if (!response.ok) throw this.refusal("restore", response, body);
    if (this.changes(body)) {
      this.undoHistory.accepted(body.version);
      this.applyAnswer(body);
    }
    return body;
  }

  /**
   * The scope as it was at `version` (`GET …?version=N`): `{version, rootUUID, fragments}`, the
   * shape of `snapshot()`. Rejects with a `JetstreamError`: 404 `version-not-found` (ahead of the
   * scope), 410 `history-gone` (older than the retained history; `problem.oldestVersion`).
   */
  async stateAt(version) {
    const response = await this.request("GET", `${this.scopePath()}?version=${encodeURIComponent(version)}`);
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw this.refusal(`state at version ${version}`, response, body);
    return body;
  }

  /**
   * One page of the retained change sets after `since` (default 0), oldest first, at most `limit`
   * (the server's default 1000): `{version, changesets: [{version, at, subject, fragments,
   * removed, idempotencyKey?, restoredFrom?, revertOf?}]}`. Rejects with a `JetstreamError`; 410
   * `history-gone` says where the history starts now (`problem.oldestVersion`).
   */
  async history({ since = 0, limit } = {}) {
    const query = new URLSearchParams({ since: String(since) });
    if (limit !== undefined) query.set("limit", String(limit));
    const response = await this.request("GET", `${this.scopePath()}/changesets?${query}`);
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw this.refusal("history", response, body);
    return body;
  }

  /** The last handle was closed: stops following the scope. Pending sets not yet sent are dropped. */
  close() {
    if (this.closed) return;
    this.presence.leave().catch(() => {});
    this.finish(new JetstreamError(`scope ${this.name} was closed`), { status: "closed", attempt: 0, reason: "requested" });
  }

  // -- opening ---------------------------------------------------------------------------------

  async open() {
    await this.connection.ensureToken();
    const schemaResponse = await this.request("GET", "/v1/schema");
    if (!schemaResponse.ok) throw new JetstreamError(`GET /v1/schema: HTTP ${schemaResponse.status}`, { status: schemaResponse.status, problem: await problemOf(schemaResponse) });
    const schema = new Schema(await schemaResponse.json());
    if (!schema.rootClass(this.name)) throw new JetstreamError(`the schema has no scope rule for '${this.name}'`);
    // The keys' prefix is fixed per copy: a scope closed and opened again starts its sequence
    // over, so a prefix reused with it would replay the old answers for the new sets.
    this.core = new SyncCore(schema, { clientId: this.options.clientId });
    const path = this.scopePath();
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
    this.connection.stream.add(this);
    this.sendLoop();
  }

  request(method, path, body, headers = {}, { keepalive = false } = {}) {
    const all = { Accept: "application/json", ...headers };
    if (this.token) all.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) all["Content-Type"] = "application/json";
    const init = { method, headers: all, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" };
    // A keepalive request outlives the page (and this copy): it is not aborted with it.
    if (keepalive) init.keepalive = true; else init.signal = this.abort.signal;
    return this.fetch(this.baseURL + path, init);
  }

  // -- status and notifications ----------------------------------------------------------------

  /** Shows the shared stream's status (or this copy's end): `{status, attempt}`. */
  setStatus({ status, attempt = 0 }) {
    if (this.closed && status !== "closed") return;
    if (this.status === status && this.reconnectAttempt === attempt) return;
    this.status = status;
    this.reconnectAttempt = attempt;
    for (const listener of this.statusListeners) listener(status, { attempt });
  }

  emit(notification) {
    if (!notification || notification.gap || notification.inconsistent) return;
    if (!notification.local && !notification.rejection && !notification.deleted && !notification.error
        && notification.fragments.length === 0 && notification.removed.length === 0) return;
    for (const listener of this.listeners) {
      try { listener(notification); } catch (error) { console.error("jetstream: a subscriber threw", error); }
    }
  }

  /**
   * Wakes the sender: an idle sender always (a local change, a reset); one waiting out a backoff
   * only with `retryNow` (a reset, the browser came back online), so edits made while the server
   * is down do not each cause a retry.
   */
  kick(retryNow = false) {
    this.wake?.();
    if (retryNow) { this.sending.startOver(); this.cutSendWait?.(); }
  }

  // -- sending (docs/sync-protocol.md, L2, R6) -------------------------------------------------

  async sendLoop() {
    while (!this.closed) {
      const set = this.core.nextToSend();
      if (!set) { await new Promise((resolve) => { this.wake = resolve; }); this.wake = null; continue; }
      set.status = "inflight";
      let response;
      try {
        response = await this.request("POST", `/v1/scopes/${encodeURIComponent(this.name)}/changesets`,
          { fragments: set.fragments }, { "Idempotency-Key": set.key });
      } catch {
        if (this.closed) return;
      }
      const decision = this.sending.answered(response
        ? { status: response.status, retryAfter: response.headers.get("Retry-After") ?? undefined }
        : { network: true });
      if (decision.action === "next") {
        const body = await response.json().catch(() => ({}));
        this.undoHistory.accepted(body.version);
        this.settle(set, { version: body.version });
        this.emit(this.core.accepted(set, body.version));
      } else if (decision.action === "rejected") {
        const problem = await problemOf(response);
        const rejection = new Rejection({ status: response.status, problem, fragments: set.fragments, key: set.key });
        const notification = this.core.rejected(set);
        this.emit({ ...(notification ?? { version: this.version, local: false, fragments: [], removed: [] }), rejection });
        for (const listener of this.rejectionListeners) listener(rejection);
        this.settle(set, undefined, rejection);
      } else {
        // resend, wait or backoff: the set goes back to the queue and is sent again with its key.
        this.core.retry(set);
        if (decision.refreshToken) await this.connection.refreshToken();
        if (decision.action === "wait") await this.sendWait(decision.seconds * 1000);
        else if (decision.action === "backoff") await this.sendWait(backoffDelay(decision.attempt - 1, this.options.backoff));
      }
    }
  }

  settle(set, value, error) {
    const waiter = this.waiters.get(set);
    if (!waiter) return;
    this.waiters.delete(set);
    if (error) waiter.reject(error); else waiter.resolve(value);
  }

  async sendWait(ms) {
    const wait = pause(ms, this.abort.signal);
    this.cutSendWait = wait.cut;
    await wait.done;
    this.cutSendWait = null;
  }

  // -- this scope's events on the shared stream (docs/sync-protocol.md, R1, R2, R7) -------------

  /**
   * Handles one of this scope's events (its data read already); returns `{kind}` (a `StreamEnd`)
   * when it ends the shared connection: a gap or an inconsistent change set, unreadable data.
   */
  handle(type, event) {
    switch (type) {
      case "changeset": {
        if (typeof event?.version !== "number" || !Array.isArray(event.fragments)) return { kind: StreamEnd.unreadable };
        const notification = this.core.event(event);
        if (notification?.gap) return { kind: StreamEnd.gap };
        if (notification?.inconsistent) return { kind: StreamEnd.inconsistent };
        this.emit(notification);
        return undefined;
      }
      case "snapshot":
      case "reset": {
        if (typeof event?.version !== "number" || typeof event.rootUUID !== "string" || !Array.isArray(event.fragments)) {
          return { kind: StreamEnd.unreadable };
        }
        this.emit(this.core.reset(event));
        this.kick(true);   // R7: every set not in flight is sent again, now
        return undefined;
      }
      default:
        return undefined;
    }
  }

  /** The stream stopped this scope for good: `event: deleted` or 404 (deleted), 403 (forbidden). */
  stopped(reason, error) {
    this.connection.stopped(this);
    if (reason === StreamEnd.deleted) {
      this.finish(new JetstreamError(`scope ${this.name} was deleted`, { status: 404 }), { status: "closed", attempt: 0, reason }, { deleted: true });
    } else {
      const failure = error ?? new JetstreamError(`not allowed to read scope ${this.name}`, { status: 403 });
      this.finish(failure, { status: "closed", attempt: 0, reason }, { error: failure });
    }
  }

  /** Stops for good: status closed (why), pending promises reject with `error`. */
  finish(error, status, notification) {
    if (this.closed) return;
    this.closed = true;
    this.connection.stream.remove(this);
    this.presence.stop();
    this.abort.abort();
    this.wake?.();
    this.setStatus(status);
    if (notification) this.emit({ version: this.version, local: false, fragments: [], removed: [], ...notification });
    for (const { reject } of this.waiters.values()) reject(error);
    this.waiters.clear();
  }

  // -- the past: requests ---------------------------------------------------------------------

  scopePath() { return `/v1/scopes/${encodeURIComponent(this.name)}`; }

  /** Resolves once every local set made so far is answered (accepted or refused). */
  answered() {
    return Promise.allSettled([...this.waiters.values()].map((waiter) => waiter.promise));
  }

  async undoNow() {
    await this.answered();
    const skipped = [];
    for (;;) {
      if (this.closed) throw new JetstreamError(`scope ${this.name} is closed`);
      const target = this.undoHistory.next();
      if (target === undefined) return null;
      let answer;
      try {
        answer = await this.postWithKey(`${this.scopePath()}/changesets/${target}/revert`, undefined,
          `${this.core.clientId}:undo:${target}`);
      } catch (error) {
        this.undoHistory.putBack(target);
        throw error;
      }
      const { response, body } = answer;
      const type = String(body?.type ?? "");
      if (response.ok && this.changes(body)) {
        this.applyAnswer(body);
        return { version: body.version, revertOf: target, skipped };
      }
      if (response.ok) {
        skipped.push({ version: target, reason: "unchanged" });
      } else if (response.status === 409 && type.endsWith("/revert-conflict")) {
        skipped.push({ version: target, reason: "conflict", conflicts: body.conflicts ?? [] });
      } else if ((response.status === 404 && type.endsWith("/version-not-found")) || response.status === 410) {
        this.undoHistory.gone(target);
        skipped.push({ version: target, reason: "gone" });
      } else if (response.status === 422) {
        // The revert itself breaks a rule of the model (a limit, say): it never will apply.
        skipped.push({ version: target, reason: "refused" });
      } else {
        this.undoHistory.putBack(target);
        throw this.refusal(`undo of version ${target}`, response, body);
      }
    }
  }

  /** Whether a change-set answer made a new version (an answer with nothing in it did not). */
  changes(body) {
    return typeof body?.version === "number" && ((body.fragments?.length ?? 0) > 0 || (body.removed?.length ?? 0) > 0);
  }

  /**
   * A revert's or restore's answer is its change set, the same payload as its event: shown at once
   * when it is the next version (its event is then stale); otherwise the stream brings it.
   */
  applyAnswer(body) {
    if (!Array.isArray(body.fragments)) return;
    const notification = this.core.event({ version: body.version, fragments: body.fragments, removed: body.removed ?? [] });
    if (notification && !notification.gap && !notification.inconsistent) this.emit(notification);
  }

  /**
   * POSTs with an Idempotency-Key through the same path as the change sets, sent again with that
   * key as `SendRetryPolicy` says (R6: a new token after a 401, `Retry-After`, backoff), at most
   * `POST_TRIES` times. Returns `{response, body}` for a final answer (200, a refusal, 410);
   * throws a `JetstreamError` when none came.
   */
  async postWithKey(path, body, key, headers = {}) {
    const policy = new SendRetryPolicy();
    for (let tries = 1; ; tries++) {
      if (this.closed) throw new JetstreamError(`scope ${this.name} is closed`);
      let response;
      try {
        response = await this.request("POST", path, body, { ...headers, "Idempotency-Key": key });
      } catch {
        // no answer: the policy decides below
      }
      const decision = policy.answered(response
        ? { status: response.status, retryAfter: response.headers.get("Retry-After") ?? undefined }
        : { network: true });
      if (decision.action === "next" || decision.action === "rejected" || response?.status === 410) {
        return { response, body: await response.json().catch(() => ({})) };
      }
      if (tries >= POST_TRIES) {
        const problem = response ? await problemOf(response) : null;
        throw new JetstreamError(`POST ${path}: ${response ? `HTTP ${response.status}` : "no answer"} after ${tries} tries`,
          { status: response?.status ?? 0, problem });
      }
      if (decision.refreshToken) await this.connection.refreshToken();
      if (decision.action === "wait") await pause(decision.seconds * 1000, this.abort.signal).done;
      else if (decision.action === "backoff") await pause(backoffDelay(decision.attempt - 1, this.options.backoff), this.abort.signal).done;
    }
  }

  refusal(what, response, problem) {
    return new JetstreamError(`${what}: ${problem?.detail ?? problem?.title ?? `HTTP ${response.status}`}`, { status: response.status, problem });
  }

  /** Applies locally (throwing a local `Rejection`) and queues the set for sending. */
  enqueue(fragments) {
    if (this.closed) throw new JetstreamError(`scope ${this.name} is closed`);
    const { set, notification } = this.core.local(fragments);
    const waiter = {};
    const promise = new Promise((resolve, reject) => Object.assign(waiter, { resolve, reject }));
    waiter.promise = promise;
    this.waiters.set(set, waiter);
    this.emit(notification);
    this.kick();
    return promise;
  }
}

/**
 * The connection's one event stream for all its copies: `GET /v1/events?scope=A@5&scope=B@9`
 * (docs/sync-protocol.md, "One stream for many scopes"). Each scope resumes after the version its
 * copy has confirmed (`NAME@V`), so a new connection — after an end, or because a scope joined
 * or left — misses nothing and repeats nothing; a scope that must load its whole state again (R2,
 * unreadable data) is named without `@V` and gets a snapshot. Events are routed by their data's
 * `scope`. What to do after an end is the `ReconnectionPolicy`'s, for the stream as a whole; which
 * scopes the next request names, how, and what a refusal naming one means is `StreamScopes`'s
 * (both pure, connection-state.mjs); an end of this side's own making (the scopes changed) is
 * not one the policy judges.
 */
class SharedStream {
  constructor(connection) {
    this.connection = connection;
    /** name → the copy this stream carries. */
    this.members = new Map();
    this.scopes = new StreamScopes();
    this.policy = new ReconnectionPolicy();
    this.running = false;
    this.switchQueued = false;
    this.cut = null;
    this.cutWait = null;
    /** The EventSource of the connection, while the transport is one. */
    this.eventSource = null;
  }

  /** A loaded copy joins: it rides the next connection, from its version. */
  add(copy) {
    this.members.set(copy.name, copy);
    this.scopes.join(copy.name);
    this.changed(true);
  }

  /** A copy stopped: the next connection leaves it out (none is made when it was the last). */
  remove(copy) {
    if (this.members.get(copy.name) !== copy) return;
    this.members.delete(copy.name);
    this.scopes.leave(copy.name);
    this.changed(false);
  }

  /**
   * The scopes changed: open the stream again for the new list — once for every change made in
   * the same turn (a page opening seven scopes at once reconnects once per turn, not seven times).
   */
  changed(joined) {
    if (!this.running) {
      if (this.members.size > 0) this.run();
      return;
    }
    // A new scope need not wait out a backoff (the server just answered its GET); nor a stream
    // with no scope left.
    if (joined || this.members.size === 0) this.cutWait?.();
    if (this.switchQueued) return;
    this.switchQueued = true;
    setTimeout(() => {
      this.switchQueued = false;
      if (this.scopes.stale) this.cut?.(SWITCH);
    }, 0);
  }

  showStatus() {
    for (const copy of this.members.values()) copy.setStatus(this.policy.status);
  }

  async run() {
    this.running = true;
    const online = () => {
      this.policy.online();
      this.cutWait?.();
      for (const copy of this.members.values()) copy.kick(true);
    };
    // Offline: drop the stream, so the status says so and it resumes from every version on return.
    const offline = () => this.cut?.(StreamEnd.dropped);
    if (typeof addEventListener === "function") {
      addEventListener("online", online);
      addEventListener("offline", offline);
    }
    try {
      while (this.members.size > 0) {
        const started = Date.now();
        let end;
        try {
          end = this.useEventSource() ? await this.readWithEventSource() : await this.readWithFetch();
        } catch {
          end = { kind: StreamEnd.network };
        }
        if (this.members.size === 0) break;
        if (end.kind === SWITCH || end.kind === REFUSED_SCOPE) continue;
        const decision = this.policy.ended(end.kind, Date.now() - started);
        if (decision.action === "stop") {
          for (const copy of [...this.members.values()]) copy.stopped(decision.reason, end.error);
          break;
        }
        this.showStatus();
        if (decision.refreshToken) await this.connection.refreshToken();
        if (decision.action === "backoff") {
          const wait = pause(backoffDelay(decision.attempt - 1, this.connection.options.backoff));
          this.cutWait = wait.cut;
          await wait.done;
          this.cutWait = null;
        }
      }
    } finally {
      if (typeof removeEventListener === "function") {
        removeEventListener("online", online);
        removeEventListener("offline", offline);
      }
      this.running = false;
      this.policy = new ReconnectionPolicy();
      // A scope that joined while the last connection wound down starts the next run.
      if (this.members.size > 0) this.run();
    }
  }

  useEventSource() {
    const transport = this.connection.key.transport;
    return transport === "eventsource" ||
      (transport !== "fetch" && typeof ReadableStream === "undefined" && typeof EventSource === "function");
  }

  /** `scope=A@5&scope=B` for the scopes now carried (S2). */
  query() {
    const query = new URLSearchParams();
    for (const scope of this.scopes.request((name) => this.members.get(name).version)) query.append("scope", scope);
    return query;
  }

  /** The stream answered: it is live; every scope asked for whole got it. */
  opened() {
    this.policy.opened();
    this.scopes.opened();
    this.showStatus();
    for (const copy of this.members.values()) copy.presence.streamOpened();
  }

  /** A refusal at open naming one scope (404: deleted, 403): that scope stops, the others go on. */
  async refusal(response) {
    const problem = await problemOf(response);
    const { stop, reason, retry, kind } = this.scopes.refused(response.status, problem);
    if (stop !== undefined) {
      const why = reason === StreamEnd.deleted ? `scope ${stop} was deleted` : `not allowed to read scope ${stop}`;
      this.members.get(stop)?.stopped(reason, new JetstreamError(why, { status: response.status, problem }));
    }
    // The others (or, for a scope that left while the request was on its way, all) ask again.
    if (retry) return { kind: REFUSED_SCOPE };
    if (kind === StreamEnd.forbidden) {
      return { kind, error: new JetstreamError(`not allowed to read the stream of ${[...this.members.keys()].join(", ")}`, { status: 403, problem }) };
    }
    return { kind };
  }

  /**
   * Handles one SSE event; returns `{kind}` (a `StreamEnd`) when it ends the connection. A
   * scope-bound event for a scope no longer carried (it left during the switch) is dropped.
   */
  dispatch(type, data) {
    switch (type) {
      case "changeset": case "snapshot": case "reset": case "deleted": case "presence": {
        const event = readJSON(data);
        const copy = this.members.get(event?.scope);
        if (event === undefined || (!copy && typeof event?.scope !== "string")) {
          if (type === "presence") return undefined;
          // Data that names no scope: nobody can tell whose state it was, so every scope is loaded whole.
          this.scopes.ended(StreamEnd.unreadable, undefined);
          return { kind: StreamEnd.unreadable };
        }
        if (!copy) return undefined;
        if (type === "presence") { copy.presence.event(event); return undefined; }
        if (type === "deleted") {
          copy.stopped(StreamEnd.deleted);   // the others go on; the server ends the stream after the last
          return this.members.size === 0 ? { kind: SWITCH } : undefined;
        }
        const end = copy.handle(type, event);
        if (end) this.scopes.ended(end.kind, copy.name);
        return end;
      }
      default: {
        const kind = endOfEvent(type);
        return kind && { kind };
      }
    }
  }

  async readWithFetch() {
    const controller = new AbortController();
    // Why this side ended the connection, when it did: a switch, the watchdog, going offline.
    let cutWhy;
    this.cut = (why = StreamEnd.dropped) => { cutWhy ??= why; controller.abort(); };
    const silence = 2 * 1000 * (this.connection.options.heartbeatInterval ?? 15);
    let watchdog;
    const arm = () => { clearTimeout(watchdog); watchdog = setTimeout(() => this.cut?.(StreamEnd.silence), silence); };
    try {
      const headers = { Accept: "text/event-stream" };
      if (this.connection.token) headers.Authorization = `Bearer ${this.connection.token}`;
      arm();
      const url = `${this.connection.baseURL}/v1/events?${this.query()}`;
      const response = await this.connection.fetch(url, { headers, signal: controller.signal, cache: "no-store" });
      if (cutWhy) return { kind: cutWhy };
      if (response.status !== 200) return await this.refusal(response);
      if (!response.body) return { kind: StreamEnd.serverError };
      this.opened();
      let end;
      const parser = new SSEParser(({ type, data }) => { if (!cutWhy) end ??= this.dispatch(type, data); });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (cutWhy) { controller.abort(); return { kind: cutWhy }; }
        if (done) return end ?? { kind: StreamEnd.dropped };
        parser.feed(value);
        if (end) { controller.abort(); return end; }
      }
    } catch (error) {
      if (cutWhy) return { kind: cutWhy };
      throw error;
    } finally {
      clearTimeout(watchdog);
      this.cut = null;
    }
  }

  readWithEventSource() {
    return new Promise((resolve) => {
      const query = this.query();
      if (this.connection.token) query.set("access_token", this.connection.token);
      const base = this.connection.baseURL || globalThis.location?.origin || "";
      const source = new EventSource(`${base}/v1/events?${query}`);
      this.eventSource = source;
      let done = false;
      const finish = (end) => {
        if (done) return;
        done = true;
        source.close();
        this.cut = null;
        this.eventSource = null;
        resolve(end);
      };
      this.cut = (why = StreamEnd.dropped) => finish({ kind: why });
      source.onopen = () => this.opened();
      // EventSource hides the status: a refusal at open and a dropped stream look the same.
      source.onerror = () => finish({ kind: StreamEnd.network });
      for (const type of ["changeset", "snapshot", "reset", "deleted", "presence", "closing", "auth-expired", "error"]) {
        source.addEventListener(type, (event) => {
          if (type === "error" && !(event instanceof MessageEvent)) return;
          const end = this.dispatch(type, event.data ?? "");
          if (end) finish(end);
        });
      }
    });
  }
}

/**
 * Who is here in one scope (docs/js-client.md, "Presence"): this window's presence, PUT with
 * the connection's client id and refreshed at half its ttl, and the others as `event: presence`
 * tells them. Not a change: no version, nothing pending, nothing kept.
 */
class Presence {
  constructor(copy, ttl) {
    this.copy = copy;
    this.ttl = ttl;
    /** client → `{client, subject, data}`, this window included (left out of `others`). */
    this.members = new Map();
    this.listeners = new Set();
    this.othersCache = null;
    /** The data this window shows, undefined when it shows none. */
    this.wanted = undefined;
    /** The data to show again when the page is visible again. */
    this.resume = undefined;
    /** Whether the server may hold this window's presence (a DELETE is owed at the end). */
    this.present = false;
    this.pushing = null;
    this.again = false;
    this.refreshTimer = null;
    /** After a (re)connection: members not announced again are dropped once the grace is over. */
    this.stale = new Set();
    this.staleTimer = null;
  }

  get client() { return this.copy.connection.clientId; }

  get others() {
    this.othersCache ??= Object.freeze([...this.members.values()].filter((member) => member.client !== this.client));
    return this.othersCache;
  }

  /**
   * Shows `data` (a JSON object) to the others. Calls made while a PUT is on its way are folded
   * into the next one (only the latest data is sent). Resolves once `data` or a later one is
   * stored; rejects with a `JetstreamError` for a refusal (400, 403, 413 over 4 KiB, 429).
   */
  set(data) {
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      return Promise.reject(new JetstreamError("presence data must be a JSON object"));
    }
    if (this.copy.closed) return Promise.reject(new JetstreamError(`scope ${this.copy.name} is closed`));
    this.wanted = data;
    this.resume = undefined;
    return this.flush();
  }

  /**
   * Takes this window out of the scope: `DELETE`, sent at once and kept alive past the page's end
   * (a page being left cannot wait for a PUT on its way). Such a PUT may land after it, so the
   * DELETE is sent again once that PUT is answered.
   */
  leave() {
    this.wanted = undefined;
    this.resume = undefined;
    clearTimeout(this.refreshTimer);
    if (!this.present) return Promise.resolve();
    this.present = false;
    const remove = async () => {
      const response = await this.copy.request("DELETE", this.path(), undefined, {}, { keepalive: true });
      if (!response.ok && response.status !== 404) throw await this.refusal("leave", response);
    };
    const first = remove();
    const putting = this.pushing;
    if (!putting) return first;
    const again = putting.catch(() => {}).then(() => (this.wanted === undefined && !this.present ? remove() : undefined));
    return Promise.all([first, again]).then(() => {});
  }

  /** The page is hidden or left: leave, and remember what to show when it is back. */
  away() {
    if (this.wanted === undefined) return;
    const data = this.wanted;
    this.leave().catch(() => {});
    this.resume = data;
  }

  /** The page is visible again. */
  back() {
    if (this.resume === undefined || this.copy.closed) return;
    this.set(this.resume).catch(() => {});
  }

  flush() {
    if (this.pushing) { this.again = true; return this.pushing; }
    clearTimeout(this.refreshTimer);
    const run = (async () => {
      try {
        for (;;) {
          this.again = false;
          const data = this.wanted;
          if (data === undefined || this.copy.closed) return;
          await this.put(data);
          if (!this.again) return;
        }
      } finally {
        this.pushing = null;
        this.scheduleRefresh();
      }
    })();
    this.pushing = run;
    return run;
  }

  async put(data) {
    const path = `${this.path()}?ttl=${this.ttl}`;
    this.present = true;
    let response = await this.copy.request("PUT", path, data);
    if (response.status === 401) {
      await this.copy.connection.refreshToken();
      response = await this.copy.request("PUT", path, data);
    }
    if (!response.ok) throw await this.refusal("presence", response);
  }

  /** Refreshed before it expires: at half the ttl, again after a failure. */
  scheduleRefresh() {
    clearTimeout(this.refreshTimer);
    if (this.wanted === undefined || this.copy.closed) return;
    this.refreshTimer = setTimeout(() => this.flush().catch(() => {}), (this.ttl * 1000) / 2);
  }

  /** One `event: presence` of this scope. */
  event({ client, subject = null, state, data }) {
    if (typeof client !== "string") return;
    this.stale.delete(client);
    if (state === "leave") {
      if (!this.members.delete(client)) return;
      // This window's presence expired (a sleeping laptop, a restarted server): show it again.
      if (client === this.client && this.wanted !== undefined) this.flush().catch(() => {});
    } else if (state === "join" || state === "update") {
      const known = this.members.get(client);
      if (known && known.subject === subject && JSON.stringify(known.data) === JSON.stringify(data)) return;
      this.members.set(client, Object.freeze({ client, subject, data }));
    } else {
      return;
    }
    if (client !== this.client) this.notify({ client, subject, state, data });
  }

  /**
   * The stream (re)connected: the server announces every member again. Members it does not
   * announce within a second left meanwhile; they are dropped then (not at once, which would make
   * everyone blink out and back at each reconnection). This window's presence is PUT again when
   * it wants one (a restarted server forgets presence).
   */
  streamOpened() {
    this.stale = new Set(this.members.keys());
    clearTimeout(this.staleTimer);
    this.staleTimer = setTimeout(() => {
      for (const client of this.stale) {
        if (!this.members.delete(client) || client === this.client) continue;
        this.notify({ client, subject: null, state: "leave" });
      }
      this.stale.clear();
      if (this.wanted !== undefined && !this.pushing && !this.members.has(this.client)) this.flush().catch(() => {});
    }, 1000);
  }

  notify(change) {
    this.othersCache = null;
    const others = this.others;
    for (const listener of this.listeners) {
      try { listener(others, change); } catch (error) { console.error("jetstream: a presence subscriber threw", error); }
    }
  }

  /** The copy stopped: no more timers. */
  stop() {
    clearTimeout(this.refreshTimer);
    clearTimeout(this.staleTimer);
  }

  path() {
    return `${this.copy.scopePath()}/presence/${encodeURIComponent(this.client)}`;
  }

  async refusal(what, response) {
    const problem = await problemOf(response);
    return new JetstreamError(`${what} in scope ${this.copy.name}: ${problem?.detail ?? `HTTP ${response.status}`}`, { status: response.status, problem });
  }
}
