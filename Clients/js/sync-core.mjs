// sync-core.mjs — the sync algorithm as a pure state machine: no I/O, no timers, no clock.
//
// Owns: `SyncCore` — `confirmed` (the server's state at `version`), `pending` (local change sets in
// creation order, each with its fixed Idempotency-Key; a server method call is one of them, its
// stub's edits as its fragments) and the `view` the application sees
// (confirmed with every pending set re-applied), and the notification each step gives
// subscribers. The transport (scope-copy.mjs) feeds it server answers and stream events; the
// shared traces (Tests/Fixtures/sync-traces.json) drive it directly. The same algorithm as the
// Swift client's SyncEngine (docs/sync-protocol.md: L1, L2, E1, R6, R7, N1).

import { Rejection } from "./errors.mjs";
import { randomUUID, wireUUID } from "./schema.mjs";
import { ScopeState, applyChangeSet, cloneProperties, sameProperties } from "./state.mjs";


/**
 * The client's state machine. `confirmed` is the server's state at `version`; `pending` holds
 * local change sets in creation order; `view` is confirmed with every pending set re-applied.
 * Every method returns the notification for subscribers (or null when nothing visible changed):
 * `{version, local, fragments, removed}` where `fragments` are the objects whose view changed
 * (as `add`/`change` with all their properties) and `removed` the UUIDs that left the view.
 *
 *   const core = new SyncCore(schema, { clientId: "tab-1" });
 *   core.load(await (await fetch("/v1/scopes/canvas-1")).json());
 *   const { set } = core.local([{ type: "change", uuid, clsName: "Shape", properties: { x: 1 } }]);
 *   // …POST set.fragments with Idempotency-Key set.key…, then core.accepted(set, 42)
 */
export class SyncCore {
  constructor(schema, { clientId = randomUUID() } = {}) {
    this.schema = schema;
    this.clientId = clientId;
    this.sequence = 0;
    this.confirmed = null;
    this.view = null;
    this.pending = [];
    /** UUIDs the pending sets changed in the current view: a rebase may change them back. */
    this.pendingTouched = new Set();
    /** Whether every pending set applied at the last rebuild (local() adds only sets that apply). */
    this.allPendingApplied = true;
  }

  get version() { return this.confirmed?.version ?? 0; }
  get rootUUID() { return this.confirmed?.rootUUID; }

  /**
   * Takes pending sets kept from an earlier page (stored-copy.mjs), before `load` or `reset`:
   * `{key, fragments, status, version, created}` in order, their keys unchanged, and the key
   * sequence to go on from (a key is never made twice).
   */
  restorePending(sets, sequence = 0) {
    this.pending = sets.map(({ key, fragments, status, version, created, kind, method, args }) => ({
      key, fragments, status: status === "accepted" ? "accepted" : "queued", version: status === "accepted" ? version : undefined, created,
      ...(kind === "method" ? { kind, method, args } : {}),
    }));
    this.sequence = Math.max(this.sequence, sequence);
  }

  /** Starts from a state (`GET`, snapshot). */
  load(json) {
    const before = this.view;
    this.confirmed = ScopeState.fromJSON(json);
    return this.recompute(before, { version: this.version, local: false }, null);
  }

  /**
   * L1: a local change set, checked against the view and applied to it at once. Returns
   * `{set, notification}`; throws a `Rejection` (local: true) when the set cannot apply.
   *
   * With `call` (`{method, args}`) the entry is a server method call (docs/methods.md): sent in
   * its place in the queue with its own key, `fragments` being its stub's edits (none without a
   * stub), shown until the server's change set replaces them (`callAnswered`, or its echo).
   */
  local(fragments, call) {
    // The view is applied to in place; while nothing is pending it is `confirmed` itself.
    if (this.view === this.confirmed) this.view = this.confirmed.clone();
    // Own edits are checked for `immutable` too; a stub's are not (the method may act as the server).
    const outcome = applyChangeSet(this.view, this.schema, fragments, { checkImmutable: call === undefined });
    if (!outcome.ok) {
      throw new Rejection({
        status: 422, local: true, fragments,
        problem: { type: "/problems/invalid-change-set", title: "Change set rejected", status: 422,
                   detail: "checked locally against the schema; nothing was sent", fragmentReplies: outcome.replies },
      });
    }
    const set = { key: `${this.clientId}:${++this.sequence}`, fragments, status: "queued", version: undefined };
    if (call) Object.assign(set, { kind: "method", method: call.method, args: call.args });
    this.pending.push(set);
    this.view.version = this.version;
    const before = new ScopeState(this.rootUUID, this.version, new Map([...outcome.previous].filter(([, record]) => record)));
    const touched = touchedBy([outcome]);
    for (const uuid of touched) this.pendingTouched.add(uuid);
    return { set, notification: this.describe(before, touched, { version: this.version, local: true }) };
  }

