// presence.mjs — who else is here in one scope (docs/js-client.md, "Presence").
//
// Owns: `Presence`, one per scope copy: this window's presence (`PUT …/presence/{client}` with the
// connection's client id, refreshed at half its ttl, folded while a PUT is on its way; `DELETE`
// on leave, kept alive past the page's end), the others as `event: presence` tells them, the
// grace after a reconnection before unannounced members are dropped, and the subscribers.
// Its requests go through its copy (scope-copy.mjs); the shared stream (shared-stream.mjs) hands
// it the scope's `event: presence` and says when it (re)connected; the connection (connection.mjs)
// says when the page is hidden, shown again or left.

import { JetstreamError, problemOf } from "./errors.mjs";

/**
 * Who is here in one scope (docs/js-client.md, "Presence"): this window's presence, PUT with
 * the connection's client id and refreshed at half its ttl, and the others as `event: presence`
 * tells them. Not a change: no version, nothing pending, nothing kept.
 */
export class Presence {
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
    /** When the last PUT was sent (ms since the epoch): its refresh is due half the ttl after. */
    this.sentAt = null;
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
    // The server counts the ttl from when it receives the PUT, never before it was sent.
    this.sentAt = Date.now();
    let response = await this.copy.request("PUT", path, data);
    if (response.status === 401) {
      await this.copy.connection.refreshToken();
      response = await this.copy.request("PUT", path, data);
    }
    if (!response.ok) throw await this.refusal("presence", response);
  }

  /** Refreshed before it expires: half the ttl after the last PUT was sent, again after a failure. */
  scheduleRefresh() {
    clearTimeout(this.refreshTimer);
    if (this.wanted === undefined || this.copy.closed) return;
    const due = (this.sentAt ?? Date.now()) + (this.ttl * 1000) / 2;
    this.refreshTimer = setTimeout(() => this.flush().catch(() => {}), Math.max(0, due - Date.now()));
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
