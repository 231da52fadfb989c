// Presence through the module against the REAL `jetstream serve` binary on 127.0.0.1
// ($JETSTREAM_BIN_DIR, default .build/debug): two windows (two client ids) see each other's
// data, updates and leave on close, never themselves; a member that is not refreshed expires; a
// window's own presence is refreshed before its ttl and shown again after a server restart
// (docs/js-client.md, "Presence").
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

afterEach(() => { for (const scope of opened.splice(0)) scope.close(); });

after(async () => {
  await server?.kill();
  if (workDir) removeTemporary(workDir);
});

const scopeName = () => `canvas-here-${randomUUID().slice(0, 8)}`;

function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A window: its own clientId, so its own connection (stream, presence client id). */
async function open(name, clientId, options = {}) {
  const scope = await within(openScope(name, { baseURL: server.url, backoff: BACKOFF, create: { clsName: "Canvas" }, clientId, ...options }),
    `openScope(${name}) as ${clientId}`);
  opened.push(scope);
  return scope;
}

async function members(name) {
  const response = await fetch(`${server.url}/v1/scopes/${name}/presence`);
  assert.equal(response.status, 200);
  return (await response.json()).members;
}

const clientsOf = (others) => others.map((member) => member.client).sort();

test("two windows: each sees the other's presence (never its own), its updates, and its leave on close", async () => {
  const name = scopeName();
  const ada = await open(name, "ada-window");
  const bob = await open(name, "bob-window");
  await waitFor(() => ada.status === "live" && bob.status === "live", "both live");
  const heard = [];
  const unsubscribe = bob.presence.subscribe((others, change) => heard.push({ others: clientsOf(others), change }));

  await within(ada.presence.set({ x: 10, y: 20, color: "#e4572e", label: "Ada" }), "Ada's PUT");
  await waitFor(() => bob.presence.others.length === 1, "Bob sees Ada");
  assert.deepEqual(bob.presence.others, [{ client: "ada-window", subject: null, data: { x: 10, y: 20, color: "#e4572e", label: "Ada" } }]);
  assert.equal(heard.at(-1).change.state, "join");
  assert.deepEqual(heard.at(-1).others, ["ada-window"]);
  await waitFor(() => ada.presence.others.length === 0 && ada.presence.client === "ada-window", "Ada is not among her own others");

  await within(bob.presence.set({ x: 1, y: 1, label: "Bob" }), "Bob's PUT");
  await waitFor(() => ada.presence.others.length === 1, "Ada sees Bob");
  assert.deepEqual(clientsOf(bob.presence.others), ["ada-window"], "Bob still sees only Ada");

  // Quick moves: folded into few PUTs, the last one wins.
  const moves = [];
  for (let x = 11; x <= 30; x++) moves.push(ada.presence.set({ x, y: 20, label: "Ada" }));
  await within(Promise.all(moves), "every move stored (or folded into a later one)");
  await waitFor(() => bob.presence.others[0]?.data.x === 30, "Bob sees Ada's last position");
  assert.equal(heard.at(-1).change.state, "update");
  assert.deepEqual((await members(name)).find((member) => member.client === "ada-window").data, { x: 30, y: 20, label: "Ada" });

  const count = heard.length;
  unsubscribe();
  ada.close();
  await waitFor(() => bob.presence.others.length === 0, "Ada's leave reaches Bob");
  assert.equal(heard.length, count, "an unsubscribed listener hears nothing more");
  assert.deepEqual(clientsOf(await members(name)), ["bob-window"], "the server forgot Ada: close() sent DELETE");
});