  /** The next set to send, when none is in flight. */
  nextToSend() {
    if (this.pending.some((set) => set.status === "inflight")) return undefined;
    return this.pending.find((set) => set.status === "queued");
  }

  /** R6: accepted at `version`; kept until the stream's confirmed state reaches it. */
  accepted(set, version) {
    set.status = "accepted";
    set.version = version;
    return version <= this.version ? this.drop(set) : null;
  }

  /**
   * A method call answered 200 with the server's change set (`{version, fragments, removed}`):
   * the stub's edits give way to it. No change (no fragments, nothing removed): the entry leaves,
   * and its stub's edits with it. The next version: applied to the confirmed state at once, as its
   * echo would be (the echo is then stale). A later one: the entry holds the server's fragments
   * instead of the stub's, accepted at that version, until the stream's confirmed state has it.
   */
  callAnswered(set, answer) {
    if (!this.pending.includes(set)) return null;
    const fragments = Array.isArray(answer?.fragments) ? answer.fragments : [];
    const removed = Array.isArray(answer?.removed) ? answer.removed : [];
    if (fragments.length === 0 && removed.length === 0) return this.drop(set);
    if (answer.version === this.version + 1) {
      const notification = this.event({ version: answer.version, fragments, removed, idempotencyKey: set.key });
      if (notification && !notification.gap && !notification.inconsistent) return notification;
    }
    const before = this.view;
    set.fragments = fragments;
    delete set.uuids;
    set.status = "accepted";
    set.version = answer.version;
    if (answer.version <= this.version) return this.drop(set);
    return this.recompute(before, { version: this.version, local: false }, new Set());
  }

  /** R6: refused by the server; its effect leaves the view. */
  rejected(set) { return this.drop(set); }

  /** R6: back to the queue (network error, 5xx), to be sent again with the same key. */
  retry(set) { if (set.status === "inflight") set.status = "queued"; }

  /**
   * A `changeset` event. Returns null for one already applied, `{gap: true}` for one ahead of
   * `version + 1` (the caller reconnects from `version`, R1), `{inconsistent: true, replies}` for
   * one at `version + 1` that does not apply to the confirmed state — the stream and this client
   * disagree, so the caller reconnects for the whole state (R2); nothing changed — else the
   * notification. The pending set whose key is the event's `idempotencyKey` (its echo) leaves.
   */
  event(event) {
    if (event.version <= this.version) return null;
    if (event.version > this.version + 1) return { gap: true };
    const touched = new Set([...event.fragments.map((f) => f.uuid), ...(event.removed ?? [])]);
    const info = { version: event.version, local: false };
    const own = event.idempotencyKey;
    if (this.view !== this.confirmed && this.independentOfPending(event, touched, own)) {
      // The event changes only values of objects the pending sets neither wrote nor name, and
      // every one of them applies: re-applying them would give the view plus the event, so apply
      // it to both and skip the rebuild (a drag keeps a set pending while others' edits stream in).
      const before = this.view.subset(touched);
      const outcome = this.applyToConfirmed(event);
      if (!outcome.ok) return { inconsistent: true, replies: outcome.replies };
      // The pending sets touched none of these objects, so the view's records of them are the
      // confirmed ones: share them (records are never changed in place). Copying the result, not
      // re-applying the fragments, also covers an operations object on a collection.
      for (const uuid of touched) {
        const record = this.confirmed.objects.get(uuid);
        if (record === undefined) this.view.objects.delete(uuid); else this.view.objects.set(uuid, record);
      }
      this.view.version = this.confirmed.version;
      return this.describe(before, touched, info);
    }
    const withoutPending = this.view === this.confirmed;
    // Without pending sets the view is `confirmed` itself, changed in place: what changed is what
    // the application wrote or removed, with the records from before (never changed in place).
    const before = withoutPending ? null : this.view;
    const outcome = this.applyToConfirmed(event);
    if (!outcome.ok) return { inconsistent: true, replies: outcome.replies };
    const written = new Set(outcome.previous.keys());
    this.pending = this.pending.filter((set) => set.key !== own && !(set.status === "accepted" && set.version <= event.version));
    if (withoutPending) {
      const records = [...outcome.previous].filter(([, record]) => record !== undefined);
      return this.recompute(new ScopeState(this.rootUUID, this.version, new Map(records)), info, written);
    }
    return this.recompute(before, info, new Set([...touched, ...written]));
  }

