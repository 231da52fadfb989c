// connection.mjs — a page's connection to one gateway as one client.
//
// Owns: `Connection`, one per page, base URL and client id (docs/js-client.md, "One stream per
// page"): finding it again by the options that make one, the copies it follows (scope-copy.mjs)
// and how many handles hold each, the token (asked once, refreshed once however many requests
// met the old one), the window's presence client id, the page's lifecycle (hidden, shown, gone:
// presence.mjs follows it), its one shared stream (shared-stream.mjs) and the schema its copies
// check local changes with: read once, read again (`If-None-Match`) whenever the server may have
// changed it, and replaced for every copy at once when it did.

import { JetstreamError, problemOf } from "./errors.mjs";
import { Schema, randomUUID } from "./schema.mjs";
import { ScopeCopy } from "./scope-copy.mjs";
import { SharedStream } from "./shared-stream.mjs";

/** How long a `GET /v1/schema` may take before it is given up (ms). */
const SCHEMA_TIMEOUT = 20_000;

/**
 * A page's connection to one gateway as one client (docs/js-client.md, "One stream per page"):
 * made by the first `openScope` with its options, forgotten when its last scope closes.
 */
export class Connection {
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
    /** The schema every copy checks local changes with, its `ETag` (undefined when the server
     *  sends none) and its text (a server without ETags is compared by it). */
    this.schema = undefined;
    this.schemaTag = undefined;
    this.schemaText = undefined;
    /** The `GET /v1/schema` on its way, shared by whoever asks meanwhile. */
    this.schemaReading = null;
  }

  /**
   * The copy of `name` for one more handle (the caller makes it), loaded first when this
   * connection does not follow it yet.
   */
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
    return entry.copy;
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

  // -- the schema (docs/js-client.md, "Schema changes") ---------------------------------------

  /**
   * The schema, read at a copy's open and read again whenever the server may have another one:
   * after every reconnection of the stream and with every `reset` or `snapshot` (a server
   * restarted with a new schema resumes each scope with a `reset` in the new one). Once one is
   * known, the read sends `If-None-Match` with its ETag: `304` keeps it; a `200` with another
   * schema replaces it for every copy of the connection before the caller goes on. Concurrent
   * callers share one request. Rejects with a `JetstreamError` for a refusal (the error of a
   * failed fetch as it is): `openScope` fails with it; `revalidateSchema` keeps the schema it has.
   */
  readSchema() {
    this.schemaReading ??= this.fetchSchema().finally(() => { this.schemaReading = null; });
    return this.schemaReading;
  }

  /**
   * A copy started from its stored copy before any schema was read: the stored schema is the
   * connection's until the server is asked (`If-None-Match` with its ETag).
   */
  useStoredSchema(schema, tag, text) {
    if (this.schema) return;
    this.schema = schema;
    this.schemaTag = tag;
    this.schemaText = text;
  }

  /** `readSchema`, its failure ignored: the schema in use stays until the next try. */
  revalidateSchema() {
    return this.readSchema().catch(() => this.schema);
  }

  async fetchSchema() {
    const headers = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (this.schema && this.schemaTag) headers["If-None-Match"] = this.schemaTag;
    // Bounded: a reset waits for this answer, and a request stuck on a dead connection would hold
    // the scope's events (and every later read, which shares it) for good.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), SCHEMA_TIMEOUT);
    try {
      const response = await this.fetch(`${this.baseURL}/v1/schema`, { headers, cache: "no-store", signal: controller.signal });
      if (response.status === 304 && this.schema) return this.schema;
      if (!response.ok) throw new JetstreamError(`GET /v1/schema: HTTP ${response.status}`, { status: response.status, problem: await problemOf(response) });
      const text = await response.text();
      const tag = response.headers.get("ETag") ?? undefined;
      if (this.schema && text === this.schemaText) { this.schemaTag = tag; return this.schema; }
      const schema = new Schema(JSON.parse(text));
      this.schema = schema;
      this.schemaTag = tag;
      this.schemaText = text;
      for (const { copy } of this.copies.values()) copy.useSchema(schema);
      return schema;
    } finally {
      clearTimeout(timer);
    }
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
    // Being hidden may be the page's last moment: persisted copies write what is confirmed now.
    const away = () => copies().forEach((copy) => { copy.presence.away(); copy.persistNow(); });
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
