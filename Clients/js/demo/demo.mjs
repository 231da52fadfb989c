// The shared-canvas demo: the original Jetstream README's canvas of shapes, on jetstream.mjs.
// Every window on the same address (?scope=NAME, default "demo") edits the same scope; Undo
// reverts this window's last edit, History shows (and restores) the canvas as it was; each window
// sees the others' pointers and who is here (presence; ?name= sets this window's label); Tidy up
// calls the server's `arrange` method with a stub that lays the grid out at once. Plain
// DOM, no framework, no build step. `window.demo` exposes the scope and a few counters for tests.
import { openScope } from "../client/jetstream.mjs";

const params = new URLSearchParams(location.search);
const scopeName = params.get("scope") ?? "demo";
// The gateway's base: one level up from /demo/, so the page also works under a proxy prefix.
const baseURL = new URL("..", location.href).href.replace(/\/$/, "");
const COLORS = [0x93c5fdff, 0xfca5a5ff, 0x86efacff, 0xfde68aff, 0xc4b5fdff, 0xf9a8d4ff];
const SEND_INTERVAL_MS = 50;
/** Pointer positions go to the others at most this often (20 a second), the last one always. */
const POINTER_INTERVAL_MS = 50;
const POINTER_COLORS = ["#e4572e", "#2563eb", "#16a34a", "#9333ea", "#d97706", "#0891b2", "#db2777"];
const me = {
  label: params.get("name") ?? `Guest ${Math.floor(10 + Math.random() * 90)}`,
  color: POINTER_COLORS[Math.floor(Math.random() * POINTER_COLORS.length)],
};

const $ = (id) => document.getElementById(id);
const canvas = $("canvas");
const elements = new Map();
let selected = null;

const demo = (window.demo = {
  scope: null,
  ready: false,
  rejections: [],
  renders: 0,
  lastRenderAt: 0,
  error: null,
  /** The version shown from the history (read-only), or null: the live canvas. */
  viewing: null,
  /** The versions the history slider offers, oldest first; the last one is live. */
  versions: [],
  /** Every message shown, oldest first: `{text, kind}`. */
  messages: [],
  /** The shapes in the canvas's order, as `{uuid, ...properties}`. */
  shapes() {
    const root = demo.scope.get(demo.scope.rootUUID);
    return root.properties.shapes.map((uuid) => ({ uuid, ...demo.scope.get(uuid).properties }));
  },
  select: (uuid) => select(uuid),
  /** This window's label and colour, and how many presence updates it sent. */
  me,
  pointerUpdates: 0,
  /** Whether a Tidy up is waiting for the server, and the results of this window's Tidy ups
   *  (`{moved, columns}`), oldest first. */
  tidying: false,
  tidyResults: [],
  /** The other windows present, as `scope.presence.others` says. */
  others: () => demo.scope?.presence.others ?? [],
});

const cssColor = (color) => (color === null || color === undefined ? "#e5e7eb" : `#${(color >>> 0).toString(16).padStart(8, "0")}`);

function showToast(text, kind = "error") {
  demo.messages.push({ text, kind });
  const toast = $("toast");
  toast.textContent = text;
  toast.classList.toggle("info", kind === "info");
  toast.hidden = false;
  clearTimeout(showToast.timer);
  showToast.timer = setTimeout(() => { toast.hidden = true; }, 5000);
}

function reportRejection(rejection) {
  demo.rejections.push({ reasons: rejection.reasons, local: rejection.local, status: rejection.status, method: rejection.method, at: Date.now() });
  const what = rejection.method === "arrange" ? "Tidy up refused" : "Refused";
  showToast(`${what}${rejection.local ? "" : " by the server"}: ${rejection.reasons.join("; ")}`);
  for (const fragment of rejection.fragments ?? []) {
    const element = elements.get(fragment.uuid);
    if (element) { element.classList.remove("sprung"); void element.offsetWidth; element.classList.add("sprung"); }
  }
  if (selected) fillInspector();
}

// -- rendering ------------------------------------------------------------------------------------

function shapeElement(uuid) {
  let element = elements.get(uuid);
  if (element) return element;
  element = document.createElement("div");
  element.className = "shape";
  element.dataset.uuid = uuid;
  const label = document.createElement("span");
  label.className = "label";
  const handle = document.createElement("div");
  handle.className = "handle";
  element.append(label, handle);
  element.addEventListener("pointerdown", (event) => startDrag(event, uuid, event.target === handle ? "resize" : "move"));
  element.addEventListener("dblclick", () => { select(uuid); $("f-label").focus(); $("f-label").select(); });
  canvas.append(element);
  elements.set(uuid, element);
  return element;
}

