/* What the editor marks after a verdict: every finding that names a line, and the error's line, each with its
   message (already in the page's language: the grader words findings for it) and its fix. */

import { tr } from "./i18n.js";
import { checkName, errorKindLabels } from "./words.js";

function findingText(check, finding, titles) {
  const fix = finding.fix ? " — " + tr("Fix:") + " " + finding.fix : "";
  return checkName(check.id, titles) + ": " + finding.message + fix;
}

// What the tooltip draws apart (editor-host.js): the check, the message, and the fix under its own label.
function findingParts(check, finding, titles) {
  return { head: checkName(check.id, titles), text: finding.message, fix: finding.fix || "", fixLabel: tr("Fix:") };
}

// [{line, severity, message}] for the editor's markLines; a failing check's findings are errors, advice is info.
export function resultMarks(result, titles) {
  if (!result) return [];
  const marks = [];
  const error = result.error;
  if (error && Number.isInteger(error.line)) {
    const label = errorKindLabels()[error.kind] || tr("Your code stopped with an error");
    marks.push({ line: error.line, severity: "error", message: label + ": " + (error.message || ""),
      parts: { head: label, text: error.message || "", fix: "", fixLabel: "" } });
  }
  for (const check of result.checks || []) {
    for (const finding of check.findings || []) {
      if (!Number.isInteger(finding.line)) continue;
      const severity = finding.severity === "info" ? "info" : "error";
      marks.push({ line: finding.line, severity, message: findingText(check, finding, titles),
        parts: findingParts(check, finding, titles) });
    }
  }
  return marks;
}
