// Lookout status page: state arrives as Server-Sent Events, the image as MJPEG.
// Plain DOM and canvas, no libraries: the page must work with no internet access.
"use strict";

const CHART_WINDOW_S = 300;
const $ = (id) => document.getElementById(id);

let imageOn = false;
let wasLive = false; // whether the count was known at the last render
let streamIds = "";
let lastState = null; // the device's state as last pushed (switching cameras re-renders it)
// The camera shown, with several: kept in the address (#camera=till), so a reload or a
// link shows the same one.
let selected = decodeURIComponent((location.hash.match(/camera=([^&]*)/) || [])[1] || "");

function setBadge(el, text, level) {
  el.textContent = text;
  el.classList.remove("ok", "warn", "bad");
  if (level) el.classList.add(level);
}

function levelOf(state) {
  if (state === "running" || state === "connected") return "ok";
  if (state === "failed" || state === "ended" || state === "closed" || state === "refused") return "bad";
  return "warn";
}

function renderBudget(budget) {
  // The spending cap (--budget-tokens, --budget-session): shown only when one is set.
  const badge = $("budget-state");
  badge.hidden = !budget;
  if (!budget) return;
  const used = [];
  for (const [window, name] of [["hour", "an hour"], ["session", "this run"]]) {
    const b = budget[window];
    if (b && b.limit !== null) used.push(`${b.used} of ${b.limit} tokens ${name}`);
  }
  setBadge(badge, `budget: ${budget.state}`, { normal: "ok", saving: "warn" }[budget.state] || "bad");
  const held = budget.state === "normal" ? "" : budget.state === "saving"
    ? " · no frames, no looks" : " · updates to the model at most one a minute";
  badge.title = used.join(" · ") + held;
}

function clockTime(iso) {
  // "2026-12-01T12:03:10" -> "12:03:10" (the device's local time, as it said it).
  return iso ? iso.slice(11, 19) : "";
}

function fmtSeconds(s) {
  if (s < 60) return `${s.toFixed(0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.floor(s % 60)} s`;
}

function fmtRunning(s) {
  // The streams table's column: short, so the table fits beside the image.
  if (s < 60) return `${s.toFixed(0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function several(state) {
  return Boolean(state.camera_names && state.camera_names.length > 1);
}

function ofCamera(state, path) {
  // A camera's image route: the first camera's without a name (one camera: as before).
  return several(state) ? `${path}?camera=${encodeURIComponent(state.camera)}` : path;
}

function view(state) {
  // What the page shows: the device's state with the selected camera's over it. The
  // health badge stays the device's; the camera's is its tab's.
  const names = state.camera_names || [];
  if (!names.length) return state;
  if (!names.includes(selected)) selected = names[0];
  const camera = state.cameras[selected];
  return { ...state, ...camera, camera: selected, health: state.health, camera_health: camera.health };
}

function keepsUp(p) {
  // "the detector keeps up with 3.1 of 5 detections a second", when it does not keep up.
  if (!p || !p.behind || p.achieved_fps === null || p.achieved_fps === undefined) return "";
  return `the detector keeps up with ${p.achieved_fps.toFixed(1)} of ${p.detect_fps} detections a second`;
}

function renderCameras(state) {
  // One tab a camera (hidden for one): its name, whether it counts, its count.
  const nav = $("cameras");
  nav.hidden = !several(state);
  if (nav.hidden) return;
  const names = state.camera_names;
  if (nav.dataset.names !== names.join("\n")) {
    nav.dataset.names = names.join("\n");
    nav.replaceChildren();
    for (const name of names) {
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.camera = name;
      const dot = document.createElement("span");
      dot.className = "dot";
      const label = document.createElement("span");
      label.textContent = name;
      const count = document.createElement("span");
      count.className = "tab-count";
      button.append(dot, label, count);
      button.addEventListener("click", () => choose(name));
      nav.appendChild(button);
    }
  }
  const editing = document.body.classList.contains("editing");
  for (const button of nav.querySelectorAll("button")) {
    const camera = state.cameras[button.dataset.camera];
    const known = camera.count !== null && camera.count !== undefined;
    button.setAttribute("aria-pressed", String(button.dataset.camera === selected));
    button.querySelector(".tab-count").textContent = known ? String(camera.count) : "–";
    const behind = keepsUp(camera.perception);
    const level = !camera.health.ok ? "" : behind ? "warn" : "ok";
    button.querySelector(".dot").className = `dot ${level}`;
    button.disabled = editing && button.dataset.camera !== selected;
    button.title = editing ? "save or cancel the edit first"
      : [camera.health.ok ? "counting" : camera.health.reason, behind].filter(Boolean).join(" · ");
  }
}

function choose(name) {
  if (name === selected || !lastState) return;
  selected = name;
  history.replaceState(null, "", `#camera=${encodeURIComponent(name)}`);
  imageOn = false; // the stream of the camera chosen
  wasLive = false;
  render(lastState);
}

