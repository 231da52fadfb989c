// scope-past.mjs — the past of one scope (docs/js-client.md, "Undo and the past").
//
// Owns: `ScopePast`, one per scope copy: which of this client's own accepted change sets an undo
// reverts next (through `UndoHistory`, connection-state.mjs), `undo` (one at a time), `restore`,
// a state at a version, history pages, and the keyed `POST`s they send, retried as
// `SendRetryPolicy` says. Its requests go through its copy (scope-copy.mjs), which tells it of
// every own change set the server accepted; answers that make the next version are shown at once.

import { JetstreamError, problemOf } from "./errors.mjs";
import { backoffDelay, pause } from "./backoff.mjs";
import { SendRetryPolicy, UndoHistory } from "./connection-state.mjs";

/** How often `undo` and `restore` send their request before they give up (same key each time). */
const POST_TRIES = 5;

/** The past of one scope copy: its undo, restore, states at a version and history pages. */
export class ScopePast {
  constructor(copy, undoLimit) {
    this.copy = copy;
    this.undoHistory = new UndoHistory(undoLimit);
    /** Undos run one after another, so two never pick the same set. */
    this.undoing = Promise.resolve();
    /** Numbers the keys of restores (`<clientId>:restore:<prefix><n>`). */
    this.restores = 0;
    /** Set by a persisted copy, whose client id outlives it: keeps its restore keys its own. */
    this.restorePrefix = "";
  }

  /** How many of this client's own accepted change sets an `undo()` may still try. */
  get undoableCount() { return this.undoHistory.count; }

  /** One of this client's own change sets was accepted as `version`: an undo may revert it. */
  accepted(version) { this.undoHistory.accepted(version); }

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
    await this.copy.answered();
    const key = `${this.copy.core.clientId}:restore:${this.restorePrefix}${++this.restores}`;
    const headers = ifMatch === undefined ? {} : { "If-Match": `"${ifMatch}"` };
    const { response, body } = await this.postWithKey(`${this.copy.scopePath()}/restore`, { version }, key, headers);
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
    const response = await this.copy.request("GET", `${this.copy.scopePath()}?version=${encodeURIComponent(version)}`);
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
    const response = await this.copy.request("GET", `${this.copy.scopePath()}/changesets?${query}`);
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw this.refusal("history", response, body);
    return body;
  }

  async undoNow() {
    await this.copy.answered();
    const skipped = [];
    for (;;) {
      if (this.copy.closed) throw new JetstreamError(`scope ${this.copy.name} is closed`);
      const target = this.undoHistory.next();
      if (target === undefined) return null;
      let answer;
      try {
        answer = await this.postWithKey(`${this.copy.scopePath()}/changesets/${target}/revert`, undefined,
          `${this.copy.core.clientId}:undo:${target}`);
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
    const notification = this.copy.core.event({ version: body.version, fragments: body.fragments, removed: body.removed ?? [] });
    if (notification && !notification.gap && !notification.inconsistent) this.copy.emit(notification);
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
      if (this.copy.closed) throw new JetstreamError(`scope ${this.copy.name} is closed`);
      let response;
      try {
        response = await this.copy.request("POST", path, body, { ...headers, "Idempotency-Key": key });
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
      if (decision.refreshToken) await this.copy.connection.refreshToken();
      if (decision.action === "wait") await pause(decision.seconds * 1000, this.copy.abort.signal).done;
      else if (decision.action === "backoff") await pause(backoffDelay(decision.attempt - 1, this.copy.options.backoff), this.copy.abort.signal).done;
    }
  }

  refusal(what, response, problem) {
    return new JetstreamError(`${what}: ${problem?.detail ?? problem?.title ?? `HTTP ${response.status}`}`, { status: response.status, problem });
  }

  /** Applies locally (throwing a local `Rejection`) and queues the set for sending. */
}
