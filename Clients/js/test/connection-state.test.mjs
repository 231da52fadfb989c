// The policies of connection-state.mjs at their edges, with a manual clock (durations given
// by hand). The shared traces (traces.test.mjs) cover the rules as both clients follow them;
// these cover what no trace walks through.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ReconnectionPolicy, SendRetryPolicy, StreamEnd, StreamScopes, UndoHistory, endOfEvent, endOfResponse } from "../connection-state.mjs";

test("endOfResponse: 200 opens; 401, 403, 404 have their own ends; any other status is a server error", () => {
  assert.equal(endOfResponse(200), undefined);
  assert.equal(endOfResponse(401), StreamEnd.unauthorized);
  assert.equal(endOfResponse(403), StreamEnd.forbidden);
  assert.equal(endOfResponse(404), StreamEnd.deleted);
  for (const status of [204, 400, 429, 500, 502, 503]) assert.equal(endOfResponse(status), StreamEnd.serverError, String(status));
});

test("endOfEvent: closing, auth-expired, error and deleted end a connection; data events and unknown ones do not", () => {
  assert.equal(endOfEvent("closing"), StreamEnd.closing);
  assert.equal(endOfEvent("auth-expired"), StreamEnd.authExpired);
  assert.equal(endOfEvent("error"), StreamEnd.error);
  assert.equal(endOfEvent("deleted"), StreamEnd.deleted);
  for (const type of ["changeset", "snapshot", "reset", "message", "future-event"]) assert.equal(endOfEvent(type), undefined, type);
});

test("ReconnectionPolicy: a dropped or silent stream backs off like a network error", () => {
  const policy = new ReconnectionPolicy();
  assert.deepEqual(policy.status, { status: "connecting", attempt: 0 });
  policy.opened();
  assert.deepEqual(policy.ended(StreamEnd.dropped, 5_000), { action: "backoff", attempt: 1, refreshToken: false, fullState: false });
  policy.opened();
  assert.deepEqual(policy.ended(StreamEnd.silence, 30_000), { action: "backoff", attempt: 2, refreshToken: false, fullState: false });
  assert.deepEqual(policy.status, { status: "reconnecting", attempt: 2 });
});

test("ReconnectionPolicy: the spin guard follows only a reconnection at once; a backoff in between clears it", () => {
  const policy = new ReconnectionPolicy();
  assert.equal(policy.ended(StreamEnd.closing, 5_000).action, "reconnect");
  assert.equal(policy.ended(StreamEnd.network, 100).action, "backoff");
  assert.equal(policy.ended(StreamEnd.closing, 100).action, "reconnect", "the connection before it backed off: no spin");
  assert.deepEqual(policy.ended(StreamEnd.gap, 999), { action: "backoff", attempt: 2, refreshToken: false, fullState: false }, "within a second of a reconnection at once");
  assert.equal(policy.ended(StreamEnd.closing, 1_001).action, "reconnect", "a connection that lasted a second is not a spin");
});

test("ReconnectionPolicy: the full state asked for after an inconsistency is asked again until a connection opens", () => {
  const policy = new ReconnectionPolicy();
  policy.opened();
  assert.deepEqual(policy.ended(StreamEnd.inconsistent, 5_000), { action: "reconnect", attempt: 0, refreshToken: false, fullState: true });
  assert.equal(policy.lastEventId(7), null);
  assert.equal(policy.ended(StreamEnd.network, 10).fullState, true, "the reconnection failed before the snapshot came");
  assert.equal(policy.lastEventId(7), null);
  policy.opened();
  assert.equal(policy.lastEventId(7), 7);
});

test("ReconnectionPolicy: online() starts the backoff over", () => {
  const policy = new ReconnectionPolicy();
  policy.ended(StreamEnd.network, 10);
  policy.ended(StreamEnd.network, 10);
  assert.equal(policy.ended(StreamEnd.network, 10).attempt, 3);
  policy.online();
  assert.equal(policy.ended(StreamEnd.network, 10).attempt, 1);
});

