// The interface's words in the page's language: webapp/translations/<lang>.json, which base.html embeds as
// <script type="application/json" id="ui-catalog">. Every text the page shows goes through tr() with its
// English wording written out literally: tests/webapp/test_i18n.py collects those calls from src/page/ and
// holds each catalog to them, so a text built at run time would go untranslated unnoticed.

// A text that counts is an object by CLDR plural category ({ one, other }), its count values.n, chosen with
// Intl.PluralRules in the page's language (a category the entry lacks falls back to "other").

let catalog = {};
let language = "en";

export function setCatalog(words, lang) {
  catalog = words && typeof words === "object" ? words : {};
  language = typeof lang === "string" && lang ? lang : "en";
}

// The page's language (<html lang>), for Intl's number, date and plural rules.
export function pageLanguage() {
  return language;
}

function pluralForm(forms, n) {
  const category = typeof n === "number" ? new Intl.PluralRules(language).select(n) : "other";
  return forms[category] || forms.other;
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
  let own = Object.prototype.hasOwnProperty.call(catalog, text) ? catalog[text] : null;
  if (own && typeof own === "object") own = pluralForm(own, (values || {}).n);
  let out = typeof own === "string" && own ? own : text;
  for (const key of Object.keys(values || {})) out = out.split("{" + key + "}").join(String(values[key]));
  return out;
}
