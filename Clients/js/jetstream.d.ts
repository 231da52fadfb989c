// TypeScript declarations for jetstream.mjs, the JavaScript client of Jetstream Gateway: the
// entry's exports, whichever of its modules (errors.mjs, schema.mjs, state.mjs, sync-core.mjs,
// connection-state.mjs, backoff.mjs, sse-parser.mjs, scope.mjs) defines them. Served by the
// gateway at /client/jetstream.d.ts; see docs/js-client.md.

/** A property value on the wire: a scalar, a UUID string, null, or an array of those. */
export type Value = string | number | boolean | null | Value[];

/** A collection operation (docs/model.md, "Collection operations"). */
export interface CollectionOperation {
  insert?: Value[];
  remove?: Value[];
  /** Insert before the first occurrence of this value; null or absent: at the end. */
  before?: Value;
}

/** A sync fragment as sent: a collection property may be given as an operations object. */
export interface Fragment {
  type: "add" | "change";
  uuid: string;
  clsName: string;
  properties?: Record<string, Value | CollectionOperation>;
}

/** An object of the view, or a normalised fragment: every value in its wire form. */
export interface ModelObject {
  uuid: string;
  clsName: string;
  properties: Record<string, Value>;
}

export interface NotifiedFragment extends ModelObject {
  type: "add" | "change";
}

/** What a subscriber receives, once per applied server event, local change or rollback. */
export interface Notification {
  /** The server version the view is based on. */
  version: number;
  /** True for a local change applied optimistically. */
  local: boolean;
  /** The objects whose view changed, with all their properties. */
  fragments: NotifiedFragment[];
  /** The UUIDs that left the view. */
  removed: string[];
  /** Set when this notification rolls back a refused change set. */
  rejection?: Rejection;
  /** Set when the scope was deleted; the scope is closed. */
  deleted?: boolean;
  /** Set when the scope stopped for good (403 on the stream); or, with `persist`, once just after
   *  `openScope` resolved when the stored copy could not be read (the scope goes on, loaded from
   *  the server: `Scope.storageError`). */
  error?: JetstreamError;
  /** Set on the reset that brought the state in a schema the client had not seen: local changes
   *  are checked with the new schema from now on (`Scope.schemaTag` is its ETag). */
  schemaChanged?: boolean;
}

export type ErrorKindName =
  | "malformed-fragment" | "unknown-class" | "unknown-object" | "class-mismatch" | "duplicate-add"
  | "unknown-property" | "type-mismatch" | "out-of-range" | "constraint-violation" | "null-not-allowed"
  | "missing-reference" | "wrong-class" | "unattached-add" | "limit-exceeded"
  /** The schema's `rules`/`write` reserve the write or removal for the owner or a role: only the
   *  server knows owners and roles, so only a server refusal carries it. */
  | "forbidden"
  /** A change to an `immutable` property of an object that existed before the change set: the
   *  client refuses it locally too (a method's stub excepted). */
  | "immutable";

export const ErrorKind: Readonly<Record<string, ErrorKindName>>;

/** `{}` for a fine fragment, else the reason it was refused. */
export interface FragmentReply {
  error?: { type: ErrorKindName; message: string; property?: string };
}

/** A problem+json body (RFC 9457) as the gateway answers it. */
export interface Problem {
  type: string;
  title?: string;
  status?: number;
  detail?: string;
  fragmentReplies?: FragmentReply[];
  errors?: { path: string; type: string; message?: string }[];
  [member: string]: unknown;
}

/** A change set refused by the server (or, with `local`, by the client's schema check). */
export class Rejection extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  readonly type: string | null;
  readonly fragmentReplies: FragmentReply[];
  readonly fragments: Fragment[];
  readonly idempotencyKey: string | undefined;
  readonly local: boolean;
  /** The server method whose call this refuses (`scope.call`); undefined for a change set. */
  readonly method: string | undefined;
  /** One readable line per failing fragment, e.g. "width: -5 is below min 0"; for a method's
   *  refusal, its reason. */
  readonly reasons: string[];
}

/** A request the client could not complete: unknown scope, 401/403, a closed scope. */
export class JetstreamError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  readonly type: string | null;
}

export type Status = "connecting" | "live" | "reconnecting" | "closed";

/** With each status: while reconnecting, 0 at once, k during the k-th backoff in a row. */
export interface StatusDetail {
  attempt: number;
}

export type TokenProvider = string | ((context: { refresh: boolean }) => string | undefined | Promise<string | undefined>);

