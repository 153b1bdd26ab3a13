import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { PanelState } from "../src/page/panel-state.js";
import { setCatalog } from "../src/page/i18n.js";
import { fakeClock, fakeServer, settle } from "../testing/fakes.js";

afterEach(() => setCatalog({}));

test("nothing is said before the first event: the template's idle text stays", () => {
  const state = new PanelState();
  assert.equal(state.statusText, null);
  assert.equal(state.statusSerial, 0);
  assert.deepEqual(state.steps, []);
  assert.equal(state.outcome, null);
});

test("each change is announced, and each status is counted even when its words repeat", () => {
  const state = new PanelState();
  let changes = 0;
  state.subscribe(() => changes++);
  state.setStatus("x", "running");
  state.setStatus("x", "running");
  assert.equal(changes, 2);
  assert.equal(state.statusSerial, 2);
});

test("a running stage counts its seconds against its limit; a verdict stops the clock", () => {
  const clock = fakeClock();
  const state = new PanelState({ now: clock.now });
  state.progress({ stage: "step", n: 1, total: 8, limit_s: 60 });
  assert.equal(state.statusLine(), "Grading: step 1 of 8… (0 s of at most 60 s)");
  clock.advance(4400);
  assert.equal(state.statusLine(), "Grading: step 1 of 8… (4 s of at most 60 s)");
  state.progress({ stage: "timing", rounds: 2, speedup: 1.456 });
  assert.equal(state.steps.at(-1).detail, "round 2, 1.46× so far");
  assert.equal(state.statusLine(), "Grading: timing against the baseline… (0 s)"); // no limit: just counts
  state.done({ status: "done", result: { status: "pass" } });
  assert.equal(state.ticking, false);
  assert.equal(state.statusLine(), "Passed");
});

test("a step cut short by the grading's budget keeps its clock and states the limit that now applies", () => {
  const clock = fakeClock();
  const state = new PanelState({ now: clock.now });
  state.progress({ stage: "step", n: 1, total: 8, limit_s: 120 });
  clock.advance(10000);
  state.progress({ stage: "step", n: 1, total: 8, limit_s: 22, budget: true });
  assert.equal(state.statusLine(), "Grading: step 1 of 8… (10 s of at most 32 s)");
});

test("the 'steps' stage does not restart the clock of the step that is running", () => {
  const clock = fakeClock();
  const state = new PanelState({ now: clock.now });
  state.progress({ stage: "starting", limit_s: 20 });
  clock.advance(3000);
  state.progress({ stage: "steps", total: 8 });
  assert.equal(state.steps.at(-1).detail, "8 steps");
  assert.match(state.statusLine(), /\(3 s of at most 20 s\)$/);
});

test("a retry and a second attempt say which attempt it is", () => {
  const state = new PanelState();
  state.progress({ stage: "retry", attempt: 2 });
  state.progress({ stage: "started", attempt: 2 });
  assert.deepEqual(state.steps.map((s) => s.detail), ["attempt 2", "attempt 2"]);
  state.progress({ stage: "mystery" }); // a stage this page does not know keeps its name
  assert.equal(state.steps.at(-1).label, "mystery");
});

test("an error marks the stage that was running as where it failed", () => {
  const state = new PanelState();
  state.progress({ stage: "started" });
  state.progress({ stage: "starting" });
  const error = { kind: "exception", message: "boom" };
  state.done({ status: "done", result: { status: "error", error, checks: [] } });
  assert.deepEqual(state.steps.map((s) => s.state), ["done", "bad"]);
  assert.equal(state.statusText, "Error: your code stopped before the end");
  assert.equal(state.state, "error");
});

test("a syntax error is worded as code that never ran, not as code that stopped part way", () => {
  const state = new PanelState();
  state.progress({ stage: "started" });
  const error = { kind: "syntax", message: "'(' was never closed", line: 1, column: 16 };
  state.done({ status: "done", result: { status: "error", error, checks: [] } });
  assert.equal(state.statusText, "Syntax error: your code did not run");
  assert.equal(state.state, "error");
});

