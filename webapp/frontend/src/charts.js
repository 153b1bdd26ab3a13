// Small SVG charts. Every piece of text is set through textContent and every
// attribute through setAttribute: titles, series names and bar labels may come
// from learners' code or submissions, so nothing is ever parsed as markup.

import {
  PALETTE,
  safeColor,
  truncate,
  estimateTextWidth,
  linearTicks,
  niceLinear,
  niceLog,
  formatTick,
  formatLogTick,
  formatValue,
  toSegments,
  scaler,
  truncateToWidth,
  wrapText,
  thinTicks,
} from "./scale.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';
const INK = "#1f2933";
const MUTED = "#616e7c";
const GRID = "#e4e7eb";
const AXIS = "#9aa5b1";
const TICK_FONT = 11;
const LEGEND_FONT = 12;
const TITLE_FONT = 15;
const TITLE_LINE = 20;
// A chart is laid out for the width it is shown at (its box's, up to WIDTH), so that its text keeps its size
// on a phone instead of shrinking with a scaled-down 640-unit drawing; below NARROW a bar's label goes above it.
const MIN_WIDTH = 240;
const NARROW = 480;

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  if (parent) parent.appendChild(node);
  return node;
}

function text(parent, content, attrs) {
  const node = el("text", { fill: INK, ...attrs }, parent);
  node.textContent = String(content);
  return node;
}

// A <title> child is the native hover tooltip in SVG and names the element
// for assistive technology.
function tooltip(parent, content) {
  el("title", {}, parent).textContent = String(content);
}

function px(v) {
  return Math.round(v * 100) / 100;
}

let canvasContext;

// Text width as the browser will draw it (a canvas measures with the same fonts), or an estimate where no
// canvas is there; one pixel more, so that neighbours never touch.
function measurer(size, weight = 400) {
  if (canvasContext === undefined) {
    try {
      canvasContext = document.createElement("canvas").getContext("2d") || null;
    } catch {
      canvasContext = null;
    }
  }
  if (!canvasContext) return (t) => estimateTextWidth(t, size);
  const font = `${weight} ${size}px ${FONT}`;
  return (t) => {
    canvasContext.font = font;
    return canvasContext.measureText(String(t)).width + 1;
  };
}

function chartWidth(parent, requested) {
  let width = Number(requested);
  if (!(width > 0)) {
    const box = parent.clientWidth || 0;
    if (!box) return WIDTH;
    const style = typeof getComputedStyle === "function" ? getComputedStyle(parent) : null;
    const padding = style ? (parseFloat(style.paddingLeft) || 0) + (parseFloat(style.paddingRight) || 0) : 0;
    width = box - padding;
  }
  return Math.round(Math.max(MIN_WIDTH, Math.min(WIDTH, width)));
}

// The title's lines: a long one (Indonesian and Italian titles are longer) wraps instead of being cut.
function titleLines(title, width) {
  return title ? wrapText(title, width - 24, measurer(TITLE_FONT, 600), 5) : [];
}

function titleHeight(lines) {
  return lines.length ? (lines.length - 1) * TITLE_LINE : 0;
}

function requireParent(parent, fnName) {
  if (!parent || typeof parent.appendChild !== "function") {
    throw new TypeError(`AmpDojo.${fnName}: parent must be a DOM element`);
  }
}

function chartRoot(kind, title, height, width, lines) {
  const svg = el("svg", {
    xmlns: SVG_NS,
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": title || `${kind} chart`,
    class: `amp-chart amp-chart-${kind}`,
    "font-family": FONT,
    "data-testid": "chart",
    "data-chart-title": title,
    style: "max-width:100%;height:auto;display:block",
  });
  if (title) tooltip(svg, title);
  el("rect", { x: 0, y: 0, width, height, fill: "#ffffff" }, svg);
  lines.forEach((line, i) => {
    text(svg, line, {
      x: 12,
      y: 22 + i * TITLE_LINE,
      "font-size": TITLE_FONT,
      "font-weight": 600,
      class: "amp-chart-title",
    });
  });
  return svg;
}