export interface OpenOptions {
  /** The gateway's origin, e.g. "https://sync.example.com"; default "": this page's origin. */
  baseURL?: string;
  /** A bearer token, or a function called again with `{refresh: true}` after 401 / auth-expired. */
  token?: TokenProvider;
  /** Create the scope (PUT) when it does not exist; `clsName` defaults to the schema's root class. */
  create?: { clsName?: string; properties?: Record<string, Value>; uuid?: string };
  /** The server's heartbeat interval in seconds (default 15): a stream silent for twice it is dropped. */
  heartbeatInterval?: number;
  /** Reconnection backoff in milliseconds: full jitter over [0, min(max, initial × 2^attempt)). */
  backoff?: { initial?: number; max?: number };
  /** "auto" (default): fetch streaming, else EventSource. */
  transport?: "auto" | "fetch" | "eventsource";
  /** This window's id: the prefix of its Idempotency-Keys and its presence client id (1–64 of
   *  [A-Za-z0-9._~-]; default: a random UUID per connection). Scopes opened with the same
   *  baseURL, clientId, token, fetch and transport share one connection: one event stream. */
  clientId?: string;
  /** A fetch implementation (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** How many of its own accepted change sets the scope remembers for `undo()` (default 100). */
  undoLimit?: number;
  /** Seconds this window's presence lasts unrefreshed, 1–300 (default 30); refreshed at half. */
  presenceTTL?: number;
  /** Keep the copy in IndexedDB (docs/js-client.md, "Offline and persistence"): it opens from
   *  there at once — offline too, status "reconnecting" — and local changes survive a reload.
   *  The client id is then this tab's (sessionStorage, held with a Web Lock) unless given.
   *  Fails with a JetstreamError where IndexedDB or Web Locks are missing (Node). */
  persist?: boolean;
}

/** Presence data: a JSON object of at most 4 KiB. */
export type PresenceData = { [member: string]: unknown };

/** Another client present in the scope. */
export interface PresenceMember<Data extends PresenceData = PresenceData> {
  /** Its client id (one per window or app instance). */
  readonly client: string;
  /** Its token's subject; null when anonymous. */
  readonly subject: string | null;
  readonly data: Data;
}

/** What changed, with each call of a presence subscriber. */
export interface PresenceChange {
  client: string;
  subject: string | null;
  state: "join" | "update" | "leave";
  /** Absent on a leave. */
  data?: PresenceData;
}

/** Who is here in a scope: this window's presence and the others'. */
export interface Presence {
  /** This window's presence client id. */
  readonly client: string;
  /** The other clients present (this window excluded), as the stream last told. */
  readonly others: readonly PresenceMember[];
  /** Shows `data` to the others, refreshed before it expires; resolves once stored (quick calls
   *  are folded: only the latest data is sent). Rejects with a JetstreamError (400, 403, 413, 429). */
  set(data: PresenceData): Promise<void>;
  /** Takes this window out of the scope (also done by close() and when the page is hidden). */
  leave(): Promise<void>;
  /** Calls `listener(others, change)` when the others change. Returns the unsubscriber. */
  subscribe(listener: (others: readonly PresenceMember[], change: PresenceChange) => void): () => void;
}

export interface AddOptions {
  /** The object to add to (default: the root). */
  parent?: string;
  /** The collection or reference property of the parent (default: the first that holds the class). */
  key?: string;
  /** Insert before this element (default: at the end). */
  before?: string | null;
  /** The new object's UUID (default: a random one). */
  uuid?: string;
}

/** A version `undo()` passed over: a later set conflicts, its revert changes nothing, the server
 *  no longer keeps it, or the revert breaks a rule of the model. */
export interface SkippedUndo {
  version: number;
  reason: "conflict" | "unchanged" | "gone" | "refused";
  /** With "conflict": what a later change set touched, and which. */
  conflicts?: { uuid: string; property?: string; version: number }[];
}

/** What `undo()` did: the revert's new version and the version it reverted. */
export interface UndoResult {
  version: number;
  revertOf: number;
  skipped: SkippedUndo[];
}

/** A change-set answer (`POST …/changesets`, `…/restore`, `…/revert`). */
export interface ChangeSetAnswer {
  version: number;
  fragmentReplies?: FragmentReply[];
  fragments: NotifiedFragment[];
  removed: string[];
  idempotencyKey?: string;
  [member: string]: unknown;
}

/** JSON, as a method's `args` and `result`. */
export type JSONValue = string | number | boolean | null | JSONValue[] | { [member: string]: JSONValue };

/** A server method's answer (`scope.call`): its change set's answer plus `method` and `result`.
 *  A method that changed nothing answers the current version with empty `fragments`. */
