// Server methods through the module against the REAL `jetstream serve` binary on 127.0.0.1
// ($JETSTREAM_BIN_DIR, default .build/debug), with the demo schema's `arrange` (docs/methods.md):
// `scope.call` with a stub — its edits shown at once and replaced by the server's change set, never
// seen by another client —, a refusal rolling the stub back, an unknown method, a method that
// changes nothing, a call whose answer is lost (sent again with its key, applied once), and the
// order of a call among local changes (docs/js-client.md, "Server methods").
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { openScope, Rejection } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";

const BACKOFF = { initial: 50, max: 500 };
const scopes = [];
let workDir;
let server;

before(async () => {
  workDir = temporaryDirectory();
  server = await new GatewayServer(join(workDir, "data")).start();
});

after(async () => {
  for (const scope of scopes) scope.close();
  await server?.kill();
  if (workDir) removeTemporary(workDir);
});

const scopeName = () => `canvas-methods-${randomUUID().slice(0, 8)}`;

/** `promise`, or a failure naming `what` after `ms` (no wait in these tests is unbounded). */
function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function open(name, options = {}) {
  const scope = await within(openScope(name, { baseURL: server.url, backoff: BACKOFF, ...options }), `openScope(${name})`);
  scopes.push(scope);
  return scope;
}

async function getJSON(path) {
  const response = await fetch(server.url + path);
  assert.equal(response.status, 200, `GET ${path}: ${response.status}`);
  return response.json();
}

async function serverState(name) {
  const { version, rootUUID, fragments } = await getJSON(`/v1/scopes/${name}`);
  return { version, rootUUID, fragments };
}

async function changesets(name) {
  return (await getJSON(`/v1/scopes/${name}/changesets?since=0`)).changesets;
}

/** Waits until every scope has nothing pending, is live and at the server's version; the state. */
async function settled(name, list) {
  return waitFor(async () => {
    if (list.some((scope) => scope.pendingCount > 0 || scope.status !== "live")) return false;
    const state = await serverState(name);
    return list.every((scope) => scope.version === state.version) && state;
  }, `${list.length} client(s) settled (pending: ${list.map((s) => s.pendingCount)}, status: ${list.map((s) => s.status)})`);
}

/** A canvas with shapes at scattered places (100 × 100 by default), added by a closed client. */
async function seeded(name, places = [{ x: 300, y: 40 }, { x: 7, y: 500 }, { x: 640, y: 310 }]) {
  const seeder = await open(name, { create: { clsName: "Canvas" } });
  const uuids = places.map((place, index) => seeder.add("Shape", { ...place, label: `s${index}` }));
  await settled(name, [seeder]);
  seeder.close();
  return uuids;
}

/** Where `arrange` puts shape `index` of 100 × 100 shapes in `columns` columns. */
const cell = (index, columns) => ({ x: 20 + (index % columns) * 120, y: 20 + Math.floor(index / columns) * 120 });

/** A fetch that holds every method POST until `release()` (then sends it), and records its keys. */
function gatedFetch() {
  let open;
  const gate = new Promise((resolve) => { open = resolve; });
  const calls = [];
  const gated = async (url, init = {}) => {
    if (init.method === "POST" && new URL(url).pathname.includes("/methods/")) {
      calls.push({ path: new URL(url).pathname, key: init.headers?.["Idempotency-Key"], body: init.body });
      await gate;
    }
    return fetch(url, init);
  };
  return { fetch: gated, calls, release: () => open() };
}

/** A stub that puts every shape at (999, 999): never what the server does, so a replacement shows. */
const wrongStub = (view) => {
  for (const uuid of view.get(view.rootUUID).properties.shapes) view.set(uuid, { x: 999, y: 999 });
};

test("a stub's edits show at once, the server's change set replaces them, and another client sees only the server's", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const gate = gatedFetch();
  const a = await open(name, { clientId: "m1", fetch: gate.fetch });
  const b = await open(name, { clientId: "m2" });
  const seenByB = [];
  b.subscribe(({ fragments }) => { for (const fragment of fragments) if (fragment.clsName === "Shape") seenByB.push(fragment.properties.x); });
  const notified = [];
  a.subscribe((notification) => notified.push(notification));

  const call = a.call("arrange", {}, { stub: wrongStub });
  // At once, before any answer (the POST is held): the stub's edits are the view.
  assert.deepEqual(shapes.map((uuid) => a.get(uuid).properties.x), [999, 999, 999]);
  assert.equal(a.pendingCount, 1);
  assert.equal(notified.length, 1);
  assert.equal(notified[0].local, true);
  assert.deepEqual(notified[0].fragments.map((fragment) => fragment.uuid).sort(), [...shapes].sort());
  await waitFor(() => gate.calls.length === 1, "the call's POST");
  assert.equal(gate.calls[0].path, `/v1/scopes/${name}/methods/arrange`);
  assert.deepEqual(JSON.parse(gate.calls[0].body), { args: {} });
  assert.equal(b.get(shapes[0]).properties.x, 300, "the other client sees nothing of the stub");

  gate.release();
  const answer = await within(call, "the call's answer");
  assert.equal(answer.method, "arrange");
  assert.deepEqual(answer.result, { moved: 3, columns: 2 });
  assert.equal(answer.idempotencyKey, gate.calls[0].key);
  // The answer is shown by the time the promise resolves: the server's grid, not the stub's.
  shapes.forEach((uuid, index) => assert.deepEqual({ x: a.get(uuid).properties.x, y: a.get(uuid).properties.y }, cell(index, 2)));

  const state = await settled(name, [a, b]);
  assert.deepEqual(a.snapshot(), state);
  assert.deepEqual(b.snapshot(), state);
  assert.ok(!seenByB.includes(999), `B saw only the server's set: ${seenByB}`);
  const sets = (await changesets(name)).filter((set) => set.method === "arrange");
  assert.equal(sets.length, 1, "one change set made by the method");
  assert.equal(sets[0].idempotencyKey, answer.idempotencyKey);
  assert.match(answer.idempotencyKey, /^m1:\d+$/);
});

