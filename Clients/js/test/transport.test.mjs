// The transport's pure parts: the backoff schedule (full jitter), the text/event-stream parser and
// the collection operations the client resolves locally.
import { test } from "node:test";
import assert from "node:assert/strict";
import { backoffDelay, SSEParser, applyOperation } from "../jetstream.mjs";

// -- backoffDelay ---------------------------------------------------------------------------

test("backoffDelay: full jitter over [0, initial·2^n) with the defaults 500 ms and 30 s", () => {
  const half = () => 0.5;
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, undefined, half)),
    [250, 500, 1000, 2000, 4000, 8000, 15000], "initial 500 doubling, capped at 30 000 from attempt 6");
  assert.equal(backoffDelay(0, {}, () => 0), 0, "the lower bound is 0 (full jitter, not equal jitter)");
  assert.equal(backoffDelay(0, {}, () => 0.999999), 499, "the upper bound is excluded");
  assert.equal(backoffDelay(100, {}, () => 0.999999), 29999, "capped at the max");
  assert.equal(backoffDelay(1e9, {}, half), 15000, "huge attempts stay finite at the cap");
});

test("backoffDelay: custom initial and max, each optional", () => {
  const half = () => 0.5;
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, { initial: 50, max: 500 }, half)), [25, 50, 100, 200, 250, 250]);
  assert.equal(backoffDelay(3, { initial: 100 }, half), 400, "max defaults to 30 000");
  assert.equal(backoffDelay(10, { initial: 100 }, half), 15000);
  assert.equal(backoffDelay(1, { max: 600 }, half), 300, "initial defaults to 500; min(600, 1000) = 600");
});

test("backoffDelay: with Math.random every delay is an integer in [0, min(max, initial·2^n))", () => {
  for (let attempt = 0; attempt < 12; attempt++) {
    const ceiling = Math.min(30000, 500 * 2 ** attempt);
    let largest = 0;
    for (let i = 0; i < 300; i++) {
      const delay = backoffDelay(attempt);
      assert.ok(Number.isInteger(delay) && delay >= 0 && delay < ceiling, `attempt ${attempt}: ${delay}`);
      largest = Math.max(largest, delay);
    }
    assert.ok(largest > ceiling / 2, `attempt ${attempt}: jitter spans the range (largest ${largest} of ${ceiling})`);
  }
});

// -- SSEParser ------------------------------------------------------------------------------

/** Feeds `chunks` to a fresh parser; returns the events and comments it reported. */
function parse(...chunks) {
  const events = [], comments = [];
  const parser = new SSEParser((event) => events.push(event), (comment) => comments.push(comment));
  for (const chunk of chunks) parser.feed(chunk);
  return { events, comments };
}

// What the gateway sends, written once per line-ending style.
const STREAM_LINES = [
  "retry: 2000", "",
  "event: snapshot", "id: 0", 'data: {"version":0}', "",
  ": heartbeat", "",
  "event: changeset", "id: 1", 'data: {"version":1,', 'data: "x":"a:b"}', "",
  "data: plain", "",
  "event: deleted", 'data: {"type":"/problems/scope-deleted"}', "",
];
const STREAM_EVENTS = [
  { type: "snapshot", id: "0", data: '{"version":0}' },
  { type: "changeset", id: "1", data: '{"version":1,\n"x":"a:b"}' },
  { type: "message", id: undefined, data: "plain" },
  { type: "deleted", id: undefined, data: '{"type":"/problems/scope-deleted"}' },
];

for (const [name, eol] of [["LF", "\n"], ["CRLF", "\r\n"], ["CR", "\r"]]) {
  test(`SSEParser: ${name} line endings`, () => {
    const text = STREAM_LINES.map((line) => line + eol).join("");
    // A CR-only stream's final \r may be the first half of a CRLF: it is dispatched once anything
    // follows (the next heartbeat on a live stream).
    const { events, comments } = parse(text, eol === "\r" ? ":" : "");
    assert.deepEqual(events, STREAM_EVENTS);
    assert.deepEqual(comments.slice(0, 1), [" heartbeat"]);
  });
}