export interface MethodAnswer<Result = JSONValue> extends ChangeSetAnswer {
  method: string;
  result: Result;
  at?: string;
  subject?: string | null;
}

/** What a method call's stub edits: a draft of the view. Each edit is checked against the schema
 *  and applied to the draft at once (`get` sees it; an invalid one throws a local `Rejection`);
 *  usable only while the stub runs. */
export interface StubView {
  readonly rootUUID: string;
  /** The server version the view is based on. */
  readonly version: number;
  get(uuid: string): ModelObject | undefined;
  snapshot(): StateJSON;
  set(uuid: string, properties: Record<string, Value | CollectionOperation>): void;
  /** Returns the new object's UUID. */
  add(clsName: string, properties?: Record<string, Value>, options?: AddOptions): string;
  remove(uuid: string): void;
  change(fragments: Fragment[]): void;
}

export interface CallOptions {
  /** Runs at once on a draft of the view: its edits show until the server's change set replaces
   *  them (its answer or its echo), and go when the server refuses the call. Synchronous. */
  stub?: (view: StubView) => void;
}

/** One retained change set, as history pages and `changeset` events carry it. */
export interface ChangeSetRecord {
  version: number;
  /** Server time, RFC 3339 with milliseconds, UTC. */
  at: string;
  /** The token's subject, or null. */
  subject: string | null;
  fragments: NotifiedFragment[];
  removed: string[];
  idempotencyKey?: string;
  /** Set on a restore: the version it restored. */
  restoredFrom?: number;
  /** Set on a revert: the version it reverted. */
  revertOf?: number;
  /** Set on a change set a server method made: its name. */
  method?: string;
}

/** A page of `history()`: the scope's current version and the change sets of the page. */
export interface HistoryPage {
  version: number;
  changesets: ChangeSetRecord[];
}

/** A scope's state, the shape of `GET /v1/scopes/{name}` and of `snapshot()`. */
export interface StateJSON {
  version: number;
  rootUUID: string;
  fragments: NotifiedFragment[];
}

/** One synced scope, made by `openScope`: a handle on the page connection's copy of the scope
 *  (opening a scope twice gives two handles on one copy; the copy closes with its last handle). */
export class Scope {
  readonly name: string;
  /** Who is here (docs/js-client.md, "Presence"). */
  readonly presence: Presence;
  readonly version: number;
  readonly rootUUID: string;
  readonly status: Status;
  /** While reconnecting: 0 at once, k during the k-th backoff in a row; else 0. */
  readonly reconnectAttempt: number;
  readonly pendingCount: number;
  /** The ETag of the schema local changes are checked with (undefined when the server sends
   *  none); read again after every reconnection and with every reset, so it changes when the
   *  server serves another schema. */
  readonly schemaTag: string | undefined;
  get(uuid: string): ModelObject | undefined;
  snapshot(): { version: number; rootUUID: string; fragments: NotifiedFragment[] };
  subscribe(listener: (notification: Notification) => void): () => void;
  onStatus(listener: (status: Status, detail: StatusDetail) => void): () => void;
  onRejected(listener: (rejection: Rejection) => void): () => void;
  change(fragments: Fragment[]): Promise<{ version: number }>;
  add(clsName: string, properties?: Record<string, Value>, options?: AddOptions): string;
  set(uuid: string, properties: Record<string, Value | CollectionOperation>): Promise<{ version: number }>;
  remove(uuid: string): Promise<{ version: number }>;
  /** Calls a server method (docs/methods.md) in order with the local changes; rejects with a
   *  `Rejection` (`method` set) when the server refuses it. */
  call<Result = JSONValue>(method: string, args?: JSONValue, options?: CallOptions): Promise<MethodAnswer<Result>>;
  /** How many own accepted change sets `undo()` may still try. */
  readonly undoableCount: number;
  /** Reverts this client's most recent own change set that can still be reverted; null: nothing left. */
  undo(): Promise<UndoResult | null>;
  /** The scope back to its state at `version`, as one new change set of this client. */
  restore(version: number, options?: { ifMatch?: number }): Promise<ChangeSetAnswer>;
  /** The scope as it was at `version`. */
  stateAt(version: number): Promise<StateJSON>;
  /** One page of the retained change sets after `since` (default 0). */
  history(options?: { since?: number; limit?: number }): Promise<HistoryPage>;
  /** Whether the copy is kept in IndexedDB (`persist`). */
  readonly persisted: boolean;
  /** With `persist`: what could not be read from storage at open (the scope then started from
   *  the server); it also reaches `subscribe` as a notification with `error`. */
  readonly storageError: JetstreamError | undefined;
  /** Resolves once every local change made so far is stored in IndexedDB; rejects when the scope
   *  was not opened with `persist` or a write failed. */
  saved(): Promise<void>;
  /** Ends this handle (its listeners hear "closed"); the copy ends with its last handle. */
  close(): void;
}

