// The charts of a result, as chart specs for charts.js (lineChart/barChart): from the result's `plots`
// (docs/results.md). No DOM here.

import { tr } from "./i18n.js";
import { formatNumber, median } from "./format.js";

export const COLORS = { submission: "#4f46e5", baseline: "#94a3b8", scale: "#0d9488" };

// [kind, spec] for each chart the plots have data for, in the order they are shown.
export function resultCharts(plots) {
  const charts = [];
  if (plots.loss) {
    charts.push(["line", {
      title: tr("Loss: your code vs the FP32 baseline"), xLabel: tr("step"), yLabel: tr("loss"),
      // the baseline first, so the learner's line is drawn on top (they coincide when parity holds)
      series: [{ name: tr("FP32 baseline"), values: plots.loss.baseline, color: COLORS.baseline },
               { name: tr("your code"), values: plots.loss.submission, color: COLORS.submission }],
    }]);
  }
  const base = plots.loss && plots.loss.baseline;
  const mine = plots.loss && plots.loss.submission;
  if (base && mine && base.length === mine.length && base.length) {
    // The two loss lines coincide when parity holds: their difference, as its own series, shows how close.
    charts.push(["line", {
      title: tr("Difference to the FP32 loss (%)"), xLabel: tr("step"), yLabel: tr("% of FP32 loss"),
      series: [{ name: tr("your loss minus FP32 loss"), color: COLORS.submission, values: lossDifference(base, mine) }],
    }]);
  }
  if (plots.scale && plots.scale.length) {
    charts.push(["line", scaleChart(plots.scale, plots.scale_overflows || plots.scale_overflow)]);
  }
  if (plots.timing && plots.timing.baseline_s && plots.timing.baseline_s.length) {
    charts.push(["bar", {
      title: tr("Time per {n} steps (median)", { n: plots.timing.steps_per_block }), unit: "s",
      bars: [{ label: tr("FP32 baseline"), value: median(plots.timing.baseline_s), color: COLORS.baseline },
             { label: tr("your code"), value: median(plots.timing.submission_s), color: COLORS.submission }],
    }]);
  }
  if (plots.memory) {
    charts.push(["bar", {
      title: tr("Peak memory"), unit: "MiB",
      bars: [{ label: tr("FP32 baseline"), value: plots.memory.baseline_bytes / 1048576, color: COLORS.baseline },
             { label: tr("your code"), value: plots.memory.submission_bytes / 1048576, color: COLORS.submission }],
    }]);
  }
  if (plots.profile && plots.profile.given) charts.push(["bar", profileChart(plots.profile)]);
  return charts;
}

// Per step, 100 × (mine − FP32) / |FP32|; no loss at a step (the overflowed one, where a loss term is inf): a
// gap (null), not −100%.
export function lossDifference(base, mine) {
  return mine.map((v, i) => {
    if (v === null || base[i] === null) return null;
    return base[i] ? (100 * (v - base[i])) / Math.abs(base[i]) : 0;
  });
}

/* A profiling lesson: what the grader counted per step in the given step (its own run) and in yours. */
function profileCategories() {
  return [["host_sync", tr("host syncs")], ["float32_matmul", tr("float32 matmuls")],
          ["host_device_copy", tr("host-device copies")]];
}

export function profileChart(profile) {
  const bars = [];
  for (const [key, what] of profileCategories()) {
    const given = profile.given.per_step[key];
    const mine = (profile.submission.per_step || {})[key];
    if (given === null || given === undefined) continue; // this device cannot show it (no GPU)
    bars.push({ label: tr("{what}: given step", { what }), value: given, color: COLORS.baseline });
    bars.push({ label: tr("{what}: your step", { what }), value: mine, color: COLORS.submission });
  }
  let title = tr("Per step, the given step (the grader's profile) and yours");
  if (profile.given.per_step.host_device_copy === null) title += " (" + tr("copies are counted on a GPU only") + ")";
  return { title, unit: "", bars };
}

/* The loss scale per step, with each change marked: a back-off (an overflow: the step was skipped) or a
   growth; each step the grader made overflow on purpose is marked as such. `forced` is the list of those
   steps, {step, scale} each (a result from before lessons could force several: one of them, or none). */
export function scaleChart(scales, forced) {
  const points = scales.map((v, i) => [i, v]);
  const forcedSteps = Array.isArray(forced) ? forced : forced ? [forced] : [];
  // The grader forces the overflows on steps inside the window (older results: on the step after it).
  for (const f of forcedSteps) if (f.step >= points.length) points.push([f.step, f.scale]);
  const markers = [];
  let backoffs = 0;
  let growths = 0;
  points.forEach((p, i) => {
    if (i === 0 || p[1] === points[i - 1][1]) return;
    const down = p[1] < points[i - 1][1];
    if (down) backoffs++;
    else growths++;
    const isForced = forcedSteps.some((f) => f.step === p[0]);
    const label = isForced ? tr("overflow forced by the grader") : down ? tr("backed off") : tr("grew");
    markers.push({
      x: p[0], color: down ? "#b91c1c" : COLORS.scale, label,
      title: label + ": " + tr("step {n}: scale {a} → {b}", { n: p[0], a: formatNumber(points[i - 1][1], 0), b: formatNumber(p[1], 0) }),
    });
  });
  const changes = " (" + (backoffs || growths ? tr("backed off {b}×, grew {g}×", { b: backoffs, g: growths })
    : tr("unchanged: no overflow in these steps")) + ")";
  return {
    title: tr("GradScaler scale") + changes, xLabel: tr("step"), yLabel: tr("scale"), logY: true, markers,
    series: [{ name: tr("scale"), values: points, color: COLORS.scale }],
  };
}
