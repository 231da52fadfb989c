// A typed usage of the public API of jetstream.mjs; must compile against ../jetstream.d.ts with
// `tsc --noEmit -p Clients/js/test/tsconfig.json` (never run).
import {
  openScope, Rejection, JetstreamError, Scope, Status, Notification, ModelObject, Fragment,
  ErrorKindName, Schema, ScopeState, SyncCore, applyChangeSet, applyOperation, backoffDelay, SSEParser,
  ReconnectionPolicy, SendRetryPolicy, StreamEnd, StatusDetail,
  UndoHistory, UndoResult, ChangeSetAnswer, StateJSON, HistoryPage, MethodAnswer, StubView,
  Presence, PresenceMember, PresenceChange, StreamScopes, clearStoredScopes, WriteRule,
} from "/client/jetstream.mjs";

declare function render(scope: Scope): void;
declare function currentToken(refresh: boolean): Promise<string>;

export async function main(): Promise<void> {
  const scope: Scope = await openScope("canvas-1", {
    baseURL: "https://sync.example.com",
    token: ({ refresh }) => currentToken(refresh),
    create: { clsName: "Canvas", properties: { name: "Board" } },
    heartbeatInterval: 15,
    backoff: { initial: 500, max: 30_000 },
    transport: "auto",
    clientId: "tab-1",
    fetch: globalThis.fetch,
    presenceTTL: 30,
  });
  await openScope("canvas-2", { token: "a.b.c" });
  await openScope("canvas-3");

  // Offline and persistence: the copy in IndexedDB, a change known to be stored.
  const kept: Scope = await openScope("canvas-4", { persist: true, create: { clsName: "Canvas" } });
  kept.add("Shape", { x: 1, y: 2 });
  await kept.saved();
  const wasKept: boolean = kept.persisted;
  const unreadable: JetstreamError | undefined = kept.storageError;
  console.log(wasKept, unreadable?.message);
  kept.close();
  await clearStoredScopes({ scope: "canvas-4" });
  await clearStoredScopes();

  const version: number = scope.version;
  const root: string = scope.rootUUID;
  const pending: number = scope.pendingCount;
  const schemaTag: string | undefined = scope.schemaTag;
  if (schemaTag !== undefined) console.log(schemaTag.length);
  const canvas: ModelObject | undefined = scope.get(root);
  const shapes = canvas?.properties.shapes;
  if (Array.isArray(shapes)) console.log(shapes.length, version, pending);

  const unsubscribe: () => void = scope.subscribe((notification: Notification) => {
    const { version, local, fragments, removed } = notification;
    for (const fragment of fragments) {
      const kind: "add" | "change" = fragment.type;
      console.log(kind, fragment.uuid, fragment.clsName, fragment.properties.x, version, local);
    }
    removed.forEach((uuid: string) => console.log("gone", uuid));
    if (notification.rejection) console.log(notification.rejection.reasons.join("\n"));
    if (notification.deleted) console.log("deleted");
    if (notification.error) console.log(notification.error.status);
    if (notification.schemaChanged) console.log("new schema", scope.schemaTag);
    render(scope);
  });
  unsubscribe();

  // change: optimistic, resolves {version}, rejects with a Rejection.
  const fragments: Fragment[] = [
    { type: "change", uuid: root, clsName: "Canvas", properties: { name: "Renamed" } },
    { type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { insert: ["5f0c…"], before: null } } },
    { type: "change", uuid: root, clsName: "Canvas", properties: { shapes: { remove: ["5f0c…"] } } },
  ];
  try {
    const { version: accepted } = await scope.change(fragments);
    console.log(accepted + 1);
  } catch (error) {
    if (error instanceof Rejection) {
      const status: number = error.status;
      const local: boolean = error.local;
      const key: string | undefined = error.idempotencyKey;
      const reasons: string[] = error.reasons;
      const detail: string | undefined = error.problem?.detail;
      for (const reply of error.fragmentReplies) {
        const kind: ErrorKindName | undefined = reply.error?.type;
        const property: string | undefined = reply.error?.property;
        console.log(kind, property, reply.error?.message);
      }
      console.log(status, local, key, reasons, detail, error.type, error.fragments.length, error.message);
    } else if (error instanceof JetstreamError) {
      console.log(error.status, error.problem?.title, error.type);
    }
  }

  // add / set / remove.
  const shape: string = scope.add("Shape", { x: 10, y: 20, color: 0xff0000ff, label: "box" });
  scope.add("Shape", { x: 1, y: 1 }, { parent: root, key: "shapes", before: shape, uuid: "7b7c…" });
  scope.add("Shape");
  const moved: Promise<{ version: number }> = scope.set(shape, { x: 30, y: 40 });
  await moved;
  await scope.set(root, { shapes: { insert: [shape], before: null } });
  await scope.remove(shape);

  // Server methods: a call with a stub whose edits show until the server's change set comes.
  const tidy: MethodAnswer<{ moved: number; columns: number }> = await scope.call<{ moved: number; columns: number }>(
    "arrange", { columns: 3 }, {
      stub: (view: StubView) => {
        const order = view.get(view.rootUUID)?.properties.shapes;
        if (Array.isArray(order)) order.forEach((uuid, index) => view.set(String(uuid), { x: 20 + index * 120 }));
      },
    });
  console.log(tidy.version, tidy.method, tidy.result.moved, tidy.fragments.length);
  await scope.call("arrange");
  try {
    await scope.call("shuffle", {});
  } catch (error) {
    if (error instanceof Rejection) console.log(error.method, error.problem?.reason, error.reasons[0]);
  }

  // status narrowing: the four states, exhaustively.
  const describeStatus = (status: Status): string => {
    switch (status) {
      case "connecting": return "connecting…";
      case "live": return "live";
      case "reconnecting": return "reconnecting…";
      case "closed": return "closed";
      default: {
        const never: never = status;
        return never;
      }
    }
  };
  console.log(describeStatus(scope.status));
  const stopStatus: () => void = scope.onStatus((status) => console.log(describeStatus(status)));
  stopStatus();
  scope.onStatus((status: Status, { attempt }: StatusDetail) => console.log(status, attempt === scope.reconnectAttempt))();

  const stopRejected: () => void = scope.onRejected((rejection: Rejection) => {
    console.log(rejection.status, rejection.reasons, rejection.fragmentReplies[0]?.error?.type);
  });
  stopRejected();

  const snapshot = scope.snapshot();
  console.log(snapshot.version, snapshot.rootUUID, snapshot.fragments.map((fragment) => fragment.uuid));

  // The past: undo, restore, a state at a version, history pages.
  const undoable: number = scope.undoableCount;
  const undone: UndoResult | null = await scope.undo();
  if (undone) {
    const reverted: number = undone.revertOf;
    for (const skip of undone.skipped) console.log(skip.version, skip.reason, skip.conflicts?.[0]?.property);
    console.log(undone.version, reverted, undoable);
  }
  const restored: ChangeSetAnswer = await scope.restore(3, { ifMatch: scope.version });
  console.log(restored.version, restored.fragments.length, restored.removed);
  const past: StateJSON = await scope.stateAt(2);
  console.log(past.version, past.rootUUID, past.fragments.length);
  const page: HistoryPage = await scope.history({ since: 0, limit: 50 });
  for (const record of page.changesets) {
    const subject: string | null = record.subject;
    console.log(record.version, record.at, subject, record.revertOf, record.restoredFrom);
  }
  await scope.history();

  // Presence: who is here.
  const presence: Presence = scope.presence;
  await presence.set({ x: 10, y: 20, color: "#e4572e", label: "Ada" });
  const me: string = presence.client;
  const others: readonly PresenceMember[] = presence.others;
  for (const { client, subject, data } of others) console.log(client, subject ?? "anonymous", data.label, client === me);
  const stopPresence: () => void = presence.subscribe((now, change: PresenceChange) => {
    const state: "join" | "update" | "leave" = change.state;
    console.log(now.length, change.client, state, change.data?.x);
  });
  stopPresence();
  await presence.leave();
  scope.close();
}

