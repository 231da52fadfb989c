// The module against the REAL `jetstream serve` binary on 127.0.0.1 ($JETSTREAM_BIN_DIR, default
// .build/debug): concurrent writers, a refused move, a SIGKILL and restart with queued edits,
// deletion, an unknown scope, and tokens (401 on POST, auth-expired on the stream).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openScope, Rejection, JetstreamError } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";

const BACKOFF = { initial: 50, max: 500 };
const servers = [];
const scopes = [];
let workDir;
let server;

before(async () => {
  workDir = temporaryDirectory();
  server = await startServer("main");
});

after(async () => {
  for (const scope of scopes) scope.close();
  for (const running of servers) await running.kill();
  if (workDir) removeTemporary(workDir);
});

async function startServer(name, args = []) {
  const started = new GatewayServer(join(workDir, name, "data"), args);
  servers.push(started);
  return started.start();
}

const scopeName = () => `canvas-js-${randomUUID().slice(0, 8)}`;

/** openScope with short backoff, closed in after(). */
async function open(name, options) {
  const scope = await within(openScope(name, { backoff: BACKOFF, ...options }), `openScope(${name})`);
  scopes.push(scope);
  return scope;
}

async function getJSON(url, token) {
  const response = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  assert.equal(response.status, 200, `GET ${url}: ${response.status}`);
  return response.json();
}

/** `GET /v1/scopes/{name}` without the name: the shape of `scope.snapshot()`. */
async function serverState(base, name, token) {
  const { version, rootUUID, fragments } = await getJSON(`${base}/v1/scopes/${name}`, token);
  return { version, rootUUID, fragments };
}

/** Every change set the server keeps for the scope. */
async function history(base, name, token) {
  return (await getJSON(`${base}/v1/scopes/${name}/changesets?since=0`, token)).changesets;
}

/** `promise`, or a failure naming `what` after `ms` (no wait in these tests is unbounded). */
function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const shapesOf = (scope) => scope.get(scope.rootUUID).properties.shapes;

/** Waits until every scope has nothing pending and all are at the server's version. */
async function settled(base, name, list, token) {
  return waitFor(async () => {
    if (list.some((scope) => scope.pendingCount > 0 || scope.status !== "live")) return false;
    const state = await serverState(base, name, token);
    return list.every((scope) => scope.version === state.version) && state;
  }, `${list.length} client(s) settled at the server's version (pending: ${list.map((s) => s.pendingCount)}, status: ${list.map((s) => s.status)})`);
}

/** A fetch that records every request (method, path, key, token, outcome). */
function recordingFetch(transform = (url, init) => init) {
  const log = [];
  const recording = async (url, init = {}) => {
    init = transform(url, init);
    const headers = init.headers ?? {};
    const entry = { method: init.method ?? "GET", path: new URL(url).pathname, key: headers["Idempotency-Key"], authorization: headers.Authorization };
    log.push(entry);
    try {
      const response = await fetch(url, init);
      entry.status = response.status;
      return response;
    } catch (error) {
      entry.error = error;
      throw error;
    }
  };
  return { fetch: recording, log };
}

test("two clients each add 20 shapes, interleaved: both end with all 40 once, equal to GET", async () => {
  const name = scopeName();
  const a = await open(name, { baseURL: server.url, create: { clsName: "Canvas" }, clientId: "a" });
  const b = await open(name, { baseURL: server.url, create: {}, clientId: "b" });
  await waitFor(() => a.status === "live" && b.status === "live", "both streams live");
  const rejections = [];
  for (const scope of [a, b]) scope.onRejected((rejection) => rejections.push(rejection));
  // No flicker: once a client shows one of its own shapes, no notification takes it away.
  const ownShapes = { a: new Set(), b: new Set() };
  const flicker = [];
  a.subscribe(({ removed }) => removed.forEach((id) => ownShapes.a.has(id) && flicker.push(id)));
  b.subscribe(({ removed }) => removed.forEach((id) => ownShapes.b.has(id) && flicker.push(id)));
  const added = [];
  for (let i = 0; i < 20; i++) {
    for (const [scope, id] of [[a, "a"], [b, "b"]]) {
      const uuid = scope.add("Shape", { x: i, y: id === "a" ? 1 : 2, label: `${id}${i}` });
      ownShapes[id].add(uuid);
      assert.ok(shapesOf(scope).includes(uuid), "a local add is visible at once");
      added.push(uuid);
    }
  }
  const state = await settled(server.url, name, [a, b]);
  assert.deepEqual(rejections, []);
  assert.deepEqual(flicker, []);
  for (const scope of [a, b]) {
    const shapes = shapesOf(scope);
    assert.equal(shapes.length, 40);
    assert.equal(new Set(shapes).size, 40, "each shape once");
    assert.deepEqual([...shapes].sort(), [...added].sort());
    assert.deepEqual(scope.snapshot(), state, "the view equals GET /v1/scopes/{name}");
  }
  const keys = (await history(server.url, name)).map((set) => set.idempotencyKey);
  assert.deepEqual([...keys].sort(), [...Array.from({ length: 20 }, (_, i) => `a:${i + 1}`), ...Array.from({ length: 20 }, (_, i) => `b:${i + 1}`)].sort());
  // Each client's own sets reached the server in its order.
  for (const id of ["a", "b"]) {
    assert.deepEqual(keys.filter((key) => key.startsWith(`${id}:`)), Array.from({ length: 20 }, (_, i) => `${id}:${i + 1}`));
  }
});

