// hotbin.explore: the hotbin serve page, served by the kernel, in an iframe; its brushes and
// box kept in the widget's model both ways. The page posts {type: "hotbin-state", filters, box}
// to its parent on every change (-> model.filters, model.box); a change of the model from Python
// is posted to the page as {type: "hotbin-set", filters, box}, which it applies as a brush.
// Messages are taken only from this iframe's window and sent only to the server's origin.

function render({ model, el }) {
  const frame = document.createElement("iframe");
  const url = model.get("url");
  const origin = new URL(url, window.location.href).origin;
  frame.src = url;
  frame.title = "hotbin explore";
  frame.className = "hotbin-explore";
  frame.style.cssText = "width: 100%; border: 1px solid #ccc; border-radius: 4px; display: block;";
  frame.style.height = `${model.get("height")}px`;
  el.appendChild(frame);

  // Until the page has loaded and been told the model's state, what it posts is its start-up
  // state, not a choice of the user: it must not overwrite brushes set from Python before.
  // A change that came from the page is not posted back to it (a late echo would move a brush
  // being dragged back to where it was).
  let told = false, fromPage = false;
  const tell = () => {
    if (fromPage || !frame.contentWindow) return;
    frame.contentWindow.postMessage(
      { type: "hotbin-set", filters: model.get("filters") || {}, box: model.get("box") ?? null }, origin);
  };
  const onLoad = () => { tell(); told = true; };
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow || event.origin !== origin) return;
    const m = event.data;
    if (!told || !m || m.type !== "hotbin-state") return;
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
    frame.removeEventListener("load", onLoad);
    window.removeEventListener("message", onMessage);
    model.off("change:filters", tell);
    model.off("change:box", tell);
    model.off("change:height", onHeight);
  };
}

export default { render };
