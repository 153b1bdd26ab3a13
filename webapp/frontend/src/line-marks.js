// Marks on whole lines as CodeMirror diagnostics; kept apart from editor.js (no CodeMirror import) so node's
// test runner can check it without node_modules.

// One diagnostic per mark, spanning its whole line; `doc` is CodeMirror's Text (or anything with `lines` and
// `line(n)` giving {from, to}). A line beyond the end of the document is left out.
export function lineDiagnostics(doc, marks) {
  const out = [];
  for (const mark of marks || []) {
    if (!Number.isInteger(mark.line) || mark.line < 1 || mark.line > doc.lines) continue;
    const line = doc.line(mark.line);
    out.push({ from: line.from, to: line.to, severity: mark.severity || "error", message: String(mark.message) });
  }
  return out;
}