function renderImage(state) {
  const img = $("frame");
  const placeholder = $("no-image");
  if (state.privacy) {
    // Privacy mode: no image is ever requested, not even the MJPEG stream.
    img.hidden = true;
    img.removeAttribute("src");
    imageOn = false;
    placeholder.hidden = false;
    placeholder.textContent = several(state)
      ? `Privacy mode: no image of ${state.camera} leaves the device.`
      : "Privacy mode: no image leaves the device.";
    $("snapshot-link").hidden = true;
    return;
  }
  $("snapshot-link").hidden = false;
  $("snapshot-link").setAttribute("href", ofCamera(state, "snapshot.jpg"));
  if (state.frame_seq === 0 && !imageOn) {
    // This camera has shown no frame yet (another one may have): nothing to show.
    img.hidden = true;
    img.removeAttribute("src");
    placeholder.hidden = false;
    placeholder.textContent = "Waiting for the first frame…";
  }
  const live = state.count !== null && state.count !== undefined;
  if (state.frame_seq > 0 && (!imageOn || (live && !wasLive))) {
    // First frame, or frames again after an outage (the server ends a stream that has
    // had no frame for a while): open the stream (again).
    imageOn = true;
    const stream = ofCamera(state, "stream.mjpg");
    img.src = `${stream}${stream.includes("?") ? "&" : "?"}t=${Date.now()}`;
    img.hidden = false;
    placeholder.hidden = true;
  }
  wasLive = live;
}

function renderStreams(streams) {
  const body = $("streams").querySelector("tbody");
  const ids = streams.map((s) => s.id).join("\n");
  if (ids !== streamIds) {
    // Rebuild only when the set of calls changes, so a Stop button is never
    // replaced under the pointer by a routine update.
    streamIds = ids;
    body.replaceChildren();
    for (const s of streams) {
      const row = document.createElement("tr");
      row.dataset.callId = s.id;
      for (const key of ["name", "by", "id", "running", "emissions"]) {
        const cell = document.createElement("td");
        cell.dataset.key = key;
        if (key === "running" || key === "emissions") cell.className = "num";
        // A call id is long and opaque: shortened with an ellipsis, whole in its title.
        if (key === "id") cell.appendChild(document.createElement("span")).className = "call-id";
        row.appendChild(cell);
      }
      const action = document.createElement("td");
      action.className = "action";
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Stop";
      button.className = "stop";
      button.addEventListener("click", () => stopStream(s.name, s.id, button));
      action.appendChild(button);
      row.appendChild(action);
      body.appendChild(row);
    }
  }
  for (const s of streams) {
    const row = body.querySelector(`tr[data-call-id="${CSS.escape(s.id)}"]`);
    if (!row) continue;
    row.querySelector('[data-key="name"]').textContent = s.name;
    row.querySelector('[data-key="by"]').textContent = s.by || "model";
    row.querySelector('[data-key="id"] .call-id').textContent = s.id;
    row.querySelector('[data-key="id"]').title = s.id;
    row.querySelector('[data-key="running"]').textContent = fmtRunning(s.running_s);
    row.querySelector('[data-key="emissions"]').textContent = String(s.emissions);
  }
  $("streams").hidden = streams.length === 0;
  $("no-streams").hidden = streams.length !== 0;
}

function renderStart(startable, streams) {
  // Start runs the tool's stream as a device call: recorded, not sent to any model.
  const box = $("start-buttons");
  const wanted = startable.filter((name) => !streams.some((s) => s.name === name && s.by === "device"));
  const key = wanted.join("\n");
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren();
  for (const name of wanted) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "start";
    button.textContent = `Start ${name} (device)`;
    button.addEventListener("click", () => startStream(name, button));
    box.appendChild(button);
  }
}

