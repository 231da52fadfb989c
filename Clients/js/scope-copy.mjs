// scope-copy.mjs — the state of one scope for one connection, shared by every handle on it.
//
// Owns: `ScopeCopy`, one per scope and connection (connection.mjs), however many `Scope` handles
// (scope.mjs) share it: loading the schema and the state (creating the scope when asked), sending
// pending change sets one at a time with their keys (docs/sync-protocol.md, L2, R6) — server
// method calls among them, in order (`call`: a stub's edits shown until the server's change set
// replaces them; `StubView`, what a stub edits; docs/methods.md) — its status
// and notifications, this scope's events from the shared stream (shared-stream.mjs; R1, R2, R7),
// and its end. Its presence (presence.mjs) and its past (scope-past.mjs) are its parts. What to do
// after a POST is answered is decided by `SendRetryPolicy` (connection-state.mjs); the view is
// SyncCore's (sync-core.mjs). With `persist`, its `StoredCopy` (stored-copy.mjs) keeps it in
// IndexedDB: it starts from what is stored (at once, even offline) and catches up on the stream
// from the stored version (docs/js-client.md, "Offline and persistence").

import { JetstreamError, Rejection, problemOf } from "./errors.mjs";
import { Schema, randomUUID, wireUUID } from "./schema.mjs";
import { applyChangeSet, cloneProperties } from "./state.mjs";
import { SyncCore } from "./sync-core.mjs";
import { backoffDelay, pause } from "./backoff.mjs";
import { SendRetryPolicy, StreamEnd } from "./connection-state.mjs";
import { Presence } from "./presence.mjs";
import { ScopePast } from "./scope-past.mjs";
import { StoredCopy } from "./stored-copy.mjs";

/** The state of one scope for one connection, shared by every `Scope` handle on it. */
export class ScopeCopy {
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
    /** Method calls whose echo came while their answer was lost: asked again (same key) first. */
    this.unanswered = [];
    this.wake = null;
    /** Undo, restore, states at a version, history pages (docs/js-client.md, "Undo and the past"). */
    this.past = new ScopePast(this, options.undoLimit ?? 100);
    this.presence = new Presence(this, options.presenceTTL ?? 30);
    /** The copy in IndexedDB (`persist`; openScope gave a tab client id), else null. */
    this.stored = options.persist ? new StoredCopy(connection.baseURL, name, options.clientId) : null;
    /** What could not be read from storage at open (a fresh start from the server), if anything. */
    this.storageError = undefined;
    /** Started from the stored copy and not yet live on the stream: a schema change means the
     *  stored state is in an old schema, so the stream asks for the whole state. */
    this.fromStorage = false;
    // With persist the client id outlives the page (sessionStorage): a restore's key numbers
    // start over with each copy, so they carry this copy's own part too.
    if (this.stored) this.past.restorePrefix = `${randomUUID().slice(0, 8)}:`;
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

  add(clsName, properties = {}, options = {}) {
    const { uuid, fragments } = addFragments(this.core.schema, this.core.view, clsName, properties, options);
    const promise = this.enqueue(fragments);
    promise.catch(() => {});
    return uuid;
  }

