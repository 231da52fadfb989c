// sse-parser.mjs — the client side of `text/event-stream`.
//
// Owns: `SSEParser`, a resumable parser with the WHATWG rules (fields, comments, CR/LF/CRLF,
// multi-line data, an id without NUL): fed text in pieces as they arrive, it calls back once
// per complete event. No I/O, no imports.

/**
 * A resumable parser of `text/event-stream` (the WHATWG rules): feed it text as it arrives; it
 * calls `onEvent({type, id, data})` per complete event and `onComment()` per comment line.
 */
export class SSEParser {
  constructor(onEvent, onComment = () => {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.buffer = "";
    this.reset();
  }
  reset() { this.type = ""; this.data = []; this.id = undefined; }
  feed(text) {
    const buffer = this.buffer + text;
    const newline = /\r\n|\r|\n/g;
    let start = 0;
    // A long line arrives in many pieces: search only what was not searched before (less one
    // character, which may be a \r waiting for its \n).
    newline.lastIndex = Math.max(0, this.buffer.length - 1);
    for (let match = newline.exec(buffer); match !== null; match = newline.exec(buffer)) {
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (match[0] === "\r" && match.index + 1 === buffer.length) break;
      this.line(buffer.slice(start, match.index));
      start = match.index + match[0].length;
    }
    this.buffer = buffer.slice(start);
  }
  line(line) {
    if (line === "") {
      if (this.data.length > 0 || this.type !== "") {
        this.onEvent({ type: this.type || "message", id: this.id, data: this.data.join("\n") });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) { this.onComment(line.slice(1)); return; }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
  }
}
