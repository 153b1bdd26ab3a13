import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { follow, reattach, replay, sendCancel, POLL_MS, RETRY_MS } from "../src/page/stream.js";
import { PanelState } from "../src/page/panel-state.js";
import { FakeEventSource, fakeClock, fakeServer, settle } from "../testing/fakes.js";

beforeEach(() => {
  FakeEventSource.instances = [];
});

const stepKeys = (state) => state.steps.map((s) => s.key);

const PASS = { status: "pass", score: 1, checks: [{ id: "parity", status: "pass", message: "ok" }] };

test("stream events drive the panel: queue, stages, checks, then the verdict", () => {
  const server = fakeServer();
  const state = new PanelState();
  const done = [];
  const handle = follow({ urls: server.urls }, state, { api: server.api, EventSource: FakeEventSource,
                                                         onDone: (d) => done.push(d) });
  assert.equal(FakeEventSource.instances.length, 1);
  const source = FakeEventSource.instances[0];
  assert.equal(source.url, server.urls.stream); // from the start: no last_event_id
  assert.equal(state.cancelVisible, true); // a followed submission can be cancelled

  source.send("queued", { position: 2 });
  assert.equal(state.statusText, "Queued: 1 ahead of you");
  assert.equal(state.state, "queued");
  source.send("progress", { stage: "started", attempt: 1 }, 1);
  source.send("progress", { stage: "baseline", limit_s: 30 }, 2);
  assert.equal(state.statusText, "Grading: running the FP32 baseline…");
  assert.equal(state.state, "running");
  assert.deepEqual(state.steps.map((s) => [s.key, s.state]),
    [["queued", "done"], ["started", "done"], ["baseline", "current"]]);
  source.send("check", { check: "parity", status: "pass" }, 3);
  source.send("check", { check: "coverage", status: "fail" }, 4);
  assert.deepEqual(state.steps.slice(-2).map((s) => [s.key, s.label, s.detail, s.state]),
    [["check:parity", "Parity with FP32", "Passed", "done"], ["check:coverage", "16-bit coverage", "Failed", "bad"]]);
  assert.equal(handle.lastId, 4);
  assert.equal(done.length, 0);
  assert.equal(handle.finished, false);

  source.send("done", { status: "done", result: PASS }, 5);
  assert.equal(handle.finished, true);
  assert.equal(source.closed, true);
  assert.equal(done.length, 1);
  assert.equal(state.statusText, "Passed · score 100%");
  assert.equal(state.state, "pass");
  assert.deepEqual(state.outcome.result, PASS);
  assert.equal(state.cancelVisible, false);
  assert.equal(server.calls.length, 0); // nothing polled while the stream worked
});

test("an event that carries no id of its own (queued) does not move the resume point back or forward", () => {
  const server = fakeServer();
  const state = new PanelState();
  const handle = follow({ urls: server.urls }, state, { api: server.api, EventSource: FakeEventSource });
  const source = FakeEventSource.instances[0];
  source.send("progress", { stage: "started" }, 3);
  source.send("queued", { position: 1 }); // lastEventId stays "3"
  assert.equal(handle.lastId, 3);
  assert.deepEqual(stepKeys(state), ["started", "queued"]);
});

