/* What the results panel shows, without the DOM: the status line (with its running clock), the progress steps,
   the Cancel button's state, a refusal, and the result to show. The stream's events come in through handle()
   (or queued/progress/check/done); every change is announced to the subscribers, and results.js draws it.
   `api` is the page's JSON API (api.js) for Cancel; `now` gives milliseconds, for the clock. */

import { tr } from "./i18n.js";
import { stageLabels, verdictLabels, checkName } from "./words.js";
import { formatNumber } from "./format.js";
import { sendCancel } from "./stream.js";

export class PanelState {
  constructor({ api = null, now = () => Date.now(), checkTitles = {} } = {}) {
    this.api = api;
    this.now = now;
    this.checkTitles = checkTitles;
    this.statusText = null; // null: nothing said yet, the template's idle text stays
    this.state = null; // the panel's data-state: queued, running, pass, fail, error, cancelled, …
    this.statusSerial = 0; // counts setStatus calls: each one is written out, even with the same words
    this.steps = []; // { key, label, detail, state }, in the order each first came
    this.generation = 0; // counts reset(): a new list of steps
    this.ticking = false;
    this.startedAt = 0;
    this.clockLimit = null;
    this.current = null; // the submission being followed
    this.cancelVisible = false;
    this.cancelDisabled = false;
    this.refusal = null;
    this.outcome = null; // null: no result shown; else { result, platformError }
    this.listeners = [];
  }

  subscribe(listener) {
    this.listeners.push(listener);
  }

  emit() {
    for (const listener of this.listeners) listener(this);
  }

  // ---- the status line and its clock

  setStatus(text, state) {
    this.say(text, state);
    this.emit();
  }

  say(text, state) {
    this.statusText = text;
    this.state = state || "";
    this.statusSerial += 1;
  }

  statusLine() {
    return (this.statusText === null ? "" : this.statusText) + this.clockText();
  }

  // While a grading runs, the status line counts the seconds of what is running now, and says how long the
  // grader lets it run: a long or stuck step is never silence. `limit` is in seconds (none: just count).
  startClock(limit) {
    this.startedAt = this.now();
    this.clockLimit = limit || null;
    this.ticking = true;
  }

  stopClock() {
    this.ticking = false;
  }

  clockText() {
    if (!this.ticking) return "";
    const seconds = Math.max(0, Math.round((this.now() - this.startedAt) / 1000));
    if (this.clockLimit) {
      return " (" + tr("{n} s of at most {limit} s", { n: seconds, limit: Math.round(this.clockLimit) }) + ")";
    }
    return " (" + tr("{n} s", { n: seconds }) + ")";
  }

  // ---- the submission being followed: while it waits or runs, it can be cancelled

  watch(submission) {
    this.follow(submission);
    this.emit();
  }

  follow(submission) {
    this.current = submission;
    this.cancelVisible = Boolean(submission && submission.urls && submission.urls.cancel);
    this.cancelDisabled = false;
  }

  cancel() {
    const submission = this.current;
    if (!submission) return Promise.resolve(null);
    this.cancelDisabled = true;
    this.say(tr("Cancelling…"), "running");
    this.emit();
    return sendCancel(this.api, submission).then((outcome) => {
      if (!outcome.ok) {
        this.cancelDisabled = false;
        this.say(outcome.message, "running");
        this.emit();
      }
      return outcome;
    });
  }

  // ---- a run the server refused (a rate limit, say): said above the last result, which stays

  refuse(text) {
    this.refusal = text;
    this.emit();
  }

  clearRefusal() {
    this.refusal = null;
    this.emit();
  }

  reset() {
    this.refusal = null;
    this.stopClock();
    this.steps = [];
    this.generation += 1;
    this.outcome = null;
    this.say(tr("Submitting…"), "submitting");
    this.emit();
  }

  // ---- the progress steps

  step(key, label, detail, state) {
    let item = this.steps.find((s) => s.key === key);
    if (!item) {
      for (const other of this.steps) if (other.state === "current") other.state = "done";
      item = { key };
      this.steps.push(item);
    }
    item.state = state || "current";
    item.label = label;
    item.detail = detail || "";
  }

