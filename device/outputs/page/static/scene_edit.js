// Lines and zones drawn on the live image: the page's editor of GET/PUT api/scene.
// An SVG over the image, in the frame's own pixels (its viewBox), so what is drawn is
// where the device counts; points are sent as fractions of the frame, as in the config.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const MIN_LENGTH = 0.02; // a shorter drag is a click, not a line (a fiftieth of the frame)
  const svg = $("editor");
  const SVG = svg.namespaceURI; // the SVG namespace, taken from the page's own element

  let frameSize = null; // [width, height] of the camera's frames, from the state
  let privacy = false;
  let camera = null; // the camera shown, with several (its scene is edited); null: one
  let sceneUrl = "api/scene";
  let draft = null; // {revision, dwell, items: [{kind, name, was, points, dwell}]}
  let selected = -1;
  let tool = "select"; // "select", "line" (drag A to B) or "zone" (drag a rectangle)
  let drag = null;

  const clamp = (v) => Math.min(1, Math.max(0, v));
  const round = (v) => Math.round(v * 10000) / 10000;

  function follow(state) {
    // The camera being edited (or fetched to edit) stays the one edited: app.js locks the tabs.
    if (draft || document.body.classList.contains("editing")) return;
    privacy = Boolean(state.privacy);
    frameSize = state.frame_size || null;
    camera = state.camera_names && state.camera_names.length > 1 ? state.camera : null;
    sceneUrl = camera ? `api/scene/${encodeURIComponent(camera)}` : "api/scene";
    const button = $("edit-scene");
    button.disabled = privacy || !frameSize;
    button.title = privacy
      ? "privacy mode: no image to draw on (use PUT api/scene or the config file)"
      : frameSize ? "draw, move, rename and delete lines and zones on the image" : "waiting for the first frame";
  }
  document.addEventListener("lookout-state", (event) => follow(event.detail));
  try {
    // The state as app.js rendered it before this script ran (the served one, the
    // selected camera's over it).
    const served = window.lookoutState || JSON.parse($("state-now").textContent);
    if (served) follow(served);
  } catch {
    // no state embedded: the first pushed one will do
  }

  function say(text, bad) {
    const message = $("edit-message");
    message.textContent = text;
    message.classList.toggle("bad", Boolean(bad));
  }

  function lock(on) {
    // app.js disables the other cameras' tabs while the page edits one camera's scene.
    document.body.classList.toggle("editing", on);
    if (window.lookoutRefresh) window.lookoutRefresh();
  }

  async function begin() {
    say("");
    $("edit-toml").hidden = true;
    let scene;
    const url = sceneUrl;
    // The tabs wait from the press on: a camera chosen while its scene is fetched would
    // put one camera's lines over another's image.
    lock(true);
    $("edit-scene").disabled = true; // one press, one editor
    try {
      const response = await fetch(url);
      scene = await response.json();
      if (!response.ok) throw new Error(scene.error || `HTTP ${response.status}`);
    } catch (err) {
      lock(false);
      $("edit-scene").disabled = privacy || !frameSize;
      say(`Cannot edit: ${err.message || err}`, true);
      return;
    }
    const items = [];
    for (const [name, line] of Object.entries(scene.lines)) {
      items.push({ kind: "line", name, was: name, points: line.points.map((p) => [...p]) });
    }
    for (const [name, zone] of Object.entries(scene.zones)) {
      items.push({ kind: "zone", name, was: name, points: zone.points.map((p) => [...p]), dwell: zone.dwell });
    }
    draft = { revision: scene.revision, dwell: scene.dwell, file: scene.file, items, url };
    selected = -1;
    setTool("select");
    const [w, h] = frameSize;
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.removeAttribute("hidden"); // an SVG element has no hidden property
    $("edit-panel").hidden = false;
    $("edit-scene").disabled = true;
    const whose = camera ? ` (camera ${camera})` : "";
    $("edit-where").textContent = scene.file
      ? `Saved to ${scene.file}${whose} when you press Save.`
      : "This device was started without a config file: Save applies the scene now and shows the TOML to keep.";
    refresh();
  }

  function end() {
    draft = null;
    drag = null;
    lock(false);
    svg.setAttribute("hidden", "");
    svg.replaceChildren();
    $("edit-panel").hidden = true;
    $("edit-scene").disabled = privacy || !frameSize;
  }

  function setTool(name) {
    tool = name;
    for (const [id, value] of [["new-line", "line"], ["new-zone", "zone"]]) {
      $(id).classList.toggle("active", tool === value);
    }
    svg.classList.toggle("drawing", tool !== "select");
    $("edit-hint").textContent = {
      line: "Drag on the image from A to B. People walking to the right of A→B (the arrow) count as in.",
      zone: "Drag a rectangle on the image; then drag its corners to shape it.",
      select: "Drag a line or zone to move it, or its points to reshape it.",
    }[tool];
  }

  function nextName(kind) {
    const names = new Set(draft.items.map((item) => item.name));
    for (let i = 1; ; i++) if (!names.has(`${kind}${i}`)) return `${kind}${i}`;
  }

  // ------------------------------------------------------------------ drawing

  function node(tag, attrs, parent) {
    const child = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) child.setAttribute(key, String(value));
    parent.appendChild(child);
    return child;
  }

  function draw() {
    svg.replaceChildren();
    if (!draft) return;
    const [w, h] = frameSize;
    const px = (p) => [p[0] * w, p[1] * h];
    const radius = Math.max(w, h) / 70;
    draft.items.forEach((item, index) => {
      const group = node("g", { class: `item ${item.kind}${index === selected ? " selected" : ""}` }, svg);
      const pts = item.points.map(px);
      if (item.kind === "zone") {
        node("polygon", { points: pts.map((p) => p.join(",")).join(" "), "data-index": index, class: "shape" }, group);
      } else {
        const [a, b] = pts;
        node("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "shape" }, group);
        // A wide invisible stroke: a line is easy to take hold of on a phone.
        node("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "hit", "data-index": index }, group);
        arrow(group, a, b, radius);
      }
      const label = pts[0];
      const text = node("text", { x: label[0] + radius, y: label[1] - radius, class: "label" }, group);
      text.textContent = item.kind === "line" ? `${item.name} (A)` : item.name;
      if (index === selected) {
        pts.forEach((p, vertex) => {
          node("circle", { cx: p[0], cy: p[1], r: radius, class: "handle", "data-index": index, "data-vertex": vertex }, group);
        });
      }
    });
  }

  function arrow(group, a, b, size) {
    // The in side: (B - A) x (P - A) > 0 in image coordinates, i.e. to the right of A→B.
    const dx = b[0] - a[0], dy = b[1] - a[1];
    const length = Math.hypot(dx, dy) || 1;
    const nx = -dy / length, ny = dx / length;
    const mx = (a[0] + b[0]) / 2, my = (a[1] + b[1]) / 2;
    const tip = [mx + nx * size * 3, my + ny * size * 3];
    const ux = dx / length, uy = dy / length;
    node("line", { x1: mx, y1: my, x2: tip[0], y2: tip[1], class: "arrow" }, group);
    const head = [
      tip,
      [tip[0] - nx * size + ux * size * 0.7, tip[1] - ny * size + uy * size * 0.7],
      [tip[0] - nx * size - ux * size * 0.7, tip[1] - ny * size - uy * size * 0.7],
    ];
    node("polygon", { points: head.map((p) => p.join(",")).join(" "), class: "arrow-head" }, group);
    const label = node("text", { x: tip[0] + nx * size, y: tip[1] + ny * size, class: "label" }, group);
    label.textContent = "in";
  }

  // ------------------------------------------------------------- the items list

  function refresh() {
    draw();
    const body = $("edit-items").querySelector("tbody");
    body.replaceChildren();
    draft.items.forEach((item, index) => {
      const row = document.createElement("tr");
      row.dataset.kind = item.kind;
      row.dataset.name = item.name;
      row.classList.toggle("selected", index === selected);
      const kind = document.createElement("td");
      kind.textContent = item.kind;
      row.appendChild(kind);
      const nameCell = document.createElement("td");
      const name = document.createElement("input");
      name.value = item.name;
      name.className = "name";
      name.setAttribute("aria-label", `${item.kind} name`);
      name.maxLength = 40;
      name.addEventListener("input", () => {
        item.name = name.value.trim();
        row.dataset.name = item.name;
        draw();
      });
      name.addEventListener("focus", () => select(index, false));
      nameCell.appendChild(name);
      row.appendChild(nameCell);
      const extra = document.createElement("td");
      if (item.kind === "zone") {
        const dwell = document.createElement("input");
        dwell.type = "number";
        dwell.min = "1";
        dwell.step = "1";
        dwell.className = "dwell";
        dwell.placeholder = `${draft.dwell}`;
        dwell.title = `dwell: seconds before someone inside counts as dwelling (empty: ${draft.dwell} s)`;
        dwell.setAttribute("aria-label", "dwell seconds");
        dwell.value = item.dwell === null || item.dwell === undefined ? "" : String(item.dwell);
        dwell.addEventListener("input", () => {
          item.dwell = dwell.value === "" ? null : Number(dwell.value);
        });
        extra.appendChild(dwell);
        extra.appendChild(document.createTextNode(" s"));
      } else {
        const reverse = button("Reverse", "swap A and B: in and out change places", () => {
          item.points.reverse();
          refresh();
        });
        extra.appendChild(reverse);
      }
      row.appendChild(extra);
      const remove = document.createElement("td");
      remove.appendChild(button("Delete", `delete ${item.kind} ${item.name}`, () => {
        draft.items.splice(index, 1);
        selected = -1;
        refresh();
      }, "delete"));
      row.appendChild(remove);
      body.appendChild(row);
    });
    $("edit-items").hidden = draft.items.length === 0;
  }

  function button(text, title, onClick, className = "tool") {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.title = title;
    b.className = className;
    b.addEventListener("click", onClick);
    return b;
  }

  function select(index, rebuild = true) {
    if (selected === index) return;
    selected = index;
    if (rebuild) refresh();
    else {
      draw();
      for (const row of $("edit-items").querySelectorAll("tbody tr")) {
        row.classList.toggle("selected", row.rowIndex - 1 === index);
      }
    }
  }

  // ------------------------------------------------------------------ pointer

  function at(event) {
    const box = svg.getBoundingClientRect();
    return [clamp((event.clientX - box.left) / box.width), clamp((event.clientY - box.top) / box.height)];
  }

  svg.addEventListener("pointerdown", (event) => {
    if (!draft) return;
    event.preventDefault();
    const p = at(event);
    svg.setPointerCapture(event.pointerId);
    if (tool === "line" || tool === "zone") {
      const item = tool === "line"
        ? { kind: "line", name: nextName("line"), was: null, points: [p, [...p]] }
        : { kind: "zone", name: nextName("zone"), was: null, points: [p, [...p], [...p], [...p]], dwell: null };
      draft.items.push(item);
      selected = draft.items.length - 1;
      drag = { mode: tool, index: selected, start: p };
      draw();
      return;
    }
    const target = event.target;
    const index = target.dataset && target.dataset.index !== undefined ? Number(target.dataset.index) : -1;
    if (index < 0) {
      select(-1);
      return;
    }
    const vertex = target.dataset.vertex;
    drag = vertex !== undefined
      ? { mode: "vertex", index, vertex: Number(vertex) }
      : { mode: "move", index, start: p, points: draft.items[index].points.map((q) => [...q]) };
    select(index);
  });

  svg.addEventListener("pointermove", (event) => {
    if (!drag || !draft) return;
    const p = at(event);
    const item = draft.items[drag.index];
    if (drag.mode === "line") {
      item.points[1] = p;
    } else if (drag.mode === "zone") {
      const [x0, y0] = drag.start;
      item.points = [[x0, y0], [p[0], y0], p, [x0, p[1]]];
    } else if (drag.mode === "vertex") {
      item.points[drag.vertex] = p;
    } else {
      // The whole shape, kept inside the frame.
      let dx = p[0] - drag.start[0], dy = p[1] - drag.start[1];
      for (const [x, y] of drag.points) {
        dx = Math.min(Math.max(dx, -x), 1 - x);
        dy = Math.min(Math.max(dy, -y), 1 - y);
      }
      item.points = drag.points.map(([x, y]) => [x + dx, y + dy]);
    }
    draw();
  });

  function release() {
    if (!drag || !draft) return;
    const item = draft.items[drag.index];
    if (drag.mode === "line" || drag.mode === "zone") {
      const [a, , c] = drag.mode === "line" ? [item.points[0], null, item.points[1]] : item.points;
      const small = drag.mode === "line"
        ? Math.hypot(c[0] - a[0], c[1] - a[1]) < MIN_LENGTH
        : Math.abs(c[0] - a[0]) < MIN_LENGTH || Math.abs(c[1] - a[1]) < MIN_LENGTH;
      if (small) {
        draft.items.splice(drag.index, 1);
        selected = -1;
      }
      setTool("select");
    }
    drag = null;
    refresh();
  }
  svg.addEventListener("pointerup", release);
  svg.addEventListener("pointercancel", release);

  // -------------------------------------------------------------------- saving

  async function save() {
    const body = { revision: draft.revision, lines: {}, zones: {} };
    for (const item of draft.items) {
      const table = item.kind === "line" ? body.lines : body.zones;
      if (!item.name) {
        say(`A ${item.kind} needs a name.`, true);
        return;
      }
      if (item.name in table) {
        say(`Two ${item.kind}s are called ${item.name}: give each its own name.`, true);
        return;
      }
      const entry = { points: item.points.map(([x, y]) => [round(x), round(y)]) };
      if (item.was) entry.was = item.was;
      if (item.kind === "zone" && item.dwell !== null && item.dwell !== undefined) entry.dwell = item.dwell;
      table[item.name] = entry;
    }
    $("edit-save").disabled = true;
    let response, result;
    try {
      response = await fetch(draft.url, {
        method: "PUT",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      result = await response.json();
    } catch (err) {
      say(`Not saved: ${err.message || err}`, true);
      return;
    } finally {
      $("edit-save").disabled = false;
    }
    if (response.status === 409) {
      say(`${result.error}. Reloaded: make your change again.`, true);
      await begin();
      return;
    }
    if (!response.ok) {
      say(result.error || `HTTP ${response.status}`, true);
      return;
    }
    const changes = result.changes.map((c) => c.said).join("; ") || "nothing changed";
    const where = result.saved ? `saved to ${result.saved}` : `applied now, not saved: ${result.not_saved}`;
    const note = result.note ? ` (${result.note})` : "";
    const whose = camera ? `${camera}: ` : ""; // the edit stays said when another is shown
    end();
    say(`${whose}${changes} · ${where}${note}`, !result.saved && result.changes.length > 0);
    const toml = $("edit-toml");
    toml.hidden = Boolean(result.saved) || result.changes.length === 0;
    toml.value = result.toml;
  }

  $("edit-scene").addEventListener("click", begin);
  $("new-line").addEventListener("click", () => setTool(tool === "line" ? "select" : "line"));
  $("new-zone").addEventListener("click", () => setTool(tool === "zone" ? "select" : "zone"));
  $("edit-save").addEventListener("click", save);
  $("edit-cancel").addEventListener("click", () => {
    end();
    say("");
  });
  document.addEventListener("keydown", (event) => {
    if (!draft || event.target.tagName === "INPUT") return;
    if (event.key === "Escape") setTool("select");
    if ((event.key === "Delete" || event.key === "Backspace") && selected >= 0) {
      draft.items.splice(selected, 1);
      selected = -1;
      refresh();
    }
  });
})();