test("a move racing a removal: the mover gets a Rejection with reasons, its edit is undone, both converge", async () => {
  const name = scopeName();
  const a = await open(name, { baseURL: server.url, create: { clsName: "Canvas" }, clientId: "remover" });
  // B's POSTs can be held back, as a slow network would: the removal reaches the server first.
  let hold = false;
  const parked = [];
  const gated = async (url, init) => {
    if (hold && init?.method === "POST") await new Promise((release) => parked.push(release));
    return fetch(url, init);
  };
  const b = await open(name, { baseURL: server.url, clientId: "mover", fetch: gated });
  const shape = a.add("Shape", { x: 1, y: 1 });
  await settled(server.url, name, [a, b]);
  assert.ok(b.get(shape), "B has the shape");
  const notifications = [];
  b.subscribe((notification) => notifications.push(notification));
  const seen = [];
  b.onRejected((rejection) => seen.push(rejection));

  hold = true;
  const move = b.set(shape, { x: 500, y: 600 });
  assert.equal(b.get(shape).properties.x, 500, "the move shows at once");
  await waitFor(() => parked.length === 1, "B's POST held back");
  const { version: removal } = await within(a.remove(shape), "the removal accepted");
  await waitFor(() => b.version >= removal, "B reads the removal");
  assert.equal(b.get(shape), undefined, "the move no longer applies: the shape is gone from B's view");
  assert.equal(b.pendingCount, 1, "but the move stays pending until the server answers");
  hold = false;
  parked.splice(0).forEach((release) => release());

  const rejection = await within(move.then(() => assert.fail("the move was accepted"), (error) => error), "the server's answer to the move");
  assert.ok(rejection instanceof Rejection, `a Rejection, got ${rejection}`);
  assert.equal(rejection.status, 422);
  assert.equal(rejection.local, false);
  assert.equal(rejection.type, "/problems/invalid-change-set");
  assert.equal(rejection.idempotencyKey, "mover:1");
  assert.deepEqual(rejection.fragmentReplies.map((reply) => reply.error?.type), ["unknown-object"]);
  assert.ok(rejection.reasons.length === 1 && rejection.reasons[0].length > 0, `reasons: ${rejection.reasons}`);
  assert.deepEqual(seen, [rejection], "onRejected once, with the same Rejection");
  assert.ok(notifications.some((notification) => notification.rejection === rejection), "a notification carries the rejection");
  const state = await settled(server.url, name, [a, b]);
  assert.deepEqual(a.snapshot(), state);
  assert.deepEqual(b.snapshot(), state);
  assert.deepEqual(shapesOf(b), []);
});

test("a POST whose answer is lost after the server applied it: the echo on the stream settles its promise", async () => {
  const name = scopeName();
  // Once armed, the next POST reaches the server; its answer is held until the client has read
  // the set's echo on the stream, then thrown away as a dropped connection would.
  let armed = false;
  let lost = 0;
  let client = null;
  const losing = async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method !== "POST" || !armed) return response;
    armed = false;
    lost += 1;
    const { version } = await response.json();
    await waitFor(() => client.version >= version, "the set's echo read on the stream");
    throw new TypeError("fetch failed: the connection was reset");
  };
  const a = client = await open(name, { baseURL: server.url, create: { clsName: "Canvas" }, clientId: "lossy", fetch: losing });
  const shape = a.add("Shape", { x: 3, y: 4 });
  await settled(server.url, name, [a]);
  armed = true;
  const { version } = await within(a.set(shape, { x: 30 }), "the move's promise");
  assert.equal(lost, 1, "the move's answer was lost, and the promise settled after that");
  assert.equal(a.get(shape).properties.x, 30);
  const state = await settled(server.url, name, [a]);
  assert.equal(version, state.version, "the move resolves with the version its echo carried");
  assert.deepEqual(a.snapshot(), state);
  const logged = await history(server.url, name);
  assert.deepEqual(logged.map((set) => set.idempotencyKey).filter((key) => key?.startsWith("lossy:")), ["lossy:1", "lossy:2"],
    "each set once in the log");
});

