// One event stream per page against the REAL `jetstream serve` binary on 127.0.0.1
// ($JETSTREAM_BIN_DIR, default .build/debug): the scopes a page opens ride ONE `GET /v1/events`
// (counted by the server: `jetstream_sse_streams_open` on /metrics), closing one and opening
// another while others write misses nothing and repeats nothing, and a scope opened twice is one
// copy (docs/js-client.md, "One stream per page").
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { openScope, JetstreamError } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";

const BACKOFF = { initial: 50, max: 500 };
let opened = [];
let workDir;
let server;

before(async () => {
  workDir = temporaryDirectory();
  server = await new GatewayServer(join(workDir, "data")).start();
});

afterEach(async () => {
  for (const scope of opened.splice(0)) scope.close();
  await waitFor(async () => (await openStreams()) === 0, "every stream of the test closed");
});

after(async () => {
  await server?.kill();
  if (workDir) removeTemporary(workDir);
});

const scopeName = () => `canvas-many-${randomUUID().slice(0, 8)}`;

/** `promise`, or a failure naming `what` after `ms` (no wait in these tests is unbounded). */
function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** openScope as a page would (no clientId, no fetch of its own: the page's connection). */
async function open(name, options = {}) {
  const scope = await within(openScope(name, { baseURL: server.url, backoff: BACKOFF, create: { clsName: "Canvas" }, ...options }), `openScope(${name})`);
  opened.push(scope);
  return scope;
}

/** The server's count of open event streams (any kind). */
async function openStreams() {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((row) => row.startsWith("jetstream_sse_streams_open "));
  return Number(line?.split(" ")[1] ?? NaN);
}

/** Another writer: renames the scope's root through the REST API; resolves the new version. */
async function write(name, rootUUID, label) {
  const response = await fetch(`${server.url}/v1/scopes/${name}/changesets`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ fragments: [{ type: "change", uuid: rootUUID, clsName: "Canvas", properties: { name: label } }] }),
  });
  assert.equal(response.status, 200, `POST to ${name}: ${response.status}`);
  return (await response.json()).version;
}

async function serverState(name) {
  const { version, rootUUID, fragments } = await (await fetch(`${server.url}/v1/scopes/${name}`)).json();
  return { version, rootUUID, fragments };
}

/** Records the versions of the server events a scope applies (each must come once, in order). */
function versionsSeen(scope) {
  const seen = [];
  scope.subscribe(({ version, local }) => { if (!local) seen.push(version); });
  return seen;
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test("three scopes opened in one page ride one event stream; each gets its own writes", async () => {
  const names = [scopeName(), scopeName(), scopeName()];
  const scopes = [];
  for (const name of names) scopes.push(await open(name));
  await waitFor(() => scopes.every((scope) => scope.status === "live"), "every scope live");
  await waitFor(async () => (await openStreams()) === 1, "exactly one stream open on the server");
  for (const [i, name] of names.entries()) await write(name, scopes[i].rootUUID, `written ${i}`);
  await waitFor(() => scopes.every((scope, i) => scope.get(scope.rootUUID).properties.name === `written ${i}`), "each scope's write in its view");
  assert.equal(await openStreams(), 1, "still one stream");
  for (const [i, name] of names.entries()) assert.deepEqual(scopes[i].snapshot(), await serverState(name));
});

test("closing one scope and opening another while others write: every change set once, in order, in every scope", async () => {
  const [a, b, c, d] = [scopeName(), scopeName(), scopeName(), scopeName()];
  const scopeA = await open(a);
  const scopeB = await open(b);
  const scopeC = await open(c);
  await waitFor(() => [scopeA, scopeB, scopeC].every((scope) => scope.status === "live"), "A, B, C live");
  const seenA = versionsSeen(scopeA);
  const seenB = versionsSeen(scopeB);
  const startA = scopeA.version;
  const startB = scopeB.version;

  // A writer on A and B that does not stop while the page switches streams (twice).
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing) {
      await write(a, scopeA.rootUUID, `a${written}`);
      await write(b, scopeB.rootUUID, `b${written}`);
      written += 1;
    }
  })();
  await waitFor(() => written >= 3, "a few writes before the switch");
  scopeC.close();
  const stateD = await serverState(d).catch(() => null);
  assert.equal(stateD?.version, undefined, "D does not exist yet");
  const scopeD = await open(d);
  await write(d, scopeD.rootUUID, "d0");
  const target = written + 3;
  await waitFor(() => written >= target, "more writes after the switch");
  writing = false;
  await writer;
  await write(d, scopeD.rootUUID, "d1");

  const [finalA, finalB, finalD] = [await serverState(a), await serverState(b), await serverState(d)];
  await waitFor(() => scopeA.version === finalA.version && scopeB.version === finalB.version && scopeD.version === finalD.version,
    `A, B and D at the server's versions (${scopeA.version}/${finalA.version}, ${scopeB.version}/${finalB.version}, ${scopeD.version}/${finalD.version})`);
  assert.deepEqual(seenA, range(startA + 1, finalA.version), "A: every version once, in order (nothing missed, nothing twice)");
  assert.deepEqual(seenB, range(startB + 1, finalB.version), "B: every version once, in order");
  assert.deepEqual(scopeA.snapshot(), finalA);
  assert.deepEqual(scopeB.snapshot(), finalB);
  assert.deepEqual(scopeD.snapshot(), finalD);
  assert.equal(scopeC.status, "closed");
  await waitFor(async () => (await openStreams()) === 1, "one stream after the switch");
});