  /** The event applied to `confirmed` with the model's rules (all or nothing), at its version. */
  applyToConfirmed(event) {
    const outcome = applyChangeSet(this.confirmed, this.schema, event.fragments);
    if (outcome.ok) this.confirmed.version = event.version;
    return outcome;
  }

  /**
   * Whether an event leaves every pending set as it is and the view's reachability alone: it
   * removes nothing and writes no reference (what stays in a scope depends on every path to an
   * object, not only on the objects an event touches); none of the pending sets is its own echo
   * or accepted; all applied at the last rebuild; none wrote or names a touched object.
   */
  independentOfPending(event, touched, key) {
    if (!this.allPendingApplied || (event.removed?.length ?? 0) > 0) return false;
    for (const fragment of event.fragments) {
      const references = this.schema.modelClass(fragment.clsName)?.references;
      if (!references || references.some((property) => property.name in fragment.properties)) return false;
    }
    for (const set of this.pending) {
      if (set.key === key || set.status === "accepted") return false;
      set.uuids ??= uuidsIn(set.fragments);
      for (const uuid of touched) if (set.uuids.has(uuid) || this.pendingTouched.has(uuid)) return false;
    }
    return true;
  }

  /** R7: a `reset` (or snapshot): new confirmed state; every unacknowledged set is sent again. */
  reset(json) {
    const before = this.view;
    this.confirmed = ScopeState.fromJSON(json);
    this.pending = this.pending.filter((set) => !(set.status === "accepted" && set.version <= this.version));
    for (const set of this.pending) if (set.status === "accepted") set.status = "queued";
    return this.recompute(before, { version: this.version, local: false }, null);
  }

  drop(set) {
    if (!this.pending.includes(set)) return null;
    const before = this.view;
    this.pending = this.pending.filter((candidate) => candidate !== set);
    return this.recompute(before, { version: this.version, local: false }, new Set());
  }

  /**
   * The view rebuilt: confirmed, then every pending set that still applies, in order. What may
   * have changed: `touched` (null: everything), and what pending sets touched before and now.
   */
  recompute(before, info, touched) {
    let view = this.confirmed;
    const outcomes = [];
    if (this.pending.length > 0) {
      view = this.confirmed.clone();
      for (const set of this.pending) {
        const outcome = applyChangeSet(view, this.schema, set.fragments);
        // A set that no longer applies stays pending, invisible, until the server answers it.
        if (outcome.ok) outcomes.push(outcome);
      }
      this.allPendingApplied = outcomes.length === this.pending.length;
      view.version = this.confirmed.version;
    }
    this.view = view;
    const nowTouched = touchedBy(outcomes);
    let candidates;
    if (before === null || touched === null) {
      candidates = new Set([...(before?.objects.keys() ?? []), ...view.objects.keys()]);
    } else {
      candidates = new Set([...touched, ...this.pendingTouched, ...nowTouched]);
    }
    this.pendingTouched = nowTouched;
    return this.describe(before, candidates, info);
  }

  /** The notification for what changed among `candidates` between `before` and the view. */
  describe(before, candidates, info) {
    const fragments = [];
    const removed = [];
    for (const uuid of candidates) {
      const now = this.view.objects.get(uuid);
      const then = before?.objects.get(uuid);
      if (now === undefined) { if (then !== undefined) removed.push(uuid); continue; }
      if (then !== undefined && (then === now || (then.clsName === now.clsName && sameProperties(then.properties, now.properties)))) continue;
      fragments.push({ type: then === undefined ? "add" : "change", uuid, clsName: now.clsName, properties: cloneProperties(now.properties) });
    }
    return { ...info, fragments, removed };
  }
}

/** Every UUID a list of fragments writes or names (lowercased), for `independentOfPending`. */
function uuidsIn(fragments) {
  const found = new Set();
  const visit = (value) => {
    if (typeof value === "string") { const uuid = wireUUID(value); if (uuid) found.add(uuid); }
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  visit(fragments);
  return found;
}

function touchedBy(outcomes) {
  const touched = new Set();
  for (const outcome of outcomes) {
    for (const fragment of outcome.fragments) touched.add(fragment.uuid);
    for (const uuid of outcome.removed) touched.add(uuid);
  }
  return touched;
}