  // `noGrader`: the server says no grading worker is alive (no_grader_running); the submission waits for one.
  queued(position, noGrader) {
    let text = position > 1 ? tr("Queued: {n} ahead of you", { n: position - 1 }) : tr("Queued: you are next");
    if (noGrader) {
      text += ". " + tr("No grader is running on this server right now: your submission waits, and it will be graded as soon as one starts.");
    }
    this.say(text, "queued");
    this.step("queued", stageLabels().queued, tr("position {n}", { n: position }));
    this.emit();
  }

  progress(data) {
    const stages = stageLabels();
    const stage = data.stage;
    let detail = "";
    if (stage === "queued") {
      this.step("queued", stages.queued, "");
    } else if (stage === "step") {
      // one training step of the learner's code, held to the per-step limit
      const of = tr("step {n} of {total}", { n: data.n, total: data.total });
      this.step("steps", stages.steps, of);
      // `budget`: the same step, now held to what is left of the grading's budget (known once the trusted runs
      // ended): its clock goes on and states that limit, not the step's own
      if (data.budget && this.ticking) this.clockLimit = (this.now() - this.startedAt) / 1000 + data.limit_s;
      else this.startClock(data.limit_s);
      this.say(tr("Grading: {stage}…", { stage: of }), "running");
    } else {
      if (stage === "steps" && data.total) detail = tr("{n} steps", { n: data.total });
      if ((stage === "timing" || stage === "timing_given") && data.rounds) {
        detail = tr("round {n}", { n: data.rounds });
        if (typeof data.speedup === "number") detail += ", " + tr("{x}× so far", { x: formatNumber(data.speedup, 2) });
      }
      if (stage === "retry") detail = tr("attempt {n}", { n: data.attempt });
      if (stage === "started" && data.attempt > 1) detail = tr("attempt {n}", { n: data.attempt });
      const label = stages[stage] || stage;
      this.step(stage, label, detail);
      if (stage !== "steps") this.startClock(data.limit_s);
      // lower-case only its first letter: "FP32" stays "FP32"
      this.say(tr("Grading: {stage}…", { stage: label.charAt(0).toLowerCase() + label.slice(1) }), "running");
    }
    this.emit();
  }

  check(data) {
    const verdicts = verdictLabels();
    const good = data.status === "pass" || data.status === "not_applicable";
    this.step("check:" + data.check, checkName(data.check, this.checkTitles), verdicts[data.status] || data.status,
      good ? "done" : "bad");
    this.emit();
  }

  done(data) {
    this.stopClock();
    this.follow(null);
    // The stage that was running when the code stopped is where it failed: mark it so, not as done.
    const stopped = data.status === "error" || Boolean(data.result && data.result.status === "error");
    for (const item of this.steps) if (item.state === "current") item.state = stopped ? "bad" : "done";
    if (data.cancelled) {
      this.say(tr("Cancelled: this submission was stopped before it had a verdict."), "cancelled");
      this.outcome = null;
    } else if (data.status === "error" && !data.result) {
      this.say(tr("The grader could not grade this submission."), "error");
      this.outcome = { result: null, platformError: data.error };
    } else {
      const result = data.result || {};
      const words = {
        pass: tr("Passed"),
        fail: tr("Failed: see the checks below"),
        error: tr("Error: your code stopped before the end"),
      };
      // Code that never compiled did not stop part way: it did not run at all.
      if (result.status === "error" && result.error && result.error.kind === "syntax") {
        words.error = tr("Syntax error: your code did not run");
      }
      const score = typeof result.score === "number" ? " · " + tr("score {n}%", { n: Math.round(result.score * 100) }) : "";
      this.say((words[result.status] || result.status) + score, result.status);
      this.outcome = { result, platformError: null };
    }
    this.emit();
  }

  handle(type, data) {
    if (type === "queued") this.queued(data.position, data.no_grader_running);
    else if (type === "progress") this.progress(data);
    else if (type === "check") this.check(data);
    else if (type === "done") this.done(data);
  }
}
