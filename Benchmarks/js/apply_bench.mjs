// The apply costs of jetstream.mjs's SyncCore, shared by the Chromium and the Node runs of
// Benchmarks/js/bench_client.py. No imports: the caller passes the client module, so the browser
// can load this file from a blob: URL next to the gateway's /client/jetstream.mjs.
//
//   import * as jetstream from "../../Clients/js/jetstream.mjs";
//   const report = await runApplyBench(jetstream, schemaJSON, { objects: 10000, events: 1000 });
//
// Three measurements, each `warmup` untimed runs and then `runs` timed ones:
//   snapshot   — JSON.parse of a GET-shaped state (timed apart), then new SyncCore(schema).load(json);
//   changesets — 1,000 `changeset` events (one shape's x/y each, versions v+1…) on a loaded core;
//   rebase     — the same events with `pending` local change sets that every event rebases.

const SHAPE_UUID_PREFIX = "5a000000-0000-4000-8000-";
const ROOT_UUID = "c0000000-0000-4000-8000-000000000000";

function shapeUUID(index) {
  return SHAPE_UUID_PREFIX + index.toString(16).padStart(12, "0");
}

/** A state as `GET /v1/scopes/{name}` serves it: a Canvas root and `objects - 1` Shapes. */
export function makeState(objects, { name = "canvas-bench", version = 1 } = {}) {
  const kinds = ["rect", "oval"];
  const shapes = [];
  const fragments = [];
  for (let i = 0; i < objects - 1; i++) {
    const uuid = shapeUUID(i);
    shapes.push(uuid);
    fragments.push({
      type: "add", uuid, clsName: "Shape",
      properties: {
        x: (i * 37) % 1200 + 0.5, y: (i * 53) % 800 + 0.25, width: 40 + (i % 100), height: 30 + (i % 70),
        color: i % 5 === 0 ? null : (0x93c5fdff + i * 4099) >>> 0, label: `Shape ${i}`, kind: kinds[i % 2],
      },
    });
  }
  fragments.unshift({ type: "change", uuid: ROOT_UUID, clsName: "Canvas", properties: { name: "bench", shapes } });
  return { name, version, rootUUID: ROOT_UUID, fragments };
}

/**
 * `count` changeset events as the server sends them: each a change of one shape's x and y, round
 * the shapes except the last `spare` ones (kept for local sets that no event touches).
 */
export function makeEvents(objects, count, firstVersion, { spare = 0 } = {}) {
  const events = [];
  for (let i = 0; i < count; i++) {
    events.push({
      version: firstVersion + i,
      idempotencyKey: `other-client:${i + 1}`,
      fragments: [{ type: "change", uuid: shapeUUID(i % (objects - 1 - spare)), clsName: "Shape", properties: { x: 2000 + i + 0.5, y: 1000 + i + 0.5 } }],
      removed: [],
    });
  }
  return events;
}

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { runs: values.map(round), median: round(median), min: round(sorted[0]) };
}

function round(value) {
  return Math.round(value * 1000) / 1000;
}

function check(condition, message) {
  if (!condition) throw new Error(`apply bench: ${message}`);
}

/**
 * Runs the three measurements; `now` is a millisecond clock (performance.now), `gc` an optional
 * collector called before every run (Node's --expose-gc, Chromium's --js-flags=--expose-gc).
 */
export async function runApplyBench(jetstream, schemaJSON, {
  objects = 10000, events = 1000, pending = 3, runs = 5, warmup = 1,
} = {}, now = () => performance.now(), gc = globalThis.gc) {
  const { Schema, SyncCore } = jetstream;
  const schema = new Schema(schemaJSON);
  const state = makeState(objects);
  const text = JSON.stringify(state);
  check(objects - 1 - pending > 0, `${objects} objects leave no shape for the events`);
  const eventList = makeEvents(objects, events, state.version + 1, { spare: pending });
  const eventTexts = eventList.map((event) => JSON.stringify(event));
  const lastVersion = state.version + events;
  const collect = () => { if (typeof gc === "function") gc(); };
  // Lets a browser breathe between runs (no long task across the whole bench).
  const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

  const loaded = () => {
    const core = new SyncCore(schema, { clientId: "bench" });
    core.load(JSON.parse(text));
    return core;
  };

  // (a) snapshot: parse and load, timed apart.
  const parseMs = [], loadMs = [];
  for (let run = 0; run < warmup + runs; run++) {
    collect();
    await pause();
    const t0 = now();
    const json = JSON.parse(text);
    const t1 = now();
    const core = new SyncCore(schema, { clientId: "bench" });
    const notification = core.load(json);
    const t2 = now();
    check(core.view.objects.size === objects, `loaded ${core.view.objects.size} objects, expected ${objects}`);
    check(notification.fragments.length === objects, `load notified ${notification.fragments.length} objects`);
    if (run >= warmup) { parseMs.push(t1 - t0); loadMs.push(t2 - t1); }
  }

  // The parse of the events' data lines, as Scope.handle does per event (reported apart).
  const eventParseMs = [];
  for (let run = 0; run < warmup + runs; run++) {
    collect();
    await pause();
    const t0 = now();
    let sum = 0;
    for (const data of eventTexts) sum += JSON.parse(data).version;
    const t1 = now();
    check(sum > 0, "parsed no events");
    if (run >= warmup) eventParseMs.push(t1 - t0);
  }

  // (b) and (c): the events on a loaded core, without and with pending local sets.
  const applyEvents = async (pendingSets) => {
    const totals = [];
    for (let run = 0; run < warmup + runs; run++) {
      const core = loaded();
      const localUUIDs = [];
      for (let k = 0; k < pendingSets; k++) {
        // Shapes at the far end: the events change the first ones, so no set conflicts with them.
        const uuid = shapeUUID(objects - 2 - k);
        localUUIDs.push(uuid);
        const { set } = core.local([{ type: "change", uuid, clsName: "Shape", properties: { label: `pending ${k}`, x: -1 - k } }]);
        set.status = "inflight";
      }
      check(core.pending.length === pendingSets, "pending sets were not kept");
      collect();
      await pause();
      let notified = 0;
      const t0 = now();
      for (const event of eventList) {
        const notification = core.event(event);
        notified += notification.fragments.length;
      }
      const t1 = now();
      check(core.version === lastVersion, `core at version ${core.version}, expected ${lastVersion}`);
      check(notified === events, `${notified} fragments notified for ${events} events`);
      check(core.pending.length === pendingSets, `${core.pending.length} pending sets left, expected ${pendingSets}`);
      const last = eventList[eventList.length - 1].fragments[0];
      check(core.view.get(last.uuid).properties.x === last.properties.x, "the last event is not in the view");
      localUUIDs.forEach((uuid, k) => check(core.view.get(uuid).properties.label === `pending ${k}`, "a pending set left the view"));
      if (run >= warmup) totals.push(t1 - t0);
    }
    const total = summary(totals);
    return {
      totalMs: total,
      perEventMicros: { median: round((total.median * 1000) / events), min: round((total.min * 1000) / events) },
    };
  };
  const changesets = await applyEvents(0);
  const rebase = await applyEvents(pending);

  return {
    objects, events, pending, runs, warmup, gc: typeof gc === "function",
    stateBytes: new TextEncoder().encode(text).length,
    snapshot: { parseMs: summary(parseMs), loadMs: summary(loadMs) },
    eventsParseMs: summary(eventParseMs),
    changesets,
    rebase,
  };
}
