// A namespace's item count is fetched after its page has loaded (counting a large namespace costs
// more than the page of items itself).
for (const node of document.querySelectorAll("[data-count-src]")) {
  fetch(node.dataset.countSrc, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.text() : ""))
    .then((text) => { if (text) node.textContent = `${text} item(s)`; });
}

// An item's expiry and TTL, likewise (on Redis reading them lists the namespace's keys).
for (const node of document.querySelectorAll("[data-fill-src]")) {
  fetch(node.dataset.fillSrc, { credentials: "same-origin" })
    .then((response) => response.text())
    .then((text) => { node.textContent = text; });
}

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
