// Lookout status page: the latest events with their pictures (--snapshots).
// app.js calls renderPictures(state) with each state. The list is rebuilt only when its
// set of pictures changes, and an entry is kept while its picture is listed, so each
// image is fetched once (a picture's name is never reused: the browser may keep it).
"use strict";

(() => {
  const items = new Map(); // file name -> its <li>, while it is listed
  let shownKey = null;

  function clock(iso) {
    return iso ? iso.slice(11, 19) : ""; // the device's local time, as it said it
  }

  function item(p) {
    const li = document.createElement("li");
    li.dataset.file = p.file;
    li.dataset.of = p.of;
    const link = document.createElement("a");
    link.href = p.url;
    link.target = "_blank";
    link.rel = "noopener";
    link.title = "open the full picture";
    const img = document.createElement("img");
    img.alt = p.caption;
    img.decoding = "async";
    img.src = p.url;
    // Pruned since (the folder's size or age cap): its text stays, said without a
    // picture, never a broken image.
    img.addEventListener("error", () => {
      const gone = document.createElement("span");
      gone.className = "gone";
      gone.textContent = "picture no longer on the device";
      link.replaceWith(gone);
      li.classList.add("gone");
    }, { once: true });
    link.appendChild(img);
    const what = document.createElement("div");
    what.className = "what";
    what.textContent = p.caption;
    const when = document.createElement("div");
    when.className = "when";
    // A recording's pictures also say where in it they are (a camera's, only the time).
    const at = p.t_media === null || p.t_media === undefined ? "" : ` · frame at ${Number(p.t_media).toFixed(1)} s`;
    when.textContent = `${clock(p.time)}${at}`;
    li.append(link, what, when);
    return li;
  }

  window.renderPictures = (state) => {
    const box = document.getElementById("pictures");
    if (!box) return;
    const pictures = state.pictures || { on: false, latest: [] };
    box.hidden = Boolean(state.privacy) || !pictures.on;
    if (box.hidden) return;
    const latest = pictures.latest || [];
    const key = latest.map((p) => p.file).join("\n");
    if (key === shownKey) return;
    shownKey = key;
    const listed = latest.map((p) => [p.file, items.get(p.file) || item(p)]);
    items.clear();
    for (const [file, li] of listed) items.set(file, li);
    document.getElementById("pictures-list").replaceChildren(...listed.map(([, li]) => li));
    document.getElementById("no-pictures").hidden = latest.length > 0;
  };
})();
