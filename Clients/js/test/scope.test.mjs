// Scope (openScope's transport) against a scripted fetch: what the live server cannot be made to
// do on cue — a gap in the stream, `closing`, a 503 — and a token provider that fails once.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { openScope, Rejection } from "../jetstream.mjs";
import { DEMO_SCHEMA, canvasState, uuid, ROOT, shapeProperties } from "./fixtures.mjs";

const S1 = uuid(1);
const BACKOFF = { initial: 10, max: 50 };
const opened = [];
afterEach(() => { for (const scope of opened.splice(0)) scope.close(); });

const json = (body, status = 200, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/**
 * A fetch that serves the demo schema and a canvas at version `version`, records every request,
 * hands each event-stream request to the test as `{headers, push(text), end()}` (unless
 * `answerStream(request)` answers it), and answers POSTs with `answerPost(request)` (default: 200
 * at the next version).
 */
function scriptedServer({ version = 0, answerPost, answerStream } = {}) {
  const requests = [];
  const streams = [];
  let next = version;
  const fetch = async (url, init = {}) => {
    const { pathname: path, searchParams } = new URL(url);
    const request = { method: init.method ?? "GET", path, scopes: searchParams.getAll("scope"), headers: init.headers ?? {}, body: init.body && JSON.parse(init.body) };
    requests.push(request);
    if (path === "/v1/schema") return json(DEMO_SCHEMA);
    if (path === "/v1/scopes/canvas-1" && request.method === "GET") return json({ name: "canvas-1", ...canvasState(version, [[S1, { x: 1 }]]) });
    if (path === "/v1/scopes/canvas-1/changesets") {
      if (answerPost) { const answer = await answerPost(request); if (answer) return answer; }
      next += 1;
      return json({ version: next, fragmentReplies: request.body.fragments.map(() => ({})), idempotencyKey: request.headers["Idempotency-Key"] });
    }
    if (path === "/v1/events") {
      if (answerStream) { const answer = await answerStream(request); if (answer) return answer; }
      let controller;
      const body = new ReadableStream({ start(c) { controller = c; } });
      const stream = {
        headers: request.headers,
        scopes: request.scopes,
        push: (text) => controller.enqueue(new TextEncoder().encode(text)),
        end: () => { try { controller.close(); } catch { /* already ended */ } },
      };
      init.signal?.addEventListener("abort", () => { try { controller.error(new DOMException("aborted", "AbortError")); } catch { /* ended */ } });
      streams.push(stream);
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    return json({ type: "/problems/not-found", status: 404 }, 404);
  };
  return {
    fetch, requests, streams,
    posts: () => requests.filter((r) => r.method === "POST"),
    streamRequests: () => requests.filter((r) => r.path === "/v1/events"),
  };
}

async function open(server, options = {}) {
  const scope = await openScope("canvas-1", { baseURL: "http://127.0.0.1:1", fetch: server.fetch, backoff: BACKOFF, clientId: "c", ...options });
  opened.push(scope);
  return scope;
}

async function waitFor(condition, what, timeout = 5000) {
  const deadline = Date.now() + timeout;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 5));
  }
}

function within(promise, what, ms = 5000) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms); })])
    .finally(() => clearTimeout(timer));
}

const changeset = (version, x, key) =>
  `event: changeset\nid: m${version}\ndata: ${JSON.stringify({ scope: "canvas-1", version, fragments: [{ type: "change", uuid: S1, clsName: "Shape", properties: { x } }], removed: [], ...(key ? { idempotencyKey: key } : {}) })}\n\n`;

test("the shared stream resumes from the confirmed version: scope=NAME@V on the first and every later request", async () => {
  const server = scriptedServer({ version: 4 });
  const scope = await open(server);
  await waitFor(() => server.streams.length === 1 && scope.status === "live", "the stream");
  assert.deepEqual(server.streams[0].scopes, ["canvas-1@4"]);
  server.streams[0].push(changeset(5, 50));
  await waitFor(() => scope.version === 5, "version 5");
  server.streams[0].end();   // a dropped stream: reconnect with backoff, from version 5
  await waitFor(() => server.streams.length === 2, "a reconnect");
  assert.deepEqual(server.streams[1].scopes, ["canvas-1@5"]);
  assert.equal(scope.get(S1).properties.x, 50);
});

