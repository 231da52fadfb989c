// scope.mjs — the transport: one scope followed over HTTP around a SyncCore.
//
// Owns: `openScope` and `Scope` — loading the schema and the state (creating the scope when
// asked), reading the event stream (fetch streaming, EventSource fallback, the silence watchdog),
// sending pending change sets one at a time with their keys, the token provider, timers, status
// and notifications; the past of the scope (undo, restore, a state at a version, history pages).
// What to do after a stream ends or a POST is answered is decided by the pure
// policies of connection-state.mjs; the view is SyncCore's (sync-core.mjs).

import { JetstreamError, Rejection } from "./errors.mjs";
import { Schema, randomUUID, wireUUID } from "./schema.mjs";
import { cloneProperties } from "./state.mjs";
import { SyncCore } from "./sync-core.mjs";
import { backoffDelay, pause } from "./backoff.mjs";
import { ReconnectionPolicy, SendRetryPolicy, StreamEnd, UndoHistory, endOfEvent, endOfResponse } from "./connection-state.mjs";
import { SSEParser } from "./sse-parser.mjs";

/** How often `undo` and `restore` send their request before they give up (same key each time). */
const POST_TRIES = 5;

/** The JSON of an event's data, or undefined when it is not JSON. */
function readJSON(data) {
  try { return JSON.parse(data); } catch { return undefined; }
}