function emptyNote(svg, x, y) {
  text(svg, "No data", {
    x: px(x),
    y: px(y),
    "text-anchor": "middle",
    "font-size": 13,
    fill: MUTED,
  });
}

// ---------------------------------------------------------------- line chart

function prepareSeries(series, logY) {
  const list = Array.isArray(series) ? series : [];
  return list.map((s, i) => {
    const item = s && typeof s === "object" ? s : {};
    const name = item.name == null ? `series ${i + 1}` : String(item.name);
    const color = safeColor(item.color, PALETTE[i % PALETTE.length]);
    return { name, color, ...toSegments(item.values, logY) };
  });
}

function layoutLegend(prepared, left, maxWidth) {
  const rowHeight = 18;
  const measure = measurer(LEGEND_FONT);
  const items = [];
  let x = 0;
  let row = 0;
  for (const s of prepared) {
    const label = truncateToWidth(truncate(s.name, 40), maxWidth - 36, measure);
    const w = 14 + 6 + measure(label) + 16;
    if (x > 0 && x + w > maxWidth) {
      x = 0;
      row++;
    }
    items.push({ series: s, label, x: left + x, row });
    x += w;
  }
  return { items, height: prepared.length ? (row + 1) * rowHeight : 0, rowHeight };
}

function drawLegend(svg, legend, top) {
  for (const item of legend.items) {
    const y = top + item.row * legend.rowHeight;
    const g = el("g", { class: "amp-chart-legend-item" }, svg);
    el(
      "line",
      { x1: item.x, x2: item.x + 14, y1: y + 9, y2: y + 9, stroke: item.series.color, "stroke-width": 3 },
      g,
    );
    text(g, item.label, { x: item.x + 20, y: y + 13, "font-size": LEGEND_FONT });
    if (item.label !== item.series.name) tooltip(g, item.series.name);
  }
}

function skippedNote(prepared) {
  const nonFinite = prepared.reduce((n, s) => n + s.nonFinite, 0);
  const nonPositive = prepared.reduce((n, s) => n + s.nonPositive, 0);
  const parts = [];
  if (nonFinite) parts.push(`${nonFinite} non-finite value${nonFinite === 1 ? "" : "s"}`);
  if (nonPositive) parts.push(`${nonPositive} value${nonPositive === 1 ? "" : "s"} \u2264 0`);
  return parts.length ? `Not shown: ${parts.join(", ")}` : "";
}

function extent(prepared) {
  let xMin = Infinity;
  let xMax = -Infinity;
  let yMin = Infinity;
  let yMax = -Infinity;
  for (const s of prepared) {
    for (const seg of s.segments) {
      for (const [x, y] of seg) {
        if (x < xMin) xMin = x;
        if (x > xMax) xMax = x;
        if (y < yMin) yMin = y;
        if (y > yMax) yMax = y;
      }
    }
  }
  return xMin <= xMax ? { xMin, xMax, yMin, yMax } : null;
}

function drawSeries(svg, s, sx, sy) {
  const g = el("g", { class: "amp-chart-series" }, svg);
  tooltip(g, s.name);
  const total = s.segments.reduce((n, seg) => n + seg.length, 0);
  // Markers keep short series and isolated points (a lone value between
  // NaNs) visible; on long curves they would only add clutter.
  const markAll = total <= 30;
  for (const seg of s.segments) {
    if (seg.length > 1) {
      const d = seg.map(([x, y], i) => `${i ? "L" : "M"}${px(sx(x))} ${px(sy(y))}`).join("");
      el(
        "path",
        {
          d,
          fill: "none",
          stroke: s.color,
          "stroke-width": 2,
          "stroke-linejoin": "round",
          "stroke-linecap": "round",
        },
        g,
      );
    }
    if (markAll || seg.length === 1) {
      for (const [x, y] of seg) {
        const dot = el("circle", { cx: px(sx(x)), cy: px(sy(y)), r: 3, fill: s.color }, g);
        tooltip(dot, `${s.name}: (${formatValue(x)}, ${formatValue(y)})`);
      }
    }
  }
}