test("the same scope opened twice is one copy with one subscription; closing one handle leaves the other live", async () => {
  const name = scopeName();
  const first = await open(name);
  const second = await open(name);
  assert.notEqual(first, second, "two handles");
  const shape = first.add("Shape", { x: 1, y: 2 });
  assert.ok(second.get(shape), "a local change through one handle shows at once through the other: one copy");
  assert.equal(second.pendingCount, first.pendingCount);
  await waitFor(() => first.pendingCount === 0 && first.status === "live", "the shape accepted");
  await waitFor(async () => (await openStreams()) === 1, "one stream for both handles");

  const heardBySecond = [];
  second.subscribe((notification) => heardBySecond.push(notification));
  const heardByFirst = [];
  first.subscribe((notification) => heardByFirst.push(notification));
  const statuses = [];
  first.onStatus((status) => statuses.push(status));
  first.close();
  assert.equal(first.status, "closed");
  assert.deepEqual(statuses, ["closed"], "the closed handle's status listeners hear closed");
  assert.equal(second.status, "live", "the other handle stays live");
  await assert.rejects(first.set(shape, { x: 5 }), JetstreamError, "a closed handle refuses changes");

  const version = await write(name, second.rootUUID, "after one handle closed");
  await waitFor(() => second.version === version, "the other handle follows the stream");
  assert.equal(second.get(second.rootUUID).properties.name, "after one handle closed");
  assert.ok(heardBySecond.some((notification) => notification.version === version), "its subscriber is told");
  assert.deepEqual(heardByFirst, [], "the closed handle's subscriber is not");
  const { version: moved } = await within(second.set(shape, { x: 9 }), "a change through the remaining handle");
  await waitFor(() => second.version === moved && second.pendingCount === 0, "the change confirmed by the stream");
  assert.deepEqual(second.snapshot(), await serverState(name));
  assert.equal(await openStreams(), 1);

  second.close();
  await waitFor(async () => (await openStreams()) === 0, "no stream once the last handle closed");
  const again = await open(name);
  assert.equal(again.get(shape).properties.x, 9, "opened again: a fresh copy, loaded from the server");
});

test("a scope deleted on the server ends that scope only; the page's other scopes stay live on the stream", async () => {
  const [kept, doomed] = [scopeName(), scopeName()];
  const keep = await open(kept);
  const gone = await open(doomed);
  await waitFor(() => keep.status === "live" && gone.status === "live", "both live");
  const notifications = [];
  gone.subscribe((notification) => notifications.push(notification));
  assert.equal((await fetch(`${server.url}/v1/scopes/${doomed}`, { method: "DELETE" })).status, 204);
  await waitFor(() => gone.status === "closed", "the deleted scope closed");
  assert.ok(notifications.some((notification) => notification.deleted), "told deleted: true");
  const version = await write(kept, keep.rootUUID, "still here");
  await waitFor(() => keep.version === version, "the other scope still follows the stream");
  assert.equal(keep.status, "live");
});
