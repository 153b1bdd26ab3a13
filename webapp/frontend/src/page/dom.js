// Small DOM helpers. Text goes in as text nodes (textContent), never as HTML: what a learner's code printed
// and what the grader said about it may hold markup.

export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key === "dataset") for (const [k, v] of Object.entries(value)) node.dataset[k] = v;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// Text with `code` spans, as DOM nodes.
export function withCode(text) {
  const frag = document.createDocumentFragment();
  String(text || "")
    .split("`")
    .forEach((part, i) => frag.appendChild(i % 2 ? el("code", { text: part }) : document.createTextNode(part)));
  return frag;
}

export function readPageData(doc) {
  const node = doc.getElementById("page-data");
  return node ? JSON.parse(node.textContent) : {};
}