test("ReconnectionPolicy: once stopped it stays stopped, whatever follows", () => {
  const policy = new ReconnectionPolicy();
  policy.opened();
  assert.deepEqual(policy.ended(StreamEnd.forbidden, 10), { action: "stop", attempt: 0, refreshToken: false, fullState: false, reason: "forbidden" });
  assert.deepEqual(policy.status, { status: "closed", attempt: 0, reason: "forbidden" });
  policy.opened();
  assert.equal(policy.ended(StreamEnd.closing, 10).action, "stop");
  assert.equal(policy.close().reason, "forbidden", "close() after a stop keeps the first reason");
  const closed = new ReconnectionPolicy();
  assert.deepEqual(closed.close(), { status: "closed", attempt: 0, reason: "requested" });
  assert.equal(closed.ended(StreamEnd.deleted, 10).reason, "requested");
});

test("ReconnectionPolicy: an end it does not know is a programming error, not a silent backoff", () => {
  assert.throws(() => new ReconnectionPolicy().ended("timeout", 10), RangeError);
});

test("SendRetryPolicy: Retry-After counts only as a positive number of seconds; else the backoff goes on", () => {
  const policy = new SendRetryPolicy();
  assert.deepEqual(policy.answered({ status: 503, retryAfter: "0" }), { action: "backoff", attempt: 1, refreshToken: false });
  assert.deepEqual(policy.answered({ status: 503, retryAfter: "soon" }), { action: "backoff", attempt: 2, refreshToken: false });
  assert.deepEqual(policy.answered({ status: 503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT" }), { action: "backoff", attempt: 3, refreshToken: false });
  assert.deepEqual(policy.answered({ status: 429, retryAfter: "3" }), { action: "wait", seconds: 3 });
  assert.deepEqual(policy.answered({ status: 502, retryAfter: null }), { action: "backoff", attempt: 4, refreshToken: false });
});

test("SendRetryPolicy: 401s in a row keep backing off (new token each time); another answer ends the run", () => {
  const policy = new SendRetryPolicy();
  assert.deepEqual(policy.answered({ status: 401 }), { action: "resend", refreshToken: true });
  assert.deepEqual(policy.answered({ status: 401 }), { action: "backoff", attempt: 1, refreshToken: true });
  assert.deepEqual(policy.answered({ status: 401 }), { action: "backoff", attempt: 2, refreshToken: true });
  assert.deepEqual(policy.answered({ network: true }), { action: "backoff", attempt: 3, refreshToken: false });
  assert.deepEqual(policy.answered({ status: 401 }), { action: "resend", refreshToken: true }, "not in a row any more");
});

test("SendRetryPolicy: a rejection settles the set and starts the backoff over, like a success", () => {
  const policy = new SendRetryPolicy();
  policy.answered({ network: true });
  policy.answered({ network: true });
  for (const status of [400, 403, 404, 409, 412, 413, 415, 422]) assert.deepEqual(policy.answered({ status }), { action: "rejected" }, String(status));
  assert.deepEqual(policy.answered({ network: true }), { action: "backoff", attempt: 1, refreshToken: false });
  policy.startOver();
  assert.deepEqual(policy.answered({ status: 500 }), { action: "backoff", attempt: 1, refreshToken: false });
});

test("ReconnectionPolicy: an event that cannot be read backs off, and the next connection asks for the whole state", () => {
  const policy = new ReconnectionPolicy();
  policy.opened();
  assert.deepEqual(policy.ended(StreamEnd.unreadable, 5_000), { action: "backoff", attempt: 1, refreshToken: false, fullState: true });
  assert.equal(policy.lastEventId(3), null);
  policy.opened();
  assert.equal(policy.lastEventId(3), 3);
});

// -- UndoHistory --------------------------------------------------------------------------------

test("UndoHistory: the most recent own version first; each is taken out once, so two undos revert two sets", () => {
  const history = new UndoHistory();
  assert.equal(history.next(), undefined, "nothing to undo at first");
  for (const version of [3, 5, 9]) history.accepted(version);
  assert.equal(history.count, 3);
  assert.equal(history.next(), 9);
  assert.equal(history.next(), 5, "the second undo takes the next older set, not the first one again");
  assert.equal(history.count, 1);
  assert.equal(history.next(), 3);
  assert.equal(history.next(), undefined);
});

test("UndoHistory: answers out of order, replays and non-versions; putBack restores the order", () => {
  const history = new UndoHistory();
  for (const version of [7, 4, 7, 12, 0, -1, 2.5, undefined, null, "8"]) history.accepted(version);
  assert.deepEqual(history.versions, [12, 7, 4], "descending, once each, only positive integers");
  const taken = history.next();
  history.accepted(10);
  history.putBack(taken);
  assert.deepEqual(history.versions, [12, 10, 7, 4], "a version that could not be reverted is a candidate again, in its place");
});

test("UndoHistory: keeps the most recent `limit` versions", () => {
  const history = new UndoHistory(3);
  for (let version = 1; version <= 10; version++) history.accepted(version);
  assert.deepEqual(history.versions, [10, 9, 8]);
  history.accepted(2);
  assert.deepEqual(history.versions, [10, 9, 8], "an older version than every kept one falls off at once");
  assert.equal(new UndoHistory().limit, 100, "100 by default");
});

test("UndoHistory: a version the server no longer keeps takes every older one with it", () => {
  const history = new UndoHistory();
  for (const version of [2, 4, 6, 8]) history.accepted(version);
  assert.equal(history.next(), 8);
  history.gone(4);
  assert.deepEqual(history.versions, [6], "4 and 2 are older than the retained history too");
});

// -- StreamScopes (docs/sync-protocol.md, S1–S4) ----------------------------------------------

const versions = { a: 4, b: 9, c: 0 };
const versionOf = (name) => versions[name];

test("StreamScopes: the request names every carried scope from its cv, in the order they joined; joining or leaving makes it stale", () => {
  const scopes = new StreamScopes();
  assert.equal(scopes.stale, true, "nothing requested yet");
  scopes.join("a");
  scopes.join("b");
  scopes.join("a");
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b@9"], "a scope joined twice is carried once");
  assert.equal(scopes.stale, false);
  scopes.join("c");
  assert.equal(scopes.stale, true, "a new scope: re-open (S3)");
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b@9", "c@0"]);
  scopes.leave("a");
  scopes.leave("a");
  assert.equal(scopes.stale, true, "a scope left: re-open");
  assert.deepEqual(scopes.request(versionOf), ["b@9", "c@0"]);
  scopes.leave("nowhere");
  assert.equal(scopes.stale, false, "leaving a scope not carried changes nothing");
  assert.equal(scopes.size, 2);
});

test("StreamScopes: an inconsistent or unreadable event asks that scope (only) for its whole state until the stream answers", () => {
  const scopes = new StreamScopes();
  for (const name of ["a", "b", "c"]) scopes.join(name);
  scopes.ended(StreamEnd.gap, "a");
  scopes.ended(StreamEnd.closing, undefined);
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b@9", "c@0"], "a gap or closing resumes every scope (R1)");
  scopes.ended(StreamEnd.inconsistent, "b");
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b", "c@0"], "R2: b alone without a position");
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b", "c@0"], "until a connection is answered");
  scopes.opened();
  assert.deepEqual(scopes.request(versionOf), ["a@4", "b@9", "c@0"]);
  scopes.ended(StreamEnd.unreadable, undefined);
  assert.deepEqual(scopes.request(versionOf), ["a", "b", "c"], "unreadable data of no known scope: every scope whole");
  scopes.leave("a");
  scopes.join("a");
  assert.deepEqual(scopes.request(versionOf), ["b", "c", "a@4"], "a scope that left and came back starts from its own cv");
});

test("StreamScopes: a 404 or 403 naming a carried scope stops that scope and the rest re-open; naming none is the stream's end", () => {
  const scopes = new StreamScopes();
  scopes.join("a");
  scopes.join("b");
  assert.deepEqual(scopes.refused(404, { scope: "b", type: "/problems/not-found" }), { stop: "b", reason: StreamEnd.deleted, retry: true });
  assert.deepEqual(scopes.refused(403, { scope: "a" }), { stop: "a", reason: StreamEnd.forbidden, retry: true });
  assert.deepEqual(scopes.refused(404, { scope: "gone-meanwhile" }), { retry: true }, "a scope no longer carried: ask again");
  assert.deepEqual(scopes.refused(404, { type: "/problems/not-found" }), { kind: StreamEnd.deleted });
  assert.deepEqual(scopes.refused(403, null), { kind: StreamEnd.forbidden });
  assert.deepEqual(scopes.refused(401, { scope: "a" }), { kind: StreamEnd.unauthorized }, "401 is the token's, for the whole stream (R3)");
  assert.deepEqual(scopes.refused(400, { scope: "a" }), { kind: StreamEnd.serverError });
  assert.deepEqual(scopes.refused(503, undefined), { kind: StreamEnd.serverError });
});
