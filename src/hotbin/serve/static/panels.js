// hotbin serve: the linked histograms beside the map. One panel a --hist column (hist.json:
// every brush but the panel's own, and the map's box), brushed by dragging: a drag on empty
// ground draws a range, inside the range moves it, at its edges resizes it; a click clears it.
// The page (linked.js) owns the brushes: a panel reads them from its host and sets them there.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.Panel = (() => {
  const H = Hotbin.common;
  const PAD = {l: 46, r: 10, t: 8, b: 20};  // plot margins inside a panel's canvas (css px)
  const EDGE = 6;                          // px from a brush's edge that grab the edge

  // host: {root, brushes(), setBrush(column, range or null), error(message), settle()}
  function Panel(spec, index, host) {
    const P = {spec, host, ...elements(spec, index), data: null, ctrl: null, drag: null, seq: 0};
    host.root.append(P.el);
    brushing(P);
    P.clear.addEventListener("click", () => { host.setBrush(spec.column, null); host.settle(); });
    return {spec, el: P.el, draw: () => draw(P), load: (query) => load(P, query)};
  }

  function elements(spec, index) {  // the panel: a head (name, brushed range, clear), a canvas
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
    return {el, range, clear, canvas};
  }

  const brushOf = (P) => P.host.brushes()[P.spec.column] || null;

  function geometry(P) {            // the canvas's size and the column's value <-> css x
    const w = P.canvas.clientWidth || 300, h = P.canvas.clientHeight || 150;
    const e = P.data ? P.data.edges : [P.spec.lo, P.spec.hi];
    const lo = e[0], hi = e[e.length - 1];
    const sx = (w - PAD.l - PAD.r) / ((hi - lo) || 1);
    return {w, h, lo, hi, toX: (v) => PAD.l + (v - lo) * sx, toV: (x) => lo + (x - PAD.l) / sx};
  }

  // ---- drawing --------------------------------------------------------------------------
  function draw(P) {
    const g = geometry(P), ctx = H.fitCanvas(P.canvas, g.w, g.h);
    const b = brushOf(P), y0 = g.h - PAD.b, ph = y0 - PAD.t;
    P.range.textContent = b ? `[${H.fmtStep(b[0], (g.hi - g.lo) / 1000)}, ${H.fmtStep(b[1], (g.hi - g.lo) / 1000)})` : "";
    P.clear.hidden = !b;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#9a9aa6";
    ctx.strokeStyle = "#3a3a45";
    ctx.lineWidth = 1;
    if (P.data) drawCounts(ctx, g, P.data, b, y0, ph);
    drawValues(ctx, g, y0);
    if (b) drawBrush(ctx, g, b, ph);
  }

  function drawCounts(ctx, g, data, b, y0, ph) {  // round counts, grid lines, the bars
    const max = Math.max(1, ...data.counts);
    const t = H.ticks(0, max, Math.max(2, Math.floor(ph / 30)));
    const sy = ph / Math.max(max, t.values[t.values.length - 1]);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of t.values) {
      const y = Math.round(y0 - v * sy) + 0.5;
      ctx.strokeStyle = "#24242c";
      ctx.beginPath(); ctx.moveTo(PAD.l, y); ctx.lineTo(g.w - PAD.r, y); ctx.stroke();
      ctx.fillText(H.fmtCount(v), PAD.l - 4, y);
    }
    const e = data.edges;
    for (let k = 0; k < data.counts.length; k++) {
      const xa = g.toX(e[k]), xb = g.toX(e[k + 1]), hgt = data.counts[k] * sy;
      const inside = !b || (e[k + 1] > b[0] && e[k] < b[1]);
      ctx.fillStyle = inside ? "#f3a64a" : "#5a4a38";
      ctx.fillRect(xa + 0.5, y0 - hgt, Math.max(0.5, xb - xa - 1), hgt);
    }
  }

  function drawValues(ctx, g, y0) {  // the x axis: round values of the column
    ctx.strokeStyle = "#5a5a66";
    ctx.beginPath(); ctx.moveTo(PAD.l, y0 + 0.5); ctx.lineTo(g.w - PAD.r, y0 + 0.5); ctx.stroke();
    const t = H.ticks(g.lo, g.hi, Math.max(2, Math.floor((g.w - PAD.l - PAD.r) / 70)));
    ctx.fillStyle = "#9a9aa6";
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const v of t.values) {
      const x = Math.round(g.toX(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y0 + 4); ctx.stroke();
      ctx.fillText(H.fmtStep(v, t.step), x, y0 + 5);
    }
  }

  function drawBrush(ctx, g, b, ph) {
    const xa = Math.max(PAD.l, g.toX(b[0])), xb = Math.min(g.w - PAD.r, g.toX(b[1]));
    ctx.fillStyle = "rgba(243, 166, 74, .14)";
    ctx.fillRect(xa, PAD.t, Math.max(1, xb - xa), ph);
    ctx.strokeStyle = "#f3a64a";
    ctx.strokeRect(Math.round(xa) + 0.5, PAD.t + 0.5, Math.max(1, Math.round(xb - xa)), ph);
  }

  // ---- counts ---------------------------------------------------------------------------
  async function load(P, query) {   // the panel's counts under query (every other brush, the box)
    if (P.ctrl) P.ctrl.abort();
    const ctrl = new AbortController(), seq = ++P.seq, spec = P.spec, el = P.el;
    P.ctrl = ctrl;
    const url = `hist.json?column=${encodeURIComponent(spec.column)}&bins=${spec.bins}` +
      `&lo=${spec.lo}&hi=${spec.hi}${query}`;
    el.dataset.busy = "1";
    try {
      const data = await Hotbin.transport.getJSON(url, ctrl.signal);
      if (seq !== P.seq) return;
      P.data = data;
      el.dataset.n = String(data.n);
      el.dataset.counts = data.counts.join(",");
      el.dataset.query = query;
      draw(P);
    } catch (e) {
      if (e.name !== "AbortError") P.host.error(`${spec.column}: ${e.message}`);
    } finally {
      if (P.ctrl === ctrl) { P.ctrl = null; delete el.dataset.busy; }
    }
  }

  // ---- brushing: a new range, the range moved, or one edge moved; a click clears ----------
  function brushing(P) {
    const canvas = P.canvas, column = P.spec.column;
    const localX = (e) => e.clientX - canvas.getBoundingClientRect().left;
    canvas.addEventListener("pointerdown", (e) => {
      if (e.button !== 0) return;
      canvas.setPointerCapture(e.pointerId);
      const x = localX(e), b = brushOf(P);
      P.drag = {mode: grabbed(geometry(P), b, x), x0: x, start: b ? b.slice() : null, moved: false};
    });
    canvas.addEventListener("pointermove", (e) => {
      const g = geometry(P), x = localX(e), d = P.drag;
      if (!d) { canvas.style.cursor = cursor(g, brushOf(P), x); return; }
      if (!d.moved && Math.abs(x - d.x0) < 3) return;
      d.moved = true;
      const [lo, hi] = dragged(g, d, x).map((v) => round(Math.min(g.hi, Math.max(g.lo, v)), g));
      if (hi > lo) P.host.setBrush(column, [lo, hi]);
    });
    const up = () => {
      const d = P.drag;
      P.drag = null;
      if (d && !d.moved) P.host.setBrush(column, null);  // a click clears the brush
      P.host.settle();
    };
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
  }

  function grabbed(g, b, x) {       // what a press at x takes: "lo", "hi", "move" or "new"
    if (!b) return "new";
    const xa = g.toX(b[0]), xb = g.toX(b[1]);
    if (Math.abs(x - xa) <= EDGE) return "lo";
    if (Math.abs(x - xb) <= EDGE) return "hi";
    return x > xa && x < xb ? "move" : "new";
  }

  function cursor(g, b, x) {        // what a press there would do, shown before it
    const near = b && (Math.abs(x - g.toX(b[0])) <= EDGE || Math.abs(x - g.toX(b[1])) <= EDGE);
    const inside = b && x > g.toX(b[0]) && x < g.toX(b[1]);
    return near ? "ew-resize" : inside ? "move" : "crosshair";
  }

  function dragged(g, d, x) {       // the range [lo, hi] a drag from d.x0 to x makes
    if (d.mode === "new") return [g.toV(Math.min(d.x0, x)), g.toV(Math.max(d.x0, x))];
    if (d.mode === "move") {
      const dv = g.toV(x) - g.toV(d.x0), w = d.start[1] - d.start[0];
      const lo = Math.min(Math.max(d.start[0] + dv, g.lo), g.hi - w);
      return [lo, lo + w];
    }
    const v = g.toV(x), other = d.mode === "lo" ? d.start[1] : d.start[0];
    return [Math.min(v, other), Math.max(v, other)];
  }

  function round(v, g) {            // v with the digits that a 1/2000 of the panel's span needs
    return Number(v.toPrecision(Math.max(3, Math.ceil(
      Math.log10(Math.max(Math.abs(v), Math.abs(g.hi), Math.abs(g.lo)) / ((g.hi - g.lo) / 2000))))));
  }

  return Panel;
})();