test("a refused call rolls its stub back, reaches onRejected and rejects with the method's reason", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const a = await open(name, { clientId: "r1" });
  const { version } = await serverState(name);
  const rejected = [];
  a.onRejected((rejection) => rejected.push(rejection));
  const rollbacks = [];
  a.subscribe((notification) => { if (notification.rejection) rollbacks.push(notification); });

  const call = a.call("arrange", { columns: 0 }, { stub: wrongStub });
  assert.equal(a.get(shapes[1]).properties.x, 999, "the stub shows at once");
  const error = await within(call.then(() => null, (failure) => failure), "the refusal");
  assert.ok(error instanceof Rejection, `a Rejection, got ${error}`);
  assert.equal(error.status, 422);
  assert.match(error.type, /\/method-rejected$/);
  assert.equal(error.method, "arrange");
  assert.equal(error.problem.reason, error.reasons[0]);
  assert.match(error.reasons[0], /columns/);
  assert.deepEqual(rejected, [error]);
  assert.equal(rollbacks.length, 1);
  assert.equal(rollbacks[0].rejection, error);
  assert.deepEqual(shapes.map((uuid) => a.get(uuid).properties.x), [300, 7, 640], "rolled back");
  const state = await settled(name, [a]);
  assert.equal(state.version, version, "nothing applied");
  assert.deepEqual(a.snapshot(), state);
});

test("an unknown method rejects with 404 unknown-method; a call without a stub shows nothing until the server's set", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const a = await open(name, { clientId: "u1" });
  const notified = [];
  a.subscribe((notification) => notified.push(notification));
  const error = await within(a.call("shuffle", {}).then(() => null, (failure) => failure), "the refusal");
  assert.ok(error instanceof Rejection);
  assert.equal(error.status, 404);
  assert.match(error.type, /\/unknown-method$/);
  assert.equal(error.method, "shuffle");

  notified.length = 0;
  const call = a.call("arrange", { columns: 3 });
  assert.equal(notified.length, 0, "no stub: nothing shows");
  assert.equal(a.get(shapes[0]).properties.x, 300);
  const answer = await within(call, "the call");
  assert.deepEqual(answer.result, { moved: 3, columns: 3 });
  shapes.forEach((uuid, index) => assert.deepEqual({ x: a.get(uuid).properties.x, y: a.get(uuid).properties.y }, cell(index, 3)));
  assert.deepEqual(a.snapshot(), await settled(name, [a]));
});

test("a call that changes nothing answers the current version and takes its stub's edits away", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const a = await open(name, { clientId: "n1" });
  await within(a.call("arrange", {}), "the first arrange");
  const { version } = await settled(name, [a]);
  const call = a.call("arrange", {}, { stub: wrongStub });
  assert.equal(a.get(shapes[2]).properties.x, 999);
  const answer = await within(call, "the second arrange");
  assert.deepEqual(answer.result, { moved: 0, columns: 2 });
  assert.deepEqual(answer.fragments, []);
  assert.equal(answer.version, version);
  assert.equal(a.pendingCount, 0);
  shapes.forEach((uuid, index) => assert.equal(a.get(uuid).properties.x, cell(index, 2).x));
  const state = await settled(name, [a]);
  assert.equal(state.version, version, "no new version");
  assert.deepEqual(a.snapshot(), state);
});

