// stored-copy.mjs — a scope's copy kept in the browser's IndexedDB (`openScope(name, {persist: true})`).
//
// Owns: `StoredCopy`, one per persisted scope copy (scope-copy.mjs): reading what an earlier page
// left (the confirmed state, its version and schema, the pending change sets with their keys,
// `Idempotency-Key-Created` stamps and status, the key sequence), appending each local change set
// as its own record, rewriting the confirmed state lazily, and `saved()`. Also the tab's client id
// (`tabClientId`: kept in sessionStorage, held with a Web Lock while the page lives, so pending
// sets of a tab that is gone can be adopted by the next one) and `clearStoredScopes`.
//
// Layout (docs/offline.md, "JavaScript (browser)"): database `jetstream`, version 1, stores
//   schemas   [baseURL]                   {format, baseURL, tag, text}: the schema a state is in
//   states    [baseURL, scope]            {format, baseURL, scope, version, rootUUID, objects,
//                                          schemaTag, savedAt}: the confirmed state, shared by tabs
//   pending   [baseURL, scope, key]       {format, baseURL, scope, key, clientId, sequence, created,
//                                          fragments, status, version[, kind, method, args]}: one
//                                          per pending set; kind "method" is a server method call
//                                          (fragments: its stub's edits), no kind a change set
//   clients   [baseURL, scope, clientId]  {format, baseURL, scope, clientId, sequence}: the last
//                                          key number used, so a key is never used twice
// Every write is one IndexedDB transaction (atomic): a tab closed mid-write keeps what was saved
// before it. Why not one record per scope: a local change costs one small append, not a rewrite.

import { JetstreamError } from "./errors.mjs";
import { randomUUID } from "./schema.mjs";

export const DATABASE = "jetstream";
const DATABASE_VERSION = 1;
/** The records' format: a record of another format is unreadable (a fresh start, never a crash). */
export const FORMAT = 1;
const STORES = ["schemas", "states", "pending", "clients"];
/** How long after an event the confirmed state is written (ms): one write for a burst of events. */
const CONFIRMED_DELAY = 1000;
const SESSION_KEY = "jetstream.clientId";

/** Why `persist` cannot work here, or undefined. */
export function persistenceMissing() {
  if (typeof globalThis.indexedDB?.open !== "function") return "IndexedDB is not available here (persist needs a browser)";
  if (typeof globalThis.navigator?.locks?.request !== "function") return "Web Locks (navigator.locks) are not available here";
  return undefined;
}

// -- the database --------------------------------------------------------------------------

let opening = null;

function openDatabase() {
  opening ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, DATABASE_VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains("schemas")) db.createObjectStore("schemas", { keyPath: "baseURL" });
      if (!db.objectStoreNames.contains("states")) db.createObjectStore("states", { keyPath: ["baseURL", "scope"] });
      if (!db.objectStoreNames.contains("pending")) db.createObjectStore("pending", { keyPath: ["baseURL", "scope", "key"] });
      if (!db.objectStoreNames.contains("clients")) db.createObjectStore("clients", { keyPath: ["baseURL", "scope", "clientId"] });
    };
    request.onsuccess = () => {
      const db = request.result;
      // Another page upgrading (a newer client) or deleting the database: let it, open again later.
      db.onversionchange = () => { db.close(); opening = null; };
      resolve(db);
    };
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error("another page holds an older version of the database open"));
  }).catch((error) => {
    opening = null;
    throw new JetstreamError(`cannot open the IndexedDB database '${DATABASE}': ${error?.message ?? error}`);
  });
  return opening;
}

/** Runs `work(stores)` in one transaction; resolves its result once the transaction commits. */
async function transaction(mode, names, work) {
  const db = await openDatabase();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(names, mode, mode === "readwrite" ? { durability: "strict" } : undefined);
    const stores = Object.fromEntries(names.map((name) => [name, tx.objectStore(name)]));
    let result;
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
    try {
      Promise.resolve(work(stores)).then((value) => { result = value; }, (error) => { try { tx.abort(); } catch { /* done */ } reject(error); });
    } catch (error) {
      try { tx.abort(); } catch { /* done */ }
      reject(error);
    }
  });
}

