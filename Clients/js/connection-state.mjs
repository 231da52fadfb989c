// connection-state.mjs — what the client does after a stream connection ends or a POST is
// answered: two pure, clock-free policies that the transport (shared-stream.mjs, scope-copy.mjs,
// scope-past.mjs) asks and obeys.
//
// Owns: `ReconnectionPolicy` (the event stream) and `SendRetryPolicy` (the change sets), the
// names of how a stream connection can end (`StreamEnd`) and which statuses and events end one,
// `StreamScopes` (which scopes a shared stream carries and how its next request names them), and
// `UndoHistory` (which of this client's own accepted change sets an undo reverts next).
// No I/O, no timers, no clock: the caller says how long a connection lasted (ms), so a test
// drives them with a manual clock, and the shared traces (Tests/Fixtures/sync-traces.json) hold
// the Swift client to the same rules (docs/sync-protocol.md, R1–R7).
//
// The stream, one connection at a time:
//
//                  opened()                   ended(kind, lastedMs)
//   connecting ──────────────► live ────────────────────────────────┐
//       │                       ▲                                   │
//       │ ended(kind, …)        │ opened()                          ▼
//       └─────────────────► reconnecting ◄──┬── at once, attempt 0:
//                                           │     closing, a gap (R1); an inconsistent event,
//                                           │     the next one without Last-Event-ID (R2);
//                                           │     401 at open, auth-expired: new token first (R3)
//                                           └── back off, attempt k ≥ 1 (R5): network, dropped,
//                                                 5xx, event: error, silence, unreadable (the next
//                                                 one without Last-Event-ID); an at-once end within
//                                                 1 s of a connection that itself followed one (R4)
//
//   ended: 404, event: deleted ─► closed (deleted)        ended: 403 ─► closed (forbidden)
//   close(), from any state ─► closed (requested)
//   k counts consecutive backoffs; it starts over after a connection of more than 60 s.
//
// The scopes of one shared stream (S1–S4): one ReconnectionPolicy for the stream, and
//
//   join(A), leave(B) ──► the list changed: a connection made for an older list is re-opened at
//                         once from every scope's cv — the client's own end, not the policy's (S3)
//   request(cv of)    ──► scope=A@5&scope=C: each scope from its cv; a scope marked whole
//                         without a position (it gets a snapshot)
//   ended(kind, A)    ──► inconsistent or unreadable in A: A is marked whole (R2); unreadable in no
//                         known scope: every scope is
//   opened()          ──► the marks are served: cleared
//   refused(status, problem) at open ──► 404/403 naming a carried scope: stop that scope only, the
//                         rest re-open at once; naming a scope no longer carried: re-open at once;
//                         naming none: the policy's end (R3, R5) for the whole stream (S4)
//
// A POST in flight, answered (R6):
//   200 ─► next            400 403 404 409 412 413 415 422 ─► rejected
//   409 idempotency-key-in-flight ─► wait Retry-After (1 s), resend with the same key
//   401 ─► new token, resend at once; a second 401 in a row ─► new token, back off
//   network error, any other status ─► Retry-After s when given (> 0), else back off (attempt k)

/** How one connection of the event stream ended. */
export const StreamEnd = Object.freeze({
  /** `event: closing` (the server drains or rebalances). */
  closing: "closing",
  /** A `changeset` event past `version + 1`. */
  gap: "gap",
  /** A `changeset` event at `version + 1` that does not apply to the confirmed state. */
  inconsistent: "inconsistent",
  /** `event: auth-expired`. */
  authExpired: "auth-expired",
  /** `401` when the stream opens. */
  unauthorized: "unauthorized",
  /** The request failed (no answer). */
  network: "network",
  /** The stream ended without an event that says why. */
  dropped: "dropped",
  /** `5xx` (or another status that is not one of the above) when the stream opens. */
  serverError: "server-error",
  /** `event: error`. */
  error: "error",
  /** Nothing arrived for two heartbeat intervals. */
  silence: "silence",
  /** An event whose data cannot be read (not JSON, not a change set or state): back off, and the
   *  next connection asks for the whole state instead of resuming past it. */
  unreadable: "unreadable",
  /** `404` when the stream opens, or `event: deleted`. */
  deleted: "deleted",
  /** `403` when the stream opens. */
  forbidden: "forbidden",
});

