// The shared-canvas demo: the original Jetstream README's canvas of shapes, on jetstream.mjs.
// Every window on the same address (?scope=NAME, default "demo") edits the same scope. Plain DOM,
// no framework, no build step. `window.demo` exposes the scope and a few counters for tests.
import { openScope } from "../client/jetstream.mjs";

const params = new URLSearchParams(location.search);
const scopeName = params.get("scope") ?? "demo";
// The gateway's base: one level up from /demo/, so the page also works under a proxy prefix.
const baseURL = new URL("..", location.href).href.replace(/\/$/, "");
const COLORS = [0x93c5fdff, 0xfca5a5ff, 0x86efacff, 0xfde68aff, 0xc4b5fdff, 0xf9a8d4ff];
const SEND_INTERVAL_MS = 50;

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
  /** The shapes in the canvas's order, as `{uuid, ...properties}`. */
  shapes() {
    const root = demo.scope.get(demo.scope.rootUUID);
    return root.properties.shapes.map((uuid) => ({ uuid, ...demo.scope.get(uuid).properties }));
  },
  select: (uuid) => select(uuid),
});

const cssColor = (color) => (color === null || color === undefined ? "#e5e7eb" : `#${(color >>> 0).toString(16).padStart(8, "0")}`);

function showToast(text) {
  const toast = $("toast");
  toast.textContent = text;
  toast.hidden = false;
  clearTimeout(showToast.timer);
  showToast.timer = setTimeout(() => { toast.hidden = true; }, 5000);
}

function reportRejection(rejection) {
  demo.rejections.push({ reasons: rejection.reasons, local: rejection.local, status: rejection.status, at: Date.now() });
  showToast(`Refused${rejection.local ? "" : " by the server"}: ${rejection.reasons.join("; ")}`);
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
  if (!selected) return;
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
  if (event.button !== 0) return;
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
