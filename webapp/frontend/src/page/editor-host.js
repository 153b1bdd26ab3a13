// The lesson's code editor: CodeMirror (../editor.js) in #editor-host, or, if it cannot start, the plain
// textarea the template put there, with Tab indenting and Ctrl/Cmd+Enter to run. Either way the same small
// interface: getValue, setValue, focus, goToLine, markLines.

import { createEditor } from "../editor.js";
import { tr } from "./i18n.js";
import { el, withCode } from "./dom.js";

// A mark's tooltip (marks.js gives its parts): the check and its message, then the fix on a line of its own;
// `code` in either shows as code, as in the results panel.
function renderMark(mark) {
  const { head, text, fix, fixLabel } = mark.parts;
  return el("div", { className: "mark-tip" },
    el("p", { className: "mark-message" }, head ? el("strong", { text: head + ": " }) : null, withCode(text)),
    fix ? el("p", { className: "mark-fix" }, el("strong", { text: fixLabel + " " }), withCode(fix)) : null);
}

export function makeEditor(host, doc, onRun, onChange) {
  const fallback = host.querySelector("textarea");
  try {
    fallback.remove();
    const phrases = { Diagnostics: tr("Findings"), "No diagnostics": tr("No findings"), close: tr("Close") };
    const editor = createEditor(host, { doc, onRun, onChange, phrases, renderMark });
    const content = editor.view && editor.view.contentDOM;
    if (content) {
      content.setAttribute("aria-label", tr("Your solution"));
      content.setAttribute("aria-describedby", "editor-hint");
      // contenteditable is focusable, but say so with tabindex, so tools (and axe) see the scroll region's content is
      content.setAttribute("tabindex", "0");
    }
    return editor;
  } catch (err) {
    console.error("editor failed; using a plain text area", err);
    host.appendChild(fallback);
  }
  fallback.value = doc;
  fallback.dataset.testid = "editor";
  fallback.addEventListener("input", () => onChange(fallback.value));
  fallback.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      onRun();
    }
    if (event.key === "Tab" && !event.shiftKey) {
      event.preventDefault();
      fallback.setRangeText("    ", fallback.selectionStart, fallback.selectionEnd, "end");
      onChange(fallback.value);
    }
  });
  return {
    getValue: () => fallback.value,
    setValue: (text) => { fallback.value = text; },
    focus: () => fallback.focus(),
    goToLine: (n) => {
      const lines = fallback.value.split("\n");
      const at = lines.slice(0, Math.max(0, Math.min(Number(n) || 1, lines.length) - 1)).join("\n").length;
      fallback.focus();
      fallback.setSelectionRange(at ? at + 1 : 0, at ? at + 1 : 0);
    },
    markLines: () => {}, // a plain text area has no gutter: the results panel still names each line
  };
}
