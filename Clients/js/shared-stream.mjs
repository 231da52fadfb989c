// shared-stream.mjs — a connection's one event stream for all its scopes.
//
// Owns: `SharedStream`, one per connection (connection.mjs): the one `GET /v1/events?scope=…`
// (fetch streaming, the `EventSource` fallback, the silence watchdog), opened again from every
// scope's version when a scope joins or leaves (once per turn however many do), its events routed
// by their data's `scope` to the copies (scope-copy.mjs) and their presence (presence.mjs), the
// status it shows them, and the browser's `online`/`offline`. What to do after an end is decided
// by the pure policies of connection-state.mjs, how long to wait by backoff.mjs.

import { JetstreamError, problemOf } from "./errors.mjs";
import { backoffDelay, pause } from "./backoff.mjs";
import { ReconnectionPolicy, StreamEnd, StreamScopes, endOfEvent } from "./connection-state.mjs";
import { SSEParser } from "./sse-parser.mjs";

/** A connection end of this side's own making: the shared stream's scopes changed. */
const SWITCH = "switch";
/** The stream refused one of its scopes (404, 403 naming it): that scope stops, the rest go on. */
const REFUSED_SCOPE = "refused-scope";

/** The JSON of an event's data, or undefined when it is not JSON. */
function readJSON(data) {
  try { return JSON.parse(data); } catch { return undefined; }
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
export class SharedStream {
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
        // The server may be another one now (restarted with a new schema, upgraded, another
        // node): its schema is read again (If-None-Match) before the scopes resume on it.
        if (this.members.size > 0) await this.connection.revalidateSchema();
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
   * scope-bound event for a scope no longer carried (it left during the switch) is dropped. A
   * `reset` or `snapshot` gives a promise of that instead (its scope reads the schema again
   * first): the readers hand over no later event until it settles, so events apply in order.
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
        const outcome = copy.handle(type, event);
        const ended = (end) => { if (end) this.scopes.ended(end.kind, copy.name); return end; };
        return outcome instanceof Promise ? outcome.then(ended) : ended(outcome);
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
      const received = [];
      const parser = new SSEParser((event) => received.push(event));
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (cutWhy) { controller.abort(); return { kind: cutWhy }; }
        if (done) return end ?? { kind: StreamEnd.dropped };
        parser.feed(value);
        for (const { type, data } of received.splice(0)) {
          if (cutWhy || end) break;
          const outcome = this.dispatch(type, data);
          end = outcome instanceof Promise ? await outcome : outcome;
        }
        if (cutWhy) { controller.abort(); return { kind: cutWhy }; }
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
      // A reset waiting for the schema holds the events behind it (they keep their order).
      let behind = null;
      const deliver = (type, data) => {
        if (done) return undefined;
        const outcome = this.dispatch(type, data);
        if (!(outcome instanceof Promise)) { if (outcome) finish(outcome); return undefined; }
        return outcome.then((end) => { if (end) finish(end); });
      };
      for (const type of ["changeset", "snapshot", "reset", "deleted", "presence", "closing", "auth-expired", "error"]) {
        source.addEventListener(type, (event) => {
          if (type === "error" && !(event instanceof MessageEvent)) return;
          const data = event.data ?? "";
          const waiting = behind ? behind.then(() => deliver(type, data)) : deliver(type, data);
          if (!waiting) return;
          const mine = waiting.catch(() => {}).then(() => { if (behind === mine) behind = null; });
          behind = mine;
        });
      }
    });
  }
}