test("R1: a gap in the stream (an event past version + 1) reconnects from the confirmed version; the gapped event is not applied", async () => {
  const server = scriptedServer({ version: 0 });
  const scope = await open(server, { backoff: { initial: 60_000, max: 60_000 } });
  await waitFor(() => server.streams.length === 1, "the stream");
  server.streams[0].push(changeset(1, 10));
  server.streams[0].push(changeset(3, 30));
  await waitFor(() => server.streams.length === 2, "an immediate reconnect after the gap (the backoff here is a minute)", 2000);
  assert.deepEqual(server.streams[1].scopes, ["canvas-1@1"]);
  assert.equal(scope.version, 1);
  assert.equal(scope.get(S1).properties.x, 10);
  server.streams[1].push(changeset(2, 20) + changeset(3, 30));
  await waitFor(() => scope.version === 3, "the missed events");
  assert.equal(scope.get(S1).properties.x, 30);
});

test("event: closing reconnects at once, not after a backoff", async () => {
  const server = scriptedServer({ version: 2 });
  const scope = await open(server, { backoff: { initial: 60_000, max: 60_000 } });
  await waitFor(() => server.streams.length === 1, "the stream");
  server.streams[0].push("event: closing\ndata: {}\n\n");
  await waitFor(() => server.streams.length === 2, "an immediate reconnect (the backoff here is a minute)", 2000);
  assert.deepEqual(server.streams[1].scopes, ["canvas-1@2"]);
  assert.notEqual(scope.status, "closed");
});

test("a server that answers every stream with closing at once (draining) is not hammered: the second quick closing backs off", async (t) => {
  // Full jitter draws the backoff from [0, 60 s): pin the draw to the middle, or about one run in
  // a hundred would draw under the half second this test waits and reconnect within it.
  t.mock.method(Math, "random", () => 0.5);
  const server = scriptedServer({ version: 2 });
  const scope = await open(server, { backoff: { initial: 60_000, max: 60_000 } });
  await waitFor(() => server.streams.length === 1, "the stream");
  server.streams[0].push("event: closing\ndata: {}\n\n");
  await waitFor(() => server.streams.length === 2, "the first reconnection, at once", 2000);
  server.streams[1].push("event: closing\ndata: {}\n\n");       // at once again: a drain
  await new Promise((done) => setTimeout(done, 500));
  assert.equal(server.streams.length, 2, "the third connection waits for the (one-minute) backoff");
  assert.equal(scope.status, "reconnecting");
});

test("R6: a 503 is retried with the same Idempotency-Key and creation time; the change resolves once", async () => {
  let failures = 2;
  const server = scriptedServer({ answerPost: () => (failures-- > 0 ? json({ type: "/problems/unavailable", status: 503 }, 503) : undefined) });
  const scope = await open(server);
  const before = Date.now();
  const answer = await within(scope.change([{ type: "change", uuid: S1, clsName: "Shape", properties: { x: 7 } }]), "the change accepted");
  assert.deepEqual(answer, { version: 1 });
  assert.deepEqual(server.posts().map((post) => post.headers["Idempotency-Key"]), ["c:1", "c:1", "c:1"]);
  // When the set was made, RFC 3339, the same on every resend (the server decides a set sent
  // after its idempotency window from that time).
  const created = server.posts().map((post) => post.headers["Idempotency-Key-Created"]);
  assert.equal(new Set(created).size, 1, `one creation time: ${created}`);
  assert.match(created[0], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(created[0]) - before) < 60_000, created[0]);
  assert.deepEqual(server.posts()[0].body, { fragments: [{ type: "change", uuid: S1, clsName: "Shape", properties: { x: 7 } }] });
});

test("L3: collections are sent as operations, never as whole arrays", async () => {
  const server = scriptedServer();
  const scope = await open(server);
  const id = scope.add("Shape", { x: 3 }, { before: S1 });
  await waitFor(() => server.posts().length === 1, "the POST");
  await within(scope.remove(S1), "the removal");
  const [add, remove] = server.posts().map((post) => post.body.fragments);
  assert.deepEqual(add, [
    { type: "add", uuid: id, clsName: "Shape", properties: { x: 3 } },
    { type: "change", uuid: ROOT, clsName: "Canvas", properties: { shapes: { insert: [id], before: S1 } } },
  ]);
  assert.deepEqual(remove, [{ type: "change", uuid: ROOT, clsName: "Canvas", properties: { shapes: { remove: [S1] } } }]);
});

