// The tests' lossy TCP link (Tests/gateway/fault_proxy.py run as a program) between the clients
// and a gateway on 127.0.0.1: latency with jitter (never reordering) and connections reset at
// random — the same proxy the Python and Swift suites use. It stops at stop(), or when this
// process dies (its stdin is a pipe only we hold), and reports what it did.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
const SCRIPT = join(REPO, "Tests/gateway/fault_proxy.py");
const LISTENING = /^fault proxy listening on 127\.0\.0\.1:(\d+)$/;
const TIMEOUT = 20_000;

/** The repository's venv (scripts/install-deps), else python3; the proxy needs only the stdlib. */
function python() {
  const venv = join(REPO, ".venv/bin/python");
  return existsSync(venv) ? venv : "python3";
}

export class FaultProxy {
  /**
   * Starts the proxy in front of 127.0.0.1:`upstreamPort` with `flags` (fault_proxy.py's:
   * --latency S, --jitter S, --drop P, --drop-within S, --max-drops N, --seed N) and resolves
   * once it listens.
   */
  static async start(upstreamPort, flags = []) {
    const child = spawn(python(), [SCRIPT, "--upstream", `127.0.0.1:${upstreamPort}`, ...flags.map(String)],
      { stdio: ["pipe", "pipe", "pipe"] });
    const proxy = new FaultProxy(child);
    proxy.port = await proxy.listening();
    return proxy;
  }

  constructor(child) {
    this.child = child;
    this.stdout = "";
    this.stderr = "";
    child.stdout.on("data", (chunk) => { this.stdout += chunk.toString("utf8"); });
    child.stderr.on("data", (chunk) => { this.stderr += chunk.toString("utf8"); });
    this.exited = new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })));
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  listening() {
    return new Promise((done, fail) => {
      const check = () => {
        const newline = this.stdout.indexOf("\n");
        if (newline < 0) return false;
        const match = LISTENING.exec(this.stdout.slice(0, newline));
        if (match) done(Number(match[1]));
        else fail(new Error(`fault proxy: unexpected first line ${JSON.stringify(this.stdout.slice(0, newline))}`));
        return true;
      };
      const timer = setTimeout(() => { this.child.kill("SIGKILL"); fail(new Error(`fault proxy: no listening line within ${TIMEOUT} ms: ${this.stderr}`)); }, TIMEOUT);
      const onData = () => { if (check()) { clearTimeout(timer); this.child.stdout.removeListener("data", onData); } };
      this.child.stdout.on("data", onData);
      this.exited.then(({ code, signal }) => { clearTimeout(timer); fail(new Error(`fault proxy exited (${code ?? signal}) before listening: ${this.stderr}`)); });
    });
  }

  /**
   * Ends it (end of stdin, then SIGTERM if it still runs 5 s later) and resolves to its stats:
   * {accepted, dropped, resets, …}. Not both at once: a SIGTERM that arrives while the proxy is
   * already exiting on the end of its stdin finds Python's default handler back and kills it.
   */
  async stop() {
    let terminate;
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin.end();
      terminate = setTimeout(() => this.child.kill("SIGTERM"), 5_000);
    }
    let timer;
    const outcome = await Promise.race([this.exited, new Promise((done) => { timer = setTimeout(() => done(null), TIMEOUT); })]);
    clearTimeout(timer);
    clearTimeout(terminate);
    if (outcome === null) {
      this.child.kill("SIGKILL");
      throw new Error(`fault proxy did not exit within ${TIMEOUT} ms of SIGTERM: ${this.stderr}`);
    }
    const last = this.stdout.trim().split("\n").at(-1);
    if (outcome.code !== 0) throw new Error(`fault proxy exited with ${outcome.code ?? outcome.signal}: ${this.stdout} ${this.stderr}`);
    return JSON.parse(last);
  }
}
