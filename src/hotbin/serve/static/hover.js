// hotbin serve: the map's cells under the pointer. Resting on one asks the server for its count,
// value and categories (cell.json of the picture shown) and shows them in a tooltip; with
// linked views a click on one opens its rows in the drill-down.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.hover = (app) => {
  const S = app.S, H = Hotbin.common, {$, fmt} = H, {getJSON} = Hotbin.transport;
  const HOVER_MS = 60;            // pointer rest before asking for the cell under it
  const cellURL = (c) => `cell.json?${c.im.query}&i=${c.i}&j=${c.j}`;

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
    const under = app.cellUnder(px, py);
    if (!under) { $("tip").hidden = true; return; }
    if (S.hoverCtrl) S.hoverCtrl.abort();
    const ctrl = new AbortController();
    S.hoverCtrl = ctrl;
    try {
      const c = await getJSON(cellURL(under), ctrl.signal);
      showTip(c, px, py);
      document.body.dataset.cell = `${under.i},${under.j}`;
    } catch (e) { /* aborted (the pointer moved on), or no such cell */ }
  }

  function showTip(c, px, py) {
    const tip = $("tip"), [w, h] = app.cssSize();
    tip.textContent = tipLines(c).join("\n");
    tip.hidden = false;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    tip.style.left = `${Math.max(2, px + 14 + tw > w - 2 ? px - 14 - tw : px + 14)}px`;
    tip.style.top = `${Math.max(2, py + 14 + th > h - 2 ? py - 14 - th : py + 14)}px`;
  }

  function tipLines(c) {          // count, value, the largest categories, the cell's extent
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
    return lines;
  }

  async function clickCell(px, py) {  // the cell under a click: its rows in the drill-down
    const under = app.cellUnder(px, py);
    if (!under) return;
    try { app.drillCell(await getJSON(cellURL(under))); }
    catch (e) { app.status(e.message, true); }
  }

  return {hideTip, hoverAt, clickCell};
};
