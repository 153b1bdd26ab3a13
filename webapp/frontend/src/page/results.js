/* The results panel in the page (webapp/templates/lessons/_results.html): draws a PanelState (panel-state.js)
   each time it changes, and a result's checks, error, notes, charts and output. Everything that came from a
   learner's code or from the grader is inserted as text (textContent), never as HTML. */

import { lineChart, barChart } from "../charts.js";
import { el, clear, withCode } from "./dom.js";
import { tr } from "./i18n.js";
import { checkName, errorKindLabels, verdictLabels } from "./words.js";
import { errorLineText, formatNumber } from "./format.js";
import { resultCharts } from "./plots.js";

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

export class ResultsPanel {
  constructor(root, state, timers = window) {
    this.root = root;
    this.state = state;
    this.timers = timers;
    this.status = root.querySelector('[data-testid="status"]');
    this.stepsBox = root.querySelector('[data-testid="progress"]');
    this.steps = this.stepsBox.querySelector("ol") || this.stepsBox;
    this.body = root.querySelector(".result-body");
    this.cancelButton = root.querySelector('[data-testid="cancel-button"]');
    this.refusal = root.querySelector('[data-testid="refusal"]');
    this.stepItems = {};
    this.drawn = { statusSerial: state.statusSerial, generation: state.generation, refusal: null, outcome: null };
    this.clock = null;
    if (this.cancelButton) this.cancelButton.addEventListener("click", () => state.cancel());
    state.subscribe(() => this.draw());
  }

  // A refusal goes above the last result; without a place for it, it takes the status line.
  refuse(text) {
    if (this.refusal) this.state.refuse(text);
    else this.state.setStatus(text, "refused");
  }

  draw() {
    const state = this.state;
    const drawn = this.drawn;
    if (state.statusSerial !== drawn.statusSerial) {
      drawn.statusSerial = state.statusSerial;
      this.status.textContent = state.statusLine();
      this.root.dataset.state = state.state;
    }
    if (state.ticking && !this.clock) {
      this.clock = this.timers.setInterval(() => { this.status.textContent = state.statusLine(); }, 1000);
    } else if (!state.ticking && this.clock) {
      this.timers.clearInterval(this.clock);
      this.clock = null;
    }
    this.drawSteps();
    if (this.cancelButton) {
      this.cancelButton.hidden = !state.cancelVisible;
      this.cancelButton.disabled = state.cancelDisabled;
    }
    if (this.refusal && state.refusal !== drawn.refusal) {
      drawn.refusal = state.refusal;
      if (state.refusal !== null) this.refusal.textContent = state.refusal;
      this.refusal.hidden = state.refusal === null;
    }
    if (state.outcome !== drawn.outcome) {
      drawn.outcome = state.outcome;
      if (state.outcome) this.showResult(state.outcome.result, state.outcome.platformError);
      if (state.outcome && "open" in this.stepsBox) this.stepsBox.open = false;
      else this.body.hidden = true;
    }
  }

  drawSteps() {
    const state = this.state;
    if (state.generation !== this.drawn.generation) {
      this.drawn.generation = state.generation;
      clear(this.steps);
      this.stepItems = {};
      if ("open" in this.stepsBox) this.stepsBox.open = true; // a new grading: its steps are news again
    }
    for (const step of state.steps) {
      let item = this.stepItems[step.key];
      if (!item) {
        item = el("li", { dataset: { step: step.key } }, el("span", { className: "step-label" }),
          el("span", { className: "step-detail" }));
        this.steps.appendChild(item);
        this.stepItems[step.key] = item;
      }
      if (item.dataset.state !== step.state) item.dataset.state = step.state;
      setText(item.querySelector(".step-label"), step.label);
      setText(item.querySelector(".step-detail"), step.detail);
    }
    this.stepsBox.hidden = state.steps.length === 0;
    const count = this.stepsBox.querySelector(".progress-count");
    if (count) setText(count, state.steps.length ? "(" + state.steps.length + ")" : "");
  }

  // After a run's verdict: what explains it comes into view and takes the focus, so neither the eye nor a screen
  // reader has to look for the mistake: a check that names a mistake, else whichever comes first of a failed
  // check and the error (a timeout's "ran too long ... line 11"), never the checks the error left unrun.
  revealVerdict() {
    if (this.body.hidden) return;
    const named = [...this.body.querySelectorAll(".check-row")]
      .find((row) => row.querySelector(".finding-error") && row.dataset.status !== "pass");
    const target = named
      || this.body.querySelector('.check-row[data-status="fail"], .result-error:not([hidden])')
      || this.body.querySelector('.check-row[data-status="error"]')
      || this.body.querySelector('[data-testid="result-status"]');
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    // A sticky header (its height varies: the nav wraps on narrow screens) must not cover what is brought up.
    const view = this.root.ownerDocument.defaultView;
    const header = this.root.ownerDocument.querySelector(".site-header");
    const sticky = header && view && ["sticky", "fixed"].includes(view.getComputedStyle(header).position);
    target.style.scrollMarginTop = sticky ? Math.ceil(header.getBoundingClientRect().height) + 8 + "px" : "";
    const still = this.timers.matchMedia && this.timers.matchMedia("(prefers-reduced-motion: reduce)").matches;
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
  }

