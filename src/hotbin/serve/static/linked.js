// hotbin serve: the linked views (hotbin serve --hist). The brushes on the histograms
// (S.filters: {column: [lo, hi]}), the categories kept in the legend (S.cats) and the box
// shift-dragged on the map (S.sel) filter the other views: on every change the map, each panel
// (panels.js) and an open drill-down (drill.js) are asked again. Inside an iframe the page posts
// them to its parent ({type: "hotbin-state", filters, box}) and applies {type: "hotbin-set"}
// messages: the notebook widget keeps them in its model that way.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.linked = (app) => {
  const S = app.S, {$, fmt} = Hotbin.common;

  window.addEventListener("message", (e) => {
    const m = e.data;
    if (!m || m.type !== "hotbin-set" || !S.info) return;
    const p = new URLSearchParams();
    for (const [c, r] of Object.entries(m.filters || {})) p.append(`f.${c}`, [].concat(r).join(","));
    if (Array.isArray(m.box)) p.set("box", m.box.join(","));
    Object.assign(S, app.readBrushes(p));
    changed();
  });

  function changed(map = true) {    // a brush, the categories or the box changed
    app.saveHash();
    if (map) app.request();
    app.draw();
    app.showLegendState();
    $("clear").hidden = !S.explore || (!Object.keys(S.filters).length && !S.sel && !S.cats);
    const q = app.brushQuery() + app.boxQuery();
    for (const p of S.panels) { p.draw(); p.load(q); }
    if (window.parent !== window) tellParent();
    if (S.drill && S.drill.open && S.drillSel) drillSelection();
  }

  function tellParent() {
    const filters = Object.fromEntries(Object.entries(S.filters).map(([c, r]) => [c, r.slice()]));
    if (S.cats && S.info.by) filters[S.info.by] = S.cats.slice();
    window.parent.postMessage({type: "hotbin-state", filters, box: S.sel ? S.sel.slice() : null}, "*");
  }

  function setBrush(column, range) {
    const before = JSON.stringify(S.filters[column] || null);
    if (range) S.filters[column] = range; else delete S.filters[column];
    if (JSON.stringify(range) !== before) changed();
  }

  function drillSelection() {       // the rows passing every brush and the box
    S.drillSel = true;
    const q = (app.brushQuery() + app.boxQuery()).slice(1);
    S.drill.show(q, S.sel ? "rows in the box passing the brushes" : "rows passing the brushes");
  }

  function drillCell(c) {           // the rows behind one cell of the map
    S.drillSel = false;
    const q = (app.brushQuery() + app.boxQuery([c.x[0], c.x[1], c.y[0], c.y[1]])).slice(1);
    S.drill.show(q, `cell ${c.i}, ${c.j} (count ${fmt(c.count)})`);
  }

  function startPanels(info) {      // one histogram a --hist column, the drill-down, the help
    S.explore = info.panels.length > 0;
    S.drill = Hotbin.Drill(() => { S.drillSel = false; });
    if (S.explore) {
      document.body.classList.add("explore");
      $("side").hidden = false;
      const host = {root: $("side"), brushes: () => S.filters, setBrush, error: (m) => app.status(m, true),
                    settle: () => {}};
      S.panels = info.panels.map((spec, k) => Hotbin.Panel(spec, k, host));
      $("help").textContent = "drag: pan · wheel or pinch: zoom · shift-drag: select a box (shift-click " +
        "clears it) · click a cell: its rows · drag on a histogram: brush a range (drag inside: move, " +
        "edges: resize, click: clear) · R: reset";
      window.addEventListener("resize", () => S.panels.forEach((p) => p.draw()));
      changed(false);
    } else if (info.categories) changed(false);
    if (info.categories) $("help").textContent += " · click a category in the legend: show or hide it";
    $("help").title = $("help").textContent;  // the whole text, where the strip cuts it
  }

  return {changed, setBrush, drillSelection, drillCell, startPanels};
};