test("SSEParser: split anywhere — every 2-way split and byte-by-byte, in every line-ending style and mixed", () => {
  // Mixed endings; a \r is never followed by an empty line ended by \n (that would be one CRLF).
  let mixed = "";
  STREAM_LINES.forEach((line, i) => {
    let eol = ["\n", "\r\n", "\r"][i % 3];
    if (line === "" && eol === "\n" && mixed.endsWith("\r")) eol = "\r\n";
    mixed += line + eol;
  });
  mixed += ":\n";
  const styles = ["\n", "\r\n", "\r"].map((eol) => STREAM_LINES.map((line) => line + eol).join("") + ":\n");
  for (const text of [...styles, mixed]) {
    const whole = parse(text).events;
    assert.deepEqual(whole, STREAM_EVENTS, JSON.stringify(text));
    assert.deepEqual(parse(...text).events, STREAM_EVENTS, "byte by byte");
    for (let cut = 1; cut < text.length; cut++) {
      assert.deepEqual(parse(text.slice(0, cut), text.slice(cut)).events, STREAM_EVENTS, `cut at ${cut}: ${JSON.stringify(text.slice(cut - 2, cut + 2))}`);
    }
  }
});

test("SSEParser: a CRLF split between its \\r and \\n is one line end, not two", () => {
  // Were the \r taken as a line end on its own, the \n would make an empty line: an event
  // dispatched early, with only the first data line.
  const { events } = parse("data: a\r", "\ndata: b\r", "\n\r", "\n");
  assert.deepEqual(events, [{ type: "message", id: undefined, data: "a\nb" }]);
});

test("SSEParser: an event is dispatched only at its blank line, never before", () => {
  const events = [];
  const parser = new SSEParser((event) => events.push(event));
  parser.feed("event: changeset\nid: 5\ndata: {}\n");
  assert.deepEqual(events, []);
  parser.feed("\n");
  assert.deepEqual(events, [{ type: "changeset", id: "5", data: "{}" }]);
});

test("SSEParser: comments go to onComment and never make an event", () => {
  const { events, comments } = parse(":\n: ping\n:no space\n\n");
  assert.deepEqual(events, []);
  assert.deepEqual(comments, ["", " ping", "no space"]);
});

test("SSEParser: field syntax — one leading space stripped, a bare field name, colons in values, unknown fields", () => {
  assert.deepEqual(parse("data:no-space\n\n").events[0].data, "no-space");
  assert.deepEqual(parse("data:  two\n\n").events[0].data, " two", "only one space is stripped");
  assert.deepEqual(parse("data: a:b: c\n\n").events[0].data, "a:b: c");
  assert.deepEqual(parse("data\n\n").events, [{ type: "message", id: undefined, data: "" }], "'data' alone is an empty data line");
  assert.deepEqual(parse("data\ndata\n\n").events[0].data, "\n");
  assert.deepEqual(parse("retry: 10\nfoo: bar\ndata: x\n\n").events, [{ type: "message", id: undefined, data: "x" }]);
  assert.deepEqual(parse("id: a\0b\ndata: x\n\n").events[0].id, undefined, "an id with NUL is ignored");
  assert.deepEqual(parse("event: a\nevent: b\ndata: x\n\n").events[0].type, "b", "the last event field wins");
});

test("SSEParser: blank lines alone and an id alone dispatch nothing; the type does not leak into the next event", () => {
  assert.deepEqual(parse("\n\n\r\n\r\n").events, []);
  assert.deepEqual(parse("id: 7\n\n").events, []);
  const { events } = parse("event: changeset\ndata: 1\n\ndata: 2\n\n");
  assert.deepEqual(events.map((event) => event.type), ["changeset", "message"]);
});

