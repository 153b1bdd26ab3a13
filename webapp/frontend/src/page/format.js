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