// The layers under openScope.
export function layers(json: { models: Record<string, unknown> }): void {
  const schema = new Schema(json);
  console.log(schema.rootClass("canvas-1")?.name);
  const core = new SyncCore(schema, { clientId: "test" });
  core.load({ version: 0, rootUUID: "r", fragments: [] });
  const { set, notification } = core.local([{ type: "change", uuid: "r", clsName: "Canvas", properties: { name: "x" } }]);
  console.log(set.key, set.status, notification.local);
  const next = core.nextToSend();
  if (next) core.accepted(next, 1);
  const outcome = core.event({ version: 1, fragments: [], idempotencyKey: set.key });
  if (outcome && "gap" in outcome) console.log("reconnect");
  else if (outcome && "inconsistent" in outcome) console.log("full state", outcome.replies.length);
  const state = ScopeState.fromJSON({ version: 0, rootUUID: "r", fragments: [] });
  const applied = applyChangeSet(state.clone(), schema, []);
  if (applied.ok) console.log(applied.removed);
  else console.log(applied.replies.length);
  // The schema's write rules: what the server judges, and `immutable`, which the client checks too.
  const shape = schema.modelClass("Shape");
  const write: WriteRule | undefined = shape?.rules.write;
  const fixed: boolean | undefined = shape?.properties.get("x")?.immutable;
  const refused = applyChangeSet(state.clone(), schema, [], { checkImmutable: true });
  const kinds: ErrorKindName[] = ["forbidden", "immutable"];
  if (!refused.ok) console.log(write, fixed, kinds.includes(refused.replies[0]?.error?.type ?? "immutable"));
  const order: string[] = applyOperation(["a", "b"], { insert: ["c"], before: "a" });
  const delay: number = backoffDelay(3, { initial: 50 }, Math.random);
  const parser = new SSEParser(({ type, id, data }) => console.log(type, id, data), (comment) => console.log(comment));
  parser.feed("data: x\n\n");
  console.log(order, delay);

  // The policies a transport asks after a stream ends or a POST is answered.
  const reconnection = new ReconnectionPolicy({ spinWindow: 1000 });
  reconnection.opened();
  const decision = reconnection.ended(StreamEnd.closing, 5000);
  if (decision.action === "backoff") console.log(backoffDelay(decision.attempt - 1));
  const lastEventId: number | null = reconnection.lastEventId(core.version);
  const shown: Status = reconnection.status.status;
  const sending = new SendRetryPolicy();
  const answer = sending.answered({ status: 503, retryAfter: "2" });
  if (answer.action === "wait") console.log(answer.seconds * 1000);
  sending.answered({ network: true });
  const own = new UndoHistory(100);
  own.accepted(4);
  const candidate: number | undefined = own.next();
  if (candidate !== undefined) own.putBack(candidate);
  own.gone(1);
  console.log(own.count, own.versions.length);
  console.log(lastEventId, shown, decision.refreshToken, decision.fullState);

  // Which scopes a shared stream asks for.
  const carried = new StreamScopes();
  carried.join("canvas-1");
  const params: string[] = carried.request(() => core.version);
  const refusal = carried.refused(404, { type: "/problems/not-found", scope: "canvas-1" });
  if ("stop" in refusal && refusal.stop !== undefined) console.log(refusal.reason);
  if (carried.stale) carried.opened();
  carried.ended(StreamEnd.inconsistent, "canvas-1");
  console.log(params, carried.size);
}