test("SIGKILL and restart on the same port: edits queued meanwhile are sent once, in order", async () => {
  const own = await startServer("restart");
  const name = scopeName();
  const recording = recordingFetch();
  const a = await open(name, { baseURL: own.url, create: { clsName: "Canvas" }, clientId: "k", fetch: recording.fetch });
  const statuses = [];
  a.onStatus((status) => statuses.push(status));
  const early = [a.add("Shape", { x: 1 }), a.add("Shape", { x: 2 }), a.add("Shape", { x: 3 })];
  await settled(own.url, name, [a]);

  await own.kill();
  await waitFor(() => a.status === "reconnecting", "the client notices the dropped stream");
  const queued = [];
  for (let i = 0; i < 5; i++) queued.push(a.add("Shape", { x: 10 + i, label: `queued ${i}` }));
  const moved = a.set(early[0], { x: 99 });
  const removed = a.remove(early[1]);
  assert.equal(a.pendingCount, 7);
  assert.deepEqual(shapesOf(a), [early[0], early[2], ...queued], "the queued edits show at once");
  assert.equal(a.get(early[0]).properties.x, 99);
  await waitFor(() => recording.log.some((entry) => entry.method === "POST" && entry.error), "a POST failing while the server is down");

  await own.start(own.port);
  const [movedAnswer, removedAnswer] = await within(Promise.all([moved, removed]), "the queued edits accepted after the restart");
  const state = await settled(own.url, name, [a]);
  assert.ok(removedAnswer.version > movedAnswer.version, "sent in creation order");
  assert.deepEqual(a.snapshot(), state);
  assert.deepEqual(shapesOf(a), [early[0], early[2], ...queued]);
  assert.ok(statuses.includes("reconnecting") && statuses.at(-1) === "live", `statuses: ${statuses}`);

  const sets = await history(own.url, name);
  assert.deepEqual(sets.map((set) => set.version), Array.from({ length: 10 }, (_, i) => i + 1), "versions contiguous, one per set");
  assert.deepEqual(sets.map((set) => set.idempotencyKey), Array.from({ length: 10 }, (_, i) => `k:${i + 1}`), "every key once, in order");
  const posts = recording.log.filter((entry) => entry.method === "POST");
  assert.ok(posts.filter((entry) => entry.key === "k:4").length > 1, "the first queued set was tried while the server was down, then resent");
  assert.deepEqual([...new Set(posts.map((entry) => entry.key))], Array.from({ length: 10 }, (_, i) => `k:${i + 1}`), "keys fixed per set");
});

test("event: deleted closes the scope and notifies the application with deleted: true", async () => {
  const name = scopeName();
  const recording = recordingFetch();
  const a = await open(name, { baseURL: server.url, create: { clsName: "Canvas" }, fetch: recording.fetch });
  await waitFor(() => a.status === "live", "the stream is live");
  const notifications = [];
  a.subscribe((notification) => notifications.push(notification));
  const response = await fetch(`${server.url}/v1/scopes/${name}`, { method: "DELETE" });
  assert.equal(response.status, 204);
  await waitFor(() => a.status === "closed", "status closed after the deletion");
  assert.equal(notifications.filter((notification) => notification.deleted === true).length, 1, JSON.stringify(notifications));
  assert.equal(recording.log.filter((entry) => entry.path.endsWith("/events")).length, 1, "closed by the event, not by a reconnect's 404");
  await assert.rejects(a.change([{ type: "change", uuid: a.rootUUID, clsName: "Canvas", properties: { name: "late" } }]), JetstreamError);
});

test("openScope of an unknown scope rejects with a JetstreamError, status 404", async () => {
  const name = scopeName();
  await assert.rejects(within(openScope(name, { baseURL: server.url, backoff: BACKOFF }), "openScope's refusal"), (error) => {
    assert.ok(error instanceof JetstreamError, `a JetstreamError, got ${error}`);
    assert.equal(error.status, 404);
    assert.equal(error.type, "/problems/not-found");
    return true;
  });
  await assert.rejects(within(openScope("no-rule-matches-this", { baseURL: server.url }), "openScope's refusal"), JetstreamError, "a name no scope rule admits");
  const missing = await fetch(`${server.url}/v1/scopes/${name}`);
  assert.equal(missing.status, 404, "nothing was created");
});

// -- tokens -------------------------------------------------------------------------------------

const SECRET = "a-js-client-test-secret-of-more-than-32-bytes";

