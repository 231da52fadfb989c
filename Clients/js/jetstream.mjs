// jetstream.mjs — the JavaScript client of Jetstream Gateway (browsers and Node 20+): the entry.
//
// It keeps local copies of scopes in sync with the gateway, all of a page's scopes on one event
// stream, and shows who else is here (presence). For each scope it keeps the server's state
// (`confirmed`), the local change sets not yet confirmed (`pending`), and the view the application
// sees (confirmed with every pending set re-applied). Local changes show at once and go to the server
// in order, one at a time, each with a fixed Idempotency-Key; server events rebase the view. The
// rules are docs/sync-protocol.md's, the Swift client's too; the API is docs/js-client.md.
//
//   import { openScope } from "/client/jetstream.mjs";
//   const scope = await openScope("canvas-1", { create: { clsName: "Canvas" } });
//   scope.subscribe(({ fragments, removed }) => render(scope));
//   const shape = scope.add("Shape", { x: 10, y: 20 });     // visible now, sent as an operation
//
// Dependency-free ES modules, served by the gateway next to this one under /client/; each is
// usable alone (the tests use them directly):
//   errors.mjs            ErrorKind, Rejection, JetstreamError
//   schema.mjs            Schema, applyOperation — the model rules of docs/model.md
//   state.mjs             ScopeState, applyChangeSet
//   sync-core.mjs         SyncCore — the pure state machine of the algorithm
//   connection-state.mjs  ReconnectionPolicy, SendRetryPolicy, StreamScopes, UndoHistory — what
//                         to do after a stream connection ends or a POST is answered, which scopes
//                         a shared stream asks for and how, which own set an undo reverts next
//                         (pure, clock-free)
//   backoff.mjs           backoffDelay
//   sse-parser.mjs        SSEParser
//   scope.mjs             openScope, Scope — what the application holds: a handle on a copy
//   connection.mjs        the transport: one connection per page (token, page lifecycle, copies,
//                         the schema and its ETag)
//   shared-stream.mjs     the connection's one event stream for all its scopes
//   scope-copy.mjs        one scope's copy: loading, sending, status, its events
//   scope-past.mjs        the copy's past: undo, restore, a state at a version, history pages
//   presence.mjs          the copy's presence: who else is here
//   stored-copy.mjs       with `persist`: the copy in IndexedDB (offline start, saved(), the
//                         tab's client id, adopting a closed tab's pending sets), clearStoredScopes

export { ErrorKind, Rejection, JetstreamError } from "./errors.mjs";
export { Schema, applyOperation } from "./schema.mjs";
export { ScopeState, applyChangeSet } from "./state.mjs";
export { SyncCore } from "./sync-core.mjs";
export { ReconnectionPolicy, SendRetryPolicy, StreamEnd, StreamScopes, UndoHistory } from "./connection-state.mjs";
export { backoffDelay } from "./backoff.mjs";
export { SSEParser } from "./sse-parser.mjs";
export { openScope, Scope } from "./scope.mjs";
export { clearStoredScopes } from "./stored-copy.mjs";
