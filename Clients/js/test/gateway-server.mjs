// Runs the real `jetstream serve` binary on loopback for the live tests (the Node twin of
// Tests/gateway/gateway_server.py): one data directory that outlives the process, started on
// port 0 or again on the same port after a SIGKILL; stderr goes to a log file quoted on failure.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
const LISTENING = /^jetstream listening on http:\/\/127\.0\.0\.1:(\d+)\r?$/;
const START_TIMEOUT = 60_000;
const STOP_TIMEOUT = 20_000;

/** The `jetstream` binary: $JETSTREAM_BIN_DIR (default .build/debug); a clear error when missing. */
export function jetstreamBinary() {
  const dir = resolve(REPO, process.env.JETSTREAM_BIN_DIR ?? ".build/debug");
  const binary = join(dir, "jetstream");
  if (!existsSync(binary)) {
    throw new Error(`the jetstream binary is missing at ${binary}: build it (swift build) or set JETSTREAM_BIN_DIR`);
  }
  return binary;
}

/** A fresh temporary directory, removed by `removeTemporary`. */
export function temporaryDirectory(prefix = "jetstream-js-") {
  return mkdtempSync(join(tmpdir(), prefix));
}
export function removeTemporary(dir) { rmSync(dir, { recursive: true, force: true }); }

export class GatewayServer {
  constructor(dataDir, args = []) {
    this.binary = jetstreamBinary();
    this.dataDir = dataDir;
    this.args = args;
    this.process = null;
    this.port = null;
    this.starts = 0;
  }

  get url() { return `http://127.0.0.1:${this.port}`; }
  get logPath() { return join(this.dataDir, "..", `jetstream-${this.starts}.log`); }

  logTail(lines = 30) {
    try { return readFileSync(this.logPath, "utf8").split("\n").slice(-lines).join("\n"); } catch { return "(no log)"; }
  }

  /** Starts and waits for the listening line; a fixed port still held is retried until the deadline. */
  async start(port = 0) {
    mkdirSync(this.dataDir, { recursive: true });
    const deadline = Date.now() + START_TIMEOUT;
    for (let attempt = 0; attempt < 200; attempt++) {
      const error = await this.tryStart(port, deadline);
      if (error === null) return this;
      if (port === 0 || Date.now() > deadline) throw new Error(error);
      await new Promise((done) => setTimeout(done, 300));
    }
    throw new Error(`jetstream serve did not start on port ${port}`);
  }

  tryStart(port, deadline) {
    this.starts += 1;
    const log = openSync(this.logPath, "w");
    const child = spawn(this.binary, ["serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", this.dataDir, ...this.args],
      { stdio: ["ignore", "pipe", log] });
    closeSync(log);
    this.process = child;
    this.exited = new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })));
    return new Promise((done) => {
      let buffer = "";
      let settled = false;
      const finish = (error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.stdout.removeListener("data", onData);
        child.stdout.resume();  // keep draining stdout so the server never blocks on it
        done(error);
      };
      const onData = (chunk) => {
        buffer += chunk.toString("utf8");
        const newline = buffer.indexOf("\n");
        if (newline < 0) return;
        const match = LISTENING.exec(buffer.slice(0, newline));
        if (!match) { child.kill("SIGKILL"); finish(`unexpected first stdout line ${JSON.stringify(buffer.slice(0, newline))}; log:\n${this.logTail()}`); return; }
        this.port = Number(match[1]);
        if (port !== 0 && this.port !== port) { finish(`asked for port ${port}, listening on ${this.port}`); return; }
        finish(null);
      };
      child.stdout.on("data", onData);
      this.exited.then(({ code, signal }) => finish(`jetstream serve (port ${port}) exited (${code ?? signal}) before listening; log:\n${this.logTail()}`));
      const timer = setTimeout(() => { child.kill("SIGKILL"); finish(`no listening line within ${START_TIMEOUT} ms; log:\n${this.logTail()}`); },
        Math.max(1, deadline - Date.now()));
    });
  }

  get running() { return this.process !== null && this.process.exitCode === null && this.process.signalCode === null; }

  /** SIGKILL: no chance to flush or close anything. */
  async kill() { return this.signal("SIGKILL"); }

  /** SIGTERM, then SIGKILL after a bound. */
  async stop() {
    const outcome = await this.signal("SIGTERM");
    return outcome ?? this.kill();
  }

  async signal(name) {
    if (!this.running) return this.process ? await this.exited : null;
    this.process.kill(name);
    let timer;
    const outcome = await Promise.race([this.exited, new Promise((done) => { timer = setTimeout(() => done(null), STOP_TIMEOUT); })]);
    clearTimeout(timer);
    return outcome;
  }
}

/** Polls `condition` every 20 ms until it is truthy; fails with `what` after `timeout` ms. */
export async function waitFor(condition, what, timeout = 20_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
