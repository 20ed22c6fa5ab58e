// hotbin.explore: the hotbin serve page, served by the kernel, in an iframe; its brushes and
// box kept in the widget's model both ways. The page posts {type: "hotbin-state", filters, box}
// to its parent on every change (-> model.filters, model.box); a change of the model from Python
// is posted to the page as {type: "hotbin-set", filters, box}, which it applies as a brush.
// Messages are taken only from this iframe's window and sent only to the server's origin.

// JSON with the keys sorted at every level, numbers as JSON writes them: states compared by value
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v ?? null);
}

function render({ model, el }) {
  const frame = document.createElement("iframe");
  const url = model.get("url");
  const origin = new URL(url, window.location.href).origin;
  frame.src = url;
  frame.title = "hotbin explore";
  frame.className = "hotbin-explore";
  frame.style.cssText = "width: 100%; box-sizing: border-box; border: 1px solid #ccc; " +
    "border-radius: 4px; display: block;";
  frame.style.height = `${model.get("height")}px`;
  el.appendChild(frame);

  // The page answers every hotbin-set with a hotbin-state, but drops what comes before it is
  // ready (its first data): after each load the model's state is sent again every RETRY ms
  // until the page posts that same state back. Until then what the page posts is its start-up
  // state, not a choice of the user, and must not overwrite brushes set from Python (after
  // GIVE_UP ms the page's state wins). A change that came from the page is not posted back to
  // it (a late echo would move a brush being dragged).
  const RETRY = 250, GIVE_UP = 60000;
  let told = false, fromPage = false, timer = 0;
  const tell = () => {
    if (fromPage || !frame.contentWindow) return;
    frame.contentWindow.postMessage(
      { type: "hotbin-set", filters: model.get("filters") || {}, box: model.get("box") ?? null }, origin);
  };
  const stopTelling = () => { clearInterval(timer); timer = 0; };
  const onLoad = () => {
    told = false;
    stopTelling();
    const t0 = Date.now();
    tell();
    timer = setInterval(() => {
      if (Date.now() - t0 < GIVE_UP) return tell();
      told = true;
      stopTelling();
    }, RETRY);
  };
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow || event.origin !== origin) return;
    const m = event.data;
    if (!m || m.type !== "hotbin-state") return;
    if (!told) {
      const mine = { filters: model.get("filters") || {}, box: model.get("box") ?? null };
      if (canonical(mine) !== canonical({ filters: m.filters || {}, box: m.box ?? null })) return;
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

  frame.addEventListener("load", onLoad);
  window.addEventListener("message", onMessage);
  model.on("change:filters", tell);
  model.on("change:box", tell);
  model.on("change:height", onHeight);
  return () => {
    stopTelling();
    frame.removeEventListener("load", onLoad);
    window.removeEventListener("message", onMessage);
    model.off("change:filters", tell);
    model.off("change:box", tell);
    model.off("change:height", onHeight);
  };
}

export default { render };
