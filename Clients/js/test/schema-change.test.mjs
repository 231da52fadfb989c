// The client follows a schema change on the server (docs/js-client.md, "Schema changes"): it reads
// `GET /v1/schema` again with `If-None-Match` after every reconnection and with every reset, and
// a new schema replaces the one local changes are checked with before the reset's state applies.
// Against a scripted fetch (a reset without a reconnection, held answers, 304s) and against the
// REAL `jetstream serve` restarted on the same data directory with a changed schema file.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openScope, Rejection } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";

const opened = [];
const cleanups = [];
after(async () => {
  for (const scope of opened.splice(0)) scope.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `promise`, or a failure naming `what` after `ms`. */
function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The reason of a local refusal, e.g. "unknown-property". */
async function localRefusal(promise) {
  const error = await promise.then(() => assert.fail("the change was accepted"), (error) => error);
  assert.ok(error instanceof Rejection, `a Rejection, got ${error}`);
  assert.equal(error.local, true, "refused by the client, before sending");
  return error.fragmentReplies.find((reply) => reply.error)?.error.type;
}

// -- against a scripted fetch: what a live server does not do on cue ----------------------------

const ROOT = "00000000-0000-4000-8000-0000000000b0";
const CARD = "00000000-0000-4000-8000-0000000000c1";
const json = (body, status = 200, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/** Schema A: a Card with `points`; B: `points` removed, `rank` added with default 3. */
const SCHEMA_A = {
  models: { Board: { title: { type: "String?" }, cards: { type: "[Card]" } }, Card: { text: { type: "String" }, points: { type: "Int16" } } },
  scopes: { "board-*": { root: "Board" } },
};
const SCHEMA_B = {
  models: { Board: { title: { type: "String?" }, cards: { type: "[Card]" } }, Card: { text: { type: "String" }, rank: { type: "Int16", default: 3 } } },
  scopes: { "board-*": { root: "Board" } },
};
const boardState = (version, card) => ({
  version, rootUUID: ROOT,
  fragments: [
    { type: "change", uuid: ROOT, clsName: "Board", properties: { title: null, cards: [CARD] } },
    { type: "add", uuid: CARD, clsName: "Card", properties: card },
  ],
});
const sse = (type, body) => `event: ${type}\ndata: ${JSON.stringify({ scope: "board-1", ...body })}\n\n`;

/**
 * A fetch serving `schema` (`{json, tag}`, switchable) with its ETag and `304` for a matching
 * `If-None-Match`, the board at `state`, every POST accepted at the next version; every request
 * recorded; each event stream handed to the test; `holdSchema()` keeps schema answers back
 * until the returned function is called.
 */
function scriptedServer() {
  const server = {
    schema: { json: SCHEMA_A, tag: '"a"' },
    state: boardState(4, { text: "t", points: 5 }),
    requests: [], streams: [], held: null,
    holdSchema() {
      let release;
      server.held = new Promise((done) => { release = done; });
      return () => { server.held = null; release(); };
    },
    schemaRequests: () => server.requests.filter((request) => request.path === "/v1/schema"),
  };
  let next = server.state.version;
  server.fetch = async (url, init = {}) => {
    const { pathname: path } = new URL(url);
    const headers = init.headers ?? {};
    const request = { method: init.method ?? "GET", path, ifNoneMatch: headers["If-None-Match"] };
    server.requests.push(request);
    if (path === "/v1/schema") {
      if (server.held) await server.held;
      request.status = headers["If-None-Match"] === server.schema.tag ? 304 : 200;
      return request.status === 304 ? new Response(null, { status: 304, headers: { ETag: server.schema.tag } })
        : json(server.schema.json, 200, { ETag: server.schema.tag });
    }
    if (path === "/v1/scopes/board-1" && request.method === "GET") return json({ name: "board-1", ...server.state });
    if (path === "/v1/scopes/board-1/changesets") {
      next += 1;
      const body = JSON.parse(init.body);
      return json({ version: next, fragmentReplies: body.fragments.map(() => ({})), idempotencyKey: headers["Idempotency-Key"] });
    }
    if (path === "/v1/events") {
      let controller;
      const body = new ReadableStream({ start(c) { controller = c; } });
      init.signal?.addEventListener("abort", () => { try { controller.error(new DOMException("aborted", "AbortError")); } catch { /* ended */ } });
      server.streams.push({
        push: (text) => controller.enqueue(new TextEncoder().encode(text)),
        end: () => { try { controller.close(); } catch { /* already ended */ } },
      });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    if (path.includes("/presence/")) return new Response(null, { status: 204 });
    return json({ type: "/problems/not-found", status: 404 }, 404);
  };
  return server;
}

async function openScripted(server) {
  const scope = await openScope("board-1", { baseURL: "http://127.0.0.1:1", fetch: server.fetch, backoff: { initial: 10, max: 50 }, clientId: "c" });
  opened.push(scope);
  await waitFor(() => server.streams.length === 1 && scope.status === "live", "the stream", 5000);
  return scope;
}

test("scripted: a reset reads the schema again (If-None-Match); a new one replaces it before the reset's state, and the events behind the reset wait", async () => {
  const server = scriptedServer();
  const scope = await openScripted(server);
  assert.equal(scope.schemaTag, '"a"');
  assert.equal(await localRefusal(scope.set(CARD, { rank: 1 })), "unknown-property", "schema A has no rank");
  const notifications = [];
  scope.subscribe((notification) => notifications.push({ ...notification, tag: scope.schemaTag, version: scope.version }));

  server.schema = { json: SCHEMA_B, tag: '"b"' };
  const release = server.holdSchema();
  const before = server.schemaRequests().length;
  // A reset in schema B and, in the same chunk, the next change set (it sets rank: only B has it).
  server.streams[0].push(sse("reset", boardState(7, { text: "t", rank: 3 })) +
    sse("changeset", { version: 8, fragments: [{ type: "change", uuid: CARD, clsName: "Card", properties: { rank: 4 } }], removed: [] }));
  await waitFor(() => server.schemaRequests().length === before + 1, "the reset's read of the schema", 5000);
  assert.equal(server.schemaRequests().at(-1).ifNoneMatch, '"a"');
  // While the schema is on its way, neither the reset nor the change set behind it is applied.
  await new Promise((done) => setImmediate(done));
  assert.equal(scope.version, 4);
  assert.equal(scope.get(CARD).properties.points, 5);
  release();

  await waitFor(() => scope.version === 8, "the reset and the change set after it", 5000);
  assert.equal(scope.schemaTag, '"b"');
  assert.deepEqual(scope.get(CARD).properties, { text: "t", rank: 4 });
  assert.equal(scope.status, "live", "the change set in schema B applied: the stream went on");
  const reset = notifications.find((notification) => notification.version === 7);
  assert.equal(reset.schemaChanged, true);
  assert.equal(reset.tag, '"b"', "the schema was replaced before the reset's state was shown");
  assert.equal(notifications.filter((notification) => notification.schemaChanged).length, 1);

  // Local changes are checked with B now.
  assert.deepEqual(await within(scope.set(CARD, { rank: 9 }), "the set of rank"), { version: 5 });
  assert.equal(await localRefusal(scope.set(CARD, { points: 1 })), "unknown-property", "B has no points");
});

test("scripted: an unchanged schema (304) stays; every reconnection reads it again before the stream resumes", async () => {
  const server = scriptedServer();
  const scope = await openScripted(server);
  const schemaBefore = scope.core.schema;
  const notifications = [];
  scope.subscribe((notification) => notifications.push(notification));

  server.streams[0].push(sse("reset", boardState(6, { text: "u", points: 6 })));
  await waitFor(() => scope.version === 6, "the reset", 5000);
  assert.deepEqual(server.schemaRequests().slice(1).map(({ ifNoneMatch, status }) => ({ ifNoneMatch, status })), [{ ifNoneMatch: '"a"', status: 304 }]);
  assert.equal(scope.core.schema, schemaBefore, "304: the same schema");
  assert.equal(scope.schemaTag, '"a"');
  assert.ok(notifications.length > 0 && notifications.every((notification) => !notification.schemaChanged));

  // The stream drops; the schema (now B) is read before the next stream request.
  server.schema = { json: SCHEMA_B, tag: '"b"' };
  server.streams[0].end();
  await waitFor(() => server.streams.length === 2, "the reconnection", 5000);
  const paths = server.requests.map((request) => request.path);
  const secondStream = paths.lastIndexOf("/v1/events");
  const reread = paths.lastIndexOf("/v1/schema", secondStream);
  assert.ok(reread > paths.indexOf("/v1/events"), `the schema read again between the two streams: ${paths.join(" ")}`);
  const { ifNoneMatch, status } = server.requests[reread];
  assert.deepEqual({ ifNoneMatch, status }, { ifNoneMatch: '"a"', status: 200 });
  assert.equal(scope.schemaTag, '"b"');
  assert.notEqual(scope.core.schema, schemaBefore);
});

test("scripted, EventSource transport: the events behind a reset wait for its schema and keep their order", async (t) => {
  // A stand-in for the browser's EventSource (Node 20 has none): the test opens it and sends events.
  const sources = [];
  class FakeEventSource {
    constructor(url) { this.url = url; this.listeners = new Map(); this.closed = false; sources.push(this); }
    addEventListener(type, listener) { this.listeners.set(type, listener); }
    send(type, body) { this.listeners.get(type)?.(new MessageEvent(type, { data: JSON.stringify({ scope: "board-1", ...body }) })); }
    close() { this.closed = true; }
  }
  const previous = globalThis.EventSource;
  globalThis.EventSource = FakeEventSource;
  t.after(() => { globalThis.EventSource = previous; });

  const server = scriptedServer();
  const scope = await openScope("board-1", { baseURL: "http://127.0.0.1:1", fetch: server.fetch, transport: "eventsource", clientId: "es" });
  opened.push(scope);
  await waitFor(() => sources.length === 1, "the EventSource", 5000);
  sources[0].onopen();
  assert.equal(scope.status, "live");

  server.schema = { json: SCHEMA_B, tag: '"b"' };
  const release = server.holdSchema();
  sources[0].send("reset", boardState(7, { text: "t", rank: 3 }));
  sources[0].send("changeset", { version: 8, fragments: [{ type: "change", uuid: CARD, clsName: "Card", properties: { rank: 4 } }], removed: [] });
  sources[0].send("changeset", { version: 9, fragments: [{ type: "change", uuid: CARD, clsName: "Card", properties: { text: "u" } }], removed: [] });
  await waitFor(() => server.schemaRequests().length === 2, "the reset's read of the schema", 5000);
  await new Promise((done) => setImmediate(done));
  assert.equal(scope.version, 4, "nothing applied while the schema is on its way");
  release();

  await waitFor(() => scope.version === 9, "the reset and both change sets, in order", 5000);
  assert.deepEqual(scope.get(CARD).properties, { text: "u", rank: 4 });
  assert.equal(scope.schemaTag, '"b"');
  assert.equal(sources[0].closed, false, "the connection went on: every event applied");
  assert.deepEqual(await within(scope.set(CARD, { rank: 5 }), "the set of rank"), { version: 5 });
});

// -- against the real gateway, restarted with another schema file ---------------------------------

const YAML_A = `models:
  Board:
    title: String?
    cards: [Card]
  Card:
    text: { type: String, default: "" }
    points: { type: Int16, default: 0 }
scopes:
  "board-*": { root: Board }
`;
/** A plus Card.rank (default 3), minus Card.points. */
const YAML_B = `models:
  Board:
    title: String?
    cards: [Card]
  Card:
    text: { type: String, default: "" }
    rank: { type: Int16, default: 3 }
scopes:
  "board-*": { root: Board }
`;

/** A fetch that records every request: method, path, If-None-Match, status, ETag. */
function recordingFetch() {
  const log = [];
  const recording = async (url, init = {}) => {
    const entry = { method: init.method ?? "GET", path: new URL(url).pathname, ifNoneMatch: init.headers?.["If-None-Match"] };
    log.push(entry);
    const response = await fetch(url, init).catch((error) => { entry.error = error; throw error; });
    entry.status = response.status;
    entry.etag = response.headers.get("ETag") ?? undefined;
    return response;
  };
  return { fetch: recording, log };
}

async function serverState(base, name) {
  const response = await fetch(`${base}/v1/scopes/${name}`);
  assert.equal(response.status, 200);
  const { version, rootUUID, fragments } = await response.json();
  return { version, rootUUID, fragments };
}

test("live: the gateway restarted with a new schema — the client gets a reset, reads the new schema, shows the new property's default, drops the removed one, and writes the new one", async () => {
  const workDir = temporaryDirectory();
  cleanups.push(() => removeTemporary(workDir));
  const schemaA = join(workDir, "a.yaml");
  const schemaB = join(workDir, "b.yaml");
  writeFileSync(schemaA, YAML_A);
  writeFileSync(schemaB, YAML_B);
  const server = new GatewayServer(join(workDir, "data"), ["--schema", schemaA]);
  cleanups.push(() => server.kill());
  await server.start();
  const tagOf = async () => (await fetch(`${server.url}/v1/schema`)).headers.get("ETag");
  const tagA = await tagOf();
  assert.ok(tagA, "GET /v1/schema answers an ETag");

  const name = `board-${randomUUID().slice(0, 8)}`;
  const recording = recordingFetch();
  const scope = await within(openScope(name, { baseURL: server.url, create: { clsName: "Board" }, backoff: { initial: 50, max: 500 }, fetch: recording.fetch }), "openScope");
  opened.push(scope);
  assert.equal(scope.schemaTag, tagA);
  const card = scope.add("Card", { text: "first", points: 5 });
  await within(scope.set(card, { points: 6 }), "the set of points");
  await waitFor(async () => scope.pendingCount === 0 && scope.status === "live" && scope.version === (await serverState(server.url, name)).version, "the client settled");
  const versionBefore = scope.version;
  assert.equal(await localRefusal(scope.set(card, { rank: 1 })), "unknown-property", "schema A has no rank");

  const notifications = [];
  scope.subscribe((notification) => notifications.push({ ...notification, tag: scope.schemaTag }));
  const port = server.port;
  await server.stop();
  await waitFor(() => scope.status === "reconnecting", "the client notices the stopped gateway");
  server.args = ["--schema", schemaB];
  await server.start(port);
  const tagB = await tagOf();
  assert.ok(tagB && tagB !== tagA, `another schema, another ETag (${tagA} then ${tagB})`);

  await waitFor(() => scope.status === "live" && scope.get(card)?.properties.rank === 3, "the card with rank's default in the view");
  assert.deepEqual(scope.get(card).properties, { text: "first", rank: 3 }, "rank's default shown, points gone");
  assert.equal(scope.schemaTag, tagB);
  const reset = notifications.find((notification) => notification.schemaChanged);
  assert.ok(reset, `a reset marked schemaChanged among ${JSON.stringify(notifications)}`);
  assert.equal(reset.tag, tagB, "the schema was replaced before the reset's state was shown");
  assert.equal(reset.version, versionBefore, "the reset carries the state at the version the scope had");
  assert.deepEqual(reset.fragments.find((fragment) => fragment.uuid === card)?.properties, { text: "first", rank: 3 });
  const reread = recording.log.find((entry) => entry.path === "/v1/schema" && entry.ifNoneMatch === tagA && entry.status === 200);
  assert.ok(reread, `a conditional GET /v1/schema answered 200: ${JSON.stringify(recording.log.filter((entry) => entry.path === "/v1/schema"))}`);
  assert.equal(reread.etag, tagB);

  // Local changes are checked with B: rank is written (and the server takes it), points is refused.
  const posts = () => recording.log.filter((entry) => entry.method === "POST").length;
  const postsBefore = posts();
  assert.equal(await localRefusal(scope.set(card, { points: 1 })), "unknown-property", "schema B has no points");
  assert.equal(posts(), postsBefore, "a local refusal sends nothing");
  const { version } = await within(scope.set(card, { rank: 9 }), "the set of rank");
  assert.equal(version, versionBefore + 1);
  const state = await waitFor(async () => {
    const now = await serverState(server.url, name);
    return scope.pendingCount === 0 && scope.version === now.version && now;
  }, "the client settled after the set of rank");
  assert.deepEqual(state.fragments.find((fragment) => fragment.uuid === card).properties, { text: "first", rank: 9 });
  assert.deepEqual(scope.snapshot(), state);
});
