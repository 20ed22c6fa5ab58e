// hotbin serve: the linked panels beside the map. One histogram per --hist column (hist.json:
// every brush but the panel's own, and the map's box), brushed by dragging: a drag on empty
// ground draws a range, inside the range moves it, at its edges resizes it; a click clears it.
// The drill-down shows how many rows pass a selection and the first of them (rows.json), with a
// link to all of them as CSV (rows.csv, the same query). The viewer (viewer.js) owns the state.
"use strict";
window.HotbinPanels = (() => {
  const PAD = {l: 46, r: 10, t: 8, b: 20};  // plot margins inside a panel's canvas (css px)
  const EDGE = 6;                          // px from a brush's edge that grab the edge

  // ---- numbers --------------------------------------------------------------------------
  function niceStep(span, n) {            // 1, 2 or 5 times a power of ten, about span / n
    const raw = span / Math.max(n, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  function ticks(lo, hi, n) {             // round values in [lo, hi], and their step
    if (!(hi > lo) || !Number.isFinite(hi - lo)) return {values: [lo], step: 1};
    const step = niceStep(hi - lo, n), out = [];
    for (let k = Math.ceil(lo / step); k * step <= hi + step * 1e-9 && out.length < 100; k++)
      out.push(k === 0 ? 0 : k * step);
    return {values: out, step};
  }

  function fmtStep(v, step) {             // v with the digits that tell values step apart
    if (!Number.isFinite(v)) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e9 || a < 1e-4)) return v.toExponential(Math.max(0, Math.min(8,
      Math.ceil(Math.log10(a) - Math.log10(Math.abs(step) || a)) + 1)));
    const d = Math.max(0, Math.min(12, -Math.floor(Math.log10(Math.abs(step) || 1) + 1e-9)));
    return v.toLocaleString("en-US", {minimumFractionDigits: d, maximumFractionDigits: d});
  }

  function fmtCount(v) {
    if (v >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
    if (v >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
    return v.toLocaleString("en-US");
  }

  // ---- a histogram panel ----------------------------------------------------------------
  function Panel(spec, index, host) {
    const el = document.createElement("div"), head = document.createElement("div");
    const name = document.createElement("span"), range = document.createElement("span");
    const clear = document.createElement("button"), canvas = document.createElement("canvas");
    el.className = "panel";
    el.id = `hist-${index}`;
    el.dataset.column = spec.column;
    head.className = "panel-head";
    name.className = "panel-name";
    name.textContent = spec.column;
    range.className = "panel-range";
    clear.type = "button";
    clear.textContent = "clear";
    clear.title = `Clear the brush on ${spec.column}`;
    clear.hidden = true;
    head.append(name, range, clear);
    el.append(head, canvas);
    host.root.append(el);
    const P = {spec, el, canvas, data: null, ctrl: null, drag: null, seq: 0};
    const brush = () => host.brushes()[spec.column] || null;

    function geometry() {
      const w = canvas.clientWidth || 300, h = canvas.clientHeight || 150;
      const e = P.data ? P.data.edges : [spec.lo, spec.hi];
      const lo = e[0], hi = e[e.length - 1];
      const sx = (w - PAD.l - PAD.r) / ((hi - lo) || 1);
      return {w, h, lo, hi, toX: (v) => PAD.l + (v - lo) * sx, toV: (x) => lo + (x - PAD.l) / sx};
    }

    function draw() {
      const r = Math.min(window.devicePixelRatio || 1, 2), g = geometry(), ctx = canvas.getContext("2d");
      if (canvas.width !== Math.round(g.w * r) || canvas.height !== Math.round(g.h * r)) {
        canvas.width = Math.round(g.w * r);
        canvas.height = Math.round(g.h * r);
      }
      ctx.setTransform(r, 0, 0, r, 0, 0);
      ctx.clearRect(0, 0, g.w, g.h);
      const b = brush(), y0 = g.h - PAD.b, ph = y0 - PAD.t;
      range.textContent = b ? `[${fmtStep(b[0], (g.hi - g.lo) / 1000)}, ${fmtStep(b[1], (g.hi - g.lo) / 1000)})` : "";
      clear.hidden = !b;
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillStyle = "#9a9aa6";
      ctx.strokeStyle = "#3a3a45";
      ctx.lineWidth = 1;
      if (P.data) {                         // counts axis: round counts, grid lines
        const max = Math.max(1, ...P.data.counts);
        const t = ticks(0, max, Math.max(2, Math.floor(ph / 30)));
        const top = Math.max(max, t.values[t.values.length - 1]);
        const sy = ph / top;
        ctx.textAlign = "right";
        ctx.textBaseline = "middle";
        for (const v of t.values) {
          const y = Math.round(y0 - v * sy) + 0.5;
          ctx.strokeStyle = "#24242c";
          ctx.beginPath(); ctx.moveTo(PAD.l, y); ctx.lineTo(g.w - PAD.r, y); ctx.stroke();
          ctx.fillText(fmtCount(v), PAD.l - 4, y);
        }
        const e = P.data.edges;
        for (let k = 0; k < P.data.counts.length; k++) {
          const xa = g.toX(e[k]), xb = g.toX(e[k + 1]), c = P.data.counts[k];
          const inside = !b || (e[k + 1] > b[0] && e[k] < b[1]);
          ctx.fillStyle = inside ? "#f3a64a" : "#5a4a38";
          const hgt = c * sy;
          ctx.fillRect(xa + 0.5, y0 - hgt, Math.max(0.5, xb - xa - 1), hgt);
        }
      }
      ctx.strokeStyle = "#5a5a66";          // the x axis: round values of the column
      ctx.beginPath(); ctx.moveTo(PAD.l, y0 + 0.5); ctx.lineTo(g.w - PAD.r, y0 + 0.5); ctx.stroke();
      const t = ticks(g.lo, g.hi, Math.max(2, Math.floor((g.w - PAD.l - PAD.r) / 70)));
      ctx.fillStyle = "#9a9aa6";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      for (const v of t.values) {
        const x = Math.round(g.toX(v)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y0 + 4); ctx.stroke();
        ctx.fillText(fmtStep(v, t.step), x, y0 + 5);
      }
      if (b) {                              // the brush
        const xa = Math.max(PAD.l, g.toX(b[0])), xb = Math.min(g.w - PAD.r, g.toX(b[1]));
        ctx.fillStyle = "rgba(243, 166, 74, .14)";
        ctx.fillRect(xa, PAD.t, Math.max(1, xb - xa), ph);
        ctx.strokeStyle = "#f3a64a";
        ctx.strokeRect(Math.round(xa) + 0.5, PAD.t + 0.5, Math.max(1, Math.round(xb - xa)), ph);
      }
    }

    async function load(query) {
      if (P.ctrl) P.ctrl.abort();
      const ctrl = new AbortController(), seq = ++P.seq;
      P.ctrl = ctrl;
      const url = `hist.json?column=${encodeURIComponent(spec.column)}&bins=${spec.bins}` +
        `&lo=${spec.lo}&hi=${spec.hi}${query}`;
      el.dataset.busy = "1";
      try {
        const r = await fetch(url, {signal: ctrl.signal});
        if (!r.ok) throw new Error((await r.json()).error || r.statusText);
        const data = await r.json();
        if (seq !== P.seq) return;
        P.data = data;
        el.dataset.n = String(data.n);
        el.dataset.counts = data.counts.join(",");
        el.dataset.query = query;
        draw();
      } catch (e) {
        if (e.name !== "AbortError") host.error(`${spec.column}: ${e.message}`);
      } finally {
        if (P.ctrl === ctrl) { P.ctrl = null; delete el.dataset.busy; }
      }
    }

    // dragging: a new range, the range moved, or one edge moved; a click clears
    const localX = (e) => e.clientX - canvas.getBoundingClientRect().left;
    const round = (v, g) => Number(v.toPrecision(Math.max(3, Math.ceil(
      Math.log10(Math.max(Math.abs(v), Math.abs(g.hi), Math.abs(g.lo)) / ((g.hi - g.lo) / 2000)))))) ;
    canvas.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      canvas.setPointerCapture(e.pointerId);
      const g = geometry(), x = localX(e), b = brush();
      let mode = "new";
      if (b) {
        const xa = g.toX(b[0]), xb = g.toX(b[1]);
        if (Math.abs(x - xa) <= EDGE) mode = "lo";
        else if (Math.abs(x - xb) <= EDGE) mode = "hi";
        else if (x > xa && x < xb) mode = "move";
      }
      P.drag = {mode, x0: x, start: b ? b.slice() : null, moved: false};
    });
    canvas.addEventListener("pointermove", (e) => {
      const g = geometry(), x = localX(e);
      if (!P.drag) {
        const b = brush();
        const near = b && (Math.abs(x - g.toX(b[0])) <= EDGE || Math.abs(x - g.toX(b[1])) <= EDGE);
        const inside = b && x > g.toX(b[0]) && x < g.toX(b[1]);
        canvas.style.cursor = near ? "ew-resize" : inside ? "move" : "crosshair";
        return;
      }
      const d = P.drag;
      if (!d.moved && Math.abs(x - d.x0) < 3) return;
      d.moved = true;
      const clamp = (v) => Math.min(g.hi, Math.max(g.lo, v));
      let lo, hi;
      if (d.mode === "new") [lo, hi] = [g.toV(Math.min(d.x0, x)), g.toV(Math.max(d.x0, x))];
      else if (d.mode === "move") {
        const dv = g.toV(x) - g.toV(d.x0), w = d.start[1] - d.start[0];
        lo = Math.min(Math.max(d.start[0] + dv, g.lo), g.hi - w);
        hi = lo + w;
      } else {
        const v = g.toV(x), other = d.mode === "lo" ? d.start[1] : d.start[0];
        [lo, hi] = [Math.min(v, other), Math.max(v, other)];
      }
      lo = round(clamp(lo), g);
      hi = round(clamp(hi), g);
      if (hi > lo) host.setBrush(spec.column, [lo, hi]);
    });
    const up = (e) => {
      const d = P.drag;
      P.drag = null;
      if (d && !d.moved) host.setBrush(spec.column, null);  // a click clears the brush
      host.settle();
    };
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
    clear.addEventListener("click", () => { host.setBrush(spec.column, null); host.settle(); });
    return {spec, el, draw, load};
  }

  // ---- the drill-down -------------------------------------------------------------------
  function Drill(onClose) {
    const $ = (id) => document.getElementById(id);
    let ctrl = null;
    async function show(query, title) {
      if (ctrl) ctrl.abort();
      ctrl = new AbortController();
      const mine = ctrl;
      document.body.classList.add("drilling");
      $("drill").hidden = false;
      $("drill-title").textContent = `${title}: counting…`;
      $("drill-csv").href = `rows.csv?${query}`;
      window.dispatchEvent(new Event("resize"));
      try {
        const r = await fetch(`rows.json?${query}&limit=100`, {signal: mine.signal});
        const d = await r.json();
        if (!r.ok) throw new Error(d.error || r.statusText);
        $("drill-title").textContent = `${title}: ${d.count.toLocaleString("en-US")} rows` +
          (d.count > d.rows.length ? ` (the first ${d.rows.length} shown)` : "");
        $("drill").dataset.count = String(d.count);
        const table = $("drill-table"), head = document.createElement("tr");
        for (const c of ["#", ...d.columns]) {
          const th = document.createElement("th");
          th.textContent = c;
          head.append(th);
        }
        const rows = d.rows.map((row, k) => {
          const tr = document.createElement("tr");
          [k + 1, ...row].forEach((v) => {
            const td = document.createElement("td");
            td.textContent = v === null ? "" : typeof v === "number" ? String(v) : v;
            if (typeof v === "string") td.className = "text";
            td.title = td.textContent;
            tr.append(td);
          });
          return tr;
        });
        const thead = document.createElement("thead"), tbody = document.createElement("tbody");
        thead.append(head);
        tbody.append(...rows);
        table.replaceChildren(thead, tbody);
      } catch (e) {
        if (e.name !== "AbortError") $("drill-title").textContent = `${title}: ${e.message}`;
      }
    }
    function hide() {
      if (ctrl) ctrl.abort();
      $("drill").hidden = true;
      delete $("drill").dataset.count;
      document.body.classList.remove("drilling");
      window.dispatchEvent(new Event("resize"));
      onClose();
    }
    $("drill-close").addEventListener("click", hide);
    return {show, hide, get open() { return !$("drill").hidden; }};
  }

  return {Panel, Drill, ticks, fmtStep, fmtCount, niceStep};
})();