  showResult(result, platformError) {
    const body = this.body;
    body.hidden = false;
    const badge = body.querySelector('[data-testid="result-status"]');
    const status = result ? result.status : "error";
    badge.dataset.status = status;
    badge.textContent = result ? verdictLabels()[status] || status : tr("Not graded");
    this.renderError(result ? result.error : { kind: "platform", message: platformError });
    const checks = result ? result.checks || [] : [];
    this.renderChecks(checks);
    // The clearest diagnosis first: a named mistake with its line and fix explains a raw exception better
    // than the exception does (unscale_ twice, then PyTorch's own assertion).
    const named = checks.some((c) => (c.findings || []).some((f) => f.severity !== "info"));
    const errorBox = body.querySelector(".result-error");
    const table = body.querySelector(".checks");
    table.parentNode.insertBefore(errorBox, named ? table.nextSibling : table);
    const caret = errorBox.querySelector(".error-caret"); // after the move: moving a box resets its scrolling
    if (caret) showCaret(caret.parentNode);
    // A check's advice is shown in its row: the notes say the rest (as the terminal's report does).
    const inRows = new Set(checks.flatMap((c) => (c.findings || []).map(findingKey)));
    this.renderNotes((result ? result.notes || [] : []).filter((f) => !inRows.has(findingKey(f))));
    this.renderCharts(result ? result.plots || {} : {});
    this.renderOutput(result ? result.output || "" : "");
  }

  renderError(error) {
    const box = this.body.querySelector(".result-error");
    clear(box);
    box.hidden = !error;
    if (!error) return;
    box.appendChild(el("p", { className: "error-kind", dataset: { kind: error.kind },
      text: errorKindLabels()[error.kind] || tr("Your code stopped with an error") }));
    box.appendChild(el("p", { className: "error-message", text: error.message || "" }));
    if (error.source_line) {
      const [line, caret] = errorLineText(error).split("\n");
      // The line's number stays at the box's left edge when a long line is scrolled to its caret (app.css).
      const number = error.line ? error.line + " | " : "";
      const pre = el("pre", { className: "error-line" },
        number ? el("span", { className: "error-lineno", text: number }) : null, line.slice(number.length));
      if (caret) pre.append("\n", el("span", { className: "error-caret", text: caret }));
      box.appendChild(pre);
    }
  }

  renderChecks(checks) {
    const tbody = this.body.querySelector(".checks tbody");
    const verdicts = verdictLabels();
    const titles = this.state.checkTitles;
    clear(tbody);
    this.body.querySelector(".checks").hidden = !checks.length;
    for (const check of checks) {
      const verdict = el("td", { className: "check-verdict" },
        el("span", { className: "badge badge-" + check.status, text: verdicts[check.status] || check.status }),
        // A message that only repeats the first finding is left out: the finding below says it, with line and fix.
        (check.findings || []).some((f) => f.message === check.message) ? null
          : el("p", { className: "check-message", text: check.message }));
      const findings = (check.findings || []).map((f) =>
        el("li", { className: "finding finding-" + f.severity, dataset: { findingId: f.id } },
          f.line ? el("span", { className: "finding-line", text: tr("line {n}", { n: f.line }) }) : null,
          el("span", { className: "finding-message" }, withCode(f.message)),
          f.fix ? el("span", { className: "finding-fix" }, el("strong", { text: tr("Fix:") + " " }), withCode(f.fix)) : null));
      if (findings.length) verdict.appendChild(el("ul", { className: "findings" }, ...findings));
      const measured = el("td", { className: "check-measured" });
      // Worded by the grader (grader/wording/phrases.py) in the page's language: the same rows as the terminal report.
      for (const row of check.measured_words || []) {
        measured.appendChild(el("div", { className: "measure" },
          el("span", { className: "measure-name", text: row[0] }),
          el("span", { className: "measure-value", text: row[1] }),
          row[2] ? el("span", { className: "measure-threshold", text: row[2] }) : null));
      }
      tbody.appendChild(el("tr", { className: "check-row", dataset: { testid: "check-row", checkId: check.id, status: check.status } },
        el("th", { scope: "row", text: checkName(check.id, titles) }), verdict, measured));
    }
  }