function renderShape(uuid, properties) {
  const element = shapeElement(uuid);
  const { x, y, width, height, color, label, kind } = properties;
  Object.assign(element.style, { left: `${x}px`, top: `${y}px`, width: `${width}px`, height: `${height}px`, background: cssColor(color) });
  element.classList.toggle("oval", kind === "oval");
  element.firstChild.textContent = label;
}

function renderOrder() {
  const root = demo.scope.get(demo.scope.rootUUID);
  const order = root.properties.shapes;
  const present = new Set(order);
  order.forEach((uuid, index) => {
    const object = demo.scope.get(uuid);
    if (!object) return;
    if (!elements.has(uuid)) renderShape(uuid, object.properties);
    elements.get(uuid).style.zIndex = String(index + 1);
  });
  for (const uuid of [...elements.keys()]) if (!present.has(uuid)) removeShape(uuid);
}

function removeShape(uuid) {
  elements.get(uuid)?.remove();
  elements.delete(uuid);
  if (selected === uuid) select(null);
}

function render(notification) {
  const scope = demo.scope;
  if (demo.viewing !== null) {
    // The past is on screen: the live canvas is drawn again on the way back.
    if (notification.deleted) showToast("This scope was deleted. Reload to start a new one.");
    updatePending();
    return;
  }
  let rootChanged = false;
  for (const fragment of notification.fragments) {
    if (fragment.uuid === scope.rootUUID) rootChanged = true;
    else if (fragment.clsName === "Shape") renderShape(fragment.uuid, fragment.properties);
  }
  for (const uuid of notification.removed) removeShape(uuid);
  if (rootChanged) renderOrder();
  if (selected && notification.fragments.some((f) => f.uuid === selected) && !document.activeElement?.id?.startsWith("f-")) fillInspector();
  if (notification.deleted) showToast("This scope was deleted. Reload to start a new one.");
  updatePending();
  demo.renders += 1;
  demo.lastRenderAt = performance.timeOrigin + performance.now();
}

function updatePending() { $("pending").textContent = `${demo.scope.pendingCount} pending`; }

// -- selection and the inspector ------------------------------------------------------------------

function select(uuid) {
  if (demo.viewing !== null) uuid = null;   // the past is read-only
  if (selected) elements.get(selected)?.classList.remove("selected");
  selected = uuid && demo.scope.get(uuid) ? uuid : null;
  if (selected) elements.get(selected)?.classList.add("selected");
  $("inspector").hidden = !selected;
  $("delete").disabled = !selected;
  if (selected) fillInspector();
}

function fillInspector() {
  const object = selected && demo.scope.get(selected);
  if (!object) return;
  const p = object.properties;
  $("f-label").value = p.label;
  for (const name of ["x", "y", "width", "height"]) $(`f-${name}`).value = String(Math.round(p[name] * 100) / 100);
  $("f-kind").value = p.kind;
}

function edit(properties) {
  if (!selected || demo.viewing !== null) return;
  demo.scope.set(selected, properties).catch((rejection) => {
    if (rejection.local) reportRejection(rejection);   // the server's refusals come through onRejected
  });
}

function wireInspector() {
  $("f-label").addEventListener("change", (event) => edit({ label: event.target.value }));
  for (const name of ["x", "y", "width", "height"]) {
    $(`f-${name}`).addEventListener("change", (event) => {
      const value = Number(event.target.value);
      if (event.target.value.trim() === "" || !Number.isFinite(value)) { fillInspector(); return; }
      edit({ [name]: value });
    });
  }
  $("f-kind").addEventListener("change", (event) => edit({ kind: event.target.value }));
}

// -- pointer editing: drag to move, the corner to resize --------------------------------------------