test("R6: a 422 rejects the change with the server's reasons and rolls it back", async () => {
  const problem = { type: "/problems/invalid-change-set", title: "Change set rejected", status: 422, detail: "1 of 1 fragments were rejected",
                    fragmentReplies: [{ error: { type: "unknown-object", message: "no such object", property: undefined } }] };
  const server = scriptedServer({ answerPost: () => json(problem, 422, { "Content-Type": "application/problem+json" }) });
  const scope = await open(server);
  const notifications = [];
  scope.subscribe((notification) => notifications.push(notification));
  const rejected = [];
  scope.onRejected((rejection) => rejected.push(rejection));
  const change = scope.set(S1, { x: 99 });
  assert.equal(scope.get(S1).properties.x, 99, "optimistic");
  const rejection = await within(change.then(() => assert.fail("accepted"), (error) => error), "the refusal");
  assert.ok(rejection instanceof Rejection);
  assert.equal(rejection.status, 422);
  assert.equal(rejection.idempotencyKey, "c:1");
  assert.deepEqual(rejection.reasons, ["no such object"]);
  assert.deepEqual(rejected, [rejection]);
  assert.deepEqual(scope.get(S1).properties, shapeProperties({ x: 1 }), "rolled back");
  assert.equal(scope.pendingCount, 0);
  const last = notifications.at(-1);
  assert.equal(last.rejection, rejection);
  assert.deepEqual(last.fragments.map((fragment) => [fragment.uuid, fragment.properties.x]), [[S1, 1]]);
});

