// hotbin serve: what the map and the panels both use. Round tick values, numbers written with
// the digits that tell them apart, and a canvas sized to its box at the screen's pixel ratio.
// The page's scripts are plain scripts loaded in order (index.html), each adding one part to
// window.Hotbin: the widget inlines them into one document when it carries the page over its
// comm, where ES modules could not import one another.
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.common = (() => {
  const $ = (id) => document.getElementById(id);
  const dpr = () => Math.min(window.devicePixelRatio || 1, 2);

  function fitCanvas(canvas, w, h) {      // a cleared 2d context drawing in css px on w x h
    const r = dpr(), ctx = canvas.getContext("2d");
    if (canvas.width !== Math.round(w * r) || canvas.height !== Math.round(h * r)) {
      canvas.width = Math.round(w * r);
      canvas.height = Math.round(h * r);
    }
    ctx.setTransform(r, 0, 0, r, 0, 0);
    ctx.clearRect(0, 0, w, h);
    return ctx;
  }

  function niceStep(span, n) {            // 1, 2 or 5 times a power of ten, about span / n
    const raw = span / Math.max(n, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  function ticks(lo, hi, n) {             // round values in [lo, hi], and their step
    if (!(hi > lo) || !Number.isFinite(hi - lo)) return {values: [lo], step: 1};
    const step = niceStep(hi - lo, n), out = [];
    for (let k = Math.ceil(lo / step); k * step <= hi + step * 1e-9 && out.length < 100; k++)
      out.push(k === 0 ? 0 : k * step);
    return {values: out, step};
  }

  function fmtStep(v, step) {             // v with the digits that tell values step apart
    if (!Number.isFinite(v)) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e9 || a < 1e-4)) return v.toExponential(Math.max(0, Math.min(8,
      Math.ceil(Math.log10(a) - Math.log10(Math.abs(step) || a)) + 1)));
    const d = Math.max(0, Math.min(12, -Math.floor(Math.log10(Math.abs(step) || 1) + 1e-9)));
    return v.toLocaleString("en-US", {minimumFractionDigits: d, maximumFractionDigits: d});
  }

  function fmtCount(v) {                  // an axis's count: 1.5k, 2M
    if (v >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
    if (v >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
    return v.toLocaleString("en-US");
  }

  const fmt = (v) => v === null || v === undefined ? "–" :   // a statistic: whole or 5 digits
    Number.isInteger(v) ? v.toLocaleString("en-US") : Number(v).toPrecision(5);

  return {$, dpr, fitCanvas, niceStep, ticks, fmtStep, fmtCount, fmt};
})();