/**
 * The end a stream response's status means, or undefined for 200 (the stream is open): 401
 * unauthorized, 403 forbidden, 404 deleted, any other a server error.
 */
export function endOfResponse(status) {
  switch (status) {
    case 200: return undefined;
    case 401: return StreamEnd.unauthorized;
    case 403: return StreamEnd.forbidden;
    case 404: return StreamEnd.deleted;
    default: return StreamEnd.serverError;
  }
}

/**
 * The end an SSE event means, or undefined for one that does not end the connection (a
 * `changeset` ends it only through SyncCore's answer: a gap or an inconsistency).
 */
export function endOfEvent(type) {
  switch (type) {
    case "closing": return StreamEnd.closing;
    case "auth-expired": return StreamEnd.authExpired;
    case "error": return StreamEnd.error;
    case "deleted": return StreamEnd.deleted;
    default: return undefined;
  }
}

/** Ends after which the client reconnects at once (unless it spins, R4). */
const AT_ONCE = new Set([StreamEnd.closing, StreamEnd.gap, StreamEnd.inconsistent, StreamEnd.authExpired, StreamEnd.unauthorized]);
/** Ends after which the client backs off (R5). */
const BACK_OFF = new Set([StreamEnd.network, StreamEnd.dropped, StreamEnd.serverError, StreamEnd.error, StreamEnd.silence, StreamEnd.unreadable]);

/**
 * The event stream's reconnection rules (R1–R5). `status` is what the scope shows:
 * `{status: "connecting" | "live" | "reconnecting" | "closed", attempt, reason?}` — `attempt` 0
 * while reconnecting at once, k while backing off; `reason` ("requested", "deleted", "forbidden")
 * once closed. `fullState` says whether the next connection asks for the whole state (no
 * `Last-Event-ID`).
 *
 *   const policy = new ReconnectionPolicy();
 *   policy.opened();
 *   policy.ended("closing", 5_000)   // {action: "reconnect", attempt: 0, refreshToken: false, fullState: false}
 *   policy.ended("network", 20)      // {action: "backoff", attempt: 1, …}: wait backoffDelay(0)
 */
export class ReconnectionPolicy {
  /** A connection that ends at once within `spinWindow` ms of its start, right after a
   *  reconnection at once, backs off (R4); one that lasted more than `healthyAfter` ms resets the
   *  backoff (R5). */
  constructor({ spinWindow = 1000, healthyAfter = 60_000 } = {}) {
    this.spinWindow = spinWindow;
    this.healthyAfter = healthyAfter;
    /** Consecutive backoffs (the last one's attempt number). */
    this.attempt = 0;
    /** Whether the last end was followed by a reconnection at once. */
    this.reconnectedAtOnce = false;
    this.fullState = false;
    this.status = { status: "connecting", attempt: 0 };
  }

  get stopped() { return this.status.status === "closed"; }

  /** The stream answered 200: live; a full state asked for has now been served. */
  opened() {
    if (this.stopped) return this.status;
    this.fullState = false;
    this.status = { status: "live", attempt: 0 };
    return this.status;
  }

  /**
   * A connection ended `kind` (a `StreamEnd`) after `lastedMs` milliseconds. Returns the decision:
   * `{action: "reconnect" | "backoff" | "stop", attempt, refreshToken, fullState, reason?}` —
   * `backoff` waits `backoffDelay(attempt - 1)`; `refreshToken` asks the token provider first;
   * `fullState` leaves `Last-Event-ID` out of the next request; `reason` says why it stopped.
   */
  ended(kind, lastedMs) {
    if (this.stopped) return this.decision("stop", { reason: this.status.reason });
    if (kind === StreamEnd.deleted || kind === StreamEnd.forbidden) {
      this.status = { status: "closed", attempt: 0, reason: kind };
      return this.decision("stop", { reason: kind });
    }
    if (!AT_ONCE.has(kind) && !BACK_OFF.has(kind)) throw new RangeError(`unknown stream end '${kind}'`);
    if (lastedMs > this.healthyAfter) this.attempt = 0;
    if (kind === StreamEnd.inconsistent || kind === StreamEnd.unreadable) this.fullState = true;
    const refreshToken = kind === StreamEnd.unauthorized || kind === StreamEnd.authExpired;
    if (AT_ONCE.has(kind)) {
      // A draining server answers every new stream with `closing`, and a provider with no valid
      // token left gets 401 after 401: after one reconnection at once, an end as fast backs off.
      const spinning = this.reconnectedAtOnce && lastedMs < this.spinWindow;
      this.reconnectedAtOnce = true;
      if (!spinning) {
        this.status = { status: "reconnecting", attempt: 0 };
        return this.decision("reconnect", { refreshToken });
      }
    } else {
      this.reconnectedAtOnce = false;
    }
    this.attempt += 1;
    this.status = { status: "reconnecting", attempt: this.attempt };
    return this.decision("backoff", { refreshToken });
  }

