// The schema's write rules against the REAL `jetstream serve` ($JETSTREAM_BIN_DIR, default
// .build/debug) with HS256 tokens made here: a Card is its adder's (`rules: { write: owner, delete:
// owner }`). Bob's change and removal of Ada's card show at once, then the server refuses them
// (`forbidden`), `onRejected` hears it and the view is rolled back; Ada, the owner, may change it;
// a change of an `immutable` property is refused by the client itself, nothing sent.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openScope, Rejection } from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary, waitFor } from "./gateway-server.mjs";

const SECRET = "a-js-write-rules-test-secret-of-more-than-32-bytes";
const SCHEMA_YAML = `models:
  Board:
    title: String?
    cards: [Card]
  Card:
    rules: { write: owner, delete: owner }
    text: { type: String, default: "" }
    author: { type: String, default: "", immutable: true }
    points: { type: Int16, default: 0, write: "role:editor" }
scopes:
  "board-*": { root: Board }
`;

const cleanups = [];
after(async () => { for (const cleanup of cleanups.splice(0).reverse()) await cleanup(); });

function jwt(claims) {
  const encode = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const body = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(claims)}`;
  return `${body}.${createHmac("sha256", SECRET).update(body).digest("base64url")}`;
}
const tokenFor = (subject, roles) => jwt({
  sub: subject, exp: Math.floor(Date.now() / 1000) + 600, jetstream: { read: ["board-*"], write: ["board-*"] },
  ...(roles ? { roles } : {}),
});

/** `promise`, or a failure naming `what` after `ms`. */
function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The error `promise` rejects with (a failure when it resolves). */
const refusalOf = (promise) => promise.then((value) => assert.fail(`accepted: ${JSON.stringify(value)}`), (error) => error);

/** Every request `fetch` makes: method and path. */
function recordingFetch() {
  const log = [];
  const recording = (url, init = {}) => {
    log.push({ method: init.method ?? "GET", path: new URL(url).pathname });
    return fetch(url, init);
  };
  return { fetch: recording, log };
}

async function serverState(base, name, token) {
  const response = await fetch(`${base}/v1/scopes/${name}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(response.status, 200);
  const { version, fragments } = await response.json();
  return { version, fragments };
}