function jwt(claims) {
  const encode = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const body = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(claims)}`;
  return `${body}.${createHmac("sha256", SECRET).update(body).digest("base64url")}`;
}

/** A token for canvas-* valid for `seconds`, with a serial to tell tokens apart. */
let serial = 0;
function token(seconds) {
  return jwt({ sub: "js-client", jti: `t${++serial}`, exp: Math.floor(Date.now() / 1000) + seconds,
               jetstream: { read: ["canvas-*"], write: ["canvas-*"] } });
}

/** A provider handing out a short token first and long ones on refresh; it records its calls. */
function provider(shortSeconds) {
  const calls = [];
  const issued = [];
  const provide = (context) => {
    calls.push(context);
    const fresh = token(context.refresh ? 600 : shortSeconds);
    issued.push(fresh);
    return Promise.resolve(fresh);
  };
  return { provide, calls, issued };
}

async function authServer() {
  const secretFile = join(workDir, "secret");
  writeFileSync(secretFile, SECRET + "\n");
  // Anyone may read canvas-* (so a stream can run without a token); writing needs one.
  return startServer(`auth-${++serial}`, ["--jwt-secret-file", secretFile, "--anonymous-read", "canvas-*"]);
}

describe("tokens", { concurrency: true }, () => {
  test("a 401 on POST asks the token provider for a fresh token ({refresh: true}) and resends with the same key", async () => {
    const own = await authServer();
    const name = scopeName();
    const tokens = provider(3);
    // The stream reads anonymously here (no Authorization on /v1/events), so only the POST meets
    // the expired token; the stream's own expiry is the next test.
    const recording = recordingFetch((url, init) => {
      if (new URL(url).pathname !== "/v1/events") return init;
      const headers = { ...init.headers };
      delete headers.Authorization;
      return { ...init, headers };
    });
    const a = await open(name, { baseURL: own.url, create: { clsName: "Canvas" }, clientId: "t", token: tokens.provide, fetch: recording.fetch });
    await waitFor(() => a.status === "live", "the stream is live");
    assert.deepEqual(tokens.calls, [{ refresh: false }]);
    const first = tokens.issued[0];
    const { exp } = JSON.parse(Buffer.from(first.split(".")[1], "base64url").toString());
    await new Promise((done) => setTimeout(done, Math.max(0, (exp + 1) * 1000 - Date.now())));  // now it has expired

    const answer = await within(a.change([{ type: "change", uuid: a.rootUUID, clsName: "Canvas", properties: { name: "after refresh" } }]),
      "the change accepted with a fresh token");
    assert.deepEqual(tokens.calls, [{ refresh: false }, { refresh: true }]);
    const posts = recording.log.filter((entry) => entry.method === "POST");
    assert.deepEqual(posts.map((entry) => [entry.key, entry.authorization, entry.status]),
      [["t:1", `Bearer ${first}`, 401], ["t:1", `Bearer ${tokens.issued[1]}`, 200]]);
    const sets = await history(own.url, name);
    assert.deepEqual(sets.map((set) => [set.version, set.idempotencyKey]), [[answer.version, "t:1"]]);
    await settled(own.url, name, [a]);
    assert.equal(a.get(a.rootUUID).properties.name, "after refresh");
  });

  test("auth-expired on the stream: the provider is asked for a fresh token and the stream resumes", async () => {
    const own = await authServer();
    const name = scopeName();
    const tokens = provider(3);
    const recording = recordingFetch();
    const a = await open(name, { baseURL: own.url, create: { clsName: "Canvas" }, token: tokens.provide, fetch: recording.fetch });
    await waitFor(() => a.status === "live", "the stream is live");
    const statuses = [];
    a.onStatus((status) => statuses.push(status));
    await waitFor(() => tokens.calls.some((call) => call.refresh), "a refresh after the stream's auth-expired", 15_000);
    await waitFor(() => a.status === "live" && statuses.includes("reconnecting"), "the stream back after reconnecting");
    const streams = recording.log.filter((entry) => entry.path.endsWith("/events"));
    assert.ok(streams.length >= 2, "a second stream request");
    assert.equal(streams.at(-1).authorization, `Bearer ${tokens.issued.at(-1)}`, "with the fresh token");
    // Another writer's edit arrives through the resumed stream.
    const response = await fetch(`${own.url}/v1/scopes/${name}/changesets`, {
      method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${token(600)}` },
      body: JSON.stringify({ fragments: [{ type: "change", uuid: a.rootUUID, clsName: "Canvas", properties: { name: "remote" } }] }),
    });
    assert.equal(response.status, 200);
    await waitFor(() => a.get(a.rootUUID).properties.name === "remote", "the remote edit in the view");
  });
});