  set(uuid, properties) {
    try {
      return this.change(setFragments(this.core.view, uuid, properties, this.name));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  remove(uuid) {
    try {
      return this.change(removeFragments(this.core.schema, this.core.view, uuid));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Calls the server method `method` with `args` (docs/methods.md), in the send queue's order:
   * after every local change made before it, before every one made after. `stub(view)` runs now
   * on a `StubView` of the view; its edits show at once, as the call's pending entry, until the
   * server's change set replaces them (its answer or its echo). A stub that throws shows nothing;
   * the call is sent all the same. Resolves the server's answer; rejects with a `Rejection`.
   */
  call(method, args, { stub } = {}) {
    if (this.closed) return Promise.reject(new JetstreamError(`scope ${this.name} is closed`));
    if (typeof method !== "string" || method === "") return Promise.reject(new JetstreamError("call(method, …): method must be a non-empty string"));
    let body;
    try {
      // A copy, fixed now: a retry sends the same body with the same key.
      body = args === undefined ? null : JSON.parse(JSON.stringify(args));
    } catch (error) {
      return Promise.reject(new JetstreamError(`call(${method}, …): args must be JSON: ${error?.message ?? error}`));
    }
    let fragments = [];
    if (stub !== undefined) {
      const view = new StubView(this.core.schema, this.core.view.clone(), this.name);
      try {
        stub(view);
        fragments = view.fragments;
      } catch (error) {
        console.warn(`jetstream: the stub of ${method} threw; the call goes to the server without it:`, error);
      } finally {
        view.finished = true;
      }
    }
    try {
      return this.enqueue(fragments, { method, args: body });
    } catch (error) {
      // The stub's edits applied to a copy of this very view: only a closed scope gets here.
      return Promise.reject(error);
    }
  }

  /**
   * The last handle was closed: stops following the scope. Pending sets not yet sent are dropped
   * (with persist they stay stored and go with the next open of the scope).
   */
  close() {
    if (this.closed) return;
    this.persistNow();
    this.presence.leave().catch(() => {});
    this.finish(new JetstreamError(`scope ${this.name} was closed`), { status: "closed", attempt: 0, reason: "requested" });
  }

  // -- opening ---------------------------------------------------------------------------------

  async open() {
    let found;
    if (this.stored) {
      found = await this.stored.read().catch((error) => {
        throw new JetstreamError(`scope ${this.name}: cannot read its stored copy (IndexedDB): ${error?.message ?? error}`);
      });
      if (found.problems.length > 0) this.storageError = StoredCopy.unreadableError(this.name, found.problems);
      if (this.canStartFromStorage(found)) {
        try {
          return this.openFromStorage(found);
        } catch (error) {
          this.storageError = StoredCopy.unreadableError(this.name, [...found.problems, `the stored state (${error?.message ?? error})`]);
          found.state = undefined;
        }
      }
    }
    await this.connection.ensureToken();
    // The connection's schema, read (or, when it has one, read again with If-None-Match).
    await this.connection.readSchema();
    const schema = this.connection.schema;
    if (!schema.rootClass(this.name)) throw new JetstreamError(`the schema has no scope rule for '${this.name}'`);
    // The keys' prefix is fixed per copy: a scope closed and opened again starts its sequence
    // over, so a prefix reused with it would replay the old answers for the new sets.
    this.core = new SyncCore(schema, { clientId: this.options.clientId });
    this.schemaShown = schema;
    if (found) this.core.restorePending(found.sets, found.sequence);
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
    const state = await response.json();
    // Stored pending sets are re-applied like after a reset: accepted ones the state has leave.
    this.emit(found ? this.core.reset(state) : this.core.load(state));
    this.connection.stream.add(this);
    this.sendLoop();
    if (this.stored) {
      this.stored.saveSchema(this.connection.schemaTag, this.connection.schemaText);
      // At once: until a state is stored, a reload without the server cannot show the scope.
      this.persistNow();
      this.reportStorageError();
    }
  }

  /** Whether the stored copy can be shown before the server answers: a state, in a schema that is stored. */
  canStartFromStorage(found) {
    const tag = found.state?.schemaTag;
    return found.state !== undefined && found.schema !== undefined && found.schema.tag === tag
      && (this.connection.schema === undefined || this.connection.schemaTag === tag);
  }

  /**
   * Shows the stored copy at once (confirmed state, pending sets re-applied), then catches up in
   * the background: reachable or not, `openScope` does not wait for the server.
   */
  openFromStorage(found) {
    let schema = this.connection.schema;
    if (schema === undefined) {
      schema = new Schema(JSON.parse(found.schema.text));
      this.connection.useStoredSchema(schema, found.schema.tag, found.schema.text);
    }
    if (!schema.rootClass(this.name)) throw new JetstreamError(`the schema has no scope rule for '${this.name}'`);
    const core = new SyncCore(schema, { clientId: this.options.clientId });
    core.restorePending(found.sets, found.sequence);
    const notification = core.load({ version: found.state.version, rootUUID: found.state.rootUUID, fragments: found.state.objects });
    this.core = core;
    this.schemaShown = schema;
    this.fromStorage = true;
    this.stored.schemaTag = found.schema.tag;
    this.stored.schemaText = found.schema.text;
    this.emit(notification);
    this.catchUp();
    this.reportStorageError();
  }

  /**
   * After a start from storage: the token and the schema (a server serving another schema now
   * sends the whole state, re-applying the pending sets like a reset), then the stream resumes
   * from the stored version (a `reset` when the server's history no longer reaches it) and the
   * pending sets are sent with their keys. A server that cannot be reached is the stream's to
   * retry (status "reconnecting").
   */
  async catchUp() {
    try { await this.connection.ensureToken(); } catch { /* the stream asks again */ }
    await this.connection.readSchema().catch(() => undefined);
    if (this.closed) return;
    if (this.core.schema !== this.schemaShown) this.connection.stream.scopes.whole.add(this.name);
    this.connection.stream.add(this);
    this.sendLoop();
  }

  /** Tells the subscribers (after `openScope` resolved) what could not be read from storage. */
  reportStorageError() {
    const error = this.storageError;
    if (!error) return;
    console.warn(`jetstream: ${error.message}`);
    setTimeout(() => this.emit({ version: this.version, local: false, fragments: [], removed: [], error }), 0);
  }

  /** The confirmed state or the pending sets changed: stored lazily (at once with `now`). */
  persistChanged(now = false) {
    if (!this.stored || !this.core?.confirmed) return;
    const core = this.core;
    this.stored.confirmedChanged(() => ({
      state: { version: core.confirmed.version, rootUUID: core.confirmed.rootUUID, objects: core.confirmed.objects.values() },
      pendingKeys: new Set(core.pending.map((set) => set.key)),
      schemaTag: this.connection.schemaTag,
    }), now);
  }

  /** The page is being hidden or left, or the copy closes: what is confirmed is written now. */
  persistNow() { this.persistChanged(true); }

  /** Resolves once every local change made so far is stored (`persist`); see `Scope.saved`. */
  saved() {
    if (!this.stored) return Promise.reject(new JetstreamError(`scope ${this.name} was not opened with persist: true; nothing is stored`));
    return this.stored.saved();
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
    if (status === "live") {
      this.fromStorage = false;
      // Back on the stream after an outage: the sets waiting out a send backoff go now.
      if (this.core?.pending.length > 0) this.kick(true);
    }
    for (const listener of this.statusListeners) listener(status, { attempt });
  }

  emit(notification) {
    if (!notification || notification.gap || notification.inconsistent) return;
    if (!notification.local && !notification.rejection && !notification.deleted && !notification.error && !notification.schemaChanged
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
      // A call whose echo came while its answer was lost is asked again first: its key replays
      // the answer, the result its promise waits for.
      const set = this.unanswered.shift() ?? this.core.nextToSend();
      if (!set) { await new Promise((resolve) => { this.wake = resolve; }); this.wake = null; continue; }
      set.status = "inflight";
      const isCall = set.kind === "method";
      let response;
      try {
        response = await this.request("POST",
          isCall ? `${this.scopePath()}/methods/${encodeURIComponent(set.method)}` : `${this.scopePath()}/changesets`,
          isCall ? { args: set.args ?? null } : { fragments: set.fragments },
          { "Idempotency-Key": set.key, ...(set.created ? { "Idempotency-Key-Created": set.created } : {}) });
      } catch {
        if (this.closed) return;
      }
      let problem;
      // A 409's type tells a refusal from a key still being decided (R6); a call's 502/504, a
      // failed method from a proxy's error.
      if (response?.status === 409 || (isCall && [502, 504].includes(response?.status))) {
        problem = await problemOf(response);
      }
      const type = String(problem?.type ?? "");
      let decision = this.sending.answered(response
        ? { status: response.status, retryAfter: response.headers.get("Retry-After") ?? undefined, problemType: type }
        : { network: true });
      if (isCall && ((response?.status === 502 && type.endsWith("/method-failed")) || (response?.status === 504 && type.endsWith("/method-timeout")))) {
        // The method (or its service) failed or did not answer in time, nothing applied: a
        // refusal, not a lost request (a 502 or 504 of a proxy, without that type, is retried).
        this.sending.startOver();
        decision = { action: "rejected" };
      }
      if (decision.action === "next") {
        const body = await response.json().catch(() => ({}));
        if (isCall) {
          this.callAnswered(set, body);
        } else {
          this.past.accepted(body.version);
          this.settle(set, { version: body.version });
          this.stored?.accepted(set, body.version);
          this.emit(this.core.accepted(set, body.version));
        }
        this.persistChanged();
      } else if (decision.action === "rejected" && isCall && set.echoedAt !== undefined) {
        // A call's answer asked again after its echo came, refused now (its key's window passed):
        // the server took it at the echo's version, with a result this client cannot know.
        this.past.accepted(set.echoedAt);
        this.settle(set, { version: set.echoedAt, method: set.method, result: undefined, fragments: [], removed: [] });
      } else if (decision.action === "rejected") {
        problem ??= await problemOf(response);
        const rejection = new Rejection({ status: response.status, problem, fragments: set.fragments, key: set.key, method: set.method });
        const notification = this.core.rejected(set);
        this.stored?.dropped(set);
        this.emit({ ...(notification ?? { version: this.version, local: false, fragments: [], removed: [] }), rejection });
        for (const listener of this.rejectionListeners) listener(rejection);
        this.settle(set, undefined, rejection);
      } else if (set.echoedAt !== undefined && !(isCall && this.waiters.has(set))) {
        // The answer was lost, but the set's echo came on the stream: the server took it.
        this.past.accepted(set.echoedAt);
        this.persistChanged();
        this.settle(set, { version: set.echoedAt });
      } else {
        // resend, wait or backoff: the set goes back to the queue and is sent again with its key
        // (a call whose echo came is asked again for its answer).
        if (set.echoedAt !== undefined) this.unanswered.push(set); else this.core.retry(set);
        if (decision.refreshToken) await this.connection.refreshToken();
        if (decision.action === "wait") await this.sendWait(decision.seconds * 1000);
        else if (decision.action === "backoff") await this.sendWait(backoffDelay(decision.attempt - 1, this.options.backoff));
      }
    }
  }

  /**
   * A method call answered 200: the server's change set replaces the stub's edits (none made: the
   * stub's edits go), and the promise gets the whole answer (`version`, `method`, `result`, …).
   */
  callAnswered(set, body) {
    const changed = (body.fragments?.length ?? 0) > 0 || (body.removed?.length ?? 0) > 0;
    if (changed) {
      this.past.accepted(body.version);
      this.stored?.accepted(set, body.version, body.fragments);
    } else {
      this.stored?.dropped(set);
    }
    this.settle(set, body);
    this.emit(this.core.callAnswered(set, body));
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
   * when it ends the shared connection: a gap or an inconsistent change set, unreadable data. A
   * `reset` or `snapshot` returns a promise (the schema is read again first) that resolves once
   * it is applied; the stream hands over no later event before.
   */
  handle(type, event) {
    switch (type) {
      case "changeset": {
        if (typeof event?.version !== "number" || !Array.isArray(event.fragments)) return { kind: StreamEnd.unreadable };
        const own = event.idempotencyKey;
        const echo = typeof own === "string" ? this.core.pending.find((set) => set.key === own) : undefined;
        const notification = this.core.event(event);
        if (notification?.gap) return { kind: StreamEnd.gap };
        if (notification?.inconsistent) return { kind: StreamEnd.inconsistent };
        this.emit(notification);
        if (notification) this.persistChanged();
        // Its echo: the server took the set, which has left `pending` and is never sent again.
        // While its POST is in flight, the answer settles it as usual, and if that answer is lost
        // (a connection dropped after the commit) the echo's version does (sendLoop). A set
        // waiting to be resent is settled now, or its promise would wait forever.
        if (echo && !this.core.pending.includes(echo)) {
          if (echo.status === "inflight") {
            echo.echoedAt = event.version;
          } else if (echo.kind === "method" && this.waiters.has(echo)) {
            // A call waiting to be resent: its promise waits for the answer (the result), which
            // its key replays.
            echo.echoedAt = event.version;
            this.unanswered.push(echo);
            this.kick();
          } else {
            this.past.accepted(event.version);
            this.settle(echo, { version: event.version });
          }
        }
        return undefined;
      }
      case "snapshot":
      case "reset": {
        if (typeof event?.version !== "number" || typeof event.rootUUID !== "string" || !Array.isArray(event.fragments)) {
          return { kind: StreamEnd.unreadable };
        }
        // The state may be in a schema this copy has not seen (a server restarted with a new
        // one resumes every scope with a reset): the schema is read again first, so the view and
        // the local changes after it are checked with the schema the state was made in. The
        // stream holds this scope's later events until then (shared-stream.mjs).
        return this.connection.revalidateSchema().then(() => this.reset(event));
      }
      default:
        return undefined;
    }
  }

  /** R7: a `reset` or `snapshot` replaces the confirmed state, with the schema now in use. */
  reset(event) {
    if (this.closed) return undefined;
    const notification = this.core.reset(event);
    if (this.core.schema !== this.schemaShown) {
      this.schemaShown = this.core.schema;
      notification.schemaChanged = true;
    }
    this.emit(notification);
    this.persistChanged();
    this.kick(true);   // R7: every set not in flight is sent again, now
    return undefined;
  }

  /**
   * The connection read another schema: local changes from now on are checked with it. The view
   * is rebuilt by the state that comes with it (the reset that follows; the reset's notification
   * says `schemaChanged`).
   */
  useSchema(schema) {
    if (this.core) this.core.schema = schema;
    // A copy started from storage whose state is in the schema replaced: the stream asks for the
    // whole state (its reset re-applies the pending sets) instead of resuming from the stored version.
    if (this.fromStorage) this.connection.stream.scopes.whole.add(this.name);
    this.stored?.saveSchema(this.connection.schemaTag, this.connection.schemaText);
  }

  /** The stream stopped this scope for good: `event: deleted` or 404 (deleted), 403 (forbidden). */
  stopped(reason, error) {
    this.connection.stopped(this);
    if (reason === StreamEnd.deleted) {
      this.stored?.forget();
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

  // -- for its parts: presence and the past ----------------------------------------------------

  scopePath() { return `/v1/scopes/${encodeURIComponent(this.name)}`; }

  /** Resolves once every local set made so far is answered (accepted or refused). */
  answered() {
    return Promise.allSettled([...this.waiters.values()].map((waiter) => waiter.promise));
  }

  /**
   * Applies locally (throwing a local `Rejection`) and queues the set for sending; with `call`
   * (`{method, args}`) the entry is a method call whose stub made `fragments`.
   */
  enqueue(fragments, call) {
    if (this.closed) throw new JetstreamError(`scope ${this.name} is closed`);
    const { set, notification } = this.core.local(fragments, call);
    // When the set was made goes with its key (Idempotency-Key-Created): sent again after the
    // server's idempotency window, it is decided from the server's log, never applied twice.
    set.created = new Date().toISOString();
    this.stored?.append(set, this.core.sequence);
    const waiter = {};
    const promise = new Promise((resolve, reject) => Object.assign(waiter, { resolve, reject }));
    waiter.promise = promise;
    this.waiters.set(set, waiter);
    // A call without a stub (or whose stub edited nothing) shows nothing until the server's set.
    if (fragments.length > 0 || !call) this.emit(notification);
    this.kick();
    return promise;
  }
}

// -- the fragments of `add`, `set` and `remove`, made against a state: the view's, or a stub's draft

/** `add`'s fragments: the object, and its insert into `parent`'s collection (or reference). */
function addFragments(schema, state, clsName, properties = {}, { parent = state.rootUUID, key, before = null, uuid = randomUUID() } = {}) {
  const parentObject = state.get(parent);
  if (!parentObject) throw new JetstreamError(`no object ${parent} to add to`);
  const parentClass = schema.modelClass(parentObject.clsName);
  const addedClass = schema.modelClass(clsName);
  const property = key !== undefined ? parentClass.properties.get(key)
    : [...parentClass.properties.values()].find((p) => p.isReference && addedClass?.isKindOf(p.referencedClass));
  if (!property) throw new JetstreamError(`${parentObject.clsName} has no property ${key !== undefined ? `'${key}'` : `that holds a ${clsName}`}`);
  const link = property.kind === "collection" ? { insert: [uuid], before } : uuid;
  return {
    uuid,
    fragments: [
      { type: "add", uuid, clsName, properties },
      { type: "change", uuid: parent, clsName: parentObject.clsName, properties: { [property.name]: link } },
    ],
  };
}

/** `set`'s fragment: a change of one object. */
function setFragments(state, uuid, properties, scopeName) {
  const object = state.get(wireUUID(uuid) ?? uuid);
  if (!object) throw new JetstreamError(`no object ${uuid} in scope ${scopeName}`);
  return [{ type: "change", uuid: object.uuid, clsName: object.clsName, properties }];
}

/** `remove`'s fragments: the object out of every collection or reference that holds it. */
function removeFragments(schema, state, uuid) {
  const target = wireUUID(uuid) ?? uuid;
  const fragments = [];
  for (const object of state.objects.values()) {
    const properties = {};
    for (const property of schema.modelClass(object.clsName)?.references ?? []) {
      const value = object.properties[property.name];
      if (Array.isArray(value) ? value.includes(target) : value === target) {
        properties[property.name] = Array.isArray(value) ? { remove: [target] } : null;
      }
    }
    if (Object.keys(properties).length > 0) fragments.push({ type: "change", uuid: object.uuid, clsName: object.clsName, properties });
  }
  if (fragments.length === 0) throw new JetstreamError(`no object holds ${uuid}`);
  return fragments;
}

/**
 * What a method call's stub edits (`scope.call(method, args, {stub})`): a draft of the view that
 * `set`, `add`, `remove` and `change` edit as the scope's own would — each checked against the
 * schema and applied to the draft at once, so `get` sees it — collecting the fragments instead of
 * sending them. Usable only while the stub runs (synchronously).
 */
export class StubView {
  constructor(schema, state, scopeName) {
    this.schema = schema;
    this.state = state;
    this.scopeName = scopeName;
    /** Every fragment the stub's edits made, in order. */
    this.fragments = [];
    this.finished = false;
  }

  get rootUUID() { return this.state.rootUUID; }
  get version() { return this.state.version; }

  /** An object of the draft, as `{uuid, clsName, properties}` (a copy), or undefined. */
  get(uuid) {
    const object = this.state.get(wireUUID(uuid) ?? uuid);
    return object && { uuid: object.uuid, clsName: object.clsName, properties: cloneProperties(object.properties) };
  }

  /** The draft as `GET` would serve it. */
  snapshot() { return this.state.toJSON(this.schema); }

  set(uuid, properties) { this.change(setFragments(this.state, uuid, properties, this.scopeName)); }

  add(clsName, properties, options) {
    const { uuid, fragments } = addFragments(this.schema, this.state, clsName, properties, options);
    this.change(fragments);
    return uuid;
  }

  remove(uuid) { this.change(removeFragments(this.schema, this.state, uuid)); }

  /** Applies fragments to the draft; throws a local `Rejection` when they do not apply. */
  change(fragments) {
    if (this.finished) throw new JetstreamError("a stub's view is usable only while the stub runs");
    const version = this.state.version;
    const outcome = applyChangeSet(this.state, this.schema, fragments);
    this.state.version = version;
    if (!outcome.ok) {
      throw new Rejection({
        status: 422, local: true, fragments,
        problem: { type: "/problems/invalid-change-set", title: "Change set rejected", status: 422,
                   detail: "a stub's edit, checked locally against the schema", fragmentReplies: outcome.replies },
      });
    }
    this.fragments.push(...fragments);
  }
}