export function openScope(name: string, options?: OpenOptions): Promise<Scope>;

/** Removes stored copies (`persist`): all of them, or one scope of one gateway (`baseURL` as
 *  given to openScope, default this page's origin). Close the page's persisted scopes first. */
export function clearStoredScopes(options?: { scope?: string; baseURL?: string }): Promise<void>;

// The layers under `openScope`, for tests and for clients with their own transport.

/** Who may write or remove (the schema's `rules`, a property's `write`): `any`, `owner` or `role:<name>`. */
export type WriteRule = "any" | "owner" | `role:${string}`;

/** A class's `rules`: who may change its objects, who may remove them (an absent key is `any`). */
export interface ClassRules {
  readonly write: WriteRule;
  readonly delete: WriteRule;
}

/** One property of a model class as the client reads it from `GET /v1/schema`. */
export interface SchemaProperty {
  readonly name: string;
  readonly nullable: boolean;
  /** Who may change it on an existing object (judged by the server); `any` when the schema says nothing. */
  readonly write: WriteRule;
  /** Set by the object's add, never changed after: the client refuses such a change locally. */
  readonly immutable: boolean;
}

/** A model class: its properties (inherited ones first), its ancestors and its write rules. */
export interface SchemaClass {
  readonly name: string;
  readonly ancestors: readonly string[];
  readonly properties: ReadonlyMap<string, SchemaProperty>;
  /** Its own `rules`, else its nearest ancestor's (`extends`), else `{write: "any", delete: "any"}`. */
  readonly rules: ClassRules;
  /** The `rules` it declares itself; undefined when it declares none. */
  readonly ownRules: ClassRules | undefined;
  isKindOf(name: string): boolean;
}

export class Schema {
  constructor(json: { models: Record<string, unknown>; scopes?: Record<string, { root: string }> });
  rootClass(scopeName: string): SchemaClass | undefined;
  modelClass(name: string): SchemaClass | undefined;
}

export class ScopeState {
  constructor(rootUUID: string, version?: number, objects?: Map<string, ModelObject>);
  static fromJSON(json: { version: number; rootUUID: string; fragments: NotifiedFragment[] }): ScopeState;
  rootUUID: string;
  version: number;
  objects: Map<string, ModelObject>;
  clone(): ScopeState;
  get(uuid: string): ModelObject | undefined;
  toJSON(schema: Schema): { version: number; rootUUID: string; fragments: NotifiedFragment[] };
}

export type ApplyOutcome =
  | { ok: true; fragments: NotifiedFragment[]; removed: string[] }
  | { ok: false; replies: FragmentReply[] };

/** `checkImmutable`: refuse (`immutable`) a change to an `immutable` property of an object the set
 *  did not add, as the client does for its own edits (not for a method's stub). */
export function applyChangeSet(state: ScopeState, schema: Schema, fragments: unknown[], options?: { checkImmutable?: boolean }): ApplyOutcome;

export function applyOperation<T>(elements: T[], operation?: { insert?: T[]; remove?: T[]; before?: T | null }): T[];

export interface PendingSet {
  readonly key: string;
  readonly fragments: Fragment[];
  status: "queued" | "inflight" | "accepted";
  version: number | undefined;
  /** When it was made (ISO 8601), sent as Idempotency-Key-Created with every attempt. */
  created?: string;
  /** "method": a server method call (`fragments`: its stub's edits, then the server's); absent: a change set. */
  kind?: "method";
  method?: string;
  args?: JSONValue;
}