test("a dropped stream is closed and polling resumes after the last event seen, without repeating any", async () => {
  const server = fakeServer();
  const clock = fakeClock();
  const state = new PanelState({ now: clock.now });
  const done = [];
  const handle = follow({ urls: server.urls }, state, { api: server.api, EventSource: FakeEventSource,
                                                         setTimeout: clock.setTimeout, onDone: (d) => done.push(d) });
  const source = FakeEventSource.instances[0];
  for (const [type, data] of [["progress", { stage: "started" }], ["progress", { stage: "static" }]]) {
    source.send(type, data, server.add(type, data));
  }
  server.add("progress", { stage: "baseline" }); // stored while the connection was down
  source.fail();
  assert.equal(source.closed, true);
  assert.deepEqual(server.calls.map((c) => c.url), [server.urls.self + "?after=2"]);
  await settle();
  assert.deepEqual(stepKeys(state), ["started", "static", "baseline"]);
  assert.equal(handle.lastId, 3);
  assert.deepEqual(clock.pending(), [POLL_MS]); // still running: polls again in a second

  server.add("check", { check: "parity", status: "pass" });
  clock.advance(POLL_MS);
  assert.equal(server.calls.at(-1).url, server.urls.self + "?after=3");
  await settle();
  assert.deepEqual(stepKeys(state), ["started", "static", "baseline", "check:parity"]);

  server.add("done", {});
  server.status = "done";
  server.result = PASS;
  clock.advance(POLL_MS);
  await settle();
  assert.equal(done.length, 1);
  assert.equal(done[0].result, PASS);
  assert.equal(state.statusText, "Passed · score 100%");
  assert.equal(handle.finished, true);
  assert.deepEqual(clock.pending(), []); // the final result ends the polling
  const polls = server.calls.length;
  clock.advance(10 * POLL_MS);
  await settle();
  assert.equal(server.calls.length, polls);
  assert.equal(FakeEventSource.instances.length, 1); // and no new stream was opened
  assert.equal(new Set(stepKeys(state)).size, state.steps.length);
});

test("an event the server sends again while polling is shown once", async () => {
  const server = fakeServer();
  const clock = fakeClock();
  const state = new PanelState();
  server.add("progress", { stage: "started" });
  server.add("progress", { stage: "static" });
  server.add("progress", { stage: "baseline" });
  // a server that ignores ?after= and sends everything
  server.detail = ((detail) => () => detail(0))(server.detail);
  const handle = follow({ urls: server.urls }, state, { api: server.api, setTimeout: clock.setTimeout, after: 2 });
  await settle();
  assert.deepEqual(stepKeys(state), ["baseline"]);
  assert.equal(handle.lastId, 3);
  clock.advance(POLL_MS);
  await settle();
  assert.deepEqual(stepKeys(state), ["baseline"]);
});

test("without EventSource it polls from the start, and stops on the final result", async () => {
  const server = fakeServer();
  const clock = fakeClock();
  const state = new PanelState();
  server.status = "queued";
  server.position = 3;
  const handle = follow({ urls: server.urls }, state, { api: server.api, setTimeout: clock.setTimeout });
  assert.equal(FakeEventSource.instances.length, 0);
  assert.equal(server.calls[0].url, server.urls.self + "?after=0");
  await settle();
  assert.equal(state.statusText, "Queued: 2 ahead of you"); // the position comes with each poll

  server.status = "running";
  server.position = null;
  server.add("progress", { stage: "started" });
  clock.advance(POLL_MS);
  await settle();
  assert.equal(state.statusText, "Grading: a grading worker picked it up…");

  server.status = "error";
  server.cancelled = true;
  clock.advance(POLL_MS);
  await settle();
  assert.equal(state.state, "cancelled");
  assert.equal(handle.finished, true);
  assert.deepEqual(clock.pending(), []);
  assert.equal(handle.polls, 3);
});

test("a failed poll says contact was lost and retries later, from the same place", async () => {
  const server = fakeServer();
  const clock = fakeClock();
  const state = new PanelState();
  server.down = true;
  follow({ urls: server.urls }, state, { api: server.api, setTimeout: clock.setTimeout, after: 7 });
  await settle();
  assert.equal(state.statusText, "Lost contact with the server; retrying…");
  assert.deepEqual(clock.pending(), [RETRY_MS]);
  server.down = false;
  clock.advance(RETRY_MS);
  assert.equal(server.calls.at(-1).url, server.urls.self + "?after=7");
});

test("a reload reattaches: stored events are replayed, then it follows live from the last one", () => {
  const server = fakeServer();
  const state = new PanelState();
  server.add("progress", { stage: "started" });
  server.add("progress", { stage: "steps", total: 4 });
  server.add("progress", { stage: "step", n: 2, total: 4, limit_s: 60 });
  const handle = reattach(server.detail(0), state, { api: server.api, EventSource: FakeEventSource });
  assert.deepEqual(stepKeys(state), ["started", "steps"]);
  assert.equal(state.steps[1].detail, "step 2 of 4");
  assert.equal(FakeEventSource.instances.length, 1);
  assert.equal(FakeEventSource.instances[0].url, server.urls.stream + "?last_event_id=3");
  assert.equal(handle.lastId, 3);
  assert.equal(state.cancelVisible, true);
});

