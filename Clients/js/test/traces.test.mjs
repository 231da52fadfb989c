// The shared sync traces (Tests/Fixtures/sync-traces.json, its "about" says the format), run
// against the client's pure parts: SyncCore and the two policies of connection-state.mjs, with a
// manual clock. The Swift client runs the same file (SharedSyncTraceTests), so both follow the
// same rules. The wiring below is the transport's (scope-copy.mjs, shared-stream.mjs) step for
// step: what it feeds the core and the policies, and which of their answers it obeys; every
// decision is theirs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Schema, SyncCore, Rejection } from "../jetstream.mjs";
import { ReconnectionPolicy, SendRetryPolicy, StreamEnd, endOfEvent, endOfResponse } from "../connection-state.mjs";

const path = fileURLToPath(new URL("../../../Tests/Fixtures/sync-traces.json", import.meta.url));
const fixture = JSON.parse(readFileSync(path, "utf8"));
const schema = new Schema(fixture.schema);

/** One client under a trace: the core, the policies and the clock. */
class TracedClient {
  constructor(trace) {
    this.core = new SyncCore(schema, { clientId: trace.clientId });
    this.core.load(trace.state);
    this.reconnection = new ReconnectionPolicy();
    this.sending = new SendRetryPolicy();
    this.now = 0;
    this.connectedAt = 0;
    this.inFlight = undefined;
  }

  /** Runs one step; returns what the step observed, to compare with its `expect`. */
  run(step) {
    this.now += step.advance ?? 0;
    switch (step.do) {
      case "local": {
        try {
          this.core.local(step.fragments);
          return { localRejected: false };
        } catch (error) {
          if (!(error instanceof Rejection)) throw error;
          return { localRejected: true };
        }
      }
      case "send": {
        const set = this.core.nextToSend();
        if (!set) return { request: null };
        set.status = "inflight";   // Scope.sendLoop marks the set it posts
        this.inFlight = set;
        return { request: { key: set.key, fragments: set.fragments } };
      }
      case "answer": return this.answer(step);
      case "connect":
        this.connectedAt = this.now;
        return {};
      case "opened":
        this.reconnection.opened();
        return {};
      case "event": return this.event(step);
      case "streamEnded": {
        const kind = step.cause === "http" ? endOfResponse(step.status) : { network: StreamEnd.network, silence: StreamEnd.silence }[step.cause];
        assert.ok(kind, `a stream end the runner does not know: ${JSON.stringify(step)}`);
        return { stream: this.ended(kind) };
      }
      default:
        throw new Error(`unknown step '${step.do}'`);
    }
  }

  /** Scope.sendLoop after a POST's answer. */
  answer(step) {
    const set = this.inFlight;
    assert.ok(set, "an answer without a set in flight");
    this.inFlight = undefined;
    const decision = this.sending.answered(step.networkError
      ? { network: true }
      : { status: step.status, retryAfter: step.retryAfter === undefined ? undefined : String(step.retryAfter),
          problemType: step.body?.type });
    let notification = null;
    let send;
    switch (decision.action) {
      case "next":
        notification = this.core.accepted(set, step.body?.version);
        send = "next";
        break;
      case "rejected":
        notification = this.core.rejected(set);
        send = "rejected";
        break;
      case "resend":
        assert.ok(decision.refreshToken);
        this.core.retry(set);
        send = "resend-with-new-token";
        break;
      case "wait":
        this.core.retry(set);
        send = { retryAfter: decision.seconds };
        break;
      case "backoff":
        this.core.retry(set);
        send = { backoff: decision.attempt };
        break;
      default:
        throw new Error(`unknown send decision ${JSON.stringify(decision)}`);
    }
    return { send, notified: notified(notification) };
  }

  /** Scope.handle for one SSE event, then followStream when it ends the connection. */
  event(step) {
    switch (step.type) {
      case "changeset": {
        const outcome = this.core.event(step.data);
        if (outcome?.gap) return { stream: this.ended(StreamEnd.gap), notified: null };
        if (outcome?.inconsistent) return { stream: this.ended(StreamEnd.inconsistent), notified: null };
        return { stream: "continue", notified: notified(outcome) };
      }
      case "snapshot":
      case "reset": {
        const notification = this.core.reset(step.data);
        this.sending.startOver();   // Scope.kick(true): every set not in flight is sent now
        return { stream: "continue", notified: notified(notification) };
      }
      default: {
        const kind = endOfEvent(step.type);
        return kind ? { stream: this.ended(kind), notified: null } : { stream: "continue", notified: null };
      }
    }
  }

  /** followStream's decision after a connection ended, in the fixture's words. */
  ended(kind) {
    const decision = this.reconnection.ended(kind, this.now - this.connectedAt);
    if (decision.action === "stop") return { stop: decision.reason };
    const stream = {
      reconnect: decision.action === "reconnect" ? "now" : { backoff: decision.attempt },
      lastEventId: this.reconnection.lastEventId(this.core.version),
    };
    if (decision.refreshToken) stream.refreshToken = true;
    return stream;
  }

  /** What `expect` may name, read from the client now. */
  observe(observed) {
    const { status, attempt } = this.reconnection.status;
    return {
      ...observed,
      version: this.core.version,
      view: Object.fromEntries([...this.core.view.objects.values()].map((object) => [object.uuid, { clsName: object.clsName, properties: object.properties }])),
      pending: this.core.pending.map((set) => ({ key: set.key, status: set.status, ...(set.status === "accepted" ? { version: set.version } : {}) })),
      status: status === "closed" ? "stopped" : status,
      attempt,
    };
  }
}

/** The fixture's `notified`: the sorted UUIDs the notification shows as added or changed, or null for none. */
function notified(notification) {
  if (!notification || notification.gap || notification.inconsistent) return null;
  const uuids = notification.fragments.map((fragment) => fragment.uuid).sort();
  return uuids.length === 0 && notification.removed.length === 0 ? null : uuids;
}

/** The fixture's `view` compares numbers by value: JSON both sides. */
const normalised = (value) => JSON.parse(JSON.stringify(value));

test("the fixture has traces, each with steps and expectations", () => {
  assert.ok(Array.isArray(fixture.traces) && fixture.traces.length >= 10, "traces");
  const names = fixture.traces.map((trace) => trace.name);
  assert.equal(new Set(names).size, names.length, "trace names are unique");
  for (const trace of fixture.traces) assert.ok(trace.steps.some((step) => step.expect), `${trace.name}: no expectations`);
});

for (const trace of fixture.traces) {
  test(`trace: ${trace.name}`, () => {
    const client = new TracedClient(trace);
    trace.steps.forEach((step, index) => {
      const observed = client.observe(client.run(step));
      for (const [member, expected] of Object.entries(step.expect ?? {})) {
        const where = `step ${index} (${step.do}${step.type ? ` ${step.type}` : ""}), ${member}`;
        if (member === "localRejected" && expected === false && observed.localRejected === undefined) continue;
        assert.ok(member in observed, `${where}: the runner does not know this expectation`);
        let wanted = expected;
        if (member === "stream" && expected?.refreshToken === false) {
          // refreshToken: absent means false.
          const { refreshToken, ...rest } = expected;
          wanted = rest;
        }
        assert.deepEqual(normalised(observed[member]), normalised(wanted), where);
      }
    });
  });
}