async function startStream(name, button) {
  button.disabled = true;
  $("stream-message").textContent = `Starting ${name}…`;
  try {
    const response = await fetch("api/streams/start", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ function_name: name }),
    });
    const result = await response.json();
    $("stream-message").textContent = result.status || result.error || `HTTP ${response.status}`;
  } catch (err) {
    $("stream-message").textContent = `Start failed: ${err}`;
  }
  button.disabled = false;
}

async function stopStream(name, callId, button) {
  button.disabled = true;
  $("stream-message").textContent = `Stopping ${name}…`;
  try {
    const response = await fetch("api/streams/stop", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ function_name: name, call_id: callId }),
    });
    const result = await response.json();
    $("stream-message").textContent = result.status || result.error || `HTTP ${response.status}`;
  } catch (err) {
    $("stream-message").textContent = `Stop failed: ${err}`;
    button.disabled = false;
  }
}

function sceneRows(table, items, keys) {
  // Rebuild only when the configured names change; routine updates set the cells.
  const body = table.querySelector("tbody");
  const names = items.map((item) => item.name).join("\n");
  if (table.dataset.names !== names) {
    table.dataset.names = names;
    body.replaceChildren();
    for (const item of items) {
      const row = document.createElement("tr");
      row.dataset.name = item.name;
      for (const key of keys) {
        const cell = document.createElement("td");
        cell.dataset.key = key;
        if (key !== "name") cell.className = "num";
        row.appendChild(cell);
      }
      body.appendChild(row);
    }
  }
  table.hidden = items.length === 0;
  const rows = new Map();
  for (const row of body.rows) rows.set(row.dataset.name, row);
  return rows;
}

function setCell(row, key, text) {
  const cell = row.querySelector(`[data-key="${key}"]`);
  if (cell.textContent !== text) cell.textContent = text;
}

function renderScene(state) {
  const lines = Object.values(state.lines || {});
  const zones = Object.values(state.zones || {});
  $("scene").hidden = lines.length === 0 && zones.length === 0;
  const counting = state.count !== null && state.count !== undefined;
  const lineRows = sceneRows($("lines"), lines, ["name", "in", "out"]);
  for (const line of lines) {
    const row = lineRows.get(line.name);
    // Totals stay on show while nothing is counted, greyed: they are the run's so far.
    row.classList.toggle("unknown", !line.counting);
    row.title = line.counting ? `${line.in} in / ${line.out} out` : "not counting now: the totals so far";
    setCell(row, "name", line.name);
    setCell(row, "in", String(line.in));
    setCell(row, "out", String(line.out));
  }
  const zoneRows = sceneRows($("zones"), zones, ["name", "people", "dwelling", "longest"]);
  for (const zone of zones) {
    const row = zoneRows.get(zone.name);
    // Unknown is shown as unknown, like the count: a dash, greyed, never the last number.
    const known = zone.people !== null && zone.people !== undefined;
    row.classList.toggle("unknown", !known);
    row.title = known ? `dwelling: there for over ${zone.dwell_s} s` : "count unknown";
    setCell(row, "name", zone.name);
    setCell(row, "people", known ? String(zone.people) : "–");
    setCell(row, "dwelling", known ? String(zone.dwelling) : "–");
    setCell(row, "longest", known ? fmtSeconds(zone.longest_s) : "–");
  }
  const detail = [];
  if (!counting) {
    detail.push(`Not counting (${state.count_reason || "unknown"})`);
    if (lines.length) detail.push("line totals are those so far");
    if (zones.length) detail.push("zone counts unknown");
  } else if (zones.length) {
    const dwells = [...new Set(zones.map((z) => z.dwell_s))];
    const each = dwells.length === 1 ? `${dwells[0]} s` : zones.map((z) => `${z.dwell_s} s in ${z.name}`).join(", ");
    detail.push(`Dwelling: there for over ${each}`);
  }
  // The in side is where (B - A) x (P - A) > 0 in image coordinates: right of A→B.
  if (lines.length && counting) detail.push(state.privacy ? "in: to the right of A→B" : "in: to the right of A→B (the arrow)");
  $("scene-detail").textContent = detail.join(" · ");
}

