// The smaller pure parts of the page logic: the API wrapper, the catalog, the history badges, chart specs.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { makeApi } from "../src/page/api.js";
import { tr, setCatalog } from "../src/page/i18n.js";
import { historyEntry } from "../src/page/history.js";
import { errorLineText } from "../src/page/format.js";
import { lossDifference, resultCharts, scaleChart, profileChart } from "../src/page/plots.js";

afterEach(() => setCatalog({}));

function fakeFetch(status, body, headers = {}) {
  const calls = [];
  const fetchFn = (url, options) => {
    calls.push({ url, options });
    return Promise.resolve({
      ok: status >= 200 && status < 300, status,
      json: () => (body === undefined ? Promise.reject(new SyntaxError("not JSON")) : Promise.resolve(body)),
      headers: { get: (name) => headers[name] ?? null },
    });
  };
  return { fetchFn, calls };
}

test("a request with a body carries JSON and the CSRF token; a GET carries neither", async () => {
  const { fetchFn, calls } = fakeFetch(202, { id: "s1" });
  const api = makeApi(fetchFn, "tok");
  assert.deepEqual(await api("POST", "/api/submissions/s1/cancel", {}), { ok: true, status: 202, data: { id: "s1" }, retryAfter: null });
  assert.deepEqual(calls[0], { url: "/api/submissions/s1/cancel", options: {
    method: "POST", credentials: "same-origin", body: "{}",
    headers: { Accept: "application/json", "Content-Type": "application/json", "X-CSRF-Token": "tok" } } });
  await api("GET", "/api/submissions/s1?after=0");
  assert.deepEqual(calls[1].options, { method: "GET", credentials: "same-origin", headers: { Accept: "application/json" } });
});

test("a reply that is not JSON gives empty data; Retry-After is read as seconds", async () => {
  const { fetchFn } = fakeFetch(429, undefined, { "Retry-After": "5" });
  assert.deepEqual(await makeApi(fetchFn, "")("POST", "/x", {}), { ok: false, status: 429, data: {}, retryAfter: 5 });
});

test("tr fills in placeholders, in English where the catalog has no entry", () => {
  assert.equal(tr("step {n} of {total}", { n: 2, total: 8 }), "step 2 of 8");
  setCatalog({ "step {n} of {total}": "passo {n} di {total}", empty: "" });
  assert.equal(tr("step {n} of {total}", { n: 2, total: 8 }), "passo 2 di 8");
  assert.equal(tr("empty"), "empty");
  assert.equal(tr("constructor"), "constructor"); // not the object's own properties
});

test("history badges: cancelled, the verdict once done, else the status; a score once done", () => {
  assert.deepEqual(historyEntry({ status: "done", result_status: "pass", score: 0.874 }), { state: "pass", label: "Passed", score: "87%" });
  assert.deepEqual(historyEntry({ status: "error", cancelled: true, score: null }), { state: "cancelled", label: "Cancelled", score: "" });
  assert.deepEqual(historyEntry({ status: "running", score: null }), { state: "running", label: "Running", score: "" });
});

test("the loss difference leaves a gap where a step has no loss, instead of -100%", () => {
  assert.deepEqual(lossDifference([2, 4, null, 0], [1, 4, 3, 0.5]), [-50, 0, null, 0]);
  assert.deepEqual(lossDifference([2, 4], [null, 5]), [null, 25]);
});

test("a result's charts, in order: loss, its difference, scale, time, memory, profile", () => {
  const charts = resultCharts({
    loss: { baseline: [2, 1], submission: [2, 1.1] }, scale: [65536, 65536],
    timing: { steps_per_block: 10, baseline_s: [3, 1, 2], submission_s: [1, 1] },
    memory: { baseline_bytes: 2 * 1048576, submission_bytes: 1048576 },
  });
  assert.deepEqual(charts.map(([kind, spec]) => [kind, spec.title]), [
    ["line", "Loss: your code vs the FP32 baseline"], ["line", "Difference to the FP32 loss (%)"],
    ["line", "GradScaler scale (unchanged: no overflow in these steps)"], ["bar", "Time per 10 steps (median)"],
    ["bar", "Peak memory"]]);
  assert.deepEqual(charts[3][1].bars.map((b) => b.value), [2, 1]);
  assert.deepEqual(charts[4][1].bars.map((b) => b.value), [2, 1]);
  assert.deepEqual(resultCharts({}), []);
});

test("the scale chart marks the overflow the grader forced, and counts back-offs and growths", () => {
  const spec = scaleChart([1024, 1024, 512, 1024], { step: 2, scale: 512 });
  assert.equal(spec.title, "GradScaler scale (backed off 1×, grew 1×)");
  assert.deepEqual(spec.markers.map((m) => [m.x, m.label]), [[2, "overflow forced by the grader"], [3, "grew"]]);
  assert.equal(spec.markers[0].title, "overflow forced by the grader: step 2: scale 1024 → 512");
  // an older result: the forced step after the window is added as a point of its own
  assert.deepEqual(scaleChart([8, 8], { step: 2, scale: 4 }).series[0].values, [[0, 8], [1, 8], [2, 4]]);
});

test("the scale chart marks every overflow the grader forced, not only the first", () => {
  const spec = scaleChart([1024, 2048, 1024, 1024, 512, 1024],
    [{ step: 2, scale: 1024 }, { step: 4, scale: 512 }]);
  assert.deepEqual(spec.markers.map((m) => [m.x, m.label]), [
    [1, "grew"], [2, "overflow forced by the grader"], [4, "overflow forced by the grader"], [5, "grew"],
  ]);
  assert.equal(spec.title, "GradScaler scale (backed off 2×, grew 2×)");
});

test("the profile chart leaves out what this device cannot count, and says so", () => {
  const spec = profileChart({ given: { per_step: { host_sync: 3, float32_matmul: 2, host_device_copy: null } },
                              submission: { per_step: { host_sync: 0, float32_matmul: 0 } } });
  assert.deepEqual(spec.bars.map((b) => [b.label, b.value]), [["host syncs: given step", 3], ["host syncs: your step", 0],
    ["float32 matmuls: given step", 2], ["float32 matmuls: your step", 0]]);
  assert.match(spec.title, /\(copies are counted on a GPU only\)$/);
});

test("a syntax error's line carries a caret under its column, shifted by the line-number prefix", () => {
  const error = { kind: "syntax", line: 12, column: 17, source_line: "    x = foo(1, 2" };
  assert.equal(errorLineText(error), "12 |     x = foo(1, 2\n" + " ".repeat(5 + 16) + "^");
  assert.equal(errorLineText({ line: 3, source_line: "y = z", column: null }), "3 | y = z"); // no column: no caret
  assert.equal(errorLineText({ line: 3, source_line: "y = z", column: 40 }), "3 | y = z"); // out of the line: no caret
  assert.equal(errorLineText({ source_line: "def f(:", column: 7 }), "def f(:\n      ^");
});
