// Convergence through a lossy link, against the REAL `jetstream serve` binary on 127.0.0.1
// ($JETSTREAM_BIN_DIR, default .build/debug): three clients make random changes (about one in ten
// locally invalid) through Tests/gateway/fault_proxy.py — every byte 5–15 ms late each way, half
// the connections reset within a second of opening (at most 20) — while the gateway is killed and
// restarted twice. At the end every client equals the server, the history has no key twice and
// no hole, every change the client saw accepted is in it, every one it saw refused is not, and
// the proxy really dropped connections. The seed is printed; JETSTREAM_CONVERGENCE_SEED=<n>
// replays its choices (not its timing).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { openScope, Rejection } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";
import { FaultProxy } from "./fault-proxy.mjs";
import { seededRandom } from "./fixtures.mjs";

const CLIENTS = 3;
const CHANGES_PER_CLIENT = 100;
const BACKOFF = { initial: 50, max: 400 };
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

let workDir;
let server;
let proxy;
const scopes = [];

before(() => { workDir = temporaryDirectory(); });

after(async () => {
  for (const scope of scopes) scope.close();
  if (proxy) await proxy.stop().catch(() => {});
  if (server) await server.kill();
  if (workDir) removeTemporary(workDir);
});

async function getJSON(url) {
  const response = await fetch(url);
  assert.equal(response.status, 200, `GET ${url}: ${response.status}`);
  return response.json();
}

/** A fetch that records the statuses answered to each Idempotency-Key, and every key tried. */
function recordingFetch() {
  const answers = new Map();
  const sent = new Set();
  const recording = async (url, init = {}) => {
    const key = init.headers?.["Idempotency-Key"];
    if (key) sent.add(key);
    const response = await fetch(url, init);
    if (key) answers.set(key, [...(answers.get(key) ?? []), response.status]);
    return response;
  };
  return { fetch: recording, answers, sent };
}

/** openScope through the link; its first requests may be dropped too, so it is tried again. */
async function openThrough(url, name, clientId, fetch) {
  for (let attempt = 1; ; attempt++) {
    try {
      const scope = await openScope(name, { baseURL: url, clientId, fetch, backoff: BACKOFF });
      scopes.push(scope);
      return scope;
    } catch (error) {
      if (attempt >= 5) throw error;
      console.log(`lossy link: ${clientId}'s openScope failed (${error.message}), attempt ${attempt}; trying again`);
    }
  }
}

