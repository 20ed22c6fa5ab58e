// hotbin serve: the page. Pan, zoom and box-zoom over the data; every view change asks the
// server to re-aggregate all the points at the new extent and pixel size (render.png).
// The latest view wins: at most one picture is in flight; views asked for meanwhile collapse
// into one, the latest, sent when it lands (so a drag refreshes at the server's pace and never
// queues). A jump (reset, box zoom, a link, another shading) or a request that takes far longer
// than the last ones aborts the one in flight (AbortController); a reply older than the picture
// shown is dropped (sequence numbers). While a view loads, the last picture is drawn where its
// extent falls in the new view. The view lives in the URL hash.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const canvas = $("canvas"), ctx = canvas.getContext("2d");
  const WHEEL = 0.0015;           // zoom per wheel pixel (exp scale)
  const HOVER_MS = 60;            // pointer rest before asking for the cell under it
  const S = {
    info: null, view: null, how: "", cmap: "",
    image: null,                  // {bitmap, view, w, h, query, stats}: the picture shown
    seq: 0, shown: 0, ctrl: null, queued: false, pending: false, sentAt: 0, lastMs: 200,
    pointers: new Map(), box: null, hover: null, hoverCtrl: null, hoverTimer: 0,
  };

  // ---- view geometry --------------------------------------------------------------------
  const dpr = () => Math.min(window.devicePixelRatio || 1, 2);
  const cssSize = () => [canvas.clientWidth || 1, canvas.clientHeight || 1];

  function fitAspect(v) {         // projected data: square cells, the view's centre kept
    if (!S.info.crs) return v;
    const [w, h] = cssSize(), sx = (v.x1 - v.x0) / w, sy = (v.y1 - v.y0) / h, s = Math.max(sx, sy);
    const cx = (v.x0 + v.x1) / 2, cy = (v.y0 + v.y1) / 2;
    return {x0: cx - s * w / 2, x1: cx + s * w / 2, y0: cy - s * h / 2, y1: cy + s * h / 2};
  }

  function home() {
    const [x0, x1, y0, y1] = S.info.home;
    return fitAspect({x0, x1, y0, y1});
  }

  function valid(v) {             // finite, increasing, not past what float64 cells can resolve
    if (![v.x0, v.x1, v.y0, v.y1].every(Number.isFinite)) return false;
    const [w, h] = cssSize();
    const tiny = (a, b, n) => (b - a) / n <= Math.max(Math.abs(a), Math.abs(b), 1e-300) * 1e-12;
    return v.x0 < v.x1 && v.y0 < v.y1 && !tiny(v.x0, v.x1, w) && !tiny(v.y0, v.y1, h) &&
      Number.isFinite(v.x1 - v.x0) && Number.isFinite(v.y1 - v.y0);
  }

  function setView(v, jump = false) {
    if (!valid(v)) return;
    S.view = v;
    draw();
    request(jump);
  }

  function toData(px, py, v = S.view) {
    const [w, h] = cssSize();
    return [v.x0 + px / w * (v.x1 - v.x0), v.y1 - py / h * (v.y1 - v.y0)];
  }

  function zoomAt(px, py, f) {    // scale by f about the point under (px, py)
    const v = S.view, [w, h] = cssSize(), [x, y] = toData(px, py);
    const nw = (v.x1 - v.x0) * f, nh = (v.y1 - v.y0) * f;
    const x0 = x - px / w * nw, y1 = y + py / h * nh;
    setView({x0, x1: x0 + nw, y0: y1 - nh, y1});
  }

  function panBy(dx, dy) {        // move the picture by (dx, dy) css pixels
    const v = S.view, [w, h] = cssSize();
    const sx = (v.x1 - v.x0) / w * dx, sy = (v.y1 - v.y0) / h * dy;
    setView({x0: v.x0 - sx, x1: v.x1 - sx, y0: v.y0 + sy, y1: v.y1 + sy});
  }

  // ---- requests -------------------------------------------------------------------------
  function gridSize() {
    const [w, h] = cssSize(), r = dpr(), info = S.info;
    let gw = Math.max(1, Math.round(w * r)), gh = Math.max(1, Math.round(h * r));
    const k = Math.min(1, info.max_side / gw, info.max_side / gh, Math.sqrt(info.max_pixels / (gw * gh)));
    if (k < 1) { gw = Math.max(1, Math.floor(gw * k)); gh = Math.max(1, Math.floor(gh * k)); }
    return [gw, gh];
  }

  const viewQuery = (v, w, h) =>
    `x0=${v.x0}&x1=${v.x1}&y0=${v.y0}&y1=${v.y1}&width=${w}&height=${h}`;
  const shadeQuery = () => `how=${encodeURIComponent(S.how)}&cmap=${encodeURIComponent(S.cmap)}`;

  function request(jump = false) {  // at most one per animation frame, one in flight
    saveHash();
    if (jump && S.ctrl) S.ctrl.abort();
    if (S.queued) return;
    S.queued = true;
    requestAnimationFrame(() => {
      S.queued = false;
      const slow = performance.now() - S.sentAt > Math.max(1000, 3 * S.lastMs);
      if (S.ctrl && !slow) S.pending = true;  // sent when the one in flight lands
      else send();
    });
  }

  async function send() {
    if (S.ctrl) S.ctrl.abort();
    const ctrl = new AbortController(), seq = ++S.seq, v = S.view, [w, h] = gridSize();
    const query = viewQuery(v, w, h);
    S.ctrl = ctrl;
    S.pending = false;
    S.sentAt = performance.now();
    document.body.dataset.busy = "1";
    try {
      const r = await fetch(`render.png?${query}&${shadeQuery()}`, {signal: ctrl.signal});
      if (!r.ok) throw new Error(await errorOf(r));
      const stats = JSON.parse(r.headers.get("X-Hotbin-Stats") || "{}");
      const bitmap = await createImageBitmap(await r.blob());
      S.lastMs = performance.now() - S.sentAt;
      if (seq < S.shown) { bitmap.close(); return; }   // an older view than the one shown
      if (S.image) S.image.bitmap.close();
      S.shown = seq;
      S.image = {bitmap, view: v, w, h, query, stats};
      draw();
      showStats(stats);
      document.body.dataset.shown = query;
    } catch (e) {
      if (e.name !== "AbortError") status(`render failed: ${e.message}`, true);
    } finally {
      if (S.ctrl === ctrl) {
        S.ctrl = null;
        if (S.pending) send(); else delete document.body.dataset.busy;
      }
    }
  }

  async function errorOf(r) {
    try { return (await r.json()).error || r.statusText; } catch (_) { return `HTTP ${r.status}`; }
  }

  async function getJSON(url) {
    const r = await fetch(url);
    if (!r.ok) throw new Error(await errorOf(r));
    return r.json();
  }

  // ---- drawing --------------------------------------------------------------------------
  function placement(im) {        // where the picture's extent falls on the canvas (css px)
    const v = S.view, iv = im.view, [w, h] = cssSize();
    const sx = w / (v.x1 - v.x0), sy = h / (v.y1 - v.y0);
    return [(iv.x0 - v.x0) * sx, (v.y1 - iv.y1) * sy, (iv.x1 - iv.x0) * sx, (iv.y1 - iv.y0) * sy];
  }

  function draw() {
    const r = dpr(), [w, h] = cssSize();
    if (canvas.width !== Math.round(w * r) || canvas.height !== Math.round(h * r)) {
      canvas.width = Math.round(w * r);
      canvas.height = Math.round(h * r);
    }
    ctx.setTransform(r, 0, 0, r, 0, 0);
    ctx.clearRect(0, 0, w, h);
    if (!S.image) return;
    const [dx, dy, dw, dh] = placement(S.image);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(S.image.bitmap, dx, dy, dw, dh);
  }

  const fmt = (v) => v === null || v === undefined ? "–" :
    Number.isInteger(v) ? v.toLocaleString("en-US") : Number(v).toPrecision(5);

  function status(text, error = false) {
    $("status").textContent = text;
    $("status").classList.toggle("error", error);
  }

  function showStats(s) {
    status(`${fmt(s.in_view)} of ${fmt(s.n)} points in view · max cell ${fmt(s.max)} · ${fmt(s.ms)} ms`);
    $("cb-lo").textContent = fmt(s.lo);
    $("cb-hi").textContent = fmt(s.hi);
  }

  function showKey(info) {
    const cb = $("cbar"), c = cb.getContext("2d"), stops = info.colorbar;
    cb.height = stops.length;
    stops.forEach((col, k) => { c.fillStyle = col; c.fillRect(0, stops.length - 1 - k, 1, 1); });
    const agg = S.info.agg === "count" && S.info.weighted ? "sum of weights" : S.info.agg;
    $("cb-title").textContent = `${agg} (${S.how})`;
    const cats = info.categories, legend = $("legend");
    legend.replaceChildren();
    const distinct = cats && new Set(cats.map((k) => k.color)).size > 1;
    $("colorbar").hidden = Boolean(distinct);
    legend.hidden = !cats;
    for (const k of cats || []) {
      const li = document.createElement("li"), sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = k.color;
      li.append(sw, document.createTextNode(k.label));
      legend.append(li);
    }
  }

  async function reshade() {
    request(true);
    try { showKey(await getJSON(`info.json?${shadeQuery()}`)); } catch (e) { status(e.message, true); }
  }

  // ---- the URL hash ---------------------------------------------------------------------
  function saveHash() {
    const v = S.view;
    const h = `#x0=${v.x0}&x1=${v.x1}&y0=${v.y0}&y1=${v.y1}&how=${S.how}&cmap=${S.cmap}`;
    if (location.hash !== h) history.replaceState(null, "", h);
  }

  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1)), out = {};
    const v = {x0: +p.get("x0"), x1: +p.get("x1"), y0: +p.get("y0"), y1: +p.get("y1")};
    if (["x0", "x1", "y0", "y1"].every((k) => p.get(k) !== null) && valid(v)) out.view = v;
    if (S.info.hows.includes(p.get("how"))) out.how = p.get("how");
    if (p.get("cmap")) out.cmap = p.get("cmap");
    return out;
  }

  function applyHash() {
    const h = readHash();
    const reshaded = (h.how && h.how !== S.how) || (h.cmap && h.cmap !== S.cmap);
    S.how = h.how || S.how;
    S.cmap = h.cmap || S.cmap;
    $("how").value = S.how;
    $("cmap").value = S.cmap;
    S.view = h.view || S.view || home();
    draw();
    if (reshaded) reshade(); else request(true);
  }

  // ---- hover ----------------------------------------------------------------------------
  function hideTip() {
    $("tip").hidden = true;
    clearTimeout(S.hoverTimer);
    if (S.hoverCtrl) S.hoverCtrl.abort();
  }

  function hoverAt(px, py) {
    clearTimeout(S.hoverTimer);
    S.hoverTimer = setTimeout(() => cellAt(px, py), HOVER_MS);
  }

  async function cellAt(px, py) {
    const im = S.image;
    if (!im) return;
    const [dx, dy, dw, dh] = placement(im);
    const i = Math.floor((px - dx) / dw * im.w), r = Math.floor((py - dy) / dh * im.h);
    if (i < 0 || r < 0 || i >= im.w || r >= im.h) { $("tip").hidden = true; return; }
    if (S.hoverCtrl) S.hoverCtrl.abort();
    const ctrl = new AbortController();
    S.hoverCtrl = ctrl;
    try {
      const r2 = await fetch(`cell.json?${im.query}&i=${i}&j=${im.h - 1 - r}`, {signal: ctrl.signal});
      if (!r2.ok) return;
      showTip(await r2.json(), px, py);
      document.body.dataset.cell = `${i},${im.h - 1 - r}`;
    } catch (e) { /* aborted: the pointer moved on */ }
  }

  function showTip(c, px, py) {
    const n = S.info.names, lines = [`count ${fmt(c.count)}`];
    if ("value" in c && S.info.agg !== "count") lines.push(`${S.info.agg} ${fmt(c.value)}`);
    for (const [k, v] of Object.entries(c.categories || {}).sort((a, b) => b[1] - a[1]).slice(0, 5))
      lines.push(`  ${k}: ${fmt(v)}`);
    if (c.lon) lines.push(`lon ${c.lon[0].toFixed(5)} … ${c.lon[1].toFixed(5)}`,
                          `lat ${c.lat[0].toFixed(5)} … ${c.lat[1].toFixed(5)}`);
    else lines.push(`${n[0]} ${fmt(c.x[0])} … ${fmt(c.x[1])}`, `${n[1]} ${fmt(c.y[0])} … ${fmt(c.y[1])}`);
    const tip = $("tip"), [w] = cssSize();
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    tip.style.left = `${Math.min(px + 14, w - tip.offsetWidth - 4)}px`;
    tip.style.top = `${py + 14}px`;
  }

  // ---- input ----------------------------------------------------------------------------
  const local = (e) => { const b = canvas.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };

  canvas.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    canvas.setPointerCapture(e.pointerId);
    hideTip();
    const p = local(e);
    if (e.shiftKey && S.pointers.size === 0) S.box = {x: p[0], y: p[1], ex: p[0], ey: p[1]};
    S.pointers.set(e.pointerId, p);
    canvas.classList.add("dragging");
  });

  canvas.addEventListener("pointermove", (e) => {
    const p = local(e);
    if (!S.pointers.has(e.pointerId)) { hoverAt(...p); return; }
    if (S.box) {
      Object.assign(S.box, {ex: p[0], ey: p[1]});
      const b = $("box");
      b.hidden = false;
      Object.assign(b.style, {left: `${Math.min(S.box.x, p[0])}px`, top: `${Math.min(S.box.y, p[1])}px`,
        width: `${Math.abs(p[0] - S.box.x)}px`, height: `${Math.abs(p[1] - S.box.y)}px`});
      return;
    }
    const before = [...S.pointers.values()];
    S.pointers.set(e.pointerId, p);
    if (S.pointers.size === 1) { panBy(p[0] - before[0][0], p[1] - before[0][1]); return; }
    const after = [...S.pointers.values()];   // pinch: the two fingers' midpoint and spread
    const mid = (a) => [(a[0][0] + a[1][0]) / 2, (a[0][1] + a[1][1]) / 2];
    const dist = (a) => Math.hypot(a[0][0] - a[1][0], a[0][1] - a[1][1]) || 1;
    const [m0, m1] = [mid(before), mid(after)];
    zoomAt(m0[0], m0[1], dist(before) / dist(after));
    panBy(m1[0] - m0[0], m1[1] - m0[1]);
  });

  function release(e) {
    if (!S.pointers.delete(e.pointerId)) return;
    if (S.pointers.size === 0) canvas.classList.remove("dragging");
    const b = S.box;
    if (!b) return;
    S.box = null;
    $("box").hidden = true;
    if (Math.abs(b.ex - b.x) < 4 || Math.abs(b.ey - b.y) < 4) return;
    const [xa, ya] = toData(Math.min(b.x, b.ex), Math.max(b.y, b.ey));
    const [xb, yb] = toData(Math.max(b.x, b.ex), Math.min(b.y, b.ey));
    setView(fitAspect({x0: xa, x1: xb, y0: ya, y1: yb}), true);
  }
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
  canvas.addEventListener("pointerleave", () => { if (!S.pointers.size) hideTip(); });

  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    hideTip();
    const unit = e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? cssSize()[1] : 1;
    zoomAt(...local(e), Math.exp(e.deltaY * unit * WHEEL));
  }, {passive: false});

  canvas.addEventListener("dblclick", (e) => zoomAt(...local(e), e.shiftKey ? 2 : 0.5));

  window.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;
    const [w, h] = cssSize(), step = {ArrowLeft: [w / 8, 0], ArrowRight: [-w / 8, 0],
      ArrowUp: [0, h / 8], ArrowDown: [0, -h / 8]}[e.key];
    if (step) panBy(...step);
    else if (e.key === "+" || e.key === "=") zoomAt(w / 2, h / 2, 0.8);
    else if (e.key === "-") zoomAt(w / 2, h / 2, 1.25);
    else if (e.key === "r" || e.key === "R") setView(home(), true);
  });

  $("reset").addEventListener("click", () => setView(home(), true));
  $("how").addEventListener("change", (e) => { S.how = e.target.value; reshade(); });
  $("cmap").addEventListener("change", (e) => { S.cmap = e.target.value; reshade(); });
  window.addEventListener("hashchange", () => applyHash());
  window.addEventListener("resize", () => { S.view = fitAspect(S.view); draw(); request(); });

  // ---- start ----------------------------------------------------------------------------
  async function start() {
    try {
      const info = await getJSON("info.json");
      S.info = info;
      for (const [id, names] of [["how", info.hows], ["cmap", info.cmaps]]) {
        for (const name of names) $(id).append(new Option(name, name));
      }
      S.how = info.how;
      S.cmap = info.cmap;
      if (!info.cmaps.includes(S.cmap)) $("cmap").append(new Option(S.cmap, S.cmap));
      const h = readHash();
      if (h.cmap && h.cmap !== S.cmap && !info.cmaps.includes(h.cmap)) $("cmap").append(new Option(h.cmap, h.cmap));
      S.how = h.how || S.how;
      S.cmap = h.cmap || S.cmap;
      $("how").value = S.how;
      $("cmap").value = S.cmap;
      S.view = h.view || home();
      await reshade();
    } catch (e) {
      status(`cannot start: ${e.message}`, true);
    }
  }
  start();
})();