test("a reattached submission that is still queued shows its place in the line", () => {
  const server = fakeServer();
  server.status = "queued";
  server.position = 1;
  const state = new PanelState();
  reattach(server.detail(0), state, { api: server.api, EventSource: FakeEventSource });
  assert.equal(state.statusText, "Queued: you are next");
  assert.equal(FakeEventSource.instances[0].url, server.urls.stream); // no events yet: from the start
});

const NO_GRADER = "No grader is running on this server right now: your submission waits, and it will be graded as soon as one starts.";

test("a queued submission says when no grader is running, and stops saying it once one runs", async () => {
  const server = fakeServer();
  server.status = "queued";
  server.position = 1;
  server.noGrader = true;
  const state = new PanelState();
  const clock = fakeClock();
  reattach(server.detail(0), state, { api: server.api, EventSource: FakeEventSource });
  assert.equal(state.statusText, "Queued: you are next. " + NO_GRADER);
  const source = FakeEventSource.instances[0];
  source.send("queued", { position: 1, no_grader_running: false }); // a worker started
  assert.equal(state.statusText, "Queued: you are next");
  source.send("queued", { position: 2, no_grader_running: true });
  assert.equal(state.statusText, "Queued: 1 ahead of you. " + NO_GRADER);
  // polling (no EventSource) reads it from the submission's document
  const polled = new PanelState();
  follow({ urls: server.urls }, polled, { api: server.api, setTimeout: clock.setTimeout });
  await settle();
  assert.equal(polled.statusText, "Queued: you are next. " + NO_GRADER);
});

test("a submission that is over when found again shows its verdict and follows nothing", () => {
  const server = fakeServer();
  server.add("progress", { stage: "started" });
  server.add("done", {});
  server.status = "done";
  server.result = { status: "fail", score: 0.5, checks: [] };
  const state = new PanelState();
  assert.equal(reattach(server.detail(0), state, { api: server.api, EventSource: FakeEventSource }), null);
  assert.equal(FakeEventSource.instances.length, 0);
  assert.equal(server.calls.length, 0);
  assert.equal(state.statusText, "Failed: see the checks below · score 50%");
  assert.deepEqual(state.steps.map((s) => s.state), ["done"]);
  assert.equal(state.cancelVisible, false);
});

test("replay leaves the done event to the caller and returns the last id", () => {
  const calls = [];
  const last = replay({ handle: (type) => calls.push(type) },
    { events: [{ id: 4, type: "progress", data: {} }, { id: 9, type: "done", data: {} }] });
  assert.equal(last, 9);
  assert.deepEqual(calls, ["progress"]);
});

test("cancel sends an empty POST to the submission's cancel URL; a 409 (already over) is no failure", async () => {
  const server = fakeServer();
  assert.deepEqual(await sendCancel(server.api, { urls: server.urls }), { ok: true, status: 200, message: null });
  assert.deepEqual(server.calls, [{ method: "POST", url: server.urls.cancel, body: {} }]);
  server.cancelReply = { ok: false, status: 409, data: { error: "this submission has already finished" } };
  assert.equal((await sendCancel(server.api, { urls: server.urls })).ok, true);
  server.cancelReply = { ok: false, status: 403, data: { error: "not yours" } };
  assert.deepEqual(await sendCancel(server.api, { urls: server.urls }), { ok: false, status: 403, message: "not yours" });
  server.cancelReply = { ok: false, status: 502, data: {} };
  assert.equal((await sendCancel(server.api, { urls: server.urls })).message, "Could not cancel (502)");
  server.down = true;
  assert.deepEqual(await sendCancel(server.api, { urls: server.urls }),
    { ok: false, status: null, message: "Could not reach the server." });
});
