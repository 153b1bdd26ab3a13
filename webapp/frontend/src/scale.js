// Pure numeric and text helpers for the charts. No DOM here, so these run
// under `node --test` without a browser.

export const PALETTE = [
  "#2563eb",
  "#dc2626",
  "#16a34a",
  "#d97706",
  "#7c3aed",
  "#0891b2",
  "#db2777",
  "#4b5563",
];

const SAFE_COLOR = [
  /^#[0-9a-f]{3,8}$/i,
  /^(rgb|rgba|hsl|hsla)\([0-9.,%\s]+\)$/i,
  /^[a-z]{3,20}$/i,
];

// Colours may come from untrusted data; a paint value like url(...) could
// reference outside resources, so only plain colour syntaxes pass.
export function safeColor(value, fallback) {
  if (typeof value === "string" && SAFE_COLOR.some((re) => re.test(value.trim()))) {
    return value.trim();
  }
  return fallback;
}

export function truncate(text, maxChars) {
  const s = String(text);
  const chars = Array.from(s);
  if (chars.length <= maxChars) return s;
  return chars.slice(0, Math.max(1, maxChars - 1)).join("") + "\u2026";
}

// Layout runs before the SVG is in the document, so text cannot be measured;
// an average glyph width of a sans-serif face is close enough for spacing.
export function estimateTextWidth(text, fontSize) {
  return Array.from(String(text)).length * fontSize * 0.6;
}

function decimalsFor(step) {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  return Math.min(100, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
}

// Rounds away binary noise such as 0.30000000000000004 in tick positions.
function clean(value, step) {
  return parseFloat(value.toFixed(decimalsFor(step) + 1));
}

export function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  const mult = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  return mult * mag;
}

// A zero-width range cannot be scaled; widen it around the single value.
export function widen(min, max) {
  if (min < max) return [min, max];
  if (min === 0) return [-1, 1];
  const pad = Math.abs(min) * 0.1;
  return [min - pad, min + pad];
}

/** Ticks inside [min, max], at a 1-2-5 step. */
export function linearTicks(min, max, count = 5) {
  const [lo, hi] = widen(min, max);
  const step = niceStep(hi - lo, count);
  const first = Math.ceil(lo / step - 1e-9);
  const last = Math.floor(hi / step + 1e-9);
  const ticks = [];
  for (let i = first; i <= last; i++) ticks.push(clean(i * step, step));
  return { domain: [lo, hi], ticks, step };
}

/** Widens [min, max] outwards to whole steps, then ticks it. */
export function niceLinear(min, max, count = 5) {
  const [lo, hi] = widen(min, max);
  const step = niceStep(hi - lo, count);
  const niceLo = clean(Math.floor(lo / step + 1e-9) * step, step);
  const niceHi = clean(Math.ceil(hi / step - 1e-9) * step, step);
  return linearTicks(niceLo, niceHi, count);
}

function pow10(k) {
  return Number(`1e${k}`);
}

/** Decade-aligned log domain; adds 2x and 5x ticks when it spans few decades. */
export function niceLog(minPositive, maxPositive) {
  let lo = Math.floor(Math.log10(minPositive) + 1e-9);
  let hi = Math.ceil(Math.log10(maxPositive) - 1e-9);
  if (hi <= lo) hi = lo + 1;
  const decades = hi - lo;
  const ticks = [];
  if (decades <= 2) {
    for (let k = lo; k <= hi; k++) {
      for (const m of [1, 2, 5]) {
        const v = parseFloat((m * pow10(k)).toPrecision(12));
        if (v <= pow10(hi)) ticks.push(v);
      }
    }
  } else {
    const stride = Math.ceil(decades / 6);
    for (let k = lo; k <= hi; k += stride) ticks.push(pow10(k));
  }
  return { domain: [pow10(lo), pow10(hi)], ticks };
}

function expString(value, digits) {
  return value
    .toExponential(digits)
    .replace(/\.?0+e/, "e")
    .replace("e+", "e");
}

/** Tick label; `step` sets the decimals so labels along an axis line up. */
export function formatTick(value, step) {
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e6 || abs < 1e-4) return expString(value, 2);
  if (step === undefined) return String(parseFloat(value.toPrecision(6)));
  return value.toFixed(Math.min(20, decimalsFor(step)));
}