  /** The `Last-Event-ID` of the next connection: the confirmed `version`, or null for the whole state (R2). */
  lastEventId(version) { return this.fullState ? null : version; }

  /** The network came back (a browser's `online` event): the next backoff starts over. */
  online() { this.attempt = 0; }

  /** `close()`: stopped on request. */
  close() {
    if (!this.stopped) this.status = { status: "closed", attempt: 0, reason: "requested" };
    return this.status;
  }

  decision(action, { refreshToken = false, reason } = {}) {
    const decision = { action, attempt: action === "backoff" ? this.attempt : 0, refreshToken, fullState: this.fullState };
    if (reason !== undefined) decision.reason = reason;
    return decision;
  }
}

/**
 * Which scopes one shared stream carries and how its next request names them
 * (docs/sync-protocol.md, S1–S4). Pure: the transport keeps each scope's state and says what
 * happened; this says what the next request asks for and what a refusal at open means.
 *
 *   const scopes = new StreamScopes();
 *   scopes.join("canvas-1"); scopes.join("canvas-2");
 *   scopes.request((name) => versions[name])   // ["canvas-1@4", "canvas-2@9"]; stale is false now
 *   scopes.join("canvas-3");                   // stale: re-open the connection at once
 *   scopes.refused(404, { scope: "canvas-2" }) // {stop: "canvas-2", reason: "deleted"}
 */
export class StreamScopes {
  constructor() {
    /** The carried scopes, in the order they joined. */
    this.names = [];
    /** Scopes whose next request asks for the whole state (no position). */
    this.whole = new Set();
    this.epoch = 0;
    this.requestedEpoch = -1;
  }

  get size() { return this.names.length; }
  has(name) { return this.names.includes(name); }

  /** Whether the last request was made for another list than the one carried now (S3). */
  get stale() { return this.requestedEpoch !== this.epoch; }

  join(name) {
    if (this.has(name)) return;
    this.names.push(name);
    this.epoch += 1;
  }

  leave(name) {
    if (!this.has(name)) return;
    this.names = this.names.filter((known) => known !== name);
    this.whole.delete(name);
    this.epoch += 1;
  }

  /** The `scope` parameters of the next request: `NAME@cv`, or `NAME` for a scope marked whole (S2). */
  request(versionOf) {
    this.requestedEpoch = this.epoch;
    return this.names.map((name) => (this.whole.has(name) ? name : `${name}@${versionOf(name)}`));
  }

  /** A connection ended `kind` because of an event of scope `name` (undefined: of no known scope). */
  ended(kind, name) {
    if (kind !== StreamEnd.inconsistent && kind !== StreamEnd.unreadable) return;
    for (const marked of name === undefined ? this.names : [name]) if (this.has(marked)) this.whole.add(marked);
  }

  /** The stream answered: every scope marked whole gets its snapshot now. */
  opened() { this.whole.clear(); }

  /**
   * A refusal at open: `{stop, reason, retry: true}` for a 404 (deleted) or 403 (forbidden) naming
   * a carried scope — that scope stops, the others re-open at once; `{retry: true}` for one naming
   * a scope that left meanwhile; else `{kind}`, the stream's end for the policy (S4).
   */
  refused(status, problem) {
    const named = typeof problem?.scope === "string" && (status === 404 || status === 403);
    if (named && this.has(problem.scope)) {
      return { stop: problem.scope, reason: status === 404 ? StreamEnd.deleted : StreamEnd.forbidden, retry: true };
    }
    if (named) return { retry: true };
    return { kind: endOfResponse(status) };
  }
}

/** Statuses after which a change set is refused for good (R6); any other is retried. */
export const FINAL_STATUSES = Object.freeze([400, 403, 404, 409, 412, 413, 415, 422]);
const FINAL = new Set(FINAL_STATUSES);