// Vertical marks at given x values (an overflow, a change of the loss scale), each with a short label above
// the plot and its whole text as a tooltip; labels that would collide are stacked.
function drawMarkers(svg, markers, sx, top, bottom, left, right) {
  const list = (Array.isArray(markers) ? markers : []).filter((m) => m && Number.isFinite(Number(m.x)));
  let lastEnd = -Infinity;
  let row = 0;
  for (const m of list) {
    const x = px(sx(Number(m.x)));
    if (x < left - 0.5 || x > right + 0.5) continue;
    const color = safeColor(m.color, MUTED);
    const g = el("g", { class: "amp-chart-marker", "data-testid": "chart-marker", "data-x": Number(m.x) }, svg);
    el("line", { x1: x, x2: x, y1: top, y2: bottom, stroke: color, "stroke-width": 1.5, "stroke-dasharray": "4 3" }, g);
    const measure = measurer(TICK_FONT);
    // on the side of the line with room for it, cut to that room on a narrow chart
    let label = truncate(m.label == null ? "" : String(m.label), 44);
    const roomRight = right - x - 4;
    const roomLeft = x - left - 4;
    const anchorEnd = measure(label) > roomRight && roomLeft > roomRight;
    label = truncateToWidth(label, anchorEnd ? roomLeft : roomRight, measure);
    const width = measure(label);
    const start = anchorEnd ? x - width - 4 : x + 4;
    row = start < lastEnd ? row + 1 : 0;
    lastEnd = start + width + 8;
    text(g, label, {
      x: anchorEnd ? x - 4 : x + 4,
      y: top + 12 + row * (TICK_FONT + 3),
      "text-anchor": anchorEnd ? "end" : "start",
      "font-size": TICK_FONT,
      fill: color,
    });
    tooltip(g, m.title == null ? label : String(m.title));
  }
}

/**
 * Line chart of named series. `values` is either y values (x = index) or
 * [x, y] pairs; non-finite points, and on a log axis values <= 0, are skipped
 * and counted in a note under the legend. `markers` are [{x, label, title?, color?}]
 * drawn as labelled vertical lines.
 */