test("live: Bob's change and removal of Ada's card show at once, are refused `forbidden`, reach onRejected and are rolled back; the owner's change passes; an immutable change is refused locally", async () => {
  const workDir = temporaryDirectory();
  cleanups.push(() => removeTemporary(workDir));
  const schemaFile = join(workDir, "rules.yaml");
  const secretFile = join(workDir, "secret");
  writeFileSync(schemaFile, SCHEMA_YAML);
  writeFileSync(secretFile, SECRET + "\n");
  const server = new GatewayServer(join(workDir, "data"), ["--schema", schemaFile, "--jwt-secret-file", secretFile]);
  cleanups.push(() => server.kill());
  await server.start();

  const name = `board-${randomUUID().slice(0, 8)}`;
  const ada = tokenFor("ada");
  const options = { baseURL: server.url, backoff: { initial: 50, max: 500 } };
  const a = await within(openScope(name, { ...options, token: ada, clientId: "ada", create: { clsName: "Board" } }), "Ada's openScope");
  cleanups.push(() => a.close());
  const card = a.add("Card", { text: "Ada's", author: "ada" });
  await waitFor(() => a.pendingCount === 0, "Ada's card accepted");
  const objects = await fetch(`${server.url}/v1/scopes/${name}/objects/${card}`, { headers: { Authorization: `Bearer ${ada}` } });
  assert.equal(objects.status, 200);
  assert.equal((await objects.json()).owner, "ada", "the server made Ada its owner");

  const recording = recordingFetch();
  const b = await within(openScope(name, { ...options, token: tokenFor("bob"), clientId: "bob", fetch: recording.fetch }), "Bob's openScope");
  cleanups.push(() => b.close());
  await waitFor(() => b.get(card)?.properties.text === "Ada's", "Ada's card in Bob's view");
  const rejected = [];
  b.onRejected((rejection) => rejected.push(rejection));
  const seen = [];
  b.subscribe((notification) => seen.push({ local: notification.local, rejection: notification.rejection !== undefined,
    text: notification.fragments.find((fragment) => fragment.uuid === card)?.properties.text }));

  // A change: shown at once, then refused by the server and taken back.
  const change = refusalOf(b.set(card, { text: "Bob's" }));
  assert.equal(b.get(card).properties.text, "Bob's", "Bob sees his edit at once");
  const changeError = await within(change, "the server's answer to Bob's change");
  assert.ok(changeError instanceof Rejection, `a Rejection, got ${changeError}`);
  assert.equal(changeError.local, false, "refused by the server");
  assert.equal(changeError.status, 422);
  assert.equal(changeError.fragmentReplies[0]?.error?.type, "forbidden");
  assert.equal(changeError.fragmentReplies[0]?.error?.property, "text");
  await waitFor(() => rejected.length === 1, "onRejected heard the refusal");
  assert.equal(rejected[0].fragmentReplies[0]?.error?.type, "forbidden");
  assert.equal(b.get(card).properties.text, "Ada's", "rolled back");
  assert.equal(b.pendingCount, 0);
  assert.deepEqual(seen.filter((entry) => entry.text !== undefined).map(({ local, rejection, text }) => [local, rejection, text]),
    [[true, false, "Bob's"], [false, true, "Ada's"]], "the edit notified at once, then its rollback with the rejection");

  // A removal (`delete: owner`): the card leaves Bob's view at once, then comes back.
  const removal = refusalOf(b.remove(card));
  assert.equal(b.get(card), undefined, "the card leaves Bob's view at once");
  const removalError = await within(removal, "the server's answer to Bob's removal");
  assert.equal(removalError.fragmentReplies.find((reply) => reply.error)?.error.type, "forbidden");
  await waitFor(() => rejected.length === 2, "onRejected heard the second refusal");
  assert.deepEqual(b.get(card)?.properties, { text: "Ada's", author: "ada", points: 0 }, "the card is back");

  // Setting the value the card already has writes nothing: no rule refuses it.
  await within(b.set(card, { text: "Ada's", author: "ada" }), "Bob's set of the values the card has");

  // `immutable` is checked by the client itself: a local Rejection, nothing sent.
  const postsBefore = recording.log.filter((entry) => entry.method === "POST").length;
  const immutable = await refusalOf(b.set(card, { author: "bob" }));
  assert.equal(immutable.local, true, "refused before sending");
  assert.deepEqual(immutable.fragmentReplies[0]?.error && { type: immutable.fragmentReplies[0].error.type, property: immutable.fragmentReplies[0].error.property },
    { type: "immutable", property: "author" });
  assert.equal(recording.log.filter((entry) => entry.method === "POST").length, postsBefore, "no POST");
  assert.equal(b.get(card).properties.author, "ada");
  assert.equal(rejected.length, 2, "a local refusal is the caller's, not onRejected's");

  // The owner may change the card, but only a subject with the role `editor` its points.
  await within(a.set(card, { text: "Ada's, edited" }), "Ada's change of her card");
  await waitFor(() => b.get(card)?.properties.text === "Ada's, edited", "Ada's change in Bob's view");
  const points = await within(refusalOf(a.set(card, { points: 3 })), "the server's answer to Ada's change of points");
  assert.equal(points.fragmentReplies[0]?.error?.type, "forbidden");
  assert.equal(points.fragmentReplies[0]?.error?.property, "points");

  const state = await serverState(server.url, name, ada);
  assert.deepEqual(state.fragments.find((fragment) => fragment.uuid === card)?.properties,
    { text: "Ada's, edited", author: "ada", points: 0 }, "the server kept only what the rules allow");
  await waitFor(() => a.version === state.version && b.version === state.version && a.pendingCount === 0 && b.pendingCount === 0,
    "both clients settled at the server's version");
  assert.deepEqual(a.snapshot(), b.snapshot());
});
