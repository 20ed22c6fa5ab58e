// hotbin.explore: the hotbin serve page, served by the kernel, in an iframe; its brushes and
// box kept in the widget's model both ways. The page posts {type: "hotbin-state", filters, box}
// to its parent on every change (-> model.filters, model.box); a change of the model from Python
// is posted to the page as {type: "hotbin-set", filters, box}, which it applies as a brush.
// Messages are taken only from this iframe's window and sent only to the page's origin.
//
// Two ways to load the page. "http": the iframe loads the kernel's http://127.0.0.1:PORT/
// itself (the browser and the kernel on one machine). "comm": the page's requests travel over
// the widget's comm to the kernel, which asks its server (a browser elsewhere: JupyterHub, a
// remote kernel); the page is then a blob: document with its assets inlined and relay.js first.
// "auto" (the default) tries the server's URL and takes the comm when it does not answer.

const RETRY = 250;        // ms between hotbin-set messages until the page posts the state back
const GIVE_UP = 60000;    // ms after which the page's own state wins
const NO_ANSWER = 15000;  // ms without an answer from a page loaded over http: use the comm

// JSON with the keys sorted at every level: states compared by value
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v ?? null);
}

async function reachable(url) {  // whether the browser reaches the kernel's server at all
  try {
    await fetch(`${url}info.json`, { mode: "no-cors", cache: "no-store" });
    return true;
  } catch (_) {
    return false;
  }
}

function render({ model, el }) {
  const frame = document.createElement("iframe");
  const url = model.get("url");
  frame.title = "hotbin explore";
  frame.className = "hotbin-explore";
  frame.style.cssText = "width: 100%; box-sizing: border-box; border: 1px solid #ccc; " +
    "border-radius: 4px; display: block;";
  frame.style.height = `${model.get("height")}px`;
  el.appendChild(frame);

  let origin = new URL(url, window.location.href).origin;  // the page's, once chosen
  let transport = null, blob = null, gone = false;

  // ---- the comm: requests to the kernel's server, answered by custom messages ------------
  const view = Math.random().toString(36).slice(2);  // ids of this view's requests
  const asked = new Map();
  let seq = 0;
  const ask = (path) => new Promise((resolve, reject) => {
    const id = `${view}:${++seq}`;
    asked.set(id, { resolve, reject });
    model.send({ type: "fetch", id, path });
  });
  const onCustom = (msg, buffers) => {
    const p = msg && msg.type === "response" ? asked.get(msg.id) : null;
    if (!p) return;
    asked.delete(msg.id);
    if (msg.error) return p.reject(new Error(msg.error));
    const b = buffers && buffers[0];
    const body = b ? b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) : new ArrayBuffer(0);
    p.resolve({ status: msg.status, headers: msg.headers || {}, body });
  };
  const text = async (path) => {
    const r = await ask(path);
    if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status}`);
    return new TextDecoder().decode(r.body);
  };

  async function loadOverComm() {  // the page with its assets inlined, relay.js first
    transport = "comm";
    origin = window.location.origin;  // a blob: document has its maker's origin
    const doc = new DOMParser().parseFromString(await text("index.html"), "text/html");
    // every stylesheet and script asked for at once (the kernel answers several at a time),
    // each inlined where it stood: the page's scripts still run in their order
    const assets = [...doc.querySelectorAll("link[rel=stylesheet][href], script[src]")];
    const texts = await Promise.all(assets.map((a) => text(a.getAttribute(a.tagName === "LINK" ? "href" : "src"))));
    assets.forEach((a, k) => {
      const inline = doc.createElement(a.tagName === "LINK" ? "style" : "script");
      inline.textContent = texts[k];
      a.replaceWith(inline);
    });
    const relay = doc.createElement("script");
    relay.textContent = model.get("_relay");
    doc.head.prepend(relay);
    if (gone) return;
    if (blob) URL.revokeObjectURL(blob);
    blob = URL.createObjectURL(new Blob([`<!doctype html>\n${doc.documentElement.outerHTML}`],
                                        { type: "text/html" }));
    frame.dataset.transport = "comm";
    frame.src = blob;
  }

  function relay(m) {  // a request of the page over the comm, its answer posted back
    ask(m.path).then(
      (r) => frame.contentWindow.postMessage(
        { type: "hotbin-response", id: m.id, status: r.status, headers: r.headers, body: r.body }, origin),
      (e) => frame.contentWindow.postMessage({ type: "hotbin-response", id: m.id, error: String(e) }, origin));
  }

  // ---- the state: the page answers every hotbin-set with a hotbin-state ---------------------
  // The page drops what comes before it is ready (its first data): after each load the model's
  // state is sent again every RETRY ms until the page posts that same state back. Until then
  // what it posts is its start-up state, not a choice of the user, and must not overwrite
  // brushes set from Python. A change that came from the page is not posted back to it (a late
  // echo would move a brush being dragged).
  let told = false, fromPage = false, timer = 0;
  const state = () => ({ filters: model.get("filters") || {}, box: model.get("box") ?? null });
  const tell = () => {
    if (fromPage || !frame.contentWindow) return;
    frame.contentWindow.postMessage({ type: "hotbin-set", ...state() }, origin);
  };
  const stopTelling = () => { clearInterval(timer); timer = 0; };
  const onLoad = () => {
    if (!transport) return;  // the blank iframe before a page is chosen
    told = false;
    stopTelling();
    const t0 = Date.now();
    tell();
    timer = setInterval(() => {
      const waited = Date.now() - t0;
      if (transport === "http" && model.get("transport") === "auto" && waited > NO_ANSWER) {
        stopTelling();  // the page did not come: the browser cannot reach the server
        loadOverComm().catch(fail);
      } else if (waited > GIVE_UP) {
        told = true;
        stopTelling();
      } else {
        tell();
      }
    }, RETRY);
  };
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow || event.origin !== origin) return;
    const m = event.data;
    if (!m || typeof m !== "object") return;
    if (m.type === "hotbin-fetch" && transport === "comm") return relay(m);
    if (m.type !== "hotbin-state") return;
    if (!told) {
      if (canonical(state()) !== canonical({ filters: m.filters || {}, box: m.box ?? null })) return;
      told = true;  // the page holds the model's state: from now on it speaks for the user
      stopTelling();
      return;
    }
    fromPage = true;
    try {
      model.set({ filters: m.filters || {}, box: m.box ?? null });
    } finally {
      fromPage = false;
    }
    model.save_changes();
  };
  const onHeight = () => { frame.style.height = `${model.get("height")}px`; };
  const fail = (e) => {
    const p = document.createElement("pre");
    p.textContent = `hotbin.explore: the page did not load: ${e && e.message ? e.message : e}`;
    el.appendChild(p);
  };

  frame.addEventListener("load", onLoad);
  window.addEventListener("message", onMessage);
  model.on("msg:custom", onCustom);
  model.on("change:filters", tell);
  model.on("change:box", tell);
  model.on("change:height", onHeight);

  (async () => {
    const how = model.get("transport");
    if (how === "comm" || (how === "auto" && !(await reachable(url)))) return loadOverComm();
    transport = "http";
    frame.dataset.transport = "http";
    frame.src = url;
  })().catch(fail);

  return () => {
    gone = true;
    stopTelling();
    if (blob) URL.revokeObjectURL(blob);
    frame.removeEventListener("load", onLoad);
    window.removeEventListener("message", onMessage);
    model.off("msg:custom", onCustom);
    model.off("change:filters", tell);
    model.off("change:box", tell);
    model.off("change:height", onHeight);
  };
}

export default { render };
