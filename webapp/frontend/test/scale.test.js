import { test } from "node:test";
import assert from "node:assert/strict";
import {
  safeColor,
  truncate,
  linearTicks,
  niceLinear,
  niceLog,
  formatTick,
  formatLogTick,
  formatValue,
  toSegments,
  scaler,
  wrapText,
  thinTicks,
} from "../src/scale.js";

test("safeColor keeps plain colours and rejects paint references", () => {
  assert.equal(safeColor("#1a2b3c", "x"), "#1a2b3c");
  assert.equal(safeColor("rgb(1, 2, 3)", "x"), "rgb(1, 2, 3)");
  assert.equal(safeColor("steelblue", "x"), "steelblue");
  assert.equal(safeColor("url(https://example.invalid/#p)", "x"), "x");
  assert.equal(safeColor('red" onload="alert(1)', "x"), "x");
  assert.equal(safeColor(undefined, "x"), "x");
});

test("truncate shortens by characters and marks the cut", () => {
  assert.equal(truncate("short", 10), "short");
  assert.equal(truncate("abcdefghij", 5), "abcd\u2026");
});

test("niceLinear covers the data with round ticks", () => {
  const { domain, ticks } = niceLinear(0.13, 2.71, 5);
  assert.ok(domain[0] <= 0.13 && domain[1] >= 2.71);
  assert.deepEqual(ticks, [0, 0.5, 1, 1.5, 2, 2.5, 3]);
});

test("ticks have no floating-point noise", () => {
  const { ticks } = linearTicks(0.1, 0.7, 6);
  for (const t of ticks) assert.equal(t, parseFloat(t.toFixed(3)));
});

test("a single value still gets a usable range", () => {
  const { domain, ticks } = niceLinear(5, 5, 5);
  assert.ok(domain[0] < 5 && domain[1] > 5);
  assert.ok(ticks.length >= 2);
  assert.deepEqual(niceLinear(0, 0, 5).domain, [-1, 1]);
});

test("niceLog spans whole decades", () => {
  assert.deepEqual(niceLog(0.003, 0.4).domain, [0.001, 1]);
  assert.deepEqual(niceLog(1e-8, 1e4).ticks.slice(0, 2), [1e-8, 1e-6]);
  assert.deepEqual(niceLog(2, 2).domain, [1, 10]);
  assert.ok(niceLog(1, 100).ticks.includes(20));
});

test("tick and value formatting", () => {
  assert.equal(formatTick(0.5, 0.5), "0.5");
  assert.equal(formatTick(2, 0.5), "2.0");
  assert.equal(formatTick(1e-5), "1e-5");
  assert.equal(formatTick(2500000, 500000), "2.5e6");
  assert.equal(formatLogTick(10000), "1e4");
  assert.equal(formatLogTick(0.0001), "1e-4");
  assert.equal(formatLogTick(0.02), "0.02");
  assert.equal(formatLogTick(500), "500");
  assert.equal(formatValue(1.23456), "1.235");
  assert.equal(formatValue(123456.7), "123457");
  assert.equal(formatValue(NaN), "n/a");
  assert.equal(formatValue(Infinity), "n/a");
});

test("toSegments splits at skipped points and counts them", () => {
  const r = toSegments([1, 2, NaN, 4, Infinity, 6, 7], false);
  assert.deepEqual(r.segments, [
    [
      [0, 1],
      [1, 2],
    ],
    [[3, 4]],
    [
      [5, 6],
      [6, 7],
    ],
  ]);
  assert.equal(r.nonFinite, 2);
});

test("toSegments accepts [x, y] pairs and drops y <= 0 on a log axis", () => {
  const r = toSegments([[10, 1], [20, 0], [30, -1], [40, 0.5], [50, null]], true);
  assert.deepEqual(r.segments, [[[10, 1]], [[40, 0.5]]]);
  assert.equal(r.nonPositive, 2);
  assert.equal(r.nonFinite, 1);
});

test("toSegments tolerates a missing values array", () => {
  assert.deepEqual(toSegments(undefined, false).segments, []);
});

test("scaler maps linear and log domains onto pixels", () => {
  const lin = scaler([0, 10], [100, 200]);
  assert.equal(lin(5), 150);
  const log = scaler([1, 100], [300, 100], true);
  assert.equal(log(10), 200);
});

test("wrapText breaks a long title at spaces into lines that fit", () => {
  const measure = (s) => Array.from(s).length * 10; // 10 px a character
  const title = "Selisih terhadap loss FP32 (%)";
  const lines = wrapText(title, 140, measure);
  assert.deepEqual(lines, ["Selisih", "terhadap loss", "FP32 (%)"]);
  assert.ok(lines.every((l) => measure(l) <= 140), lines);
  assert.equal(wrapText("short title", 500, measure).join("|"), "short title");
  assert.deepEqual(wrapText("Perdita: il tuo codice e la baseline FP32", 190, measure, 5), [
    "Perdita: il tuo",
    "codice e la",
    "baseline FP32",
  ]);
});

test("wrapText cuts only a word wider than a line, and marks text past the last line", () => {
  const measure = (s) => Array.from(s).length * 10;
  assert.deepEqual(wrapText("abcdefghij xy", 50, measure), ["abcde", "fghij", "xy"]);
  const lines = wrapText("one two three four five six", 40, measure, 2);
  assert.equal(lines.length, 2);
  assert.ok(lines[1].endsWith("\u2026") && measure(lines[1]) <= 40, lines);
});

test("thinTicks drops the labels that would touch their neighbour", () => {
  assert.deepEqual(thinTicks([0, 20, 40, 60, 80], [30, 30, 30, 30, 30]), [0, 2, 4]);
  assert.deepEqual(thinTicks([0, 100, 200], [30, 30, 30]), [0, 1, 2]);
});