test("a token provider that throws once on refresh does not stop the sender: the set is sent when it recovers", async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    let refreshes = 0;
    const token = async ({ refresh }) => {
      if (!refresh) return "first";
      refreshes += 1;
      if (refreshes === 1) throw new Error("the identity provider is briefly unreachable");
      return "fresh";
    };
    const server = scriptedServer({ answerPost: (request) => (request.headers.Authorization === "Bearer first" ? json({ type: "/problems/token-expired", status: 401 }, 401) : undefined) });
    const scope = await open(server, { token });
    const answer = await within(scope.set(S1, { x: 5 }), "the change accepted with the recovered token");
    assert.equal(answer.version, 1);
    assert.equal(server.posts().at(-1).headers.Authorization, "Bearer fresh");
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

// The rules the transport follows through connection-state.mjs (docs/sync-protocol.md), seen from
// outside: what Scope sends after each end. Every backoff here is a minute, so "at once" shows.
const MINUTE = { initial: 60_000, max: 60_000 };

test("R3: a 401 when the stream opens asks the token provider for a new token and reconnects at once", async () => {
  const calls = [];
  const token = ({ refresh }) => { calls.push(refresh); return refresh ? "fresh" : "stale"; };
  const server = scriptedServer({
    version: 3,
    answerStream: (request) => (request.headers.Authorization === "Bearer stale" ? json({ type: "/problems/token-expired", status: 401 }, 401) : undefined),
  });
  const scope = await open(server, { token, backoff: MINUTE });
  await waitFor(() => server.streams.length === 1 && scope.status === "live", "the stream with the new token, at once (the backoff here is a minute)", 2000);
  assert.deepEqual(calls, [false, true]);
  assert.deepEqual(server.streamRequests().map((r) => [r.headers.Authorization, r.scopes]), [["Bearer stale", ["canvas-1@3"]], ["Bearer fresh", ["canvas-1@3"]]]);
});

test("R2: a changeset at version + 1 that does not apply reconnects at once asking for the whole state, and the snapshot it gets replaces the state", async () => {
  const server = scriptedServer({ version: 4 });
  const scope = await open(server, { backoff: MINUTE });
  const statuses = [];
  scope.onStatus((status, { attempt }) => statuses.push([status, attempt]));
  await waitFor(() => server.streams.length === 1 && scope.status === "live", "the stream");
  const unknown = uuid(99);
  server.streams[0].push(`event: changeset\nid: 5\ndata: ${JSON.stringify({ scope: "canvas-1", version: 5, fragments: [{ type: "change", uuid: unknown, clsName: "Shape", properties: { x: 1 } }], removed: [] })}\n\n`);
  await waitFor(() => server.streams.length === 2, "an immediate reconnection (the backoff here is a minute)", 2000);
  assert.deepEqual(server.streams[1].scopes, ["canvas-1"], "a full state is asked for (no @version)");
  assert.equal(scope.version, 4, "the inconsistent event was not applied");
  assert.deepEqual(statuses[0], ["reconnecting", 0]);
  server.streams[1].push(`event: snapshot\ndata: ${JSON.stringify({ scope: "canvas-1", ...canvasState(5, [[S1, { x: 55 }]]) })}\n\n`);
  await waitFor(() => scope.version === 5, "the snapshot");
  assert.equal(scope.get(S1).properties.x, 55);
});

test("R6: a first 401 on a POST resends the same set at once with a new token", async () => {
  const token = ({ refresh }) => (refresh ? "fresh" : "stale");
  const server = scriptedServer({ answerPost: (request) => (request.headers.Authorization === "Bearer stale" ? json({ type: "/problems/token-expired", status: 401 }, 401) : undefined) });
  const scope = await open(server, { token, backoff: MINUTE });
  const answer = await within(scope.set(S1, { x: 5 }), "the set accepted at once (the backoff here is a minute)", 2000);
  assert.equal(answer.version, 1);
  assert.deepEqual(server.posts().map((post) => [post.headers["Idempotency-Key"], post.headers.Authorization]), [["c:1", "Bearer stale"], ["c:1", "Bearer fresh"]]);
});

test("R5: the status says which backoff the stream waits out, and starts over at 'live'", async () => {
  let refusals = 2;
  let release;
  const subscribed = new Promise((resolve) => { release = resolve; });
  const server = scriptedServer({
    answerStream: async () => { await subscribed; return refusals-- > 0 ? json({ type: "/problems/unavailable", status: 503 }, 503) : undefined; },
  });
  const scope = await open(server, { backoff: { initial: 1, max: 1 } });
  const statuses = [];
  scope.onStatus((status, { attempt }) => statuses.push([status, attempt]));
  release();
  await waitFor(() => scope.status === "live", "the stream after two 503s");
  assert.deepEqual(statuses, [["reconnecting", 1], ["reconnecting", 2], ["live", 0]]);
  assert.equal(scope.reconnectAttempt, 0);
});

test("an event whose data cannot be read backs off and asks for the whole state, instead of resuming past it", async () => {
  const server = scriptedServer({ version: 4 });
  const scope = await open(server, { backoff: { initial: 1, max: 1 } });
  await waitFor(() => server.streams.length === 1 && scope.status === "live", "the stream");
  server.streams[0].push("event: changeset\nid: 5\ndata: {\"version\": 5, \"fragm\n\n");
  await waitFor(() => server.streams.length === 2, "the reconnection");
  assert.deepEqual(server.streams[1].scopes, ["canvas-1"], "the whole state is asked for (no @version)");
  assert.equal(scope.version, 4);
  assert.notEqual(scope.status, "closed");
});

test("S4: a 404 naming the scope when the shared stream opens closes that scope (deleted) and asks no more", async () => {
  const server = scriptedServer({
    version: 2,
    answerStream: () => json({ type: "/problems/not-found", status: 404, detail: "no scope named 'canvas-1'", scope: "canvas-1" }, 404),
  });
  const scope = await open(server, { backoff: MINUTE });
  const notifications = [];
  scope.subscribe((notification) => notifications.push(notification));
  await waitFor(() => scope.status === "closed", "the scope closed");
  assert.ok(notifications.some((notification) => notification.deleted), "told deleted: true");
  assert.equal(server.streamRequests().length, 1, "no stream is opened for no scope");
  await assert.rejects(scope.set(S1, { x: 2 }));
});

test("persist needs IndexedDB: in Node openScope fails with a JetstreamError before any request", async () => {
  const server = scriptedServer();
  await assert.rejects(open(server, { persist: true }), (error) => {
    assert.equal(error.name, "JetstreamError");
    assert.match(error.message, /persist.*IndexedDB/);
    return true;
  });
  assert.deepEqual(server.requests, []);
  const { clearStoredScopes } = await import("../jetstream.mjs");
  await assert.rejects(clearStoredScopes(), /IndexedDB/);
});

test("saved() rejects with a JetstreamError on a scope opened without persist", async () => {
  const scope = await open(scriptedServer());
  assert.equal(scope.persisted, false);
  assert.equal(scope.storageError, undefined);
  await assert.rejects(scope.saved(), (error) => error.name === "JetstreamError" && /not opened with persist/.test(error.message));
});