function renderText(items) {
  const list = $("model-text");
  list.replaceChildren();
  for (const item of [...items].reverse()) {
    const li = document.createElement("li");
    const t = document.createElement("span");
    t.className = "t";
    t.textContent = `${item.t.toFixed(1)} s`;
    li.append(t, document.createTextNode(item.text));
    list.appendChild(li);
  }
}

function drawChart(state) {
  const canvas = $("chart");
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 480;
  const height = canvas.clientHeight || 170;
  if (canvas.width !== Math.round(width * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  // The window grows a minute at a time up to five, so a fresh session is not a sliver.
  const minutes = Math.min(CHART_WINDOW_S / 60, Math.max(1, Math.ceil(state.t / 60)));
  const windowS = Math.min(minutes * 60, state.history_s);
  $("window-label").textContent = minutes === 1 ? "minute" : `${minutes} minutes`;
  const end = state.t;
  const start = end - windowS;
  const points = state.history;
  const maxCount = Math.max(1, ...points.map((p) => p[1] ?? 0));
  const top = Math.ceil((maxCount + 1) / 2) * 2;
  const pad = { left: 28, right: 8, top: 8, bottom: 20 };
  const x = (t) => pad.left + ((t - start) / (end - start)) * (width - pad.left - pad.right);
  const y = (c) => height - pad.bottom - (c / top) * (height - pad.top - pad.bottom);

  ctx.strokeStyle = "#2b323c";
  ctx.fillStyle = "#8a93a0";
  ctx.font = "11px system-ui, sans-serif";
  ctx.lineWidth = 1;
  const step = top <= 6 ? 1 : Math.ceil(top / 6);
  for (let c = 0; c <= top; c += step) {
    ctx.beginPath();
    ctx.moveTo(pad.left, y(c));
    ctx.lineTo(width - pad.right, y(c));
    ctx.stroke();
    ctx.fillText(String(c), 6, y(c) + 4);
  }
  ctx.fillText(`-${minutes} min`, pad.left, height - 5);
  ctx.fillText("now", width - pad.right - 22, height - 5);
  if (points.length === 0) return;

  // A step line: a count holds until the next change.
  ctx.strokeStyle = "#58a6ff";
  ctx.lineWidth = 2;
  ctx.beginPath();
  // A null is a stretch where the count was unknown: a gap, not the last value held.
  let prev = null;
  for (const [t, c] of points) {
    const px = x(Math.max(t, start));
    if (prev !== null) ctx.lineTo(px, y(prev));
    if (c !== null) {
      if (prev === null) ctx.moveTo(px, y(c));
      else ctx.lineTo(px, y(c));
    }
    prev = c;
  }
  if (prev !== null) ctx.lineTo(x(end), y(prev)); // up to now, never into the future
  ctx.stroke();
}

function renderPerception(p) {
  // What the detector costs now: an idle scene should show the gate holding frames.
  const el = $("perception-detail");
  if (!p) { el.textContent = ""; return; }
  const parts = [`detector ${p.detections_per_s.toFixed(1)}/s`];
  if (p.motion_gate) {
    parts.push(p.gated ? "still: last detections stand" : "motion");
    parts.push(`${p.frames_gated} ${p.frames_gated === 1 ? "frame" : "frames"} gated`);
  } else {
    parts.push("motion gate off");
  }
  parts.push(p.decode_ms === null ? "decode not measured" : `decode ${p.decode_ms.toFixed(1)} ms`);
  // Never a silent lag: a camera the shared detector cannot keep up with says so.
  const behind = keepsUp(p);
  if (behind) parts.unshift(behind);
  el.textContent = parts.join(" · ");
  el.classList.toggle("behind", Boolean(behind));
  el.dataset.gated = p.gated ? "true" : "false";
}

function renderBanner(text, known, state) {
  // The count over the image comes from the same state as the big number, at the same
  // moment: the two can never say different things.
  const banner = $("frame-banner");
  banner.textContent = text;
  banner.dataset.count = known ? String(state.count) : "";
  banner.classList.toggle("unknown", !known);
  banner.hidden = state.privacy || $("frame").hidden;
}

function render(pushed) {
  lastState = pushed;
  renderCameras(pushed);
  const state = view(pushed);
  $("device-id").textContent = state.device_id;
  $("model-name").textContent = `model: ${state.model}`;
  $("session-time").textContent = `session ${fmtSeconds(state.t)}`;
  const count = $("count");
  const known = state.count !== null && state.count !== undefined;
  count.textContent = known ? String(state.count) : "–";
  count.dataset.count = known ? String(state.count) : "";
  count.classList.toggle("unknown", !known);
  const noun = state.count === 1 ? "person in view" : "people in view";
  $("count-label").textContent = known ? noun : "count unknown";
  const boxes = state.raw === 1 ? "1 box in this frame" : `${state.raw} boxes in this frame`;
  const detail = [];
  if (!known) detail.push(state.count_reason || "unknown");
  else if (state.raw !== null) detail.push(boxes);
  if (known && state.detect_ms !== null) detail.push(`${state.detect_ms} ms per frame`);
  detail.push(`${state.count_changes} ${state.count_changes === 1 ? "change" : "changes"}`);
  $("count-detail").textContent = detail.join(" · ");
  renderPerception(state.perception);
  const source = state.source;
  setBadge($("source-state"), `source: ${source.state}`, levelOf(source.state));
  $("source-state").title = source.reason || "frame source";
  // The last frame is not what the camera sees now: greyed, and said.
  $("frame").classList.toggle("stale", !known);
  const shown = several(state) ? `${state.camera}: ${source.name}` : source.name;
  $("source-name").textContent = known ? shown : `${shown} · last frame, not live`;
  const model = state.model_state || { state: state.connection.state, reason: state.connection.reason };
  const since = model.since ? ` since ${clockTime(model.since)}` : "";
  setBadge($("connection-state"), `model: ${model.state}${model.connected ? "" : since}`, levelOf(model.state));
  $("connection-state").title = model.reason || "live model connection";
  renderBudget(state.budget);
  const status = state.health.status || (state.health.ok ? "ok" : "unhealthy");
  const healthText = { ok: "healthy", degraded: "degraded", unhealthy: "unhealthy" }[status] || status;
  setBadge($("health"), healthText, { ok: "ok", degraded: "warn" }[status] || "bad");
  $("health").title = state.health.reason;
  renderImage(state);
  renderBanner(known ? `${state.count} ${noun}` + (state.raw !== null ? ` · ${boxes}` : "") : "count unknown", known, state);
  renderScene(state);
  if (window.renderPictures) window.renderPictures(state); // pictures.js: --snapshots
  renderStreams(state.streams);
  renderStart(state.startable || [], state.streams);
  renderText(state.model_text);
  $("talk-box").hidden = !state.push_to_talk;
  drawChart(state);
  // Other parts of the page (the lines and zones editor) follow the same state: the
  // selected camera's.
  window.lookoutState = state;
  document.dispatchEvent(new CustomEvent("lookout-state", { detail: state }));
}

// Push-to-talk: what is said while the button is held goes to the model.
async function talk(on) {
  try {
    const response = await fetch("api/talk", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ on }),
    });
    const result = await response.json();
    $("talk-message").textContent = result.status || result.error || `HTTP ${response.status}`;
    $("talk").classList.toggle("talking", Boolean(result.talking));
  } catch (err) {
    $("talk-message").textContent = `Talk failed: ${err}`;
  }
}