test("a call whose answer is lost is sent again with the same key and applied once", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const requests = [];
  let lost = 0;
  const losing = async (url, init = {}) => {
    const response = await fetch(url, init);
    if (init.method === "POST") requests.push({ path: new URL(url).pathname, key: init.headers?.["Idempotency-Key"], created: init.headers?.["Idempotency-Key-Created"], body: init.body });
    if (init.method === "POST" && url.includes("/methods/") && lost++ === 0) throw new TypeError("fetch failed (answer lost)");
    return response;
  };
  const a = await open(name, { clientId: "l1", fetch: losing });
  const answer = await within(a.call("arrange", { columns: 1 }, { stub: wrongStub }), "the retried call");
  assert.deepEqual(answer.result, { moved: 3, columns: 1 }, "the first run's result (replayed)");
  const calls = requests.filter((request) => request.path.endsWith("/methods/arrange"));
  assert.equal(calls.length, 2);
  assert.equal(calls[0].key, calls[1].key, "the same key");
  assert.equal(calls[0].created, calls[1].created, "the same Idempotency-Key-Created");
  assert.equal(calls[0].body, calls[1].body, "the same body");
  const sets = (await changesets(name)).filter((set) => set.idempotencyKey === calls[0].key);
  assert.equal(sets.length, 1, "applied once");
  assert.equal(sets[0].method, "arrange");
  const state = await settled(name, [a]);
  assert.deepEqual(a.snapshot(), state);
  shapes.forEach((uuid, index) => assert.deepEqual({ x: a.get(uuid).properties.x, y: a.get(uuid).properties.y }, cell(index, 1)));
});

test("a call goes in order with the local changes made before and after it", async () => {
  const name = scopeName();
  const shapes = await seeded(name);
  const a = await open(name, { clientId: "o1" });
  const b = await open(name, { clientId: "o2" });
  // Before the call: a new shape (arrange must place it too) and a wider one (the cells grow).
  const added = a.add("Shape", { x: 900, y: 900, label: "late" });
  const widened = a.set(shapes[0], { width: 180 });
  const call = a.call("arrange", {});
  // After the call: a move the arrange must not undo.
  const moved = a.set(shapes[1], { x: 555 });
  const [{ version: widenedAt }, answer, { version: movedAt }] = await within(Promise.all([widened, call, moved]), "the three");
  assert.ok(widenedAt < answer.version && answer.version < movedAt, `order: ${widenedAt} < ${answer.version} < ${movedAt}`);
  assert.deepEqual(answer.result, { moved: 4, columns: 2 }, "it ran on the state with the added shape");
  const state = await settled(name, [a, b]);
  assert.deepEqual(a.snapshot(), state);
  assert.deepEqual(b.snapshot(), state);
  const order = [...shapes, added];
  const place = (uuid) => ({ x: a.get(uuid).properties.x, y: a.get(uuid).properties.y });
  // Cells of 200 × 120 (the widest shape is 180).
  assert.deepEqual(place(order[0]), { x: 20, y: 20 });
  assert.deepEqual(place(order[1]), { x: 555, y: 20 }, "moved after the call");
  assert.deepEqual(place(order[2]), { x: 20, y: 140 });
  assert.deepEqual(place(order[3]), { x: 220, y: 140 });
  const keys = (await changesets(name)).filter((set) => set.idempotencyKey?.startsWith("o1:")).map((set) => [set.version, set.method ?? null]);
  assert.deepEqual(keys.map(([, method]) => method), [null, null, "arrange", null], "add, widen, arrange, move");
});

test("a method whose service fails (502) or does not answer in time (504) is refused once, not sent again", async () => {
  // A gateway of its own, with two methods served over HTTP by this process: one that fails, one
  // that never answers (docs/methods.md, "Methods over HTTP").
  const asked = { broken: 0, silent: 0 };
  const held = [];
  const service = createServer((request, response) => {
    request.resume();
    const name = request.url.slice(1);
    asked[name] += 1;
    if (name === "broken") { response.writeHead(500).end("no"); return; }
    held.push(response);   // silent: answered only when the test ends
  });
  await new Promise((resolve) => service.listen(0, "127.0.0.1", resolve));
  const port = service.address().port;
  const own = await new GatewayServer(join(workDir, "data-http-methods"), [
    "--method", `broken=http://127.0.0.1:${port}/broken`, "--method", `silent=http://127.0.0.1:${port}/silent`,
    "--method-timeout", "0.5"]).start();
  try {
    const name = scopeName();
    const a = await within(openScope(name, { baseURL: own.url, backoff: BACKOFF, clientId: "h1", create: { clsName: "Canvas" } }), "openScope");
    scopes.push(a);
    const shape = a.add("Shape", { x: 3, label: "s" });
    const { version } = await a.set(shape, { y: 4 });
    for (const [method, status, type] of [["broken", 502, /\/method-failed$/], ["silent", 504, /\/method-timeout$/]]) {
      const call = a.call(method, { any: 1 }, { stub: (view) => view.set(shape, { x: 999 }) });
      assert.equal(a.get(shape).properties.x, 999);
      const error = await within(call.then(() => null, (failure) => failure), `the refusal of ${method}`);
      assert.ok(error instanceof Rejection, `${method}: a Rejection, got ${error}`);
      assert.equal(error.status, status);
      assert.match(error.type, type);
      assert.equal(error.method, method);
      assert.equal(a.get(shape).properties.x, 3, `${method}: the stub rolled back`);
      assert.equal(asked[method], 1, `${method}: its service was asked once (the call was not sent again)`);
    }
    assert.equal(a.version, version, "nothing applied");
    assert.equal(a.pendingCount, 0);
    a.close();
  } finally {
    for (const response of held) response.destroy();
    service.close();
    await own.kill();
  }
});