export function lineChart(parent, options = {}) {
  requireParent(parent, "lineChart");
  const title = options.title == null ? "" : String(options.title);
  const xLabel = options.xLabel == null ? "" : String(options.xLabel);
  const yLabel = options.yLabel == null ? "" : String(options.yLabel);
  const logY = Boolean(options.logY);
  const prepared = prepareSeries(options.series, logY);
  const data = extent(prepared);
  const width = chartWidth(parent, options.width);
  const lines = titleLines(title, width);
  const tickWidth = measurer(TICK_FONT);

  const xTickCount = Math.max(2, Math.min(6, Math.floor((width - 80) / 70)));
  const x0 = data ? linearTicks(data.xMin, data.xMax, xTickCount) : linearTicks(0, 1, xTickCount);
  const y0 = data
    ? logY
      ? niceLog(data.yMin, data.yMax)
      : niceLinear(data.yMin, data.yMax, 5)
    : niceLinear(0, 1, 5);
  const yTickLabels = y0.ticks.map((v) => (logY ? formatLogTick(v) : formatTick(v, y0.step)));
  const yTickWidth = Math.max(0, ...yTickLabels.map(tickWidth));

  const left = Math.round(Math.min(120, Math.max(40, yTickWidth + 14)) + (yLabel ? 20 : 0));
  const right = width - 20;
  const legend = layoutLegend(prepared, left, right - left);
  const note = truncateToWidth(skippedNote(prepared), right - 12, tickWidth);
  const legendTop = title ? 34 + titleHeight(lines) : 10;
  const noteTop = legendTop + legend.height;
  const top = noteTop + (note ? 16 : 0) + 10;
  const plotHeight = 240;
  const bottom = top + plotHeight;
  const height = bottom + (xLabel ? 44 : 28);

  const svg = chartRoot("line", title, height, width, lines);
  drawLegend(svg, legend, legendTop);
  if (note) {
    text(svg, note, { x: right, y: noteTop + 12, "text-anchor": "end", "font-size": TICK_FONT, fill: MUTED });
  }

  const sx = scaler(x0.domain, [left, right]);
  const sy = scaler(y0.domain, [bottom, top], logY);

  const grid = el("g", { class: "amp-chart-grid", stroke: GRID, "stroke-width": 1 }, svg);
  y0.ticks.forEach((v, i) => {
    const y = px(sy(v));
    el("line", { x1: left, x2: right, y1: y, y2: y }, grid);
    text(svg, yTickLabels[i], {
      x: left - 6,
      y: y + 4,
      "text-anchor": "end",
      "font-size": TICK_FONT,
      fill: MUTED,
    });
  });
  if (data) {
    const labels = x0.ticks.map((v) => formatTick(v, x0.step));
    const shown = new Set(thinTicks(x0.ticks.map(sx), labels.map(tickWidth)));
    x0.ticks.forEach((v, i) => {
      const x = px(sx(v));
      el("line", { x1: x, x2: x, y1: bottom, y2: bottom + 4, stroke: AXIS }, svg);
      if (!shown.has(i)) return;
      text(svg, labels[i], {
        x,
        y: bottom + 17,
        "text-anchor": "middle",
        "font-size": TICK_FONT,
        fill: MUTED,
      });
    });
  }
  el("path", { d: `M${left} ${top}V${bottom}H${right}`, fill: "none", stroke: AXIS }, svg);

  if (xLabel) {
    text(svg, truncateToWidth(truncate(xLabel, 80), right - left, measurer(LEGEND_FONT)), {
      x: px((left + right) / 2),
      y: bottom + 38,
      "text-anchor": "middle",
      "font-size": LEGEND_FONT,
    });
  }
  if (yLabel) {
    const cy = px((top + bottom) / 2);
    text(svg, truncateToWidth(truncate(yLabel, 40), plotHeight, measurer(LEGEND_FONT)), {
      x: 16,
      y: cy,
      transform: `rotate(-90 16 ${cy})`,
      "text-anchor": "middle",
      "font-size": LEGEND_FONT,
    });
  }

  if (data) {
    drawMarkers(svg, options.markers, sx, top, bottom, left, right);
    for (const s of prepared) drawSeries(svg, s, sx, sy);
  } else {
    emptyNote(svg, (left + right) / 2, (top + bottom) / 2);
  }

  parent.appendChild(svg);
  return svg;
}

// ----------------------------------------------------------------- bar chart

function withUnit(value, unit) {
  const v = formatValue(value);
  if (!unit || v === "n/a") return v;
  return unit === "%" ? `${v}%` : `${v} ${unit}`;
}

/**
 * Horizontal bar chart: one row per bar, label on the left, value and unit
 * after the bar. Bars start at zero, so negative values extend leftwards.
 */
