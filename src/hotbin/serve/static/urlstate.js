// hotbin serve: the page's state as URL parameters. The same words serve the server's queries
// (x0..y1, width, height, how, cmap, f.COL=lo,hi, the categories kept as f.BY=a,b) and the
// page's hash, which holds the view, the shading, every brush and the map's box (box=x0,x1,y0,y1)
// so that a reload or a shared link shows the same thing.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.urlState = (app) => {
  const S = app.S;

  const viewQuery = (v, w, h) =>
    `x0=${v.x0}&x1=${v.x1}&y0=${v.y0}&y1=${v.y1}&width=${w}&height=${h}`;
  const shadeQuery = () => `how=${encodeURIComponent(S.how)}&cmap=${encodeURIComponent(S.cmap)}`;
  const boxQuery = (b = S.sel) => b ? `&x0=${b[0]}&x1=${b[1]}&y0=${b[2]}&y1=${b[3]}` : "";

  function brushQuery() {           // every brush, and the categories kept
    let q = "";
    for (const [c, [lo, hi]] of Object.entries(S.filters)) q += `&f.${encodeURIComponent(c)}=${lo},${hi}`;
    if (S.cats && S.info.by) q += `&f.${encodeURIComponent(S.info.by)}=${S.cats.map(encodeURIComponent).join(",")}`;
    return q;
  }

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

  function readHash() {             // what the hash asks for: {view, how, cmap, filters, cats, sel}
    const p = new URLSearchParams(location.hash.slice(1)), out = {};
    const v = {x0: +p.get("x0"), x1: +p.get("x1"), y0: +p.get("y0"), y1: +p.get("y1")};
    if (["x0", "x1", "y0", "y1"].every((k) => p.get(k) !== null) && app.valid(v)) out.view = v;
    if (S.info.hows.includes(p.get("how"))) out.how = p.get("how");
    if (p.get("cmap")) out.cmap = p.get("cmap");
    Object.assign(out, readBrushes(p));
    return out;
  }

  return {viewQuery, shadeQuery, boxQuery, brushQuery, saveHash, readBrushes, readHash};
};
