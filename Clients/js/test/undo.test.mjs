// The past of a scope through the module against the REAL `jetstream serve` binary on 127.0.0.1
// ($JETSTREAM_BIN_DIR, default .build/debug): undo (two in a row, past a conflict, of an add, a
// retried one), restore, stateAt and history pages (docs/js-client.md, "Undo and the past").
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { openScope, JetstreamError } from "../jetstream.mjs";
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

const scopeName = () => `canvas-undo-${randomUUID().slice(0, 8)}`;

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

/** `GET /v1/scopes/{name}` in the shape of `scope.snapshot()`. */
async function serverState(name) {
  const { version, rootUUID, fragments } = await getJSON(`/v1/scopes/${name}`);
  return { version, rootUUID, fragments };
}

/** Every retained change set of the scope, oldest first. */
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

/** A canvas with two shapes, added by a client that is then closed (so they are nobody's own). */
async function seeded(name) {
  const seeder = await open(name, { create: { clsName: "Canvas" } });
  const s = seeder.add("Shape", { x: 1, label: "s" });
  const t = seeder.add("Shape", { x: 2, label: "t" });
  await settled(name, [seeder]);
  seeder.close();
  return { s, t };
}

/** The versions of the change sets whose keys start with `clientId:` (undos excluded), oldest first. */
async function ownVersions(name, clientId) {
  return (await changesets(name))
    .filter((set) => set.idempotencyKey?.startsWith(`${clientId}:`) && !set.idempotencyKey.includes(":undo:"))
    .map((set) => set.version);
}

test("undo twice reverts two different own sets, most recent first; then there is nothing to undo", async () => {
  const name = scopeName();
  const { s, t } = await seeded(name);
  const a = await open(name, { clientId: "a" });
  const b = await open(name);
  await a.set(s, { x: 40 });
  await a.set(t, { label: "renamed" });
  assert.equal(a.undoableCount, 2);
  const [move, rename] = await ownVersions(name, "a");

  const first = await within(a.undo(), "the first undo");
  assert.equal(first.revertOf, rename, "the most recent own set first");
  assert.deepEqual(first.skipped, []);
  assert.equal(a.get(t).properties.label, "t", "the label is back in the view at once");
  assert.equal(a.get(s).properties.x, 40, "the move stays");

  const second = await within(a.undo(), "the second undo");
  assert.equal(second.revertOf, move, "the next undo reverts the move, not the first undo");
  assert.ok(second.version > first.version);
  assert.equal(a.get(s).properties.x, 1);
  assert.equal(await a.undo(), null, "nothing left: an undo's own revert is never undone");
  assert.equal(a.undoableCount, 0);

  const state = await settled(name, [a, b]);
  assert.deepEqual(a.snapshot(), state);
  assert.deepEqual(b.snapshot(), state, "the other client sees both undos");
  const history = await changesets(name);
  assert.deepEqual(history.filter((set) => set.revertOf !== undefined).map((set) => [set.version, set.revertOf]),
    [[first.version, rename], [second.version, move]], "each undo is one revert on the server, marked with what it reverted");
  assert.deepEqual(history.filter((set) => set.revertOf !== undefined).map((set) => set.idempotencyKey),
    [`a:undo:${rename}`, `a:undo:${move}`]);
});

test("undo passes over an own set another client changed since, reverts the older one, then reports nothing", async () => {
  const name = scopeName();
  const { s, t } = await seeded(name);
  const a = await open(name, { clientId: "a" });
  const b = await open(name);
  await a.set(s, { x: 10 });
  await a.set(t, { x: 20 });
  await settled(name, [a, b]);
  await b.set(t, { x: 99 });
  await settled(name, [a, b]);
  const [first, second] = await ownVersions(name, "a");

  const undone = await within(a.undo(), "the undo");
  assert.equal(undone.revertOf, first, "t's move conflicts with B's later one: s's move is undone");
  assert.deepEqual(undone.skipped.map(({ version, reason }) => ({ version, reason })), [{ version: second, reason: "conflict" }]);
  assert.ok(undone.skipped[0].conflicts.some((conflict) => conflict.uuid === t && conflict.property === "x"),
    `the conflict names t.x: ${JSON.stringify(undone.skipped[0].conflicts)}`);
  const state = await settled(name, [a, b]);
  assert.deepEqual(a.snapshot(), state);
  assert.equal(a.get(s).properties.x, 1);
  assert.equal(a.get(t).properties.x, 99, "B's move stays");

  // Only a conflicting set left: nothing to undo, and nothing changed on the server.
  await a.set(t, { label: "mine" });
  await b.set(t, { label: "theirs" });
  await settled(name, [a, b]);
  const before = await serverState(name);
  assert.equal(a.undoableCount, 1);
  assert.equal(await within(a.undo(), "the undo that finds only a conflict"), null);
  assert.equal(a.undoableCount, 0, "the conflicting set is passed over for good");
  assert.deepEqual(await serverState(name), before);
});