function startDrag(event, uuid, mode) {
  if (event.button !== 0 || demo.viewing !== null) return;
  event.preventDefault();
  select(uuid);
  canvas.focus();
  const element = elements.get(uuid);
  const start = demo.scope.get(uuid).properties;
  const origin = { x: event.clientX, y: event.clientY };
  let lastSent = 0;
  let latest = null;
  let timer = null;
  element.classList.add("dragging");
  element.setPointerCapture(event.pointerId);

  const send = () => {
    timer = null;
    if (!latest || !demo.scope.get(uuid)) return;
    lastSent = performance.now();
    demo.scope.set(uuid, latest).catch(() => {});   // refusals reach onRejected
    latest = null;
  };
  const move = (moveEvent) => {
    const dx = moveEvent.clientX - origin.x, dy = moveEvent.clientY - origin.y;
    latest = mode === "move"
      ? { x: Math.round(start.x + dx), y: Math.round(start.y + dy) }
      : { width: Math.max(10, Math.round(start.width + dx)), height: Math.max(10, Math.round(start.height + dy)) };
    // Throttled: at most one change set per SEND_INTERVAL_MS while dragging, and the last one on release.
    const wait = SEND_INTERVAL_MS - (performance.now() - lastSent);
    if (wait <= 0) send(); else timer ??= setTimeout(send, wait);
  };
  const end = () => {
    element.classList.remove("dragging");
    element.removeEventListener("pointermove", move);
    element.removeEventListener("pointerup", end);
    element.removeEventListener("pointercancel", end);
    clearTimeout(timer);
    send();
  };
  element.addEventListener("pointermove", move);
  element.addEventListener("pointerup", end);
  element.addEventListener("pointercancel", end);
}

function addShape(kind) {
  if (demo.viewing !== null) return;
  const bounds = canvas.getBoundingClientRect();
  const width = kind === "oval" ? 110 : 140, height = kind === "oval" ? 110 : 90;
  const count = demo.scope.get(demo.scope.rootUUID).properties.shapes.length;
  const uuid = demo.scope.add("Shape", {
    x: Math.round(40 + Math.random() * Math.max(0, bounds.width - width - 80)),
    y: Math.round(30 + Math.random() * Math.max(0, bounds.height - height - 60)),
    width, height, kind, color: COLORS[count % COLORS.length], label: `${kind === "oval" ? "Oval" : "Box"} ${count + 1}`,
  });
  select(uuid);
}

function wireToolbar() {
  $("add-rect").addEventListener("click", () => addShape("rect"));
  $("add-oval").addEventListener("click", () => addShape("oval"));
  $("delete").addEventListener("click", () => { if (selected) demo.scope.remove(selected).catch(() => {}); });
  $("undo").addEventListener("click", undo);
  $("tidy").addEventListener("click", tidyUp);
  $("history-open").addEventListener("click", openHistory);
  $("history-slider").addEventListener("input", (event) => showVersion(Number(event.target.value)));
  $("history-live").addEventListener("click", backToLive);
  $("history-restore").addEventListener("click", restoreShown);
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.shiftKey && event.key.toLowerCase() === "z"
        && !(event.target instanceof HTMLInputElement)) {
      event.preventDefault();
      undo();
    }
  });
  for (const color of COLORS) {
    const swatch = document.createElement("button");
    swatch.type = "button";
    swatch.style.background = cssColor(color);
    swatch.title = "Colour the selected shape";
    swatch.dataset.color = String(color);
    swatch.addEventListener("click", () => edit({ color }));
    $("swatches").append(swatch);
  }
  canvas.addEventListener("pointerdown", (event) => { if (event.target === canvas) select(null); });
  canvas.addEventListener("keydown", (event) => {
    if ((event.key === "Delete" || event.key === "Backspace") && selected) demo.scope.remove(selected).catch(() => {});
  });
}

// -- tidy up: the server's arrange method, with a stub --------------------------------------------

/**
 * What the server's `arrange` does with `{}` (docs/methods.md, "The demo's arrange"), done on the
 * stub's view so the shapes jump at once: a grid in the canvas's order, the smallest square that
 * holds them, each cell as wide and high as the largest shape plus 20. The server's change set
 * (equal, unless someone moved a shape meanwhile) replaces it when it comes.
 */
function arrangeStub(view) {
  const shapes = view.get(view.rootUUID).properties.shapes.map((uuid) => view.get(uuid)).filter(Boolean);
  const columns = Math.max(1, Math.ceil(Math.sqrt(shapes.length)));
  const largest = (name) => (shapes.length === 0 ? 100 : Math.max(...shapes.map((shape) => shape.properties[name])));
  const cellWidth = largest("width") + 20, cellHeight = largest("height") + 20;
  shapes.forEach((shape, index) => {
    const x = 20 + (index % columns) * cellWidth, y = 20 + Math.floor(index / columns) * cellHeight;
    if (shape.properties.x !== x || shape.properties.y !== y) view.set(shape.uuid, { x, y });
  });
}

