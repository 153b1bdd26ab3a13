// Numbers and times as the results panel shows them, in the page's language (Intl): "0,13", "4 dic 2026, 13:27".

import { pageLanguage } from "./i18n.js";

export function formatNumber(value, digits) {
  if (typeof value !== "number" || !isFinite(value)) return String(value);
  if (Math.abs(value) >= 1e6) return swapDecimal(value.toExponential(2));
  return new Intl.NumberFormat(pageLanguage(), { maximumFractionDigits: digits === undefined ? 4 : digits,
                                                 useGrouping: false }).format(value);
}

// A fraction as a whole percentage: 0.67 → "67%" (Intl writes the sign where the language does).
export function formatPercent(fraction) {
  return new Intl.NumberFormat(pageLanguage(), { style: "percent", maximumFractionDigits: 0 }).format(fraction);
}

function swapDecimal(text) {
  const point = new Intl.NumberFormat(pageLanguage()).formatToParts(0.5).find((p) => p.type === "decimal");
  return point ? text.replace(".", point.value) : text;
}

export function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// A submission's time (seconds since the epoch) as the page's language writes dates, in the browser's time zone.
export function timeAgo(seconds) {
  return new Intl.DateTimeFormat(pageLanguage(), { dateStyle: "medium", timeStyle: "short" })
    .format(new Date(seconds * 1000));
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
