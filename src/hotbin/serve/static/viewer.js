// hotbin serve: the page. Pan, zoom and box-zoom over the data; every view change asks the
// server to re-aggregate all the points at the new extent and pixel size. This script holds the
// page's state (S) and starts it; the parts loaded before it (index.html) each add their
// functions to one object, app, through which they call one another:
//   common.js    ticks, number formats, canvas sizing     transport.js  fetch and errors
//   urlstate.js  queries and the URL hash                 mapview.js    the view, pan and zoom
//   loader.js    the picture: the latest view wins        mapdraw.js    the map's canvas, axes
//   key.js       status, colour bar, legend               hover.js      tooltips, clicked cells
//   input.js     pointer, wheel, keys, the header         linked.js     brushes, box, widget
//   panels.js    the linked histograms                    drill.js      the drill-down table
"use strict";
(() => {
  const {$} = Hotbin.common;
  const S = {
    info: null, view: null, how: "", cmap: "",
    image: null,                  // {bitmap, view, w, h, query, stats}: the picture shown
    seq: 0, shown: 0, ctrl: null, queued: false, pending: false, sentAt: 0, lastMs: 200,
    pointers: new Map(), box: null, click: null, hoverCtrl: null, hoverTimer: 0,
    filters: {}, cats: null, sel: null, panels: [], drill: null, drillSel: false, explore: false,
  };
  const app = {S, canvas: $("canvas"), applyHash};
  for (const part of [Hotbin.urlState, Hotbin.mapView, Hotbin.loader, Hotbin.mapDraw, Hotbin.key,
                      Hotbin.hover, Hotbin.linked, Hotbin.input]) Object.assign(app, part(app));

  function applyHash() {            // the hash edited by hand, or another link followed
    const h = app.readHash();
    const reshaded = (h.how && h.how !== S.how) || (h.cmap && h.cmap !== S.cmap);
    setShading(h);
    S.view = h.view || S.view || app.home();
    const moved = JSON.stringify([h.filters, h.cats, h.sel]) !== JSON.stringify([S.filters, S.cats, S.sel]);
    Object.assign(S, {filters: h.filters, cats: h.cats, sel: h.sel});
    app.draw();
    if (moved) app.changed(false);
    if (reshaded) app.reshade(); else app.request(true);
  }

  function setShading(h) {          // the hash's how and cmap, where it names them
    S.how = h.how || S.how;
    S.cmap = h.cmap || S.cmap;
    $("how").value = S.how;
    $("cmap").value = S.cmap;
  }

  async function start() {
    try {
      const info = await Hotbin.transport.getJSON("info.json");
      S.info = info;
      for (const [id, names] of [["how", info.hows], ["cmap", info.cmaps]]) {
        for (const name of names) $(id).append(new Option(name, name));
      }
      S.how = info.how;
      S.cmap = info.cmap;
      if (!info.cmaps.includes(S.cmap)) $("cmap").append(new Option(S.cmap, S.cmap));
      const h = app.readHash();
      if (h.cmap && h.cmap !== S.cmap && !info.cmaps.includes(h.cmap)) $("cmap").append(new Option(h.cmap, h.cmap));
      setShading(h);
      S.view = h.view || app.home();
      Object.assign(S, {filters: h.filters, cats: h.cats, sel: h.sel});
      app.startPanels(info);
      await app.reshade();
    } catch (e) {
      app.status(`cannot start: ${e.message}`, true);
    }
  }
  start();
})();
