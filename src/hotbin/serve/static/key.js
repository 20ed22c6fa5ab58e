// hotbin serve: what tells the map's colours and numbers. The status line (points in view, the
// largest cell, the server's time, or an error), the colour bar with the picture's lowest and
// highest values, and the legend of categories, whose entries toggle a category on and off
// (a brush on the other views). A new shading asks for a new picture and a new key.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.key = (app) => {
  const S = app.S, {$, fmt} = Hotbin.common;

  function status(text, error = false) {
    $("status").textContent = text;
    $("status").classList.toggle("error", error);
  }

  function showStats(s) {
    const what = app.brushQuery() ? "points passing the brushes in view" : "points in view";
    status(`${fmt(s.in_view)} of ${fmt(s.n)} ${what} · max cell ${fmt(s.max)} · ${fmt(s.ms)} ms`);
    $("cb-lo").textContent = fmt(s.lo);
    $("cb-hi").textContent = fmt(s.hi);
  }

  async function reshade() {
    app.request(true);
    try {
      showKey(await Hotbin.transport.getJSON(`info.json?${app.shadeQuery()}`));
    } catch (e) { status(e.message, true); }
  }

  function showKey(info) {          // info.json of the shading: its colour stops and categories
    showColorbar(info.colorbar);
    const cats = info.categories, distinct = cats && new Set(cats.map((k) => k.color)).size > 1;
    $("colorbar").hidden = Boolean(distinct);
    showLegend(cats);
  }

  function showColorbar(stops) {
    const cb = $("cbar"), c = cb.getContext("2d");
    cb.height = stops.length;
    stops.forEach((col, k) => { c.fillStyle = col; c.fillRect(0, stops.length - 1 - k, 1, 1); });
    const agg = S.info.agg === "count" && S.info.weighted ? "sum of weights" : S.info.agg;
    $("cb-title").textContent = `${agg} (${S.how})`;
  }

  function showLegend(cats) {       // one entry a category; a click shows or hides it
    const legend = $("legend");
    legend.replaceChildren();
    legend.hidden = !cats;
    for (const k of cats || []) {
      const li = document.createElement("li"), sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = k.color;
      li.append(sw, document.createTextNode(k.label));
      li.dataset.label = k.label;
      li.title = "click: show or hide this category (a brush on the other views)";
      li.addEventListener("click", () => toggle(cats.map((c) => c.label), k.label));
      legend.append(li);
    }
    legend.classList.add("toggles");
    showLegendState();
  }

  function toggle(all, label) {     // S.cats: the categories kept, null for all of them
    const kept = new Set(S.cats || all);
    if (kept.has(label)) kept.delete(label); else kept.add(label);
    S.cats = kept.size === all.length ? null : all.filter((c) => kept.has(c));
    app.changed();
  }

  function showLegendState() {
    const legend = $("legend");
    for (const li of legend.children) li.classList.toggle("off", Boolean(S.cats) && !S.cats.includes(li.dataset.label));
  }

  return {status, showStats, reshade, showLegendState};
};
