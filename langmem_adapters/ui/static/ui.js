// The namespace tree opens lazily: a node fetches its children (server-rendered, escaped HTML)
// the first time it is opened. Without JavaScript every node is still a link to its page.
document.addEventListener("toggle", (event) => {
  const node = event.target;
  if (!(node instanceof HTMLDetailsElement) || !node.open || !node.dataset.src) return;
  if (node.dataset.loaded) return;
  node.dataset.loaded = "1";
  fetch(node.dataset.src, { credentials: "same-origin" })
    .then((response) => response.text())
    .then((html) => {
      const holder = document.createElement("div");
      holder.className = "children";
      holder.innerHTML = html;
      node.appendChild(holder);
    });
}, true);
