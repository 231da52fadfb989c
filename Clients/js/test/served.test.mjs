// The client as the REAL binary serves it under /client/ ($JETSTREAM_BIN_DIR, default
// .build/debug): every module of Clients/js byte for byte with its type and validators, every
// relative import of a served module served too (a browser loading /client/jetstream.mjs meets
// no 404), and — where this Node can import over http from loopback — the served entry loaded as
// a browser would, exporting the same names as the file on disk.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as onDisk from "../jetstream.mjs";
import { GatewayServer, temporaryDirectory, removeTemporary } from "./gateway-server.mjs";

const CLIENT_DIR = fileURLToPath(new URL("..", import.meta.url));
const MODULES = readdirSync(CLIENT_DIR).filter((name) => name.endsWith(".mjs")).sort();
const FILES = [...MODULES.map((name) => [name, "text/javascript; charset=utf-8"]), ["jetstream.d.ts", "application/typescript; charset=utf-8"]];
const ETAG = /^"[0-9a-f]{16}"$/;

let workDir;
let server;

before(async () => {
  workDir = temporaryDirectory();
  server = await new GatewayServer(join(workDir, "data")).start();
});

after(async () => {
  await server?.kill();
  if (workDir) removeTemporary(workDir);
});

test("Clients/js has the entry and the modules it is made of", () => {
  assert.ok(MODULES.includes("jetstream.mjs"));
  assert.ok(MODULES.length > 5, `modules: ${MODULES}`);
});

for (const [name, type] of FILES) {
  test(`/client/${name}: the file on disk, ${type.split(";")[0]}, no-cache, nosniff, a strong ETag that revalidates to 304`, async () => {
    const response = await fetch(`${server.url}/client/${name}`, { headers: { "Accept-Encoding": "identity" } });
    assert.equal(response.status, 200, `GET /client/${name}: is it in Gateway.clientAssets (and Package.swift, Sources/Server/Gateway/Resources)?`);
    assert.equal(await response.text(), readFileSync(join(CLIENT_DIR, name), "utf8"), `/client/${name} differs from Clients/js/${name}: rebuild the binary`);
    assert.equal(response.headers.get("content-type"), type);
    assert.equal(response.headers.get("cache-control"), "no-cache");
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    const tag = response.headers.get("etag");
    assert.match(tag, ETAG);
    const again = await fetch(`${server.url}/client/${name}`, { headers: { "If-None-Match": tag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get("etag"), tag);
    assert.equal(await again.text(), "");
  });
}

test("every module the served entry imports, directly or not, is served (what a browser fetches)", async () => {
  const seen = new Set();
  const queue = ["jetstream.mjs"];
  while (queue.length > 0) {
    const name = queue.pop();
    if (seen.has(name)) continue;
    seen.add(name);
    const response = await fetch(`${server.url}/client/${name}`);
    assert.equal(response.status, 200, `/client/${name}, imported by a served module`);
    const source = await response.text();
    for (const [, specifier] of source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)) {
      assert.ok(specifier.startsWith("./"), `${name} imports ${specifier}: the client has no dependencies, only its own modules`);
      queue.push(specifier.slice(2));
    }
  }
  assert.deepEqual([...seen].sort(), MODULES, "the entry reaches every module of Clients/js, and nothing else");
});

test("the served entry, imported over http like a browser would, exports what the file on disk exports", (t) => {
  if (!process.allowedNodeEnvironmentFlags.has("--experimental-network-imports")) {
    t.skip("this Node cannot import over http (--experimental-network-imports); the import graph is checked above");
    return;
  }
  const script = `const m = await import(${JSON.stringify(`${server.url}/client/jetstream.mjs`)}); console.log(JSON.stringify(Object.keys(m).sort()));`;
  const child = spawnSync(process.execPath, ["--no-warnings", "--experimental-network-imports", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout), Object.keys(onDisk).sort());
});