test("a platform error without a result shows as not graded, with the server's message", () => {
  const state = new PanelState();
  state.done({ status: "error", result: null, error: "worker lost" });
  assert.equal(state.statusText, "The grader could not grade this submission.");
  assert.deepEqual(state.outcome, { result: null, platformError: "worker lost" });
});

test("a lesson's own check is named by the lesson; an unknown one by its id", () => {
  const state = new PanelState({ checkTitles: { loss_scale: "Loss scale is dynamic" } });
  state.check({ check: "loss_scale", status: "not_applicable" });
  state.check({ check: "mystery", status: "fail" });
  assert.deepEqual(state.steps.map((s) => [s.label, s.detail, s.state]),
    [["Loss scale is dynamic", "Not applicable", "done"], ["mystery", "Failed", "bad"]]);
});

test("reset starts a new list of steps and hides the last result and refusal", () => {
  const state = new PanelState();
  state.progress({ stage: "started" });
  state.done({ status: "done", result: { status: "pass" } });
  state.refuse("slow down");
  const generation = state.generation;
  state.reset();
  assert.equal(state.generation, generation + 1);
  assert.deepEqual(state.steps, []);
  assert.equal(state.outcome, null);
  assert.equal(state.refusal, null);
  assert.equal(state.statusText, "Submitting…");
  assert.equal(state.state, "submitting");
});

test("the words come from the page's catalog, placeholders filled in", () => {
  setCatalog({ "Queued: {n} ahead of you": "In coda: {n} prima di te", "Waiting in the queue": "In attesa" });
  const state = new PanelState();
  state.queued(4);
  assert.equal(state.statusText, "In coda: 3 prima di te");
  assert.equal(state.steps[0].label, "In attesa");
  assert.equal(state.steps[0].detail, "position 4"); // not in this catalog: English
});

test("cancel: the button is disabled and the status says so at once; the done event then says cancelled", async () => {
  const server = fakeServer();
  const state = new PanelState({ api: server.api });
  state.watch({ urls: server.urls });
  state.progress({ stage: "step", n: 1, total: 8, limit_s: 60 });
  assert.deepEqual([state.cancelVisible, state.cancelDisabled], [true, false]);
  const sent = state.cancel();
  assert.deepEqual([state.cancelVisible, state.cancelDisabled], [true, true]);
  assert.equal(state.statusText, "Cancelling…");
  assert.deepEqual(server.calls, [{ method: "POST", url: server.urls.cancel, body: {} }]);
  assert.equal((await sent).ok, true);
  assert.equal(state.cancelDisabled, true); // stays disabled until the stream says it is over
  state.done({ status: "error", cancelled: true, result: null });
  assert.equal(state.statusText, "Cancelled: this submission was stopped before it had a verdict.");
  assert.equal(state.state, "cancelled");
  assert.equal(state.outcome, null); // no result body for a cancelled run
  assert.deepEqual([state.cancelVisible, state.cancelDisabled], [false, false]);
  assert.equal(state.current, null);
});

test("a cancel the server refuses gives the button back and says why", async () => {
  const server = fakeServer();
  server.cancelReply = { ok: false, status: 403, data: { error: "you may read this grading, not stop it" } };
  const state = new PanelState({ api: server.api });
  state.watch({ urls: server.urls });
  await state.cancel();
  assert.equal(state.cancelDisabled, false);
  assert.equal(state.statusText, "you may read this grading, not stop it");
  assert.equal(state.state, "running");
  server.down = true;
  await state.cancel();
  await settle();
  assert.equal(state.statusText, "Could not reach the server.");
  assert.equal(state.cancelDisabled, false);
});

test("cancel with nothing followed sends nothing; a submission without a cancel URL has no button", async () => {
  const server = fakeServer();
  const state = new PanelState({ api: server.api });
  assert.equal(await state.cancel(), null);
  assert.equal(server.calls.length, 0);
  state.watch({ urls: { self: "/x" } });
  assert.equal(state.cancelVisible, false);
});
