// Misuses that jetstream.d.ts must refuse: scripts/test-js checks that tsc reports an error on
// exactly the lines marked `expect-error` (so the declarations are not `any`).
import { openScope, Scope, Rejection, ReconnectionPolicy, Schema } from "/client/jetstream.mjs";

declare const scope: Scope;
declare const rejection: Rejection;
declare const reconnection: ReconnectionPolicy;
declare const schema: Schema;

export async function misuse(): Promise<void> {
  if (scope.status === "online") return; // expect-error: not a Status
  scope.add(1); // expect-error: clsName is a string
  const reasons: string = rejection.reasons; // expect-error: reasons is string[]
  await scope.change([{ type: "remove", uuid: "u", clsName: "Shape" }]); // expect-error: only add and change
  await openScope("canvas-1", { transport: "websocket" }); // expect-error: not a transport
  scope.set("u", { x: { insert: 1 } }); // expect-error: insert takes an array
  reconnection.ended("timeout", 10); // expect-error: not a way a stream ends
  await scope.stateAt("v3"); // expect-error: a version is a number
  const undone: number = (await scope.undo()).revertOf; // expect-error: undo may resolve null
  await scope.presence.set("here"); // expect-error: presence data is a JSON object
  scope.presence.others.push({ client: "c", subject: null, data: {} }); // expect-error: others is read-only
  const tag: string = scope.schemaTag; // expect-error: a server may send no ETag
  scope.schemaTag = "\"abc\""; // expect-error: schemaTag is read-only
  await openScope("canvas-1", { persist: "yes" }); // expect-error: persist is a boolean
  const stored: string = await scope.saved(); // expect-error: saved resolves nothing
  await scope.call("arrange", {}, { stub: "grid" }); // expect-error: a stub is a function of the view
  schema.modelClass("Shape")!.rules = { write: "owner", delete: "any" }; // expect-error: rules are read-only
  const rule: "any" | "owner" = schema.modelClass("Shape")!.rules.write; // expect-error: a rule may be role:<name>
  console.log(reasons, tag, stored, rule);
}
