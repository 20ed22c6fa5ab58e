// hotbin serve: how the page asks its server. Every request is fetch() of a URL relative to the
// page; inside the notebook widget over its comm, relay.js (run first there) carries those over
// the widget's connection to the kernel, so nothing here knows which way the answer comes.
// A reply that is not 200 throws the server's one-line error ({"error": ...}).
"use strict";
window.Hotbin = window.Hotbin || {};
Hotbin.transport = (() => {
  async function errorOf(r) {
    try { return (await r.json()).error || r.statusText; } catch (_) { return `HTTP ${r.status}`; }
  }

  async function getJSON(url, signal) {
    const r = await fetch(url, {signal});
    if (!r.ok) throw new Error(await errorOf(r));
    return r.json();
  }

  async function getPicture(url, signal) {  // a PNG as an ImageBitmap, and its statistics
    const r = await fetch(url, {signal});
    if (!r.ok) throw new Error(await errorOf(r));
    const stats = JSON.parse(r.headers.get("X-Hotbin-Stats") || "{}");
    return {stats, bitmap: await createImageBitmap(await r.blob())};
  }

  return {errorOf, getJSON, getPicture};
})();
