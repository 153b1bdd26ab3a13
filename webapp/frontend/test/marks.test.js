// What the editor marks after a verdict (src/page/marks.js), and where those marks land (src/line-marks.js).
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { resultMarks } from "../src/page/marks.js";
import { lineDiagnostics } from "../src/line-marks.js";
import { setCatalog } from "../src/page/i18n.js";

afterEach(() => setCatalog({}));

// CodeMirror's Text as far as lineDiagnostics reads it: 1-based lines, offsets counting one "\n" between lines.
function textOf(lines) {
  let from = 0;
  const spans = lines.map((text) => {
    const span = { from, to: from + text.length };
    from = span.to + 1;
    return span;
  });
  return { lines: lines.length, line: (n) => spans[n - 1] };
}

const RESULT = {
  status: "fail",
  error: null,
  checks: [
    { id: "call_order", status: "fail", findings: [
      { id: "backward_inside_autocast", severity: "error", line: 9, message: "backward() was called inside the autocast block", fix: "dedent it" },
      { id: "no_line", severity: "error", line: null, message: "somewhere" },
    ] },
    { id: "parity", status: "pass", findings: [{ id: "tip", severity: "info", line: 3, message: "a tip" }] },
  ],
};

test("every finding with a line is marked with its check, its message and its fix; advice is info", () => {
  assert.deepEqual(resultMarks(RESULT, {}), [
    { line: 9, severity: "error", message: "Call order: backward() was called inside the autocast block — Fix: dedent it",
      parts: { head: "Call order", text: "backward() was called inside the autocast block", fix: "dedent it", fixLabel: "Fix:" } },
    { line: 3, severity: "info", message: "Parity with FP32: a tip",
      parts: { head: "Parity with FP32", text: "a tip", fix: "", fixLabel: "Fix:" } },
  ]);
});

test("an error's line is marked too, headed by its kind, in the page's language", () => {
  setCatalog({ "Your code has a syntax error and did not run": "Il tuo codice contiene un errore di sintassi e non è stato eseguito" });
  const result = { status: "error", checks: [], error: { kind: "syntax", line: 2, message: "expected ':'" } };
  assert.deepEqual(resultMarks(result, {}), [
    { line: 2, severity: "error", message: "Il tuo codice contiene un errore di sintassi e non è stato eseguito: expected ':'",
      parts: { head: "Il tuo codice contiene un errore di sintassi e non è stato eseguito", text: "expected ':'", fix: "",
        fixLabel: "" } },
  ]);
  assert.deepEqual(resultMarks(null, {}), []);
});

test("a mark with parts is drawn by the renderer given, one without by CodeMirror", () => {
  const doc = textOf(["x = 1", "y = 2"]);
  const marks = [{ line: 1, message: "plain" }, { line: 2, message: "a: b", parts: { head: "a", text: "b" } }];
  const [plain, drawn] = lineDiagnostics(doc, marks, (mark) => "drawn " + mark.parts.text);
  assert.equal(plain.renderMessage, undefined);
  assert.equal(drawn.renderMessage(), "drawn b");
});

test("a mark spans its whole line; a line past the end of the code is left out", () => {
  const doc = textOf(["import torch", "", "def step(x):", "    return x"]);
  const marks = [{ line: 3, message: "here" }, { line: 4, severity: "info", message: "tip" }, { line: 9, message: "gone" }];
  assert.deepEqual(lineDiagnostics(doc, marks), [
    { from: 14, to: 26, severity: "error", message: "here" },
    { from: 27, to: 39, severity: "info", message: "tip" },
  ]);
});