/**
 * What to do with the change set in flight once its POST is answered (R6):
 * `{action: "next"}` (accepted), `{action: "rejected"}` (refused for good), `{action: "resend",
 * refreshToken: true}` (at once, with a new token), `{action: "backoff", attempt, refreshToken}`
 * (wait `backoffDelay(attempt - 1)`) or `{action: "wait", seconds}` (the server's Retry-After).
 * The set goes back to the queue for every action but `next` and `rejected`.
 *
 *   const policy = new SendRetryPolicy();
 *   policy.answered({ status: 503, retryAfter: "2" })   // {action: "wait", seconds: 2}
 *   policy.answered({ network: true })                  // {action: "backoff", attempt: 1, refreshToken: false}
 *   policy.answered({ status: 200 })                    // {action: "next"}, the attempt count starts over
 */
export class SendRetryPolicy {
  constructor() {
    /** Consecutive backoffs (the last one's attempt number). */
    this.attempt = 0;
    /** 401s in a row for the set in flight. */
    this.unauthorized = 0;
  }

  /**
   * `answer`: `{status, retryAfter, problemType}` (a `Retry-After` header as given: seconds, or
   * undefined; the problem's `type`, read for a 409) or `{network: true}` for a request that got
   * no answer.
   */
  answered({ status, retryAfter, network = false, problemType } = {}) {
    if (!network && status === 409 && String(problemType ?? "").endsWith("/idempotency-key-in-flight")) {
      // The same key is still being decided — an earlier attempt whose answer was lost: not a
      // refusal; asked again after its Retry-After (1 s when it gives none).
      const wait = Number(retryAfter);
      return { action: "wait", seconds: Number.isFinite(wait) && wait > 0 ? wait : 1 };
    }
    if (!network && status === 401) {
      this.unauthorized += 1;
      if (this.unauthorized === 1) return { action: "resend", refreshToken: true };
      this.attempt += 1;
      return { action: "backoff", attempt: this.attempt, refreshToken: true };
    }
    this.unauthorized = 0;
    if (!network && status === 200) { this.attempt = 0; return { action: "next" }; }
    if (!network && FINAL.has(status)) { this.attempt = 0; return { action: "rejected" }; }
    const seconds = retryAfter === undefined || retryAfter === null ? NaN : Number(retryAfter);
    if (Number.isFinite(seconds) && seconds > 0) return { action: "wait", seconds };
    this.attempt += 1;
    return { action: "backoff", attempt: this.attempt, refreshToken: false };
  }

  /** A reset or snapshot resends every set at once, and the browser came back online: start over. */
  startOver() { this.attempt = 0; this.unauthorized = 0; }
}

/**
 * The versions of this client's own accepted change sets, most recent first, that an undo may
 * still revert (docs/js-client.md, "Undo and the past"). Pure: the transport records each version
 * the server answered for one of its POSTs (change sets and restores, never the reverts an undo
 * made — so undo twice reverts two different sets), takes the most recent one out before it asks
 * for its revert, and puts it back only when that request could not be made (the next try sends
 * the same Idempotency-Key). Keeps at most `limit` versions: the oldest go first.
 *
 *   const history = new UndoHistory();
 *   history.accepted(4); history.accepted(7);
 *   history.next();      // 7 — POST …/changesets/7/revert; on a revert-conflict, next() again: 4
 */
export class UndoHistory {
  constructor(limit = 100) {
    this.limit = limit;
    /** Descending. */
    this.versions = [];
  }

  /** How many versions an undo may still try. */
  get count() { return this.versions.length; }

  /** The server accepted one of this client's sets at `version` (ignored when already known). */
  accepted(version) {
    if (!Number.isInteger(version) || version < 1 || this.versions.includes(version)) return;
    const index = this.versions.findIndex((known) => known < version);
    this.versions.splice(index < 0 ? this.versions.length : index, 0, version);
    if (this.versions.length > this.limit) this.versions.length = this.limit;
  }

  /** Takes the most recent version out (undefined when none is left): the set to revert now. */
  next() { return this.versions.shift(); }

  /** A revert that could not be asked (network, 5xx, 401): `version` is a candidate again. */
  putBack(version) { this.accepted(version); }

  /**
   * The server no longer keeps the change set `version` (it is older than the retained history):
   * the older ones are gone too, as history is trimmed from its start.
   */
  gone(version) { this.versions = this.versions.filter((known) => known > version); }
}