async function tidyUp() {
  if (demo.viewing !== null || demo.tidying) return;
  // One at a time: the button stays disabled until the server answers.
  demo.tidying = true;
  $("tidy").disabled = true;
  try {
    const answer = await demo.scope.call("arrange", {}, { stub: arrangeStub });
    demo.tidyResults.push(answer.result);
  } catch (error) {
    // A refusal (rolled back already) reaches onRejected, which shows its reason.
    if (error?.name !== "Rejection") showToast(`Tidy up failed: ${error.message}`);
  } finally {
    demo.tidying = false;
    $("tidy").disabled = demo.viewing !== null;
  }
}

// -- undo and history -----------------------------------------------------------------------------

async function undo() {
  if (demo.viewing !== null) return;
  const scope = demo.scope;
  if (scope.undoableCount === 0 && scope.pendingCount === 0) { showToast("Nothing to undo.", "info"); return; }
  $("undo").disabled = true;
  try {
    const undone = await scope.undo();
    const passed = undone?.skipped.filter((skip) => skip.reason === "conflict").length ?? 0;
    // A later edit that touched the same properties (or objects) keeps an edit from being undone.
    if (undone === null) showToast("Nothing left to undo: later edits build on what yours changed.", "info");
    else if (passed > 0) showToast(`Undone. ${passed} newer edit${passed === 1 ? "" : "s"} of yours could not be undone: later edits build on ${passed === 1 ? "it" : "them"}.`, "info");
  } catch (error) {
    showToast(`Undo failed: ${error.message}`);
  } finally {
    $("undo").disabled = false;
  }
}

/** Every retained version, oldest first: `history()` pages from the start of what is kept. */
async function retainedVersions() {
  const records = [];
  let since = 0;
  for (;;) {
    let page;
    try {
      page = await demo.scope.history({ since, limit: 1000 });
    } catch (error) {
      const oldest = error.problem?.oldestVersion;
      if (error.status === 410 && Number.isInteger(oldest) && oldest > since) { since = oldest; continue; }
      throw error;
    }
    records.push(...page.changesets);
    if (page.changesets.length === 0 || records.at(-1).version >= page.version) return records;
    since = records.at(-1).version;
  }
}

async function openHistory() {
  try {
    const records = await retainedVersions();
    if (records.length === 0) { showToast("No history yet: edit the canvas first.", "info"); return; }
    demo.versions = records;
    const slider = $("history-slider");
    slider.max = String(records.length - 1);
    slider.value = slider.max;
    $("history").hidden = false;
    await showVersion(records.length - 1);
  } catch (error) {
    showToast(`Could not read the history: ${error.message}`);
  }
}

function describeRecord(record, live) {
  const time = new Date(record.at).toLocaleTimeString();
  const who = record.subject ?? "anonymous";
  const what = record.revertOf !== undefined ? ` · undo of v${record.revertOf}`
    : record.restoredFrom !== undefined ? ` · restore of v${record.restoredFrom}` : "";
  return `v${record.version}${live ? " (live)" : ""} · ${time} · ${who}${what}`;
}

/** Shows version `index` of the slider: the newest one is the live canvas, any other the past. */
async function showVersion(index) {
  const record = demo.versions[index];
  if (!record) return;
  const live = index === demo.versions.length - 1;
  $("history-info").textContent = describeRecord(record, live);
  $("history-restore").disabled = live;
  if (live) { leavePast(); return; }
  const token = (showVersion.token = (showVersion.token ?? 0) + 1);
  try {
    const state = await demo.scope.stateAt(record.version);
    if (token !== showVersion.token) return;   // the slider moved on meanwhile
    enterPast(state);
  } catch (error) {
    showToast(`Could not show version ${record.version}: ${error.message}`);
  }
}

/** Draws a state read with `stateAt`, read-only. */
function enterPast(state) {
  select(null);
  demo.viewing = state.version;
  document.body.classList.add("past");
  for (const id of ["add-rect", "add-oval", "undo", "tidy"]) $(id).disabled = true;
  for (const uuid of [...elements.keys()]) removeShape(uuid);
  const objects = new Map(state.fragments.map((fragment) => [fragment.uuid, fragment]));
  (objects.get(state.rootUUID)?.properties.shapes ?? []).forEach((uuid, index) => {
    const shape = objects.get(uuid);
    if (!shape) return;
    renderShape(uuid, shape.properties);
    elements.get(uuid).style.zIndex = String(index + 1);
  });
  demo.renders += 1;
}

/** Back to the live canvas, drawn again from the scope. */
function leavePast() {
  showVersion.token = (showVersion.token ?? 0) + 1;
  if (demo.viewing === null) return;
  demo.viewing = null;
  document.body.classList.remove("past");
  for (const id of ["add-rect", "add-oval", "undo"]) $(id).disabled = false;
  $("tidy").disabled = demo.tidying;
  for (const uuid of [...elements.keys()]) removeShape(uuid);
  renderOrder();
  demo.renders += 1;
}

