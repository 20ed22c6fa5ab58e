// hotbin serve: the page. Pan, zoom and box-zoom over the data; every view change asks the
// server to re-aggregate all the points at the new extent and pixel size (render.png).
// The latest view wins: at most one picture is in flight; views asked for meanwhile collapse
// into one, the latest, sent when it lands (so a drag refreshes at the server's pace and never
// queues). A jump (reset, box zoom, a link, another shading) or a request that takes far longer
// than the last ones aborts the one in flight (AbortController); a reply older than the picture
// shown is dropped (sequence numbers). While a view loads, the last picture is drawn where its
// extent falls in the new view. The view lives in the URL hash.
// With linked histograms (hotbin serve --hist), brushes (f.COL=lo,hi), the categories toggled
// in the legend and the box shift-dragged on the map filter the other views (panels.js); the
// URL hash holds them too, and inside an iframe the page posts them to its parent
// ({type: "hotbin-state"}) and applies {type: "hotbin-set"} messages.
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
    filters: {}, cats: null, sel: null, panels: [], drill: null, explore: false, click: null,
    settleTimer: 0,
  };
  const H = window.HotbinPanels;

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
  function brushQuery() {           // every brush, and the categories kept
    let q = "";
    for (const [c, [lo, hi]] of Object.entries(S.filters)) q += `&f.${encodeURIComponent(c)}=${lo},${hi}`;
    if (S.cats && S.info.by) q += `&f.${encodeURIComponent(S.info.by)}=${S.cats.map(encodeURIComponent).join(",")}`;
    return q;
  }
  const boxQuery = (b = S.sel) => b ? `&x0=${b[0]}&x1=${b[1]}&y0=${b[2]}&y1=${b[3]}` : "";

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
    const query = viewQuery(v, w, h), brushes = brushQuery();
    S.ctrl = ctrl;
    S.pending = false;
    S.sentAt = performance.now();
    document.body.dataset.busy = "1";
    try {
      const r = await fetch(`render.png?${query}&${shadeQuery()}${brushes}`, {signal: ctrl.signal});
      if (!r.ok) throw new Error(await errorOf(r));
      const stats = JSON.parse(r.headers.get("X-Hotbin-Stats") || "{}");
      const bitmap = await createImageBitmap(await r.blob());
      S.lastMs = performance.now() - S.sentAt;
      if (seq < S.shown) { bitmap.close(); return; }   // an older view than the one shown
      if (S.image) S.image.bitmap.close();
      S.shown = seq;
      S.image = {bitmap, view: v, w, h, query: query + brushes, stats};
      draw();
      showStats(stats);
      document.body.dataset.shown = query;
      document.body.dataset.brushes = brushes;
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
    drawSelection(w, h);
    if (S.info.crs) drawScale(w, h); else drawAxes(w, h);
  }

  function drawSelection(w, h) {    // the map's box, in data units
    if (!S.sel) return;
    const v = S.view, sx = w / (v.x1 - v.x0), sy = h / (v.y1 - v.y0), b = S.sel;
    const x = (b[0] - v.x0) * sx, y = (v.y1 - b[3]) * sy, bw = (b[1] - b[0]) * sx, bh = (b[3] - b[2]) * sy;
    ctx.save();
    ctx.fillStyle = "rgba(11, 11, 14, .6)";  // what lies outside the box dimmed
    ctx.beginPath();
    ctx.rect(0, 0, w, h);
    ctx.rect(x, y, bw, bh);
    ctx.fill("evenodd");
    ctx.setLineDash([5, 3]);
    ctx.strokeStyle = "#f3a64a";
    ctx.strokeRect(x + 0.5, y + 0.5, bw, bh);
    ctx.restore();
  }

  function drawAxes(w, h) {         // round values of x along the bottom, of y along the left
    const v = S.view, n = S.info.names;
    const tx = H.ticks(v.x0, v.x1, Math.max(2, Math.floor(w / 110)));
    const ty = H.ticks(v.y0, v.y1, Math.max(2, Math.floor(h / 80)));
    ctx.save();
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "rgba(11, 11, 14, .72)";
    ctx.fillRect(0, h - 18, w, 18);
    ctx.fillRect(0, 0, 56, h - 18);
    ctx.strokeStyle = "#8a8a96";
    ctx.fillStyle = "#c8c8d2";
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    for (const x of tx.values) {
      const px = Math.round((x - v.x0) / (v.x1 - v.x0) * w) + 0.5;
      if (px < 62) continue;
      ctx.beginPath(); ctx.moveTo(px, h - 18); ctx.lineTo(px, h - 13); ctx.stroke();
      ctx.fillText(H.fmtStep(x, tx.step), px, h - 1);
    }
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const y of ty.values) {
      const py = Math.round((v.y1 - y) / (v.y1 - v.y0) * h) + 0.5;
      if (py > h - 26 || py < 8) continue;
      ctx.beginPath(); ctx.moveTo(56, py); ctx.lineTo(51, py); ctx.stroke();
      ctx.fillText(H.fmtStep(y, ty.step), 49, py);
    }
    ctx.textAlign = "left";
    ctx.textBaseline = "bottom";
    ctx.fillStyle = "#9a9aa6";
    ctx.fillText(n[0], w - ctx.measureText(n[0]).width - 8, h - 19);
    ctx.textBaseline = "top";
    ctx.fillText(n[1], 4, 4);
    ctx.restore();
  }

  function drawScale(w, h) {        // Web Mercator: a bar of a round ground distance
    const v = S.view, R = 6378137, lat = Math.atan(Math.sinh((v.y0 + v.y1) / 2 / R));
    const mpp = (v.x1 - v.x0) / w * Math.cos(lat);  // ground metres per css pixel there
    const len = H.niceStep(mpp * 120, 1), px = Math.min(len / mpp, w - 40);
    const label = len >= 1000 ? `${+(len / 1000).toPrecision(3)} km` : `${+len.toPrecision(3)} m`;
    ctx.save();
    ctx.fillStyle = "rgba(11, 11, 14, .72)";
    ctx.fillRect(8, h - 30, px + 16, 24);
    ctx.strokeStyle = "#d8d8de";
    ctx.beginPath(); ctx.moveTo(16, h - 14); ctx.lineTo(16, h - 10); ctx.lineTo(16 + px, h - 10);
    ctx.lineTo(16 + px, h - 14); ctx.stroke();
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#d8d8de";
    ctx.textBaseline = "bottom";
    ctx.fillText(label, 18, h - 13);
    ctx.restore();
  }

  const fmt = (v) => v === null || v === undefined ? "–" :
    Number.isInteger(v) ? v.toLocaleString("en-US") : Number(v).toPrecision(5);

  function status(text, error = false) {
    $("status").textContent = text;
    $("status").classList.toggle("error", error);
  }

  function showStats(s) {
    const what = brushQuery() ? "points passing the brushes in view" : "points in view";
    status(`${fmt(s.in_view)} of ${fmt(s.n)} ${what} · max cell ${fmt(s.max)} · ${fmt(s.ms)} ms`);
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
      li.dataset.label = k.label;
      li.title = "click: show or hide this category (a brush on the other views)";
      li.addEventListener("click", () => {
        const all = cats.map((c) => c.label), kept = new Set(S.cats || all);
        if (kept.has(k.label)) kept.delete(k.label); else kept.add(k.label);
        S.cats = kept.size === all.length ? null : all.filter((c) => kept.has(c));
        changed();
      });
      legend.append(li);
    }
    legend.classList.add("toggles");
    showLegendState();
  }

  async function reshade() {
    request(true);
    try { showKey(await getJSON(`info.json?${shadeQuery()}`)); } catch (e) { status(e.message, true); }
  }

  // ---- the URL hash ---------------------------------------------------------------------
  function saveHash() {
    const v = S.view;
    const h = `#x0=${v.x0}&x1=${v.x1}&y0=${v.y0}&y1=${v.y1}&how=${S.how}&cmap=${S.cmap}` +
      brushQuery() + (S.sel ? `&box=${S.sel.join(",")}` : "");
    if (location.hash !== h) history.replaceState(null, "", h);
  }

  function readBrushes(p) {         // brushes, categories and box of a hash (or a message)
    const filters = {}, nums = (t) => (t || "").split(",").map(Number);
    let cats = null, sel = null;
    for (const [k, val] of p.entries()) {
      if (!k.startsWith("f.")) continue;
      const c = k.slice(2);
      if (S.info.by && c === S.info.by) { cats = val ? val.split(",") : []; continue; }
      const r = nums(val);
      if (S.info.columns.includes(c) && r.length === 2 && r.every(Number.isFinite) && r[0] < r[1]) filters[c] = r;
    }
    const b = nums(p.get("box"));
    if (p.get("box") && b.length === 4 && b.every(Number.isFinite) && b[0] < b[1] && b[2] < b[3]) sel = b;
    return {filters, cats, sel};
  }

  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1)), out = {};
    const v = {x0: +p.get("x0"), x1: +p.get("x1"), y0: +p.get("y0"), y1: +p.get("y1")};
    if (["x0", "x1", "y0", "y1"].every((k) => p.get(k) !== null) && valid(v)) out.view = v;
    if (S.info.hows.includes(p.get("how"))) out.how = p.get("how");
    if (p.get("cmap")) out.cmap = p.get("cmap");
    Object.assign(out, readBrushes(p));
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
    const moved = JSON.stringify([h.filters, h.cats, h.sel]) !== JSON.stringify([S.filters, S.cats, S.sel]);
    Object.assign(S, {filters: h.filters, cats: h.cats, sel: h.sel});
    draw();
    if (moved) changed(false);
    if (reshaded) reshade(); else request(true);
  }

  // ---- linked views ---------------------------------------------------------------------
  function changed(map = true) {    // a brush, the categories or the box changed
    saveHash();
    if (map) request();
    draw();
    showLegendState();
    $("clear").hidden = !S.explore || (!Object.keys(S.filters).length && !S.sel && !S.cats);
    const q = brushQuery() + boxQuery();
    for (const p of S.panels) { p.draw(); p.load(q); }
    if (window.parent !== window) {
      const filters = Object.fromEntries(Object.entries(S.filters).map(([c, r]) => [c, r.slice()]));
      if (S.cats && S.info.by) filters[S.info.by] = S.cats.slice();
      window.parent.postMessage({type: "hotbin-state", filters, box: S.sel ? S.sel.slice() : null}, "*");
    }
    if (S.drill && S.drill.open && S.drillSel) drillSelection();
  }

  function setBrush(column, range) {
    const before = JSON.stringify(S.filters[column] || null);
    if (range) S.filters[column] = range; else delete S.filters[column];
    if (JSON.stringify(range) !== before) changed();
  }

  function drillSelection() {       // the rows passing every brush and the box
    S.drillSel = true;
    const q = (brushQuery() + boxQuery()).slice(1);
    S.drill.show(q, S.sel ? "rows in the box passing the brushes" : "rows passing the brushes");
  }

  function drillCell(c) {           // the rows behind one cell of the map
    S.drillSel = false;
    const q = (brushQuery() + boxQuery([c.x[0], c.x[1], c.y[0], c.y[1]])).slice(1);
    S.drill.show(q, `cell ${c.i}, ${c.j} (count ${fmt(c.count)})`);
  }

  window.addEventListener("message", (e) => {
    const m = e.data;
    if (!m || m.type !== "hotbin-set" || !S.info) return;
    const p = new URLSearchParams();
    for (const [c, r] of Object.entries(m.filters || {})) p.append(`f.${c}`, [].concat(r).join(","));
    if (Array.isArray(m.box)) p.set("box", m.box.join(","));
    Object.assign(S, readBrushes(p));
    changed();
  });

  function showLegendState() {
    const legend = $("legend");
    for (const li of legend.children) li.classList.toggle("off", Boolean(S.cats) && !S.cats.includes(li.dataset.label));
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
      const c = await r2.json();
      S.hover = c;
      showTip(c, px, py);
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
    else {
      const dx = (c.x[1] - c.x[0]) / 10, dy = (c.y[1] - c.y[0]) / 10;
      lines.push(`${n[0]} [${H.fmtStep(c.x[0], dx)}, ${H.fmtStep(c.x[1], dx)})`,
                 `${n[1]} [${H.fmtStep(c.y[0], dy)}, ${H.fmtStep(c.y[1], dy)})`);
    }
    if (S.explore) lines.push("click: the rows behind this cell");
    const tip = $("tip"), [w, h] = cssSize();
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    tip.style.left = `${Math.max(2, px + 14 + tw > w - 2 ? px - 14 - tw : px + 14)}px`;
    tip.style.top = `${Math.max(2, py + 14 + th > h - 2 ? py - 14 - th : py + 14)}px`;
  }

  // ---- input ----------------------------------------------------------------------------
  const local = (e) => { const b = canvas.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };

  canvas.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    canvas.setPointerCapture(e.pointerId);
    hideTip();
    const p = local(e);
    if (e.shiftKey && S.pointers.size === 0) S.box = {x: p[0], y: p[1], ex: p[0], ey: p[1]};
    S.click = S.pointers.size === 0 && !e.shiftKey ? {x: p[0], y: p[1], view: S.view} : null;
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
    const click = S.click;
    S.click = null;
    if (click && S.explore && e.type === "pointerup" && click.view === S.view) {
      const [x, y] = local(e);
      if (Math.hypot(x - click.x, y - click.y) < 4) clickCell(x, y);
    }
    const b = S.box;
    if (!b) return;
    S.box = null;
    $("box").hidden = true;
    if (Math.abs(b.ex - b.x) < 4 || Math.abs(b.ey - b.y) < 4) {
      if (S.explore && S.sel) { S.sel = null; changed(false); }  // a shift-click clears the box
      return;
    }
    const [xa, ya] = toData(Math.min(b.x, b.ex), Math.max(b.y, b.ey));
    const [xb, yb] = toData(Math.max(b.x, b.ex), Math.min(b.y, b.ey));
    if (S.explore) { S.sel = [xa, xb, ya, yb]; changed(false); drillSelection(); return; }
    setView(fitAspect({x0: xa, x1: xb, y0: ya, y1: yb}), true);
  }

  async function clickCell(px, py) {  // the cell under a click: its rows in the drill-down
    const im = S.image;
    if (!im) return;
    const [dx, dy, dw, dh] = placement(im);
    const i = Math.floor((px - dx) / dw * im.w), r = Math.floor((py - dy) / dh * im.h);
    if (i < 0 || r < 0 || i >= im.w || r >= im.h) return;
    try { drillCell(await getJSON(`cell.json?${im.query}&i=${i}&j=${im.h - 1 - r}`)); }
    catch (e) { status(e.message, true); }
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
    else if (e.key === "Escape" && S.drill && S.drill.open) S.drill.hide();
  });
  $("clear").addEventListener("click", () => {
    Object.assign(S, {filters: {}, cats: null, sel: null});
    changed();
  });

  $("reset").addEventListener("click", () => setView(home(), true));
  $("how").addEventListener("change", (e) => { S.how = e.target.value; reshade(); });
  $("cmap").addEventListener("change", (e) => { S.cmap = e.target.value; reshade(); });
  window.addEventListener("hashchange", () => applyHash());
  window.addEventListener("resize", () => { S.view = fitAspect(S.view); draw(); request(); });

  function startPanels(info) {
    S.explore = info.panels.length > 0;
    S.drill = H.Drill(() => { S.drillSel = false; });
    if (S.explore) {
      document.body.classList.add("explore");
      $("side").hidden = false;
      const host = {root: $("side"), brushes: () => S.filters, setBrush, error: (m) => status(m, true),
                    settle: () => {}};
      S.panels = info.panels.map((spec, k) => H.Panel(spec, k, host));
      $("help").textContent = "drag: pan · wheel or pinch: zoom · shift-drag: select a box (shift-click " +
        "clears it) · click a cell: its rows · drag on a histogram: brush a range (drag inside: move, " +
        "edges: resize, click: clear) · R: reset";
      window.addEventListener("resize", () => S.panels.forEach((p) => p.draw()));
      changed(false);
    } else if (info.categories) changed(false);
    if (info.categories) $("help").textContent += " · click a category in the legend: show or hide it";
    $("help").title = $("help").textContent;  // the whole text, where the strip cuts it
  }

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
      Object.assign(S, {filters: h.filters, cats: h.cats, sel: h.sel});
      startPanels(info);
      await reshade();
    } catch (e) {
      status(`cannot start: ${e.message}`, true);
    }
  }
  start();
})();