test("undo of an add removes the object, here and for the others", async () => {
  const name = scopeName();
  const a = await open(name, { create: { clsName: "Canvas" } });
  const b = await open(name);
  const shape = a.add("Shape", { x: 5, label: "added" });
  // No wait: undo first waits until the add is answered.
  const undone = await within(a.undo(), "the undo of the add");
  assert.deepEqual(undone.skipped, []);
  // The revert's answer is shown at once when it is the next version. Under load the add's own
  // echo can come after that answer; then the stream brings the revert right after it.
  await waitFor(() => a.get(shape) === undefined, "the shape left the view");
  assert.deepEqual(a.get(a.rootUUID).properties.shapes, []);
  const state = await settled(name, [a, b]);
  assert.equal(b.get(shape), undefined);
  assert.deepEqual(b.snapshot(), state);
});

test("a retried undo sends the same Idempotency-Key and is applied once", async () => {
  const name = scopeName();
  const { s } = await seeded(name);
  // The first revert request reaches the server, but its answer is lost: the client sees a
  // network error and sends it again.
  const requests = [];
  let lost = 0;
  const losing = async (url, init = {}) => {
    const response = await fetch(url, init);
    if (init.method === "POST") requests.push({ path: new URL(url).pathname, key: init.headers?.["Idempotency-Key"] });
    if (init.method === "POST" && url.endsWith("/revert") && lost++ === 0) throw new TypeError("fetch failed (answer lost)");
    return response;
  };
  const a = await open(name, { clientId: "r", fetch: losing });
  const { version } = await a.set(s, { x: 70 });
  const undone = await within(a.undo(), "the retried undo");
  assert.equal(undone.revertOf, version);
  const reverts = requests.filter((request) => request.path.endsWith("/revert"));
  assert.deepEqual(reverts.map((request) => request.key), [`r:undo:${version}`, `r:undo:${version}`], "the same key twice");
  assert.equal((await changesets(name)).filter((set) => set.revertOf === version).length, 1, "one revert on the server");
  await settled(name, [a]);
  assert.equal(a.get(s).properties.x, 1);
});

test("stateAt, history and restore: the past as it was, and back to it as one new change set", async () => {
  const name = scopeName();
  const { s, t } = await seeded(name);
  const a = await open(name, { clientId: "h" });
  const past = await serverState(name);
  await a.set(s, { label: "later" });
  await a.remove(t);
  await settled(name, [a]);

  const { version: at, rootUUID, fragments } = await a.stateAt(past.version);
  assert.deepEqual({ version: at, rootUUID, fragments }, past, "GET ?version=N is the state as it was at N");
  const page = await a.history({ since: past.version - 1, limit: 2 });
  assert.equal(page.version, a.version);
  assert.deepEqual(page.changesets.map((set) => set.version), [past.version, past.version + 1]);
  for (const set of page.changesets) {
    assert.match(set.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, "server time, RFC 3339 with milliseconds, UTC");
    assert.equal(set.subject, null, "no token, no subject");
  }
  const ahead = await a.stateAt(a.version + 5).then(() => assert.fail("a version ahead was served"), (error) => error);
  assert.ok(ahead instanceof JetstreamError);
  assert.equal(ahead.status, 404);
  assert.equal(ahead.type, "/problems/version-not-found");

  const restored = await within(a.restore(past.version), "the restore");
  assert.ok(restored.version > past.version + 1);
  assert.deepEqual({ ...a.snapshot(), version: past.version }, past, "the view is the past state at once");
  const state = await settled(name, [a]);
  assert.deepEqual({ ...state, version: past.version }, past, "the server's state is the past state, at a new version");
  assert.equal((await changesets(name)).at(-1).restoredFrom, past.version);
  const again = await a.restore(past.version);
  assert.deepEqual([again.fragments, again.removed], [[], []], "already that state: nothing to change");
  assert.equal((await serverState(name)).version, state.version, "and no new version");

  const undone = await within(a.undo(), "the undo of the restore");
  assert.equal(undone.revertOf, restored.version, "a restore is an own set: undo reverts it");
  await settled(name, [a]);
  assert.equal(a.get(s).properties.label, "later");
  assert.equal(a.get(t), undefined);
});
