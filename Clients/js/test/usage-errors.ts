// Misuses that jetstream.d.ts must refuse: scripts/test-js checks that tsc reports an error on
// exactly the lines marked `expect-error` (so the declarations are not `any`).
import { openScope, Scope, Rejection } from "/client/jetstream.mjs";

declare const scope: Scope;
declare const rejection: Rejection;

export async function misuse(): Promise<void> {
  if (scope.status === "online") return; // expect-error: not a Status
  scope.add(1); // expect-error: clsName is a string
  const reasons: string = rejection.reasons; // expect-error: reasons is string[]
  await scope.change([{ type: "remove", uuid: "u", clsName: "Shape" }]); // expect-error: only add and change
  await openScope("canvas-1", { transport: "websocket" }); // expect-error: not a transport
  scope.set("u", { x: { insert: 1 } }); // expect-error: insert takes an array
  console.log(reasons);
}