test("SSEParser: a bare 'event: deleted' (no data line) is still dispatched, with empty data", () => {
  // WHATWG's EventSource would drop an event without data; the fetch reader keeps it so that a
  // bare `event: deleted` / `event: closing` still ends the stream.
  assert.deepEqual(parse("event: deleted\n\n").events, [{ type: "deleted", id: undefined, data: "" }]);
  assert.deepEqual(parse("event: deleted\ndata: {}\n\n").events, [{ type: "deleted", id: undefined, data: "{}" }]);
});

test("SSEParser: a line longer than many chunks is read whole", () => {
  const long = "x".repeat(20000);
  const chunks = [];
  const text = `data: ${long}\r\n\r\n`;
  for (let i = 0; i < text.length; i += 997) chunks.push(text.slice(i, i + 997));
  assert.deepEqual(parse(...chunks).events, [{ type: "message", id: undefined, data: long }]);
});

// -- applyOperation -------------------------------------------------------------------------

test("applyOperation: insert before an anchor, at the end, or at the end when the anchor is gone", () => {
  assert.deepEqual(applyOperation(["a", "b"], { insert: ["x"], before: "b" }), ["a", "x", "b"]);
  assert.deepEqual(applyOperation(["a", "b"], { insert: ["x", "y"], before: "a" }), ["x", "y", "a", "b"], "in their order");
  assert.deepEqual(applyOperation(["a", "b"], { insert: ["x"] }), ["a", "b", "x"]);
  assert.deepEqual(applyOperation(["a", "b"], { insert: ["x"], before: null }), ["a", "b", "x"]);
  assert.deepEqual(applyOperation(["a"], { insert: ["x"], before: "gone" }), ["a", "x"]);
  assert.deepEqual(applyOperation([], { insert: ["x"], before: "a" }), ["x"]);
  assert.deepEqual(applyOperation(["a", "b", "a"], { insert: ["x"], before: "a" }), ["x", "a", "b", "a"], "the first occurrence");
});

test("applyOperation: remove takes every occurrence; a missing value is ignored", () => {
  assert.deepEqual(applyOperation(["a", "b", "a", "c"], { remove: ["a"] }), ["b", "c"]);
  assert.deepEqual(applyOperation(["a", "b"], { remove: ["z"] }), ["a", "b"]);
  assert.deepEqual(applyOperation(["a", "b"], { remove: ["a", "b"] }), []);
});

test("applyOperation: an inserted value already present is moved and ends up once", () => {
  assert.deepEqual(applyOperation(["a", "b", "c"], { insert: ["c"], before: "a" }), ["c", "a", "b"]);
  assert.deepEqual(applyOperation(["a", "b", "a"], { insert: ["a"] }), ["b", "a"], "every occurrence leaves first");
  assert.deepEqual(applyOperation(["a", "b", "c"], { remove: ["a"], insert: ["a"], before: "c" }), ["b", "a", "c"], "remove + insert is a move");
  assert.deepEqual(applyOperation(["a"], { insert: ["x", "y", "x"] }), ["a", "x", "y"], "a value listed twice goes in once, at its first place");
});

test("applyOperation: an anchor that is itself inserted or removed is gone — the values go to the end", () => {
  assert.deepEqual(applyOperation(["a", "b", "c"], { insert: ["b"], before: "b" }), ["a", "c", "b"]);
  assert.deepEqual(applyOperation(["a", "b", "c"], { insert: ["x"], remove: ["b"], before: "b" }), ["a", "c", "x"]);
  assert.deepEqual(applyOperation(["a", "b", "c"], { insert: ["x", "a"], before: "a" }), ["b", "c", "x", "a"]);
});

test("applyOperation: numbers as values, no change for an empty operation, the input is never mutated", () => {
  assert.deepEqual(applyOperation([1, 2, 3], { insert: [3], before: 1 }), [3, 1, 2]);
  const input = ["a", "b"];
  const same = applyOperation(input, {});
  assert.deepEqual(same, ["a", "b"]);
  assert.notEqual(same, input, "a copy, even when nothing changes");
  applyOperation(input, { insert: ["x"], remove: ["a"], before: "b" });
  applyOperation(input);
  assert.deepEqual(input, ["a", "b"]);
});