/** The result of one request, inside a transaction. */
function requested(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Every key of a scope in a store keyed [baseURL, scope, …]. */
function scopeRange(baseURL, scope) {
  return IDBKeyRange.bound([baseURL, scope], [baseURL, scope, []]);
}

/**
 * Removes stored copies: every scope of every gateway (no argument), or one scope
 * (`{scope, baseURL}`; baseURL as the connection spells it, default this page's origin). A page
 * whose scopes are open with `persist` writes them again: close them first.
 */
export async function clearStoredScopes({ scope, baseURL } = {}) {
  const missing = persistenceMissing();
  if (missing) throw new JetstreamError(`clearStoredScopes: ${missing}`);
  await transaction("readwrite", STORES, (stores) => {
    if (scope === undefined) { for (const store of Object.values(stores)) store.clear(); return; }
    const base = normalBaseURL(baseURL);
    stores.states.delete([base, scope]);
    stores.pending.delete(scopeRange(base, scope));
    stores.clients.delete(scopeRange(base, scope));
  });
}

/** The base URL as the connection keys it ("" is this page's origin). */
export function normalBaseURL(baseURL = "") {
  const given = baseURL.replace(/\/$/, "");
  const origin = globalThis.location?.origin;
  return given === "" && origin && origin !== "null" ? origin : given;
}

// -- the tab's client id and the locks ------------------------------------------------------

/** Lock name → promise of whether this page holds it. A held lock is kept until the page goes. */
const held = new Map();

function lockName(clientId) { return `jetstream:client:${clientId}`; }

/** Takes the Web Lock of `clientId` unless another page holds it; kept while this page lives. */
export function holdClientLock(clientId) {
  const name = lockName(clientId);
  let holding = held.get(name);
  if (!holding) {
    holding = new Promise((resolve, reject) => {
      navigator.locks.request(name, { ifAvailable: true }, (lock) => {
        resolve(lock !== null);
        // Held until the page is gone (reload, tab closed): then the next tab may adopt its sets.
        return lock === null ? undefined : new Promise(() => {});
      }).catch(reject);
    });
    held.set(name, holding);
    holding.then((mine) => { if (!mine) held.delete(name); }, () => held.delete(name));
  }
  return holding;
}

let pageClientId = null;

/**
 * This tab's client id for persisted scopes: `given` when the application chose one (refused
 * when another tab holds it), else the one in sessionStorage (the same after a reload of this
 * tab), else a new one; a duplicated tab (same sessionStorage, the original still open) gets a
 * new one. Held with a Web Lock while the page lives.
 */
export async function tabClientId(given) {
  if (given !== undefined) {
    if (!(await holdClientLock(given))) throw new JetstreamError(`client id ${given} is in use by another tab (persist holds a Web Lock per client id)`);
    return given;
  }
  pageClientId ??= (async () => {
    let stored;
    try { stored = globalThis.sessionStorage?.getItem(SESSION_KEY) ?? undefined; } catch { stored = undefined; }
    if (stored && /^[A-Za-z0-9._~-]{1,64}$/.test(stored) && (await holdClientLock(stored))) return stored;
    for (;;) {
      const fresh = randomUUID();
      if (await holdClientLock(fresh)) {
        try { globalThis.sessionStorage?.setItem(SESSION_KEY, fresh); } catch { /* private mode: a new id per page */ }
        return fresh;
      }
    }
  })().catch((error) => { pageClientId = null; throw error; });
  return pageClientId;
}

// -- reading records (anything unreadable is reported, never thrown at the caller) -----------

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isCount = (value) => Number.isInteger(value) && value >= 0;

function readableState(record) {
  return isObject(record) && record.format === FORMAT && isCount(record.version) && typeof record.rootUUID === "string"
    && Array.isArray(record.objects) && (record.schemaTag === undefined || typeof record.schemaTag === "string")
    && record.objects.every((object) => isObject(object) && typeof object.uuid === "string"
      && typeof object.clsName === "string" && isObject(object.properties));
}

function readablePending(record) {
  return isObject(record) && record.format === FORMAT && typeof record.key === "string" && typeof record.clientId === "string"
    && isCount(record.sequence) && Array.isArray(record.fragments) && record.fragments.every(isObject)
    && (record.created === undefined || typeof record.created === "string")
    // No kind: a change set (every record before methods); "method": a server method call.
    && (record.kind === undefined || (record.kind === "method" && typeof record.method === "string" && record.method !== ""))
    && (record.status === "queued" || (record.status === "accepted" && isCount(record.version)));
}

function readableSchema(record) {
  return isObject(record) && record.format === FORMAT && typeof record.text === "string"
    && (record.tag === undefined || typeof record.tag === "string");
}

/**
 * One persisted scope copy's records. `read()` once at open; then `append` per local set,
 * `accepted`/`dropped` as the server answers, `confirmedChanged` after events (written lazily),
 * `saved()` for the application.
 */
export class StoredCopy {
  constructor(baseURL, scope, clientId) {
    this.baseURL = baseURL;
    this.scope = scope;
    this.clientId = clientId;
    /** key → the record this copy keeps for a pending set (its own and the adopted ones). */
    this.records = new Map();
    /** Writes of local changes not yet committed; `saved()` waits for these. */
    this.writes = new Set();
    /** The first write that failed (saved() rejects with it from then on). */
    this.failure = null;
    this.timer = null;
    this.flushing = Promise.resolve();
    /** Version, root and schema tag of the confirmed state last written (or read). */
    this.written = { version: -1, rootUUID: undefined, schemaTag: undefined };
    this.source = null;
  }

  /**
   * What earlier pages left for this scope: `{state, schema, sets, sequence, problems}` — the
   * confirmed state (or undefined), its schema record, the pending sets this copy takes (its own
   * client id's, and those of client ids no live tab holds, adopted with their keys) in order,
   * the key sequence to go on from, and what could not be read (those records are deleted).
   */
  async read() {
    const { baseURL, scope } = this;
    const found = await transaction("readonly", STORES, async (stores) => {
      const [state, schema, pending, clients] = await Promise.all([
        requested(stores.states.get([baseURL, scope])),
        requested(stores.schemas.get(baseURL)),
        requested(stores.pending.getAll(scopeRange(baseURL, scope))),
        requested(stores.clients.get([baseURL, scope, this.clientId])),
      ]);
      return { state, schema, pending, clients };
    });
    const problems = [];
    const unreadable = [];
    let state = found.state;
    if (state !== undefined && !readableState(state)) {
      problems.push("the stored state");
      unreadable.push(["states", [baseURL, scope]]);
      state = undefined;
    }
    let schema = found.schema;
    if (schema !== undefined && !readableSchema(schema)) {
      problems.push("the stored schema");
      unreadable.push(["schemas", baseURL]);
      schema = undefined;
    }
    let sequence = isObject(found.clients) && isCount(found.clients.sequence) ? found.clients.sequence : 0;
    const others = new Map();
    const sets = [];
    for (const record of found.pending) {
      if (!readablePending(record)) {
        problems.push(`a stored pending change set (${typeof record?.key === "string" ? record.key : "no key"})`);
        if (record?.key !== undefined) unreadable.push(["pending", [baseURL, scope, record.key]]);
        continue;
      }
      if (record.clientId === this.clientId) {
        sets.push(record);
        sequence = Math.max(sequence, record.sequence);
      } else {
        if (!others.has(record.clientId)) others.set(record.clientId, []);
        others.get(record.clientId).push(record);
      }
    }
    // A client id no live page holds: its tab is gone; this one sends its sets, with their keys.
    for (const [clientId, records] of others) {
      if (await holdClientLock(clientId)) sets.push(...records);
    }
    // Sets already in the stored confirmed state (its write and their deletion are one
    // transaction, but another tab may have written a newer state since) are done.
    const done = state ? sets.filter((set) => set.status === "accepted" && set.version <= state.version) : [];
    const taken = sets.filter((set) => !done.includes(set));
    taken.sort((a, b) => (a.created ?? "").localeCompare(b.created ?? "") || a.sequence - b.sequence);
    for (const record of taken) this.records.set(record.key, record);
    if (unreadable.length > 0 || done.length > 0) {
      await transaction("readwrite", STORES, (stores) => {
        for (const [store, key] of unreadable) stores[store].delete(key);
        for (const set of done) stores.pending.delete([baseURL, scope, set.key]);
      }).catch(() => {});
    }
    if (state) this.written = { version: state.version, rootUUID: state.rootUUID, schemaTag: state.schemaTag };
    return { state, schema, sets: taken, sequence, problems };
  }

  /** The error that tells the application what could not be read (and was started over). */
  static unreadableError(scope, problems) {
    const error = new JetstreamError(`scope ${scope}: ${problems.join(", ")} could not be read (another format, or damaged); it was discarded and the scope loaded from the server`,
      { problem: { type: "stored-copy-unreadable", title: "Stored copy unreadable", detail: problems.join("; ") } });
    error.storage = true;
    return error;
  }

  /** Keeps the schema a stored state is in (once per schema). */
  saveSchema(tag, text) {
    if (text === undefined || (this.schemaTag === tag && this.schemaText === text)) return;
    this.schemaTag = tag;
    this.schemaText = text;
    this.track(transaction("readwrite", ["schemas"], (stores) => {
      stores.schemas.put({ format: FORMAT, baseURL: this.baseURL, tag, text });
    }));
  }

  /** A local change set: its own record, and the sequence, in one small transaction. */
  append(set, sequence) {
    const record = {
      format: FORMAT, baseURL: this.baseURL, scope: this.scope, key: set.key, clientId: this.clientId, sequence,
      created: set.created, fragments: set.fragments, status: "queued", version: undefined,
      // A server method call: sent to its method with its args; `fragments` are its stub's edits.
      ...(set.kind === "method" ? { kind: "method", method: set.method, args: set.args } : {}),
    };
    this.records.set(set.key, record);
    this.track(transaction("readwrite", ["pending", "clients"], (stores) => {
      stores.pending.put(record);
      stores.clients.put({ format: FORMAT, baseURL: this.baseURL, scope: this.scope, clientId: this.clientId, sequence });
    }));
  }

  /**
   * The server accepted a set at `version`: kept (status accepted) until the stored state has it;
   * a method call keeps the server's `fragments` from then on, in place of its stub's.
   */
  accepted(set, version, fragments) {
    const record = this.records.get(set.key);
    if (!record || record.status === "accepted") return;
    record.status = "accepted";
    record.version = version;
    if (fragments !== undefined) record.fragments = fragments;
    const copy = { ...record };
    this.track(transaction("readwrite", ["pending"], (stores) => { stores.pending.put(copy); }));
  }

  /** A set refused for good: its record goes now (sent again, it would be refused again). */
  dropped(set) {
    if (!this.records.delete(set.key)) return;
    this.track(transaction("readwrite", ["pending"], (stores) => { stores.pending.delete([this.baseURL, this.scope, set.key]); }));
  }

  /**
   * The confirmed state may have changed (an event, a reset, sets confirmed): written within
   * `CONFIRMED_DELAY` ms (one write for a burst), or at once with `now`. `source()` gives
   * `{state: {version, rootUUID, objects}, pendingKeys, schemaTag}` when it is written.
   */
  confirmedChanged(source, now = false) {
    this.source = source;
    if (now) { clearTimeout(this.timer); this.timer = null; return this.flush(); }
    this.timer ??= setTimeout(() => { this.timer = null; this.flush(); }, CONFIRMED_DELAY);
    return this.flushing;
  }

  /**
   * Writes the confirmed state (unless the stored one is newer: the newer version wins, as another
   * tab may be ahead) and deletes, in the same transaction, the records of sets no longer pending
   * (in the confirmed state now).
   */
  flush() {
    if (!this.source) return this.flushing;
    const { state, pendingKeys, schemaTag } = this.source();
    const gone = [...this.records.keys()].filter((key) => !pendingKeys.has(key));
    const changed = state.version !== this.written.version || state.rootUUID !== this.written.rootUUID || schemaTag !== this.written.schemaTag;
    if (!changed && gone.length === 0) return this.flushing;
    for (const key of gone) this.records.delete(key);
    const written = { version: state.version, rootUUID: state.rootUUID, schemaTag };
    const write = transaction("readwrite", ["states", "pending"], async (stores) => {
      if (changed) {
        const stored = await requested(stores.states.get([this.baseURL, this.scope]));
        const newer = readableState(stored) && stored.rootUUID === state.rootUUID && stored.version > state.version
          && stored.schemaTag === schemaTag;
        if (!newer) {
          stores.states.put({
            format: FORMAT, baseURL: this.baseURL, scope: this.scope, version: state.version, rootUUID: state.rootUUID,
            objects: [...state.objects], schemaTag, savedAt: new Date().toISOString(),
          });
        }
      }
      for (const key of gone) stores.pending.delete([this.baseURL, this.scope, key]);
    }).then(() => { this.written = written; });
    this.flushing = write.catch(() => {});
    this.track(write);
    return write;
  }

  /** The scope was deleted on the server: its stored copy goes (every tab's pending sets too). */
  forget() {
    clearTimeout(this.timer);
    this.timer = null;
    this.source = null;
    this.records.clear();
    this.track(transaction("readwrite", ["states", "pending", "clients"], (stores) => {
      stores.states.delete([this.baseURL, this.scope]);
      stores.pending.delete(scopeRange(this.baseURL, this.scope));
      stores.clients.delete(scopeRange(this.baseURL, this.scope));
    }));
  }

  track(write) {
    const tracked = write.catch((error) => {
      this.failure ??= new JetstreamError(`scope ${this.scope}: could not store a change in IndexedDB: ${error?.message ?? error}`);
      console.error("jetstream:", this.failure.message);
    }).finally(() => this.writes.delete(tracked));
    this.writes.add(tracked);
  }

  /** Resolves once every write made so far is committed; rejects when one failed. */
  async saved() {
    await Promise.all([...this.writes]);
    if (this.failure) throw this.failure;
  }
}
