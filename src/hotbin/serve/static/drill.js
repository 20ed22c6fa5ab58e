// hotbin serve: the drill-down under the map. How many rows pass a selection and the first of
// them (rows.json), with a link to all of them as CSV (rows.csv, the same query). It opens on a
// box or a clicked cell (linked.js) and closes with its button or Esc.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.Drill = (() => {
  const {$} = Hotbin.common;
  const LIMIT = 100;                // rows shown; the CSV has them all

  function Drill(onClose) {
    let ctrl = null;
    async function show(query, title) {
      if (ctrl) ctrl.abort();
      ctrl = new AbortController();
      const mine = ctrl;
      open(true);
      $("drill-title").textContent = `${title}: counting…`;
      $("drill-csv").href = `rows.csv?${query}`;
      try {
        const d = await Hotbin.transport.getJSON(`rows.json?${query}&limit=${LIMIT}`, mine.signal);
        $("drill-title").textContent = `${title}: ${d.count.toLocaleString("en-US")} rows` +
          (d.count > d.rows.length ? ` (the first ${d.rows.length} shown)` : "");
        $("drill").dataset.count = String(d.count);
        $("drill-table").replaceChildren(...table(d));
      } catch (e) {
        if (e.name !== "AbortError") $("drill-title").textContent = `${title}: ${e.message}`;
      }
    }
    function hide() {
      if (ctrl) ctrl.abort();
      delete $("drill").dataset.count;
      open(false);
      onClose();
    }
    $("drill-close").addEventListener("click", hide);
    return {show, hide, get open() { return !$("drill").hidden; }};
  }

  function open(on) {               // the strip shown or hidden; the map and panels fit around it
    document.body.classList.toggle("drilling", on);
    $("drill").hidden = !on;
    window.dispatchEvent(new Event("resize"));
  }

  function table(d) {               // thead and tbody of rows.json's columns and rows, numbered
    const head = document.createElement("tr");
    for (const c of ["#", ...d.columns]) {
      const th = document.createElement("th");
      th.textContent = c;
      head.append(th);
    }
    const rows = d.rows.map((row, k) => {
      const tr = document.createElement("tr");
      for (const v of [k + 1, ...row]) {
        const td = document.createElement("td");
        td.textContent = v === null ? "" : typeof v === "number" ? String(v) : v;
        if (typeof v === "string") td.className = "text";
        td.title = td.textContent;
        tr.append(td);
      }
      return tr;
    });
    const thead = document.createElement("thead"), tbody = document.createElement("tbody");
    thead.append(head);
    tbody.append(...rows);
    return [thead, tbody];
  }

  return Drill;
})();