test("3 clients × 100 random changes through a lossy link (latency, jitter, dropped connections) and two kills converge exactly", { timeout: 120_000 }, async (t) => {
  const seed = Number(process.env.JETSTREAM_CONVERGENCE_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`lossy link: seed ${seed} (JETSTREAM_CONVERGENCE_SEED=${seed} replays its choices)`);
  const random = seededRandom(seed);
  const pick = (items) => items[Math.floor(random() * items.length)];
  const started = Date.now();

  // A POST whose body never arrives is answered 408 after 2 s, not 10 (see the checks below).
  server = await new GatewayServer(join(workDir, "data"), ["--header-timeout", "2"]).start();
  proxy = await FaultProxy.start(server.port, ["--latency", 0.01, "--jitter", 0.005, "--drop", 0.5,
    "--drop-within", 1, "--max-drops", 20, "--seed", seed]);

  // The scope is created directly, then every client opens it through the link.
  const name = `canvas-js-lossy-${randomUUID().slice(0, 8)}`;
  const created = await fetch(`${server.url}/v1/scopes/${name}`, {
    method: "PUT", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ root: { clsName: "Canvas", uuid: randomUUID(), properties: {} } }),
  });
  assert.equal(created.status, 201);
  const clients = [];
  for (let i = 0; i < CLIENTS; i++) {
    const recording = recordingFetch();
    const scope = await openThrough(proxy.url, name, `c${i}`, recording.fetch);
    const client = { id: `c${i}`, scope, recording, invalid: 0, localRejections: 0, serverRejections: 0, changes: [], accepted: [], refused: [], other: [], added: [] };
    scope.onRejected((rejection) => { if (!rejection.local) client.refused.push(rejection); });
    clients.push(client);
  }

  /** One random change of `client`, as one change set, its outcome recorded when it settles. */
  const change = (client) => {
    const { scope } = client;
    const root = scope.rootUUID;
    const shapes = scope.get(root).properties.shapes;
    const roll = random();
    const coordinate = () => Math.floor(random() * 1001) - 500;
    let fragments;
    let invalid = false;
    let added = null;
    if (roll < 0.1) {
      invalid = true;
      client.invalid += 1;
      const target = shapes.length ? pick(shapes) : null;
      fragments = target && random() < 0.5
        ? [{ type: "change", uuid: target, clsName: "Shape", properties: random() < 0.5 ? { width: -1 } : { label: "y".repeat(300) } }]
        : [{ type: "add", uuid: randomUUID(), clsName: "Shape", properties: { height: -1 } },
          { type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { insert: [] } } }];
      if (fragments.length === 2) fragments[1].properties.shapes.insert.push(fragments[0].uuid);
    } else if (roll < 0.35 || shapes.length === 0) {
      added = randomUUID();
      fragments = [
        { type: "add", uuid: added, clsName: "Shape", properties: { x: coordinate(), y: coordinate(), label: `${client.id}-${Math.floor(random() * 1000)}`, kind: random() < 0.5 ? "rect" : "oval" } },
        { type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { insert: [added], before: shapes.length && random() < 0.5 ? pick(shapes) : null } } },
      ];
      client.added.push(added);
    } else if (roll < 0.7) {
      const properties = [() => ({ x: coordinate(), y: coordinate() }), () => ({ label: `edited ${Math.floor(random() * 1000)}` }),
        () => ({ color: Math.floor(random() * 2 ** 32) })][Math.floor(random() * 3)]();
      fragments = [{ type: "change", uuid: pick(shapes), clsName: "Shape", properties }];
    } else if (roll < 0.85) {
      const moved = pick(shapes);
      const others = shapes.filter((id) => id !== moved);
      fragments = [{ type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { insert: [moved], before: others.length && random() < 0.5 ? pick(others) : null } } }];
    } else {
      const removed = pick(shapes);
      fragments = [{ type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { remove: [removed] } } }];
    }
    const entry = { fragments, settled: false };
    client.changes.push(entry);
    const settled = scope.change(fragments);
    settled.finally(() => { entry.settled = true; }).catch(() => {});
    settled.then(
      ({ version }) => client.accepted.push({ version, fragments, invalid }),
      (error) => {
        if (!(error instanceof Rejection)) client.other.push(error);
        else if (error.local) client.localRejections += 1;
        else client.serverRejections += 1;
      });
  };

  const total = CLIENTS * CHANGES_PER_CLIENT;
  const schedule = Array.from({ length: total }, (_, i) => i % CLIENTS);
  for (let i = total - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [schedule[i], schedule[j]] = [schedule[j], schedule[i]]; }
  const kills = [Math.floor(total / 6 + random() * (total / 6)), Math.floor(total / 2 + random() * (total / 4))];
  let restartAt = null;
  for (let step = 0; step < total; step++) {
    if (kills.includes(step)) {
      if (restartAt !== null) await server.start(server.port);
      await server.kill();
      restartAt = Date.now() + 300 + Math.floor(random() * 600);
    }
    if (restartAt !== null && Date.now() >= restartAt) {
      await server.start(server.port);
      restartAt = null;
    }
    change(clients[schedule[step]]);
    await sleep(Math.floor(random() * 9));
  }
  if (!server.running) await server.start(server.port);
  const changesMade = Date.now() - started;

  // Converged: every client live, nothing pending, at the server's version, equal to GET.
  let state;
  await waitFor(async () => {
    if (clients.some(({ scope }) => scope.pendingCount > 0 || scope.status !== "live")) return false;
    state = await getJSON(`${server.url}/v1/scopes/${name}`);
    return clients.every(({ scope }) => scope.version === state.version);
  }, "every client idle at the server's version", 45_000).catch((error) => {
    throw new Error(`${error.message}: ${clients.map(({ id, scope }) => `${id} ${scope.status} pending ${scope.pendingCount} version ${scope.version}`).join("; ")}`);
  });
  for (const { scope } of clients) {
    assert.deepEqual(scope.snapshot(), { version: state.version, rootUUID: state.rootUUID, fragments: state.fragments }, "the view equals GET");
  }

  const history = (await getJSON(`${server.url}/v1/scopes/${name}/changesets?since=0&limit=10000`)).changesets;
  assert.deepEqual(history.map((set) => set.version), Array.from({ length: state.version }, (_, i) => i + 1), "the whole history, in order, without holes");
  const counted = new Map();
  for (const set of history) if (set.idempotencyKey) counted.set(set.idempotencyKey, (counted.get(set.idempotencyKey) ?? 0) + 1);
  assert.deepEqual([...counted].filter(([, count]) => count > 1), [], "no change set applied twice");
  const byVersion = new Map(history.map((set) => [set.version, set]));
  const removed = new Set(history.flatMap((set) => set.removed ?? []));
  const onServer = new Set(state.fragments.map((fragment) => fragment.uuid));

  let timedOut = 0;
  for (const client of clients) {
    assert.deepEqual(client.other, [], `${client.id}: every change accepted or rejected, nothing else`);
    assert.equal(client.serverRejections, client.refused.length, `${client.id}: each refusal reported once to onRejected`);
    assert.equal(client.localRejections, client.invalid, `${client.id}: every invalid change refused locally`);
    assert.ok(client.accepted.every(({ invalid }) => !invalid), `${client.id}: no invalid change accepted`);
    // Every change the client saw accepted is in the history, at its version, as its own.
    for (const { version } of client.accepted) {
      assert.ok(byVersion.get(version)?.idempotencyKey?.startsWith(`${client.id}:`), `${client.id}: accepted at ${version}, but that set is ${JSON.stringify(byVersion.get(version)?.idempotencyKey)}`);
    }
    // Every key the server answered 200 is in the history once; one it refused is not in it. A
    // 408 is no outcome: the HTTP layer answers it before routing when a body did not arrive.
    for (const [key, statuses] of client.recording.answers) {
      const outcomes = statuses.filter((status) => status !== 408);
      timedOut += statuses.length - outcomes.length;
      if (outcomes.includes(200)) assert.equal(counted.get(key), 1, `${key} accepted (${statuses}) but ${counted.get(key) ?? 0} times in the history`);
      else if (outcomes.length > 0) assert.equal(counted.get(key), undefined, `${key} refused (${statuses}) but in the history`);
      assert.ok(new Set(outcomes).size <= 1, `${key}: one outcome, replayed on every retry: ${statuses}`);
    }
    const unknown = [...counted.keys()].filter((key) => key.startsWith(`${client.id}:`) && !client.recording.sent.has(key));
    assert.deepEqual(unknown, [], `${client.id}: keys in the history it never sent`);
    // The server refuses only what a race explains (an object another client removed meanwhile).
    for (const rejection of client.refused) {
      assert.equal(rejection.status, 422, `${client.id}: ${rejection.message}`);
      const kinds = rejection.fragmentReplies.map((reply) => reply.error?.type).filter(Boolean);
      assert.ok(kinds.length > 0 && kinds.every((kind) => ["unknown-object", "missing-reference"].includes(kind)), `${client.id}: refused for ${kinds}`);
    }
    // Every shape it added is on the canvas, or was removed, or its set was refused.
    const refusedAdds = new Set(client.refused.flatMap((rejection) => rejection.fragments.filter((f) => f.type === "add").map((f) => f.uuid)));
    for (const id of client.added) {
      assert.ok(onServer.has(id) || removed.has(id) || refusedAdds.has(id), `${client.id}'s shape ${id} is lost`);
    }
  }

  const stats = await proxy.stop();
  proxy = null;
  console.log(`lossy link: seed ${seed}, ${state.version} versions, accepted ${clients.map((c) => c.accepted.length)}, ` +
    `refused by the server ${clients.map((c) => c.refused.length)}, invalid ${clients.map((c) => c.invalid)}, 408 ${timedOut}; ` +
    `changes made in ${changesMade} ms, checked after ${Date.now() - started} ms; the link: ${JSON.stringify(stats)}`);
  assert.ok(stats.dropped > 0, `the link dropped no connection: the run proves nothing about drops (${JSON.stringify(stats)})`);
  assert.ok(stats.bytes_up > 0 && stats.bytes_down > 0, "the clients talked through the link");

  // A set whose POST failed after the server had applied it (its answer lost to a dropped
  // connection) is confirmed by its echo on the stream: its promise settles then.
  await t.test("every promise change() returned settled (accepted or rejected) once", () => {
    for (const client of clients) {
      const unsettled = client.changes.filter((entry) => !entry.settled);
      assert.deepEqual(unsettled.map((entry) => entry.fragments), [], `${client.id}: ${unsettled.length} of ${client.changes.length} never settled`);
      assert.equal(client.accepted.length + client.serverRejections + client.localRejections, CHANGES_PER_CLIENT);
    }
  });
});