test("presence.leave() takes a window out; set() again brings it back; a bad body is refused", async () => {
  const name = scopeName();
  const ada = await open(name, "ada-leave");
  const bob = await open(name, "bob-leave");
  await within(ada.presence.set({ here: true }), "Ada's PUT");
  await waitFor(() => bob.presence.others.length === 1, "Bob sees Ada");
  await within(ada.presence.leave(), "Ada leaves");
  await waitFor(() => bob.presence.others.length === 0, "Bob sees Ada leave");
  assert.equal(ada.status, "live", "leaving is not closing");
  await within(ada.presence.set({ here: "again" }), "Ada back");
  await waitFor(() => bob.presence.others[0]?.data.here === "again", "Bob sees Ada again");
  await assert.rejects(ada.presence.set([1, 2]), JetstreamError, "an array is not a JSON object");
  await assert.rejects(ada.presence.set({ blob: "x".repeat(5000) }), (error) => error instanceof JetstreamError && error.status === 413, "over 4 KiB: 413");
});

test("a member that is not refreshed leaves by itself; this window's own presence is refreshed before its ttl", async () => {
  const name = scopeName();
  const bob = await open(name, "bob-expiry");
  const ada = await open(name, "ada-expiry", { presenceTTL: 2 });
  await waitFor(() => bob.status === "live", "Bob live");
  // A client that does not refresh: PUT once with a 1-second ttl.
  const put = await fetch(`${server.url}/v1/scopes/${name}/presence/gone-soon?ttl=1`, {
    method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ label: "Ghost" }),
  });
  assert.equal(put.status, 204);
  await within(ada.presence.set({ label: "Ada" }), "Ada's PUT");
  await waitFor(() => clientsOf(bob.presence.others).join() === "ada-expiry,gone-soon", "Bob sees both");
  const firstExpiry = (await members(name)).find((member) => member.client === "ada-expiry").expiresAt;
  await waitFor(() => clientsOf(bob.presence.others).join() === "ada-expiry", "the unrefreshed member left within its ttl + 2 s", 10_000);
  await waitFor(async () => {
    const ada = (await members(name)).find((member) => member.client === "ada-expiry");
    return ada && ada.expiresAt > firstExpiry;
  }, "Ada's presence refreshed (expiresAt moved) before it expired", 10_000);
  assert.deepEqual(clientsOf(bob.presence.others), ["ada-expiry"], "Ada never left");
});

test("after a server restart (presence forgotten) the stream reconnects, the view of others is rebuilt from the joins and each window shows itself again", async () => {
  const own = await new GatewayServer(join(workDir, "restart")).start();
  try {
    const name = scopeName();
    // A ttl of 300 s: a refresh (at 150 s) cannot be what brings a window back within the test.
    const base = { baseURL: own.url, backoff: BACKOFF, create: { clsName: "Canvas" }, presenceTTL: 300 };
    const ada = await within(openScope(name, { ...base, clientId: "ada-restart" }), "Ada opens");
    const bob = await within(openScope(name, { ...base, clientId: "bob-restart" }), "Bob opens");
    opened.push(ada, bob);
    await within(Promise.all([ada.presence.set({ label: "Ada" }), bob.presence.set({ label: "Bob" })]), "both PUT");
    // A member that will not come back after the restart (it does not run this client).
    const ghost = await fetch(`${own.url}/v1/scopes/${name}/presence/ghost?ttl=300`, {
      method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ label: "Ghost" }),
    });
    assert.equal(ghost.status, 204);
    await waitFor(() => ada.presence.others.length === 2 && bob.presence.others.length === 2, "each sees the other and the ghost");

    await own.kill();
    await waitFor(() => ada.status === "reconnecting" && bob.status === "reconnecting", "both notice");
    await own.start(own.port);
    await waitFor(() => ada.status === "live" && bob.status === "live", "both back");
    await waitFor(async () => {
      const response = await fetch(`${own.url}/v1/scopes/${name}/presence`);
      return clientsOf((await response.json()).members).join() === "ada-restart,bob-restart";
    }, "each window PUT itself again after the restart forgot it");
    await waitFor(() => clientsOf(ada.presence.others).join() === "bob-restart" && clientsOf(bob.presence.others).join() === "ada-restart",
      "each sees the other again, and no longer the ghost the restart forgot");
  } finally {
    await own.kill();
  }
});
