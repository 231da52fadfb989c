// scope.mjs — the transport: one scope followed over HTTP around a SyncCore.
//
// Owns: `openScope` and `Scope` — loading the schema and the state (creating the scope when
// asked), reading the event stream (fetch streaming, EventSource fallback, the silence watchdog),
// sending pending change sets one at a time with their keys, the token provider, timers, status
// and notifications. What to do after a stream ends or a POST is answered is decided by the pure
// policies of connection-state.mjs; the view is SyncCore's (sync-core.mjs).

import { JetstreamError, Rejection } from "./errors.mjs";
import { Schema, randomUUID, wireUUID } from "./schema.mjs";
import { cloneProperties } from "./state.mjs";
import { SyncCore } from "./sync-core.mjs";
import { backoffDelay } from "./backoff.mjs";
import { SSEParser } from "./sse-parser.mjs";

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