export class SyncCore {
  constructor(schema: Schema, options?: { clientId?: string });
  readonly version: number;
  readonly rootUUID: string | undefined;
  readonly confirmed: ScopeState;
  readonly view: ScopeState;
  readonly pending: PendingSet[];
  /** Pending sets kept from an earlier page, before `load`/`reset`; keys unchanged. */
  restorePending(sets: Array<Pick<PendingSet, "key" | "fragments" | "status" | "version" | "created" | "kind" | "method" | "args">>, sequence?: number): void;
  load(state: object): Notification;
  local(fragments: Fragment[], call?: { method: string; args: JSONValue }): { set: PendingSet; notification: Notification };
  /** A method call answered 200: the server's change set replaces its stub's edits. */
  callAnswered(set: PendingSet, answer: { version: number; fragments: NotifiedFragment[]; removed?: string[] }): Notification | null;
  nextToSend(): PendingSet | undefined;
  accepted(set: PendingSet, version: number): Notification | null;
  rejected(set: PendingSet): Notification | null;
  retry(set: PendingSet): void;
  /** null: already applied; gap: reconnect from `version`; inconsistent: reconnect for a full state. */
  event(event: { version: number; fragments: NotifiedFragment[]; removed?: string[]; idempotencyKey?: string }):
    Notification | { gap: true } | { inconsistent: true; replies: FragmentReply[] } | null;
  reset(state: object): Notification;
}

/** How one connection of the event stream ended. */
export type StreamEndKind =
  | "closing" | "gap" | "inconsistent" | "auth-expired" | "unauthorized"
  | "network" | "dropped" | "server-error" | "error" | "silence" | "unreadable"
  | "deleted" | "forbidden";

export const StreamEnd: Readonly<{
  closing: "closing"; gap: "gap"; inconsistent: "inconsistent"; authExpired: "auth-expired"; unauthorized: "unauthorized";
  network: "network"; dropped: "dropped"; serverError: "server-error"; error: "error"; silence: "silence"; unreadable: "unreadable";
  deleted: "deleted"; forbidden: "forbidden";
}>;

/** What to do after a stream connection ended. `backoff` waits `backoffDelay(attempt - 1)`. */
export interface ReconnectionDecision {
  action: "reconnect" | "backoff" | "stop";
  /** 0 for `reconnect` and `stop`; k ≥ 1 for the k-th backoff in a row. */
  attempt: number;
  /** Ask the token provider for a new token first. */
  refreshToken: boolean;
  /** The next connection asks for the whole state (no Last-Event-ID). */
  fullState: boolean;
  /** Why it stopped. */
  reason?: "deleted" | "forbidden" | "requested";
}

export interface ConnectionStatus {
  status: Status;
  attempt: number;
  reason?: "deleted" | "forbidden" | "requested";
}

/** The stream's reconnection rules: pure, clock-free (the caller says how long a connection lasted). */
export class ReconnectionPolicy {
  constructor(options?: { spinWindow?: number; healthyAfter?: number });
  readonly status: ConnectionStatus;
  readonly fullState: boolean;
  readonly stopped: boolean;
  opened(): ConnectionStatus;
  ended(kind: StreamEndKind, lastedMs: number): ReconnectionDecision;
  /** The next connection's Last-Event-ID: `version`, or null for the whole state. */
  lastEventId(version: number): number | null;
  online(): void;
  close(): ConnectionStatus;
}

/** Which scopes one shared stream carries and how its next request names them: pure. */
export class StreamScopes {
  readonly names: readonly string[];
  readonly size: number;
  /** The last request was made for another list: re-open the stream at once. */
  readonly stale: boolean;
  has(name: string): boolean;
  join(name: string): void;
  leave(name: string): void;
  /** The `scope` parameters: `NAME@cv`, or `NAME` for a scope that must load its whole state. */
  request(versionOf: (name: string) => number): string[];
  ended(kind: StreamEndKind, name: string | undefined): void;
  opened(): void;
  refused(status: number, problem: Problem | null | undefined):
    { stop: string; reason: "deleted" | "forbidden"; retry: true } | { retry: true; stop?: undefined } | { kind: StreamEndKind; stop?: undefined };
}

export type SendDecision =
  | { action: "next" }
  | { action: "rejected" }
  | { action: "resend"; refreshToken: true }
  | { action: "backoff"; attempt: number; refreshToken: boolean }
  | { action: "wait"; seconds: number };

/** What to do with the change set in flight once its POST is answered: pure. */
export class SendRetryPolicy {
  answered(answer: { status: number; retryAfter?: string | number | null } | { network: true }): SendDecision;
  startOver(): void;
}

/** The versions of this client's own accepted change sets an undo may revert, most recent first: pure. */
export class UndoHistory {
  constructor(limit?: number);
  readonly count: number;
  readonly versions: readonly number[];
  accepted(version: number): void;
  next(): number | undefined;
  putBack(version: number): void;
  gone(version: number): void;
}

export function backoffDelay(attempt: number, options?: { initial?: number; max?: number }, random?: () => number): number;

export class SSEParser {
  constructor(onEvent: (event: { type: string; id: string | undefined; data: string }) => void, onComment?: (text: string) => void);
  feed(text: string): void;
}
