// hotbin serve: the map's input. Drag pans, wheel and pinch zoom about the pointer, double-click
// zooms in (shift: out), shift-drag draws a box (a box zoom; with linked views, the selection
// box, and a shift-click clears it), a click on a cell opens its rows; arrows, + - and R on the
// keyboard; the header's controls; the window's resize and the URL's hash changed by hand.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.input = (app) => {
  const S = app.S, canvas = app.canvas, {$} = Hotbin.common;
  const WHEEL = 0.0015;           // zoom per wheel pixel (exp scale)
  const local = (e) => { const b = canvas.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };

  canvas.addEventListener("pointerdown", down);
  canvas.addEventListener("pointermove", move);
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
  canvas.addEventListener("pointerleave", () => { if (!S.pointers.size) app.hideTip(); });
  canvas.addEventListener("wheel", wheel, {passive: false});
  canvas.addEventListener("dblclick", (e) => app.zoomAt(...local(e), e.shiftKey ? 2 : 0.5));
  window.addEventListener("keydown", key);
  $("clear").addEventListener("click", () => {
    Object.assign(S, {filters: {}, cats: null, sel: null});
    app.changed();
  });
  $("reset").addEventListener("click", () => app.setView(app.home(), true));
  $("how").addEventListener("change", (e) => { S.how = e.target.value; app.reshade(); });
  $("cmap").addEventListener("change", (e) => { S.cmap = e.target.value; app.reshade(); });
  window.addEventListener("hashchange", () => app.applyHash());
  window.addEventListener("resize", () => { S.view = app.fitAspect(S.view); app.draw(); app.request(); });

  function down(e) {
    if (e.button !== 0) return;
    canvas.setPointerCapture(e.pointerId);
    app.hideTip();
    const p = local(e);
    if (e.shiftKey && S.pointers.size === 0) S.box = {x: p[0], y: p[1], ex: p[0], ey: p[1]};
    S.click = S.pointers.size === 0 && !e.shiftKey ? {x: p[0], y: p[1], view: S.view} : null;
    S.pointers.set(e.pointerId, p);
    canvas.classList.add("dragging");
  }

  function move(e) {
    const p = local(e);
    if (!S.pointers.has(e.pointerId)) { app.hoverAt(...p); return; }
    if (S.box) { stretchBox(p); return; }
    const before = [...S.pointers.values()];
    S.pointers.set(e.pointerId, p);
    if (S.pointers.size === 1) { app.panBy(p[0] - before[0][0], p[1] - before[0][1]); return; }
    const after = [...S.pointers.values()];   // pinch: the two fingers' midpoint and spread
    const mid = (a) => [(a[0][0] + a[1][0]) / 2, (a[0][1] + a[1][1]) / 2];
    const dist = (a) => Math.hypot(a[0][0] - a[1][0], a[0][1] - a[1][1]) || 1;
    const [m0, m1] = [mid(before), mid(after)];
    app.zoomAt(m0[0], m0[1], dist(before) / dist(after));
    app.panBy(m1[0] - m0[0], m1[1] - m0[1]);
  }

  function stretchBox(p) {        // the shift-drag's rectangle follows the pointer
    Object.assign(S.box, {ex: p[0], ey: p[1]});
    const b = $("box");
    b.hidden = false;
    Object.assign(b.style, {left: `${Math.min(S.box.x, p[0])}px`, top: `${Math.min(S.box.y, p[1])}px`,
      width: `${Math.abs(p[0] - S.box.x)}px`, height: `${Math.abs(p[1] - S.box.y)}px`});
  }

  function release(e) {
    if (!S.pointers.delete(e.pointerId)) return;
    if (S.pointers.size === 0) canvas.classList.remove("dragging");
    const click = S.click;
    S.click = null;
    if (click && S.explore && e.type === "pointerup" && click.view === S.view) {
      const [x, y] = local(e);
      if (Math.hypot(x - click.x, y - click.y) < 4) app.clickCell(x, y);
    }
    const b = S.box;
    if (!b) return;
    S.box = null;
    $("box").hidden = true;
    boxDone(b);
  }

  function boxDone(b) {           // a box zoom, or (linked views) the selection box and its rows
    if (Math.abs(b.ex - b.x) < 4 || Math.abs(b.ey - b.y) < 4) {
      if (S.explore && S.sel) { S.sel = null; app.changed(false); }  // a shift-click clears the box
      return;
    }
    const [xa, ya] = app.toData(Math.min(b.x, b.ex), Math.max(b.y, b.ey));
    const [xb, yb] = app.toData(Math.max(b.x, b.ex), Math.min(b.y, b.ey));
    if (S.explore) { S.sel = [xa, xb, ya, yb]; app.changed(false); app.drillSelection(); return; }
    app.setView(app.fitAspect({x0: xa, x1: xb, y0: ya, y1: yb}), true);
  }

  function wheel(e) {
    e.preventDefault();
    app.hideTip();
    const unit = e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? app.cssSize()[1] : 1;
    app.zoomAt(...local(e), Math.exp(e.deltaY * unit * WHEEL));
  }

  function key(e) {
    if (e.target.tagName === "SELECT") return;
    const [w, h] = app.cssSize(), step = {ArrowLeft: [w / 8, 0], ArrowRight: [-w / 8, 0],
      ArrowUp: [0, h / 8], ArrowDown: [0, -h / 8]}[e.key];
    if (step) app.panBy(...step);
    else if (e.key === "+" || e.key === "=") app.zoomAt(w / 2, h / 2, 0.8);
    else if (e.key === "-") app.zoomAt(w / 2, h / 2, 1.25);
    else if (e.key === "r" || e.key === "R") app.setView(app.home(), true);
    else if (e.key === "Escape" && S.drill && S.drill.open) S.drill.hide();
  }

  return {};
};
