// hotbin serve: the map's canvas. The picture shown, placed where its extent falls in the view
// (so a pan or zoom moves it at once, before the server's new picture lands), the map's box
// with what lies outside it dimmed, and axes of round values (a scale bar on projected data).
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.mapDraw = (app) => {
  const S = app.S, canvas = app.canvas, H = Hotbin.common;

  function draw() {
    const [w, h] = app.cssSize(), ctx = H.fitCanvas(canvas, w, h);
    if (!S.image) return;
    const [dx, dy, dw, dh] = app.placement(S.image);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(S.image.bitmap, dx, dy, dw, dh);
    drawSelection(ctx, w, h);
    if (S.info.crs) drawScale(ctx, w, h); else drawAxes(ctx, w, h);
  }

  function drawSelection(ctx, w, h) {  // the map's box, in data units
    if (!S.sel) return;
    const v = S.view, sx = w / (v.x1 - v.x0), sy = h / (v.y1 - v.y0), b = S.sel;
    const x = (b[0] - v.x0) * sx, y = (v.y1 - b[3]) * sy, bw = (b[1] - b[0]) * sx, bh = (b[3] - b[2]) * sy;
    ctx.save();
    ctx.fillStyle = "rgba(11, 11, 14, .6)";  // what lies outside the box dimmed
    ctx.beginPath();
    ctx.rect(0, 0, w, h);
    ctx.rect(x, y, bw, bh);
    ctx.fill("evenodd");
    ctx.setLineDash([5, 3]);
    ctx.strokeStyle = "#f3a64a";
    ctx.strokeRect(x + 0.5, y + 0.5, bw, bh);
    ctx.restore();
  }

  function drawAxes(ctx, w, h) {    // round values of x along the bottom, of y along the left
    const v = S.view, n = S.info.names;
    ctx.save();
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "rgba(11, 11, 14, .72)";
    ctx.fillRect(0, h - 18, w, 18);
    ctx.fillRect(0, 0, 56, h - 18);
    ctx.strokeStyle = "#8a8a96";
    ctx.fillStyle = "#c8c8d2";
    xTicks(ctx, H.ticks(v.x0, v.x1, Math.max(2, Math.floor(w / 110))), w, h);
    yTicks(ctx, H.ticks(v.y0, v.y1, Math.max(2, Math.floor(h / 80))), h);
    ctx.textAlign = "left";
    ctx.textBaseline = "bottom";
    ctx.fillStyle = "#9a9aa6";
    ctx.fillText(n[0], w - ctx.measureText(n[0]).width - 8, h - 19);
    ctx.textBaseline = "top";
    ctx.fillText(n[1], 4, 4);
    ctx.restore();
  }

  function xTicks(ctx, t, w, h) {   // along the bottom, clear of the y axis's strip
    const v = S.view;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    for (const x of t.values) {
      const px = Math.round((x - v.x0) / (v.x1 - v.x0) * w) + 0.5;
      if (px < 62) continue;
      ctx.beginPath(); ctx.moveTo(px, h - 18); ctx.lineTo(px, h - 13); ctx.stroke();
      ctx.fillText(H.fmtStep(x, t.step), px, h - 1);
    }
  }

  function yTicks(ctx, t, h) {      // along the left, clear of the x axis's strip
    const v = S.view;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const y of t.values) {
      const py = Math.round((v.y1 - y) / (v.y1 - v.y0) * h) + 0.5;
      if (py > h - 26 || py < 8) continue;
      ctx.beginPath(); ctx.moveTo(56, py); ctx.lineTo(51, py); ctx.stroke();
      ctx.fillText(H.fmtStep(y, t.step), 49, py);
    }
  }

  function drawScale(ctx, w, h) {   // Web Mercator: a bar of a round ground distance
    const v = S.view, R = 6378137, lat = Math.atan(Math.sinh((v.y0 + v.y1) / 2 / R));
    const mpp = (v.x1 - v.x0) / w * Math.cos(lat);  // ground metres per css pixel there
    const len = H.niceStep(mpp * 120, 1), px = Math.min(len / mpp, w - 40);
    const label = len >= 1000 ? `${+(len / 1000).toPrecision(3)} km` : `${+len.toPrecision(3)} m`;
    ctx.save();
    ctx.fillStyle = "rgba(11, 11, 14, .72)";
    ctx.fillRect(8, h - 30, px + 16, 24);
    ctx.strokeStyle = "#d8d8de";
    ctx.beginPath(); ctx.moveTo(16, h - 14); ctx.lineTo(16, h - 10); ctx.lineTo(16 + px, h - 10);
    ctx.lineTo(16 + px, h - 14); ctx.stroke();
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#d8d8de";
    ctx.textBaseline = "bottom";
    ctx.fillText(label, 18, h - 13);
    ctx.restore();
  }

  return {draw};
};