function backToLive() {
  leavePast();
  $("history").hidden = true;
}

async function restoreShown() {
  const version = demo.viewing;
  if (version === null) return;
  $("history-restore").disabled = true;
  try {
    const answer = await demo.scope.restore(version);
    backToLive();
    showToast(answer.fragments.length + answer.removed.length > 0
      ? `Restored version ${version}: it is the live canvas now (Undo takes it back).`
      : `The live canvas already is version ${version}.`, "info");
  } catch (error) {
    $("history-restore").disabled = false;
    showToast(`Could not restore version ${version}: ${error.message}`);
  }
}

// -- presence: the others' pointers and who is here -------------------------------------------------

const pointers = new Map();

/** Sends this window's pointer (null when it is off the canvas), at most every POINTER_INTERVAL_MS. */
function sharePointer(x, y) {
  sharePointer.next = { x, y, color: me.color, label: me.label };
  if (sharePointer.timer) return;
  const wait = Math.max(0, POINTER_INTERVAL_MS - (performance.now() - (sharePointer.sentAt ?? -Infinity)));
  sharePointer.timer = setTimeout(() => {
    sharePointer.timer = null;
    sharePointer.sentAt = performance.now();
    demo.pointerUpdates += 1;
    demo.scope.presence.set(sharePointer.next).catch((error) => showToast(`Could not share your pointer: ${error.message}`));
  }, wait);
}

function wirePresence(scope) {
  canvas.addEventListener("pointermove", (event) => {
    const box = canvas.getBoundingClientRect();
    sharePointer(Math.round(event.clientX - box.left), Math.round(event.clientY - box.top));
  });
  canvas.addEventListener("pointerleave", () => sharePointer(null, null));
  scope.presence.subscribe(renderPresence);
  sharePointer(null, null);   // here, pointer elsewhere: the others list this window at once
  renderPresence(scope.presence.others);
}

function renderPresence(others) {
  const present = new Set();
  for (const { client, data } of others) {
    if (!Number.isFinite(data?.x) || !Number.isFinite(data?.y)) continue;
    present.add(client);
    let pointer = pointers.get(client);
    if (!pointer) {
      pointer = document.createElement("div");
      pointer.className = "pointer";
      pointer.dataset.client = client;
      pointer.append(document.createElement("span"));
      canvas.append(pointer);
      pointers.set(client, pointer);
    }
    pointer.style.transform = `translate(${data.x}px, ${data.y}px)`;
    pointer.style.setProperty("--pointer", String(data.color ?? "#6b7383"));
    pointer.firstChild.textContent = String(data.label ?? "someone");
  }
  for (const [client, pointer] of pointers) {
    if (!present.has(client)) { pointer.remove(); pointers.delete(client); }
  }
  const chip = (label, color, client) => {
    const element = document.createElement("span");
    element.className = "who";
    element.style.setProperty("--pointer", color);
    element.textContent = label;
    if (client) element.dataset.client = client;
    return element;
  };
  const you = chip(`${me.label} (you)`, me.color);
  you.classList.add("you");
  $("here-list").replaceChildren(you, ...others.map(({ client, data }) => chip(String(data?.label ?? "someone"), String(data?.color ?? "#6b7383"), client)));
}

// -- start ------------------------------------------------------------------------------------------

async function start() {
  $("scope-name").textContent = scopeName;
  wireToolbar();
  wireInspector();
  try {
    // ?token= for a server with auth; ?transport=eventsource to try the EventSource fallback.
    const token = params.get("token") ?? undefined;
    const transport = params.get("transport") ?? "auto";
    const scope = await openScope(scopeName, { baseURL, token, transport, create: { clsName: "Canvas" } });
    demo.scope = scope;
    const badge = $("badge");
    const showStatus = (status) => { badge.textContent = status; badge.dataset.status = status; };
    showStatus(scope.status);
    scope.onStatus(showStatus);
    scope.onRejected(reportRejection);
    scope.subscribe(render);
    renderOrder();
    wirePresence(scope);
    setInterval(updatePending, 300);
    demo.ready = true;
  } catch (error) {
    demo.error = String(error?.message ?? error);
    $("badge").textContent = "error";
    $("badge").dataset.status = "closed";
    showToast(`Could not open scope ${scopeName}: ${demo.error}`);
  }
}

start();
