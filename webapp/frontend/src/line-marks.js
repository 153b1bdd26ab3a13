// Marks on whole lines as CodeMirror diagnostics; kept apart from editor.js (no CodeMirror import) so node's
// test runner can check it without node_modules.

// One diagnostic per mark, spanning its whole line; `doc` is CodeMirror's Text (or anything with `lines` and
// `line(n)` giving {from, to}). A line beyond the end of the document is left out. `render(mark)`, where given,
// draws a mark that has `parts` (its tooltip: the message and the fix apart, `code` as code).
export function lineDiagnostics(doc, marks, render) {
  const out = [];
  for (const mark of marks || []) {
    if (!Number.isInteger(mark.line) || mark.line < 1 || mark.line > doc.lines) continue;
    const line = doc.line(mark.line);
    const diagnostic = { from: line.from, to: line.to, severity: mark.severity || "error", message: String(mark.message) };
    if (render && mark.parts) diagnostic.renderMessage = () => render(mark);
    out.push(diagnostic);
  }
  return out;
}
