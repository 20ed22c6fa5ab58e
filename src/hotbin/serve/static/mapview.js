// hotbin serve: the map's view, the data extent {x0, x1, y0, y1} shown on the canvas (north up),
// and its moves: pan, zoom about a point, a jump. Projected data keeps square cells. Every
// accepted view is drawn at once (the last picture where its extent falls) and asked of the
// server (loader.js).
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.mapView = (app) => {
  const S = app.S, canvas = app.canvas;
  const cssSize = () => [canvas.clientWidth || 1, canvas.clientHeight || 1];

  function fitAspect(v) {         // projected data: square cells, the view's centre kept
    if (!S.info.crs) return v;
    const [w, h] = cssSize(), sx = (v.x1 - v.x0) / w, sy = (v.y1 - v.y0) / h, s = Math.max(sx, sy);
    const cx = (v.x0 + v.x1) / 2, cy = (v.y0 + v.y1) / 2;
    return {x0: cx - s * w / 2, x1: cx + s * w / 2, y0: cy - s * h / 2, y1: cy + s * h / 2};
  }

  function home() {
    const [x0, x1, y0, y1] = S.info.home;
    return fitAspect({x0, x1, y0, y1});
  }

  function valid(v) {             // finite, increasing, not past what float64 cells can resolve
    if (![v.x0, v.x1, v.y0, v.y1].every(Number.isFinite)) return false;
    const [w, h] = cssSize();
    const tiny = (a, b, n) => (b - a) / n <= Math.max(Math.abs(a), Math.abs(b), 1e-300) * 1e-12;
    return v.x0 < v.x1 && v.y0 < v.y1 && !tiny(v.x0, v.x1, w) && !tiny(v.y0, v.y1, h) &&
      Number.isFinite(v.x1 - v.x0) && Number.isFinite(v.y1 - v.y0);
  }

  function setView(v, jump = false) {
    if (!valid(v)) return;
    S.view = v;
    app.draw();
    app.request(jump);
  }

  function toData(px, py, v = S.view) {
    const [w, h] = cssSize();
    return [v.x0 + px / w * (v.x1 - v.x0), v.y1 - py / h * (v.y1 - v.y0)];
  }

  function zoomAt(px, py, f) {    // scale by f about the point under (px, py)
    const v = S.view, [w, h] = cssSize(), [x, y] = toData(px, py);
    const nw = (v.x1 - v.x0) * f, nh = (v.y1 - v.y0) * f;
    const x0 = x - px / w * nw, y1 = y + py / h * nh;
    setView({x0, x1: x0 + nw, y0: y1 - nh, y1});
  }

  function panBy(dx, dy) {        // move the picture by (dx, dy) css pixels
    const v = S.view, [w, h] = cssSize();
    const sx = (v.x1 - v.x0) / w * dx, sy = (v.y1 - v.y0) / h * dy;
    setView({x0: v.x0 - sx, x1: v.x1 - sx, y0: v.y0 + sy, y1: v.y1 + sy});
  }

  function placement(im) {        // where the picture's extent falls on the canvas (css px)
    const v = S.view, iv = im.view, [w, h] = cssSize();
    const sx = w / (v.x1 - v.x0), sy = h / (v.y1 - v.y0);
    return [(iv.x0 - v.x0) * sx, (v.y1 - iv.y1) * sy, (iv.x1 - iv.x0) * sx, (iv.y1 - iv.y0) * sy];
  }

  function cellUnder(px, py) {    // the shown picture's cell (i, j: j counted from the bottom)
    const im = S.image;
    if (!im) return null;
    const [dx, dy, dw, dh] = placement(im);
    const i = Math.floor((px - dx) / dw * im.w), r = Math.floor((py - dy) / dh * im.h);
    if (i < 0 || r < 0 || i >= im.w || r >= im.h) return null;
    return {im, i, j: im.h - 1 - r};
  }

  return {cssSize, fitAspect, home, valid, setView, toData, zoomAt, panBy, placement, cellUnder};
};