/** Log-axis tick: powers of ten far from 1 read better as 1e4, 1e-5. */
export function formatLogTick(value) {
  if (value >= 1e4 || value < 1e-3) return expString(value, 2);
  return String(parseFloat(value.toPrecision(6)));
}

/** A measured value: 4 significant digits, whole numbers from 1000 up. */
export function formatValue(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "n/a";
  if (value === 0) return "0";
  const abs = Math.abs(value);
  if (abs >= 1e9 || abs < 1e-3) return expString(value, 3);
  if (abs >= 1000) return String(Math.round(value));
  return String(parseFloat(value.toPrecision(4)));
}

function pointOf(item, index) {
  if (Array.isArray(item)) return [item[0], item[1]];
  if (item !== null && typeof item === "object") return [item.x, item.y];
  return [index, item];
}

/**
 * Turns one series' values into drawable runs of points. A skipped point
 * (non-finite, or not positive on a log axis) ends the run, so a gap in the
 * data shows as a gap in the line instead of a misleading straight segment.
 */
export function toSegments(values, logY) {
  const segments = [];
  let run = [];
  let nonFinite = 0;
  let nonPositive = 0;
  const list = Array.isArray(values) ? values : [];
  list.forEach((item, index) => {
    const [x, y] = pointOf(item, index);
    let ok = typeof x === "number" && typeof y === "number" && Number.isFinite(x) && Number.isFinite(y);
    if (!ok) nonFinite++;
    else if (logY && y <= 0) {
      nonPositive++;
      ok = false;
    }
    if (ok) run.push([x, y]);
    else if (run.length) {
      segments.push(run);
      run = [];
    }
  });
  if (run.length) segments.push(run);
  return { segments, nonFinite, nonPositive };
}

/** Maps a value in `domain` to a pixel position in `range`. */
export function scaler(domain, range, log = false) {
  const f = log ? Math.log10 : (v) => v;
  const d0 = f(domain[0]);
  const d1 = f(domain[1]);
  const span = d1 - d0 || 1;
  return (v) => range[0] + ((f(v) - d0) / span) * (range[1] - range[0]);
}

/** Cuts `text` to fit `maxWidth` (as `measure` reckons it), marking the cut with an ellipsis. */
export function truncateToWidth(text, maxWidth, measure) {
  const s = String(text);
  if (measure(s) <= maxWidth) return s;
  const chars = Array.from(s);
  let n = chars.length - 1;
  while (n > 1 && measure(chars.slice(0, n).join("") + "\u2026") > maxWidth) n--;
  return chars.slice(0, n).join("") + "\u2026";
}

/**
 * Breaks `text` into lines no wider than `maxWidth`: at spaces, and inside a word only when the word alone is
 * wider than a line. At most `maxLines`; the last one is cut with an ellipsis if the text goes on.
 */
export function wrapText(text, maxWidth, measure, maxLines = 3) {
  const words = String(text).split(/\s+/).filter(Boolean);
  const lines = [];
  let line = "";
  const push = (word) => {
    const candidate = line ? `${line} ${word}` : word;
    if (!line || measure(candidate) <= maxWidth) line = candidate;
    else {
      lines.push(line);
      line = word;
    }
    while (measure(line) > maxWidth && Array.from(line).length > 1) {
      const chars = Array.from(line);
      let n = chars.length - 1;
      while (n > 1 && measure(chars.slice(0, n).join("")) > maxWidth) n--;
      lines.push(chars.slice(0, n).join(""));
      line = chars.slice(n).join("");
    }
  };
  words.forEach(push);
  if (line) lines.push(line);
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  kept[maxLines - 1] = truncateToWidth(`${kept[maxLines - 1]} ${lines[maxLines]}`, maxWidth, measure);
  return kept;
}

/**
 * Of tick labels centred at `positions`, the indexes to show so that no two come closer than `gap`: the
 * first is always kept, each next one only if it clears the last kept one.
 */
export function thinTicks(positions, widths, gap = 6) {
  const kept = [];
  let end = -Infinity;
  positions.forEach((x, i) => {
    if (x - widths[i] / 2 >= end + gap) {
      kept.push(i);
      end = x + widths[i] / 2;
    }
  });
  return kept;
}