async function problemOf(response) {
  try { return await response.json(); } catch { return { status: response.status, title: response.statusText }; }
}

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
 * "eventsource"), `clientId` (the prefix of Idempotency-Keys), `fetch` (an implementation),
 * `undoLimit` (how many own accepted change sets `undo` remembers, default 100).
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
    /** While reconnecting: 0 at once, k during the k-th backoff in a row. */
    this.reconnectAttempt = 0;
    this.reconnection = new ReconnectionPolicy();
    this.sending = new SendRetryPolicy();
    this.waiters = new Map();
    this.wake = null;
    this.token = undefined;
    this.undoHistory = new UndoHistory(options.undoLimit ?? 100);
    /** Undos run one after another, so two never pick the same set. */
    this.undoing = Promise.resolve();
    /** Numbers the keys of restores (`<clientId>:restore:<n>`). */
    this.restores = 0;
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

  /** Stops following the scope. Pending sets not yet sent are dropped. */
  close() {
    if (this.closed) return;
    this.reconnection.close();
    this.finish(new JetstreamError(`scope ${this.name} was closed`));
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
    this.onlineHandler = () => { this.reconnection.online(); this.cutStreamWait?.(); this.kick(true); };
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

  /** Shows the reconnection policy's status: `{status, attempt}`. */
  setStatus({ status, attempt = 0 }) {
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
        if (decision.refreshToken) this.token = await this.resolveToken(true).catch(() => this.token);
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

  // -- the stream (docs/sync-protocol.md, R1–R5, R7) -------------------------------------------

  async followStream() {
    const useEventSource = this.options.transport === "eventsource" ||
      (this.options.transport !== "fetch" && typeof ReadableStream === "undefined" && typeof EventSource === "function");
    while (!this.closed) {
      const started = Date.now();
      let end;
      try {
        end = useEventSource ? await this.readWithEventSource() : await this.readWithFetch();
      } catch {
        end = { kind: StreamEnd.network };
      }
      if (this.closed) return;
      const decision = this.reconnection.ended(end.kind, Date.now() - started);
      if (decision.action === "stop") {
        if (decision.reason === StreamEnd.deleted) this.deleted(); else this.fail(end.error);
        return;
      }
      this.setStatus(this.reconnection.status);
      if (decision.refreshToken) this.token = await this.resolveToken(true).catch(() => this.token);
      if (decision.action === "backoff") {
        const wait = pause(backoffDelay(decision.attempt - 1, this.options.backoff), this.abort.signal);
        this.cutStreamWait = wait.cut;
        await wait.done;
        this.cutStreamWait = null;
      }
    }
  }

  /** The stream answered: it is live. */
  opened() {
    this.reconnection.opened();
    this.setStatus(this.reconnection.status);
  }

  /** Handles one SSE event; returns `{kind}` (a `StreamEnd`) when it ends the connection. */
  handle(type, data) {
    switch (type) {
      case "changeset": {
        const event = readJSON(data);
        if (typeof event?.version !== "number" || !Array.isArray(event.fragments)) return { kind: StreamEnd.unreadable };
        const notification = this.core.event(event);
        if (notification?.gap) return { kind: StreamEnd.gap };
        if (notification?.inconsistent) return { kind: StreamEnd.inconsistent };
        this.emit(notification);
        return undefined;
      }
      case "snapshot":
      case "reset": {
        const state = readJSON(data);
        if (typeof state?.version !== "number" || typeof state.rootUUID !== "string" || !Array.isArray(state.fragments)) {
          return { kind: StreamEnd.unreadable };
        }
        this.emit(this.core.reset(state));
        this.kick(true);   // R7: every set not in flight is sent again, now
        return undefined;
      }
      default: {
        const kind = endOfEvent(type);
        return kind && { kind };
      }
    }
  }

  streamPath() {
    return `/v1/scopes/${encodeURIComponent(this.name)}/events`;
  }

  async readWithFetch() {
    const controller = new AbortController();
    // Why this side ended the connection, when it did: the watchdog or the browser going offline.
    let cut;
    const abortStream = (why = StreamEnd.dropped) => { cut ??= why; controller.abort(); };
    this.dropStream = () => abortStream(StreamEnd.dropped);
    const onAbort = () => abortStream(StreamEnd.dropped);
    this.abort.signal.addEventListener("abort", onAbort, { once: true });
    const silence = 2 * 1000 * (this.options.heartbeatInterval ?? 15);
    let watchdog;
    const arm = () => { clearTimeout(watchdog); watchdog = setTimeout(() => abortStream(StreamEnd.silence), silence); };
    try {
      const headers = { Accept: "text/event-stream" };
      // R2: after an inconsistent echo the next connection asks for the whole state.
      const lastEventId = this.reconnection.lastEventId(this.version);
      if (lastEventId !== null) headers["Last-Event-ID"] = String(lastEventId);
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      arm();
      const response = await this.fetch(this.baseURL + this.streamPath(), { headers, signal: controller.signal, cache: "no-store" });
      const refused = endOfResponse(response.status);
      if (refused === StreamEnd.forbidden) {
        return { kind: refused, error: new JetstreamError(`not allowed to read scope ${this.name}`, { status: 403, problem: await problemOf(response) }) };
      }
      if (refused) return { kind: refused };
      if (!response.body) return { kind: StreamEnd.serverError };
      this.opened();
      let end;
      const parser = new SSEParser(({ type, data }) => { end ??= this.handle(type, data); });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (done) return end ?? { kind: StreamEnd.dropped };
        parser.feed(value);
        if (end) { controller.abort(); return end; }
      }
    } catch (error) {
      if (cut) return { kind: cut };
      throw error;
    } finally {
      clearTimeout(watchdog);
      this.abort.signal.removeEventListener("abort", onAbort);
    }
  }

  readWithEventSource() {
    return new Promise((resolve) => {
      const query = new URLSearchParams();
      const lastEventId = this.reconnection.lastEventId(this.version);
      if (lastEventId !== null) query.set("lastEventId", String(lastEventId));
      if (this.token) query.set("access_token", this.token);
      const base = this.baseURL || globalThis.location?.origin || "";
      const source = new EventSource(`${base}${this.streamPath()}?${query}`);
      this.eventSource = source;
      const finish = (end) => { source.close(); this.eventSource = null; resolve(end); };
      this.dropStream = () => finish({ kind: StreamEnd.dropped });
      source.onopen = () => this.opened();
      // EventSource hides the status: a refusal at open and a dropped stream look the same.
      source.onerror = () => finish({ kind: StreamEnd.network });
      for (const type of ["changeset", "snapshot", "reset", "deleted", "closing", "auth-expired", "error"]) {
        source.addEventListener(type, (event) => {
          if (type === "error" && !(event instanceof MessageEvent)) return;
          const end = this.handle(type, event.data ?? "");
          if (end) finish(end);
        });
      }
      this.abort.signal.addEventListener("abort", () => finish({ kind: StreamEnd.dropped }), { once: true });
    });
  }

  /** Stops for good: status closed (the policy's reason), pending promises reject with `error`. */
  finish(error, notification) {
    this.closed = true;
    this.abort.abort();
    this.eventSource?.close();
    if (typeof removeEventListener === "function") {
      removeEventListener("online", this.onlineHandler);
      removeEventListener("offline", this.offlineHandler);
    }
    this.setStatus(this.reconnection.status);
    if (notification) this.emit({ version: this.version, local: false, fragments: [], removed: [], ...notification });
    for (const { reject } of this.waiters.values()) reject(error);
    this.waiters.clear();
  }

  deleted() {
    this.finish(new JetstreamError(`scope ${this.name} was deleted`, { status: 404 }), { deleted: true });
  }

  fail(error) {
    this.finish(error, { error });
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
      if (decision.refreshToken) this.token = await this.resolveToken(true).catch(() => this.token);
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