let talking = false;
function setTalk(on) {
  if (on === talking) return;
  talking = on;
  talk(on);
}
$("talk").addEventListener("pointerdown", () => setTalk(true));
for (const name of ["pointerup", "pointerleave", "pointercancel"]) {
  $("talk").addEventListener(name, () => setTalk(false));
}
$("talk").addEventListener("keydown", (e) => { if (e.key === " " && !e.repeat) setTalk(true); });
$("talk").addEventListener("keyup", (e) => { if (e.key === " ") setTalk(false); });

function connect() {
  const events = new EventSource("events");
  events.addEventListener("state", (message) => {
    setBadge($("live-state"), "live", "ok");
    render(JSON.parse(message.data));
  });
  events.addEventListener("error", () => {
    // EventSource reconnects by itself; the image stream does not, so restart it then.
    setBadge($("live-state"), "reconnecting…", "warn");
    imageOn = false;
  });
}

function stateNow() {
  // The state the server embedded when it served this page: shown before any push.
  const el = $("state-now");
  try {
    return el ? JSON.parse(el.textContent) : null;
  } catch {
    return null;
  }
}

// The editor locks the camera tabs while it edits one camera's scene, and frees them.
window.lookoutRefresh = () => { if (lastState) render(lastState); };

const served = stateNow();
if (served) render(served);
connect();
