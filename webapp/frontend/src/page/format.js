// Numbers and times as the results panel shows them.

export function formatNumber(value, digits) {
  if (typeof value !== "number" || !isFinite(value)) return String(value);
  if (Math.abs(value) >= 1e6) return value.toExponential(2);
  return Number(value.toFixed(digits === undefined ? 4 : digits)).toString();
}

export function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// A submission's time (seconds since the epoch) in the browser's locale.
export function timeAgo(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

// A learner's line as the error box shows it: "12 | code", and under a syntax error a caret at SyntaxError's
// column (1-based, counted in the line itself, so the "12 | " prefix shifts it).
export function errorLineText(error) {
  const prefix = error.line ? error.line + " | " : "";
  const text = prefix + error.source_line;
  const column = error.column;
  if (!Number.isInteger(column) || column < 1 || column > error.source_line.length + 1) return text;
  return text + "\n" + " ".repeat(prefix.length + column - 1) + "^";
}
