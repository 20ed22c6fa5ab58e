// hotbin serve: the map's picture. Every view change asks the server to re-aggregate all the
// points at the new extent and pixel size (render.png). The latest view wins: at most one
// picture is in flight; views asked for meanwhile collapse into one, the latest, sent when it
// lands (so a drag refreshes at the server's pace and never queues). A jump (reset, box zoom, a
// link, another shading) or a request that takes far longer than the last ones aborts the one in
// flight (AbortController); a reply older than the picture shown is dropped (sequence numbers).
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.loader = (app) => {
  const S = app.S, {getPicture} = Hotbin.transport;

  function gridSize() {           // the view's pixels, within the server's limits
    const [w, h] = app.cssSize(), r = Hotbin.common.dpr(), info = S.info;
    let gw = Math.max(1, Math.round(w * r)), gh = Math.max(1, Math.round(h * r));
    const k = Math.min(1, info.max_side / gw, info.max_side / gh, Math.sqrt(info.max_pixels / (gw * gh)));
    if (k < 1) { gw = Math.max(1, Math.floor(gw * k)); gh = Math.max(1, Math.floor(gh * k)); }
    return [gw, gh];
  }

  function request(jump = false) {  // at most one per animation frame, one in flight
    app.saveHash();
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
    const query = app.viewQuery(v, w, h), brushes = app.brushQuery();
    S.ctrl = ctrl;
    S.pending = false;
    S.sentAt = performance.now();
    document.body.dataset.busy = "1";
    try {
      const {bitmap, stats} = await getPicture(`render.png?${query}&${app.shadeQuery()}${brushes}`, ctrl.signal);
      S.lastMs = performance.now() - S.sentAt;
      if (seq < S.shown) { bitmap.close(); return; }   // an older view than the one shown
      show({bitmap, view: v, w, h, query: query + brushes, stats}, seq);
      document.body.dataset.shown = query;
      document.body.dataset.brushes = brushes;
    } catch (e) {
      if (e.name !== "AbortError") app.status(`render failed: ${e.message}`, true);
    } finally {
      if (S.ctrl === ctrl) {
        S.ctrl = null;
        if (S.pending) send(); else delete document.body.dataset.busy;
      }
    }
  }

  function show(image, seq) {       // the picture shown from now on
    if (S.image) S.image.bitmap.close();
    S.shown = seq;
    S.image = image;
    app.draw();
    app.showStats(image.stats);
  }

  return {gridSize, request};
};