export function barChart(parent, options = {}) {
  requireParent(parent, "barChart");
  const title = options.title == null ? "" : String(options.title);
  const unit = options.unit == null ? "" : String(options.unit);
  const width = chartWidth(parent, options.width);
  const lines = titleLines(title, width);
  const labelWidth = measurer(LEGEND_FONT);
  const tickWidth = measurer(TICK_FONT);
  const bars = (Array.isArray(options.bars) ? options.bars : []).map((b, i) => {
    const item = b && typeof b === "object" ? b : {};
    const label = item.label == null ? `bar ${i + 1}` : String(item.label);
    const value = typeof item.value === "number" && Number.isFinite(item.value) ? item.value : NaN;
    return {
      label,
      shown: truncate(label, 32),
      value,
      valueText: withUnit(value, unit),
      color: safeColor(item.color, PALETTE[0]),
    };
  });

  // Wide: the label left of its bar. Narrow: the label on a line of its own above the bar, so the bars keep
  // their length and no label is cut to a few letters.
  const narrow = width < NARROW;
  const rowHeight = narrow ? 44 : 30;
  const barHeight = narrow ? 16 : 20;
  const top = (title ? 40 : 14) + titleHeight(lines);
  const valueWidth = Math.max(0, ...bars.map((b) => labelWidth(b.valueText)));
  const right = width - Math.round(Math.min(140, Math.max(40, valueWidth)) + 16);
  let left;
  if (narrow) {
    left = 12;
    for (const b of bars) b.shown = truncateToWidth(b.shown, width - 24, labelWidth);
  } else {
    const widest = Math.max(0, ...bars.map((b) => labelWidth(b.shown)));
    left = Math.round(Math.min(220, Math.max(60, widest)) + 20);
    for (const b of bars) b.shown = truncateToWidth(b.shown, left - 20, labelWidth);
  }
  const rows = Math.max(1, bars.length);
  const bottom = top + rows * rowHeight;
  const height = bottom + 30;

  const svg = chartRoot("bar", title, height, width, lines);
  const finite = bars.filter((b) => Number.isFinite(b.value)).map((b) => b.value);
  const lo = Math.min(0, ...finite);
  let hi = Math.max(0, ...finite);
  // No data or all zeros: show an empty 0..1 axis rather than one around zero.
  if (lo === hi) hi = 1;
  const scale = niceLinear(lo, hi, Math.max(2, Math.min(5, Math.floor((right - left) / 60))));
  const sx = scaler(scale.domain, [left, right]);

  const grid = el("g", { class: "amp-chart-grid", stroke: GRID, "stroke-width": 1 }, svg);
  const tickLabels = scale.ticks.map((v) => formatTick(v, scale.step));
  const shown = new Set(thinTicks(scale.ticks.map(sx), tickLabels.map(tickWidth)));
  scale.ticks.forEach((v, i) => {
    const x = px(sx(v));
    el("line", { x1: x, x2: x, y1: top, y2: bottom }, grid);
    if (!shown.has(i)) return;
    text(svg, tickLabels[i], {
      x,
      y: bottom + 16,
      "text-anchor": "middle",
      "font-size": TICK_FONT,
      fill: MUTED,
    });
  });
  const zero = px(sx(0));
  el("line", { x1: zero, x2: zero, y1: top, y2: bottom, stroke: AXIS }, svg);

  if (!bars.length) emptyNote(svg, (left + right) / 2, top + rowHeight / 2 + 4);

  bars.forEach((b, i) => {
    const g = el("g", { class: "amp-chart-bar-row" }, svg);
    tooltip(g, `${b.label}: ${b.valueText}`);
    const rowTop = top + i * rowHeight + (narrow ? 20 : (rowHeight - barHeight) / 2);
    const mid = rowTop + barHeight / 2 + 4;
    if (narrow) text(g, b.shown, { x: left, y: px(rowTop - 6), "font-size": LEGEND_FONT });
    else text(g, b.shown, { x: left - 8, y: px(mid), "text-anchor": "end", "font-size": LEGEND_FONT });
    let end = zero;
    if (Number.isFinite(b.value)) {
      const a = sx(Math.min(0, b.value));
      const z = sx(Math.max(0, b.value));
      el("rect", { x: px(a), y: px(rowTop), width: px(Math.max(1, z - a)), height: barHeight, rx: 2, fill: b.color }, g);
      end = b.value >= 0 ? z : zero;
    }
    text(g, b.valueText, {
      x: px(end + 6),
      y: px(mid),
      "font-size": LEGEND_FONT,
      fill: Number.isFinite(b.value) ? INK : MUTED,
    });
  });

  parent.appendChild(svg);
  return svg;
}
