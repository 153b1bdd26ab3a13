// The interface's words in the page's language: webapp/translations/<lang>.json, which base.html embeds as
// <script type="application/json" id="ui-catalog">. Every text the page shows goes through tr() with its
// English wording written out literally: tests/webapp/test_i18n.py collects those calls from src/page/ and
// holds each catalog to them, so a text built at run time would go untranslated unnoticed.

let catalog = {};

export function setCatalog(words) {
  catalog = words && typeof words === "object" ? words : {};
}

export function readCatalog(doc) {
  const node = doc.getElementById("ui-catalog");
  try {
    return node ? JSON.parse(node.textContent) : {};
  } catch (err) {
    return {};
  }
}

// `text` in the page's language (English where the catalog lacks it), with each {name} replaced by values[name].
export function tr(text, values) {
  const own = Object.prototype.hasOwnProperty.call(catalog, text) ? catalog[text] : null;
  let out = typeof own === "string" && own ? own : text;
  for (const key of Object.keys(values || {})) out = out.split("{" + key + "}").join(String(values[key]));
  return out;
}
