/* The page logic's start (called by ../index.js once the document is parsed): the interface's catalog and
   the page's data (JSON in <script type="application/json">: the CSP forbids inline scripts), then the
   page named by <body data-page>. The browser's parts are handed down as `env`, so the modules below take
   them as parameters. */

import { readCatalog, setCatalog } from "./i18n.js";
import { makeApi, csrfToken } from "./api.js";
import { readPageData } from "./dom.js";
import { initLesson } from "./lesson.js";
import { initSubmission } from "./submission.js";

// Code blocks and tables of the lesson text scroll sideways on a narrow screen: let the keyboard reach them.
function focusableScrollers(doc) {
  doc.querySelectorAll(".prose pre, .prose table, .code-card pre").forEach((node) => {
    if (!node.hasAttribute("tabindex")) node.setAttribute("tabindex", "0");
  });
}

export function startPage(win, doc) {
  setCatalog(readCatalog(doc), doc.documentElement.lang);
  const page = readPageData(doc);
  const env = {
    win,
    doc,
    api: makeApi((url, options) => win.fetch(url, options), csrfToken(doc)),
    EventSource: win.EventSource || null,
    setTimeout: (fn, ms) => win.setTimeout(fn, ms),
    clearTimeout: (id) => win.clearTimeout(id),
  };
  focusableScrollers(doc);
  const kind = doc.body.dataset.page;
  if (kind === "lesson") initLesson(page, env);
  else if (kind === "submission") initSubmission(page, env);
}