  renderNotes(notes) {
    const list = this.body.querySelector(".notes");
    clear(list);
    list.hidden = !notes.length;
    for (const f of notes) {
      list.appendChild(el("li", {}, f.line ? tr("line {n}", { n: f.line }) + ": " : "", withCode(f.message),
        f.fix ? " — " : "", f.fix ? withCode(f.fix) : ""));
    }
  }

  renderCharts(plots) {
    const box = this.body.querySelector(".charts");
    clear(box);
    for (const [kind, spec] of resultCharts(plots)) {
      const figure = el("figure", { className: "chart-card" });
      box.appendChild(figure);
      drawChart(figure, kind, spec);
    }
    if (plots.profile && plots.profile.given && (plots.profile.given.top_ops || []).length) {
      box.appendChild(topOpsTable(plots.profile));
    }
  }

  renderOutput(output) {
    const details = this.body.querySelector(".output");
    details.hidden = !output;
    details.querySelector(".output-text").textContent = output; // learner output: text only
  }
}

function findingKey(f) {
  return [f.id, f.line, f.message].join("\u0000");
}

// A long line scrolls sideways in its box (a phone shows about 40 columns): scroll it so the caret, which marks
// where Python stopped reading (often a missing ':' at the end), is on screen with a little of what precedes it.
function showCaret(pre) {
  const caret = pre.querySelector(".error-caret");
  const past = caret.getBoundingClientRect().right - pre.getBoundingClientRect().right;
  if (past > -16) pre.scrollLeft += past + 24;
}

function drawChart(parent, kind, spec) {
  try {
    if (kind === "line") return lineChart(parent, spec);
    if (kind === "bar") return barChart(parent, spec);
  } catch (err) {
    console.error("chart failed", err);
  }
  return chartTable(parent, kind, spec);
}

/* When a chart cannot be drawn: the same numbers as a small table. */
function chartTable(parent, kind, spec) {
  parent.appendChild(el("figcaption", { text: spec.title }));
  const table = el("table", { className: "chart-fallback", dataset: { testid: "chart", chartTitle: spec.title } });
  if (kind === "bar") {
    for (const bar of spec.bars) {
      table.appendChild(el("tr", {}, el("th", { text: bar.label }), el("td", { text: formatNumber(bar.value, 3) + " " + spec.unit })));
    }
  } else {
    table.appendChild(el("tr", {}, el("th", { text: spec.xLabel }), ...spec.series.map((s) => el("th", { text: s.name }))));
    spec.series[0].values.forEach((_, i) => {
      table.appendChild(el("tr", {}, el("td", { text: String(i) }),
        ...spec.series.map((s) => el("td", { text: formatNumber(s.values[i]) }))));
    });
  }
  parent.appendChild(table);
}

// Each row is headed by its op; each cell carries its column's name (data-label), which a phone shows before it
// when the rows are stacked into cards (app.css), as the course and dashboard tables are.
function topOpsTable(profile) {
  const cuda = profile.device === "cuda";
  const figure = el("figure", { className: "chart-card profile-ops", dataset: { testid: "profile-ops" } });
  figure.appendChild(el("figcaption", { text: tr("The grader's torch.profiler table of one given step, busiest first") }));
  const names = { calls: tr("calls"), cpu: tr("self CPU (ms)"), cuda: tr("self CUDA (ms)"), dtypes: tr("input dtypes") };
  const head = el("tr", {}, el("th", { scope: "col", text: tr("op") }), el("th", { scope: "col", text: names.calls }),
    el("th", { scope: "col", text: names.cpu }),
    cuda ? el("th", { scope: "col", text: names.cuda }) : null,
    el("th", { scope: "col", text: names.dtypes }));
  const table = el("table", { className: "profile-table" }, el("thead", {}, head));
  const body = el("tbody");
  for (const row of profile.given.top_ops) {
    body.appendChild(el("tr", {}, el("th", { scope: "row" }, el("code", { text: row.op })),
      el("td", { className: "num", text: String(row.calls), dataset: { label: names.calls } }),
      el("td", { className: "num", text: formatNumber(row.self_cpu_us / 1000, 3), dataset: { label: names.cpu } }),
      cuda ? el("td", { className: "num", text: formatNumber((row.self_device_us || 0) / 1000, 3),
        dataset: { label: names.cuda } }) : null,
      el("td", { text: (row.dtypes || []).join(", ") || "–", dataset: { label: names.dtypes } })));
  }
  table.appendChild(body);
  figure.appendChild(table);
  return figure;
}
