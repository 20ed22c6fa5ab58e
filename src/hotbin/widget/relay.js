// hotbin.explore, comm transport: run first in the page's document (a blob: URL made by the
// widget, for a browser that cannot reach the kernel's 127.0.0.1). The page's fetch() of a
// relative URL is posted to the parent widget as {type: "hotbin-fetch", id, path}, which asks
// the kernel over the widget's comm and posts back {type: "hotbin-response", id, status,
// headers, body} (or {error}); an aborted request is dropped on both sides. A click on a link to
// a relative URL (the drill-down's CSV) is fetched the same way and saved from a blob.
"use strict";
(() => {
  const pending = new Map();
  let next = 0;
  const aborted = () => new DOMException("The request was aborted", "AbortError");
  const relative = (u) => !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(u);
  const native = window.fetch.bind(window);

  window.addEventListener("message", (event) => {
    const m = event.data;
    if (event.source !== window.parent || !m || m.type !== "hotbin-response") return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new TypeError(m.error));
    else p.resolve(new Response(m.status === 204 ? null : new Blob([m.body]), {status: m.status, headers: m.headers}));
  });

  window.fetch = (input, init = {}) => {
    const url = typeof input === "string" ? input : String(input.url || input);
    if (!relative(url)) return native(input, init);
    const signal = init.signal;
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) return reject(aborted());
      const id = ++next;
      pending.set(id, {resolve, reject});
      if (signal) signal.addEventListener("abort", () => {
        if (!pending.delete(id)) return;
        reject(aborted());
        window.parent.postMessage({type: "hotbin-abort", id}, "*");
      });
      window.parent.postMessage({type: "hotbin-fetch", id, path: url.replace(/^\.?\//, "")}, "*");
    });
  };

  document.addEventListener("click", async (event) => {
    const a = event.target && event.target.closest ? event.target.closest("a[href]") : null;
    const href = a && a.getAttribute("href");
    if (!href || href.startsWith("#") || !relative(href)) return;
    event.preventDefault();
    const r = await window.fetch(href);
    const url = URL.createObjectURL(await r.blob());
    const save = document.createElement("a");
    save.href = url;
    save.download = a.getAttribute("download") || href.split("?")[0];
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }, true);
})();
