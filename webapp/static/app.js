/* AMP Dojo page script: editor, drafts, hints, quiz, and the live results panel.
 *
 * Everything that came from a learner's code or from the grader's diagnostics is
 * inserted with textContent, never as HTML. Page data comes from
 * <script type="application/json" id="page-data"> (the CSP forbids inline scripts).
 * The editor and charts come from window.AmpDojo (static/vendor/amp-dojo.js); without
 * it the page falls back to a textarea and plain tables. */
(function () {
  "use strict";

  // The interface's words in the page's language: webapp/translations/<lang>.json, embedded by base.html.
  var CATALOG = (function () {
    var node = document.getElementById("ui-catalog");
    try { return node ? JSON.parse(node.textContent) : {}; } catch (e) { return {}; }
  })();
  function tr(text, values) {
    var out = CATALOG[text] || text;
    Object.keys(values || {}).forEach(function (k) { out = out.split("{" + k + "}").join(String(values[k])); });
    return out;
  }

  var STAGES = {
    queued: tr("Waiting in the queue"),
    started: tr("A grading worker picked it up"),
    static: tr("Reading your code"),
    baseline: tr("Running the FP32 baseline"),
    starting: tr("Starting your code"),
    steps: tr("Training and comparing with FP32"),
    trusted: tr("Finishing the FP32 baseline and the reference run"),
    timing: tr("Timing against the baseline"),
    timing_given: tr("Timing against the given step"),
    retry: tr("The grading worker stopped; grading again"),
    check: tr("Checks"),
  };
  var CHECK_NAMES = {
    call_order: tr("Call order"),
    parity: tr("Parity with FP32"),
    coverage: tr("16-bit coverage"),
    overflow: tr("Overflow handling"),
    speedup: tr("Speedup"),
    memory: tr("Peak memory"),
    ranks: tr("Ranks agree"),
    bottleneck: tr("What your profile found"),
    host_syncs: tr("Host syncs"),
    matmul_dtypes: tr("Matmul dtypes"),
    transfers: tr("Host-device copies"),
    step_time: tr("Faster than the given step"),
  };
  // Human headings for the error kinds of docs/results.md (the kind itself stays in the JSON for tools).
  var ERROR_KINDS = {
    syntax: tr("Your code has a syntax error"), import: tr("Your code failed while it was being imported"),
    entrypoint: tr("The function to grade is missing"), signature: tr("The function has the wrong parameters"),
    exception: tr("Your code raised an exception"), "return": tr("The function did not return the loss"),
    nonfinite: tr("The loss became NaN or infinite"), oom: tr("Your code used more memory than allowed"),
    exit: tr("Your code ended the process"), timeout: tr("Your code ran for too long"), crash: tr("The process running your code crashed"),
    tampering: tr("Your code replaced the grader's instruments"), protocol: tr("Your code disturbed the grader's channel"),
    internal: tr("The grader could not prepare the run"), platform: tr("Grading problem"),
  };
  var VERDICTS = { pass: tr("Passed"), fail: tr("Failed"), error: tr("Error"), not_applicable: tr("Not applicable") };
  var COLORS = { submission: "#4f46e5", baseline: "#94a3b8", scale: "#0d9488" };

  // ---------- small helpers ----------

  function el(tag, props) {
    var node = document.createElement(tag);
    var children = Array.prototype.slice.call(arguments, 2);
    Object.keys(props || {}).forEach(function (key) {
      var value = props[key];
      if (value === undefined || value === null) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else if (key === "dataset") Object.keys(value).forEach(function (k) { node.dataset[k] = value[k]; });
      else node.setAttribute(key, value);
    });
    children.forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  /* Text with `code` spans, as DOM nodes: never innerHTML. */
  function withCode(text) {
    var frag = document.createDocumentFragment();
    String(text || "").split("`").forEach(function (part, i) {
      frag.appendChild(i % 2 ? el("code", { text: part }) : document.createTextNode(part));
    });
    return frag;
  }

  function readPageData() {
    var node = document.getElementById("page-data");
    return node ? JSON.parse(node.textContent) : {};
  }
  var PAGE = readPageData();

  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var CSRF = csrfMeta ? csrfMeta.getAttribute("content") : "";

  function api(method, url, body) {
    var options = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = CSRF;
      options.body = JSON.stringify(body);
    }
    return fetch(url, options).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return {
          ok: response.ok, status: response.status, data: data,
          retryAfter: Number(response.headers.get("Retry-After")) || null,
        };
      });
    });
  }

  function formatNumber(value, digits) {
    if (typeof value !== "number" || !isFinite(value)) return String(value);
    if (Math.abs(value) >= 1e6) return value.toExponential(2);
    return Number(value.toFixed(digits === undefined ? 4 : digits)).toString();
  }

  function median(values) {
    var sorted = values.slice().sort(function (a, b) { return a - b; });
    var mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  function timeAgo(seconds) {
    var date = new Date(seconds * 1000);
    return date.toLocaleString();
  }

  // ---------- measured values, in words ----------

  // Worded by the grader (grader/wording.py) in the page's language: the same rows as the terminal report.
  function measuredRows(check) {
    return check.measured_words || [];
  }

  // A lesson's own checks are titled by the lesson (page data); the built-in ones by the interface's catalog.
  function checkName(id) {
    return CHECK_NAMES[id] || (PAGE.check_titles || {})[id] || id;
  }

  // ---------- the results panel ----------

  function ResultsPanel(root) {
    this.root = root;
    this.status = root.querySelector('[data-testid="status"]');
    this.steps = root.querySelector('[data-testid="progress"]');
    this.body = root.querySelector(".result-body");
    this.cancelButton = root.querySelector('[data-testid="cancel-button"]');
    this.refusal = root.querySelector('[data-testid="refusal"]');
    this.stepItems = {};
    this.current = null;
    var panel = this;
    if (this.cancelButton) this.cancelButton.addEventListener("click", function () { panel.cancel(); });
  }

  // The submission being followed: while it waits or runs, it can be cancelled.
  ResultsPanel.prototype.watch = function (submission) {
    this.current = submission;
    if (this.cancelButton) {
      this.cancelButton.hidden = !(submission && submission.urls && submission.urls.cancel);
      this.cancelButton.disabled = false;
    }
  };

  ResultsPanel.prototype.cancel = function () {
    var panel = this, submission = this.current;
    if (!submission) return;
    this.cancelButton.disabled = true;
    this.setStatus(tr("Cancelling…"), "running");
    // The stream (or the polling) then brings the `done` event that says it was cancelled.
    api("POST", submission.urls.cancel, {}).then(function (res) {
      if (!res.ok && res.status !== 409) {
        panel.cancelButton.disabled = false;
        panel.setStatus(res.data.error || tr("Could not cancel ({status})", { status: res.status }), "running");
      }
    }).catch(function () {
      panel.cancelButton.disabled = false;
      panel.setStatus(tr("Could not reach the server."), "running");
    });
  };

  ResultsPanel.prototype.setStatus = function (text, state) {
    this.statusText = text;
    this.status.textContent = text + this.clockText();
    this.root.dataset.state = state || "";
  };

  // While a grading runs, the status line counts the seconds of what is running now, and says how long the
  // grader lets it run: a long or stuck step is never silence. `limit` is in seconds (none: just count).
  ResultsPanel.prototype.startClock = function (limit) {
    var panel = this;
    this.startedAt = Date.now();
    this.clockLimit = limit || null;
    if (!this.clock) {
      this.clock = setInterval(function () { panel.status.textContent = panel.statusText + panel.clockText(); }, 1000);
    }
  };

  ResultsPanel.prototype.stopClock = function () {
    if (this.clock) clearInterval(this.clock);
    this.clock = null;
  };

  ResultsPanel.prototype.clockText = function () {
    if (!this.clock) return "";
    var seconds = Math.max(0, Math.round((Date.now() - this.startedAt) / 1000));
    if (this.clockLimit) return " (" + tr("{n} s of at most {limit} s", { n: seconds, limit: Math.round(this.clockLimit) }) + ")";
    return " (" + tr("{n} s", { n: seconds }) + ")";
  };

  // A run the server refused (a rate limit, say): said above the last result, which stays on screen.
  ResultsPanel.prototype.refuse = function (text) {
    if (!this.refusal) { this.setStatus(text, "refused"); return; }
    this.refusal.textContent = text;
    this.refusal.hidden = false;
  };

  ResultsPanel.prototype.reset = function () {
    if (this.refusal) this.refusal.hidden = true;
    this.stopClock();
    clear(this.steps);
    this.stepItems = {};
    this.steps.hidden = true;
    this.body.hidden = true;
    this.setStatus(tr("Submitting…"), "submitting");
  };

  ResultsPanel.prototype.step = function (key, label, detail, state) {
    this.steps.hidden = false;
    var item = this.stepItems[key];
    if (!item) {
      Object.keys(this.stepItems).forEach(function (k) {
        var other = this.stepItems[k];
        if (other.dataset.state === "current") other.dataset.state = "done";
      }, this);
      item = el("li", { dataset: { step: key } }, el("span", { className: "step-label" }), el("span", { className: "step-detail" }));
      this.steps.appendChild(item);
      this.stepItems[key] = item;
    }
    item.dataset.state = state || "current";
    item.querySelector(".step-label").textContent = label;
    item.querySelector(".step-detail").textContent = detail || "";
  };

  ResultsPanel.prototype.queued = function (position) {
    var text = position > 1 ? tr("Queued: {n} ahead of you", { n: position - 1 }) : tr("Queued: you are next");
    this.setStatus(text, "queued");
    this.step("queued", STAGES.queued, tr("position {n}", { n: position }));
  };

  ResultsPanel.prototype.progress = function (data) {
    var stage = data.stage;
    var detail = "";
    if (stage === "queued") return this.step("queued", STAGES.queued, "");
    if (stage === "step") {  // one training step of the learner's code, held to the per-step limit
      var of = tr("step {n} of {total}", { n: data.n, total: data.total });
      this.step("steps", STAGES.steps, of);
      this.startClock(data.limit_s);
      this.setStatus(tr("Grading: {stage}…", { stage: of }), "running");
      return;
    }
    if (stage === "steps" && data.total) detail = tr("{n} steps", { n: data.total });
    if ((stage === "timing" || stage === "timing_given") && data.rounds) {
      detail = tr("round {n}", { n: data.rounds }) + (typeof data.speedup === "number" ? ", " + tr("{x}× so far", { x: formatNumber(data.speedup, 2) }) : "");
    }
    if (stage === "retry") detail = tr("attempt {n}", { n: data.attempt });
    if (stage === "started" && data.attempt > 1) detail = tr("attempt {n}", { n: data.attempt });
    this.step(stage, STAGES[stage] || stage, detail);
    if (stage !== "steps") this.startClock(data.limit_s);
    var label = STAGES[stage] || stage;  // lower-case only its first letter: "FP32" stays "FP32"
    this.setStatus(tr("Grading: {stage}…", { stage: label.charAt(0).toLowerCase() + label.slice(1) }), "running");
  };

  ResultsPanel.prototype.check = function (data) {
    var label = checkName(data.check);
    this.step("check:" + data.check, label, VERDICTS[data.status] || data.status, data.status === "pass" || data.status === "not_applicable" ? "done" : "bad");
  };

  ResultsPanel.prototype.done = function (data) {
    this.stopClock();
    this.watch(null);
    // The stage that was running when the code stopped is where it failed: mark it so, not as done.
    var stopped = data.status === "error" || (data.result && data.result.status === "error");
    Object.keys(this.stepItems).forEach(function (k) {
      var item = this.stepItems[k];
      if (item.dataset.state === "current") item.dataset.state = stopped ? "bad" : "done";
    }, this);
    if (data.cancelled) {
      this.setStatus(tr("Cancelled: this submission was stopped before it had a verdict."), "cancelled");
      this.body.hidden = true;
      return;
    }
    if (data.status === "error" && !data.result) {
      this.setStatus(tr("The grader could not grade this submission."), "error");
      this.showResult(null, data.error);
      return;
    }
    var result = data.result || {};
    var words = { pass: tr("Passed"), fail: tr("Failed: see the checks below"), error: tr("Error: your code stopped before the end") };
    var score = typeof result.score === "number" ? " · " + tr("score {n}%", { n: Math.round(result.score * 100) }) : "";
    this.setStatus((words[result.status] || result.status) + score, result.status);
    this.showResult(result, null);
  };

  ResultsPanel.prototype.showResult = function (result, platformError) {
    var body = this.body;
    body.hidden = false;
    var badge = body.querySelector('[data-testid="result-status"]');
    var status = result ? result.status : "error";
    badge.dataset.status = status;
    badge.textContent = result ? (VERDICTS[status] || status) : tr("Not graded");
    this.renderError(result ? result.error : { kind: "platform", message: platformError });
    this.renderChecks(result ? result.checks || [] : []);
    // The clearest diagnosis first: a named mistake with its line and fix explains a raw exception better
    // than the exception does (unscale_ twice, then PyTorch's own assertion).
    var named = (result && result.checks || []).some(function (c) {
      return (c.findings || []).some(function (f) { return f.severity !== "info"; });
    });
    var errorBox = body.querySelector(".result-error"), table = body.querySelector(".checks");
    if (named) table.parentNode.insertBefore(errorBox, table.nextSibling);
    else table.parentNode.insertBefore(errorBox, table);
    this.renderNotes(result ? result.notes || [] : []);
    this.renderCharts(result ? result.plots || {} : {});
    this.renderOutput(result ? result.output || "" : "");
  };

  ResultsPanel.prototype.renderError = function (error) {
    var box = this.body.querySelector(".result-error");
    clear(box);
    box.hidden = !error;
    if (!error) return;
    box.appendChild(el("p", { className: "error-kind", dataset: { kind: error.kind }, text: ERROR_KINDS[error.kind] || tr("Your code stopped with an error") }));
    box.appendChild(el("p", { className: "error-message", text: error.message || "" }));
    if (error.source_line) {
      box.appendChild(el("pre", { className: "error-line", text: (error.line ? error.line + " | " : "") + error.source_line }));
    }
  };

  ResultsPanel.prototype.renderChecks = function (checks) {
    var tbody = this.body.querySelector(".checks tbody");
    clear(tbody);
    this.body.querySelector(".checks").hidden = !checks.length;
    checks.forEach(function (check) {
      var verdict = el("td", { className: "check-verdict" },
        el("span", { className: "badge badge-" + check.status, text: VERDICTS[check.status] || check.status }),
        // A message that only repeats the first finding is left out: the finding below says it, with line and fix.
        (check.findings || []).some(function (f) { return f.message === check.message; }) ? null
          : el("p", { className: "check-message", text: check.message }));
      var findings = (check.findings || []).map(function (f) {
        return el("li", { className: "finding finding-" + f.severity, dataset: { findingId: f.id } },
          f.line ? el("span", { className: "finding-line", text: tr("line {n}", { n: f.line }) }) : null,
          el("span", { className: "finding-message" }, withCode(f.message)),
          f.fix ? el("span", { className: "finding-fix" }, el("strong", { text: tr("Fix:") + " " }), withCode(f.fix)) : null);
      });
      if (findings.length) verdict.appendChild(el.apply(null, ["ul", { className: "findings" }].concat(findings)));
      var measured = el("td", { className: "check-measured" });
      measuredRows(check).forEach(function (row) {
        measured.appendChild(el("div", { className: "measure" },
          el("span", { className: "measure-name", text: row[0] }),
          el("span", { className: "measure-value", text: row[1] }),
          row[2] ? el("span", { className: "measure-threshold", text: row[2] }) : null));
      });
      tbody.appendChild(el("tr", { className: "check-row", dataset: { testid: "check-row", checkId: check.id, status: check.status } },
        el("th", { scope: "row", text: checkName(check.id) }), verdict, measured));
    });
  };

  ResultsPanel.prototype.renderNotes = function (notes) {
    var list = this.body.querySelector(".notes");
    clear(list);
    list.hidden = !notes.length;
    notes.forEach(function (f) {
      list.appendChild(el("li", {}, f.line ? tr("line {n}", { n: f.line }) + ": " : "", withCode(f.message),
        f.fix ? " — " : "", f.fix ? withCode(f.fix) : ""));
    });
  };

  ResultsPanel.prototype.renderCharts = function (plots) {
    var box = this.body.querySelector(".charts");
    clear(box);
    var charts = [];
    if (plots.loss) {
      charts.push(["line", { title: tr("Loss: your code vs the FP32 baseline"), xLabel: tr("step"), yLabel: tr("loss"),
        // the baseline first, so the learner's line is drawn on top (they coincide when parity holds)
        series: [{ name: tr("FP32 baseline"), values: plots.loss.baseline, color: COLORS.baseline },
                 { name: tr("your code"), values: plots.loss.submission, color: COLORS.submission }] }]);
    }
    var base = plots.loss && plots.loss.baseline, mine = plots.loss && plots.loss.submission;
    if (base && mine && base.length === mine.length && base.length) {
      // The two loss lines coincide when parity holds: their difference, as its own series, shows how close.
      charts.push(["line", { title: tr("Difference to the FP32 loss (%)"), xLabel: tr("step"), yLabel: tr("% of FP32 loss"),
        series: [{ name: tr("your loss minus FP32 loss"), color: COLORS.submission,
                   values: mine.map(function (v, i) {
                     // no loss at a step (the overflowed one, where a loss term is inf): a gap, not -100%
                     if (v === null || base[i] === null) return null;
                     return base[i] ? 100 * (v - base[i]) / Math.abs(base[i]) : 0; }) }] }]);
    }
    if (plots.scale && plots.scale.length) charts.push(["line", scaleChart(plots.scale, plots.scale_overflow)]);
    if (plots.timing && plots.timing.baseline_s && plots.timing.baseline_s.length) {
      charts.push(["bar", { title: tr("Time per {n} steps (median)", { n: plots.timing.steps_per_block }), unit: "s",
        bars: [{ label: tr("FP32 baseline"), value: median(plots.timing.baseline_s), color: COLORS.baseline },
               { label: tr("your code"), value: median(plots.timing.submission_s), color: COLORS.submission }] }]);
    }
    if (plots.memory) {
      charts.push(["bar", { title: tr("Peak memory"), unit: "MiB",
        bars: [{ label: tr("FP32 baseline"), value: plots.memory.baseline_bytes / 1048576, color: COLORS.baseline },
               { label: tr("your code"), value: plots.memory.submission_bytes / 1048576, color: COLORS.submission }] }]);
    }
    if (plots.profile && plots.profile.given) charts.push(["bar", profileChart(plots.profile)]);
    charts.forEach(function (chart) {
      var figure = el("figure", { className: "chart-card" });
      box.appendChild(figure);
      drawChart(figure, chart[0], chart[1]);
    });
    if (plots.profile && plots.profile.given && (plots.profile.given.top_ops || []).length) {
      box.appendChild(topOpsTable(plots.profile));
    }
  };

  /* A profiling lesson: what the grader counted per step in the given step (its own run) and in yours. */
  var PROFILE_CATEGORIES = [["host_sync", tr("host syncs")], ["float32_matmul", tr("float32 matmuls")],
                            ["host_device_copy", tr("host-device copies")]];

  function profileChart(profile) {
    var bars = [];
    PROFILE_CATEGORIES.forEach(function (c) {
      var given = profile.given.per_step[c[0]], mine = (profile.submission.per_step || {})[c[0]];
      if (given === null || given === undefined) return;  // this device cannot show it (no GPU)
      bars.push({ label: tr("{what}: given step", { what: c[1] }), value: given, color: COLORS.baseline });
      bars.push({ label: tr("{what}: your step", { what: c[1] }), value: mine, color: COLORS.submission });
    });
    var title = tr("Per step, the given step (the grader's profile) and yours");
    if (profile.given.per_step.host_device_copy === null) title += " (" + tr("copies are counted on a GPU only") + ")";
    return { title: title, unit: "", bars: bars };
  }

  function topOpsTable(profile) {
    var cuda = profile.device === "cuda";
    var figure = el("figure", { className: "chart-card profile-ops", dataset: { testid: "profile-ops" } });
    figure.appendChild(el("figcaption", { text: tr("The grader's torch.profiler table of one given step, busiest first") }));
    var head = el("tr", {}, el("th", { scope: "col", text: tr("op") }), el("th", { scope: "col", text: tr("calls") }),
      el("th", { scope: "col", text: tr("self CPU (ms)") }),
      cuda ? el("th", { scope: "col", text: tr("self CUDA (ms)") }) : null,
      el("th", { scope: "col", text: tr("input dtypes") }));
    var table = el("table", { className: "profile-table" }, el("thead", {}, head));
    var body = el("tbody");
    profile.given.top_ops.forEach(function (row) {
      body.appendChild(el("tr", {}, el("td", {}, el("code", { text: row.op })), el("td", { text: String(row.calls) }),
        el("td", { text: formatNumber(row.self_cpu_us / 1000, 3) }),
        cuda ? el("td", { text: formatNumber((row.self_device_us || 0) / 1000, 3) }) : null,
        el("td", { text: (row.dtypes || []).join(", ") })));
    });
    table.appendChild(body);
    figure.appendChild(table);
    return figure;
  }

  /* The loss scale per step, with each change marked: a back-off (an overflow: the step was skipped) or a
     growth; the step the grader made overflow on purpose is marked as such. */
  function scaleChart(scales, forced) {
    var points = scales.map(function (v, i) { return [i, v]; });
    // The grader forces the overflow on a step inside the window (older results: on the step after it).
    if (forced && forced.step >= points.length) points.push([forced.step, forced.scale]);
    var markers = [], backoffs = 0, growths = 0;
    points.forEach(function (p, i) {
      if (i === 0 || p[1] === points[i - 1][1]) return;
      var down = p[1] < points[i - 1][1];
      if (down) backoffs++; else growths++;
      var isForced = forced && p[0] === forced.step;
      var label = isForced ? tr("overflow forced by the grader") : down ? tr("backed off") : tr("grew");
      markers.push({ x: p[0], color: down ? "#b91c1c" : COLORS.scale, label: label,
                     title: label + ": " + tr("step {n}: scale {a} → {b}", { n: p[0], a: formatNumber(points[i - 1][1], 0), b: formatNumber(p[1], 0) }) });
    });
    var changes = " (" + (backoffs || growths ? tr("backed off {b}×, grew {g}×", { b: backoffs, g: growths }) : tr("unchanged: no overflow in these steps")) + ")";
    return { title: tr("GradScaler scale") + changes, xLabel: tr("step"), yLabel: tr("scale"), logY: true, markers: markers,
             series: [{ name: tr("scale"), values: points, color: COLORS.scale }] };
  }

  function drawChart(parent, kind, spec) {
    var lib = window.AmpDojo;
    try {
      if (lib && kind === "line" && lib.lineChart) return lib.lineChart(parent, spec);
      if (lib && kind === "bar" && lib.barChart) return lib.barChart(parent, spec);
    } catch (err) {
      console.error("chart failed", err);
    }
    return chartTable(parent, kind, spec);
  }

  /* Without the bundle: the same numbers as a small table. */
  function chartTable(parent, kind, spec) {
    parent.appendChild(el("figcaption", { text: spec.title }));
    var table = el("table", { className: "chart-fallback", dataset: { testid: "chart", chartTitle: spec.title } });
    if (kind === "bar") {
      spec.bars.forEach(function (bar) {
        table.appendChild(el("tr", {}, el("th", { text: bar.label }), el("td", { text: formatNumber(bar.value, 3) + " " + spec.unit })));
      });
    } else {
      table.appendChild(el.apply(null, ["tr", {}, el("th", { text: spec.xLabel })].concat(spec.series.map(function (s) { return el("th", { text: s.name }); }))));
      spec.series[0].values.forEach(function (_, i) {
        table.appendChild(el.apply(null, ["tr", {}, el("td", { text: String(i) })].concat(spec.series.map(function (s) {
          return el("td", { text: formatNumber(s.values[i]) });
        }))));
      });
    }
    parent.appendChild(table);
  }

  ResultsPanel.prototype.renderOutput = function (output) {
    var details = this.body.querySelector(".output");
    details.hidden = !output;
    details.querySelector(".output-text").textContent = output;  // learner output: text only
  };

  ResultsPanel.prototype.handle = function (type, data) {
    if (type === "queued") this.queued(data.position);
    else if (type === "progress") this.progress(data);
    else if (type === "check") this.check(data);
    else if (type === "done") this.done(data);
  };

  // ---------- following a submission: SSE, or polling when SSE fails ----------

  function follow(submission, panel, onDone, after) {
    var lastId = after || 0;
    var finished = false;
    var source = null;
    panel.watch(submission);

    function handle(type, data, id) {
      if (finished) return;
      if (id) lastId = Math.max(lastId, id);
      panel.handle(type, data);
      if (type === "done") {
        finished = true;
        if (source) source.close();
        if (onDone) onDone(data);
      }
    }

    function poll() {
      if (finished) return;
      api("GET", submission.urls.self + "?after=" + lastId).then(function (res) {
        if (!res.ok) throw new Error("status " + res.status);
        var d = res.data;
        d.events.forEach(function (ev) { if (ev.type !== "done") handle(ev.type, ev.data, ev.id); });
        if (d.status === "queued" && d.position) panel.queued(d.position);
        if (d.status === "done" || d.status === "error") {
          handle("done", { status: d.status, result: d.result, error: d.error, score: d.score,
                           result_status: d.result_status, cancelled: d.cancelled });
        } else {
          setTimeout(poll, 1000);
        }
      }).catch(function () {
        panel.setStatus(tr("Lost contact with the server; retrying…"), "running");
        setTimeout(poll, 2000);
      });
    }

    if (!window.EventSource) return poll();
    source = new EventSource(submission.urls.stream + (lastId ? "?last_event_id=" + lastId : ""));
    ["queued", "progress", "check", "done"].forEach(function (type) {
      source.addEventListener(type, function (event) {
        handle(type, JSON.parse(event.data), Number(event.lastEventId) || 0);
      });
    });
    source.onerror = function () {
      if (finished) return;
      source.close();
      poll();
    };
  }

  // ---------- the editor ----------

  function makeEditor(host, doc, onRun, onChange) {
    var fallback = host.querySelector("textarea");
    if (window.AmpDojo && window.AmpDojo.createEditor) {
      try {
        fallback.remove();
        var editor = window.AmpDojo.createEditor(host, { doc: doc, onRun: onRun, onChange: onChange });
        if (editor.view && editor.view.contentDOM) editor.view.contentDOM.setAttribute("aria-label", tr("Your solution"));
        if (editor.view && editor.view.contentDOM) editor.view.contentDOM.setAttribute("aria-describedby", "editor-hint");
        // contenteditable is focusable, but say so with tabindex, so tools (and axe) see the scroll region's content is
        if (editor.view && editor.view.contentDOM) editor.view.contentDOM.setAttribute("tabindex", "0");
        return editor;
      } catch (err) {
        console.error("editor failed; using a plain text area", err);
        host.appendChild(fallback);
      }
    }
    fallback.value = doc;
    fallback.dataset.testid = "editor";
    fallback.addEventListener("input", function () { onChange(fallback.value); });
    fallback.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") { event.preventDefault(); onRun(); }
      if (event.key === "Tab" && !event.shiftKey) {
        event.preventDefault();
        var start = fallback.selectionStart;
        fallback.setRangeText("    ", start, fallback.selectionEnd, "end");
        onChange(fallback.value);
      }
    });
    return {
      getValue: function () { return fallback.value; },
      setValue: function (text) { fallback.value = text; },
      focus: function () { fallback.focus(); },
    };
  }

  function draftStore(lessonId) {
    var key = "amp-dojo:draft:" + lessonId;
    return {
      load: function () { try { return localStorage.getItem(key); } catch (e) { return null; } },
      save: function (text) { try { localStorage.setItem(key, text); } catch (e) { /* private mode */ } },
      clear: function () { try { localStorage.removeItem(key); } catch (e) { /* ignore */ } },
    };
  }

  // ---------- lesson page ----------

  function renderHistory(list, items, onLoad) {
    clear(list);
    if (!items.length) {
      list.appendChild(el("li", { className: "muted empty", text: tr("None yet.") }));
      return;
    }
    items.forEach(function (s) {
      var state = s.cancelled ? "cancelled" : s.status === "done" ? s.result_status : s.status;
      var label = { pass: tr("Passed"), fail: tr("Failed"), error: tr("Error"), queued: tr("Queued"), running: tr("Running"),
                    cancelled: tr("Cancelled") }[state] || state;
      var score = s.status === "done" && typeof s.score === "number" ? Math.round(s.score * 100) + "%" : "";
      list.appendChild(el("li", { className: "history-item" },
        el("span", { className: "badge badge-" + state, text: label }),
        el("a", { href: s.urls.page, text: timeAgo(s.created_at) }),
        el("span", { className: "muted", text: score }),
        onLoad ? loadButton(s, onLoad) : null));
    });
  }

  function loadButton(submission, onLoad) {
    var button = el("button", { type: "button", className: "link-button", text: tr("Load into the editor"),
                                dataset: { testid: "load-submission" } });
    button.addEventListener("click", function () { onLoad(submission.urls.self); });
    return button;
  }

  function initHints() {
    var button = document.querySelector('[data-testid="hint-button"]');
    if (!button) return;
    var hints = Array.prototype.slice.call(document.querySelectorAll(".hint"));
    var shown = 0;
    button.addEventListener("click", function () {
      var hint = shown < hints.length ? hints[shown++] : null;
      if (hint) hint.hidden = false;
      button.textContent = shown < hints.length ? tr("Show another hint ({shown} of {total})", { shown: shown, total: hints.length }) : tr("All hints shown");
      button.disabled = shown >= hints.length;
      if (button.disabled && hint) {  // a disabled button loses focus: give it to the hint just shown
        hint.tabIndex = -1;
        hint.focus();
      }
    });
  }

  function initQuiz(urls) {
    document.querySelectorAll(".quiz-choice").forEach(function (button) {
      button.addEventListener("click", function () {
        var fieldset = button.closest(".quiz-question");
        var feedback = fieldset.querySelector(".quiz-feedback");
        var url = urls.quiz + button.dataset.question;
        var attempt = Number(fieldset.dataset.attempts || 0) + 1;
        fieldset.dataset.attempts = String(attempt);
        api("POST", url, { choice: Number(button.dataset.choice), attempt: attempt }).then(function (res) {
          clear(feedback);
          if (!res.ok) { feedback.textContent = res.data.error || tr("Could not check the answer."); return; }
          fieldset.querySelectorAll(".quiz-choice").forEach(function (b) {
            b.setAttribute("aria-pressed", b === button ? "true" : "false");
            b.classList.remove("chosen-right", "chosen-wrong");
          });
          button.classList.add(res.data.correct ? "chosen-right" : "chosen-wrong");
          fieldset.dataset.answered = res.data.correct ? "right" : "wrong";
          feedback.className = "quiz-feedback " + (res.data.correct ? "right" : "wrong");
          feedback.appendChild(el("strong", { text: (res.data.correct ? tr("Right.") : tr("Not quite.")) + " " }));
          if (res.data.retry) {
            feedback.appendChild(document.createTextNode(tr("Think again and try another answer.")));
          } else {
            feedback.appendChild(withCode(res.data.explanation));
          }
        });
      });
    });
  }

  function initLesson(page) {
    var lesson = page.lesson;
    var drafts = draftStore(lesson.id);
    var draftState = document.querySelector(".draft-state");
    var runButton = document.getElementById("run-button");
    var panel = new ResultsPanel(document.getElementById("results"));
    var history = document.getElementById("history-list");
    var saveTimer = null;
    var running = false;

    function onChange(text) {
      clearTimeout(saveTimer);
      saveTimer = setTimeout(function () {
        drafts.save(text);
        draftState.textContent = tr("Draft saved");
      }, 400);
    }

    function refreshHistory() {
      api("GET", page.urls.history).then(function (res) { if (res.ok) renderHistory(history, res.data.submissions, load); });
    }

    // An earlier submission back in the editor (from the history, or ?load=<id> from a permalink).
    function load(url) {
      api("GET", url).then(function (res) {
        if (!res.ok || typeof res.data.code !== "string") { draftState.textContent = tr("Could not load that submission."); return; }
        editor.setValue(res.data.code);
        drafts.save(res.data.code);
        draftState.textContent = tr("Loaded the submission of {time}", { time: timeAgo(res.data.created_at) });
        editor.focus();
      });
    }

    function setRunning(on) {
      running = on;
      runButton.disabled = on;
      runButton.setAttribute("aria-busy", on ? "true" : "false");
    }

    function run() {
      if (running) return;
      setRunning(true);
      if (panel.refusal) panel.refusal.hidden = true;
      // The last result stays on screen until the server has accepted this run: a refusal must not hide it.
      api("POST", page.urls.submit, { code: editor.getValue() }).then(function (res) {
        if (!res.ok) {
          // The server words a refusal in the page's language, with its reason and when to run again.
          panel.refuse(res.data.error || tr("The submission was refused ({status})", { status: res.status }));
          setRunning(false);
          return;
        }
        panel.reset();
        panel.queued(res.data.position || 1);
        refreshHistory();
        follow(res.data, panel, function () { setRunning(false); refreshHistory(); });
      }).catch(function () {
        panel.refuse(tr("Could not reach the server."));
        setRunning(false);
      });
    }

    // A reload (or a lost connection) must not lose a grading: show the learner's last submission of this
    // lesson, and follow it live if it is still queued or running.
    function resume(latest) {
      if (!latest) return;
      api("GET", latest.urls.self + "?after=0").then(function (res) {
        if (!res.ok || running) return;
        var s = res.data;
        var last = 0;
        panel.reset();
        (s.events || []).forEach(function (ev) {
          last = Math.max(last, ev.id);
          if (ev.type !== "done") panel.handle(ev.type, ev.data);
        });
        if (s.status === "done" || s.status === "error") {
          panel.done({ status: s.status, result: s.result, error: s.error, cancelled: s.cancelled });
          return;
        }
        setRunning(true);
        if (s.status === "queued" && s.position) panel.queued(s.position);
        follow(s, panel, function () { setRunning(false); refreshHistory(); }, last);
      });
    }

    var saved = drafts.load();
    var editor = makeEditor(document.getElementById("editor-host"), saved !== null ? saved : lesson.starter, run, onChange);
    if (saved !== null && saved !== lesson.starter) draftState.textContent = tr("Draft restored");
    runButton.addEventListener("click", run);
    document.getElementById("reset-button").addEventListener("click", function () {
      if (!window.confirm(tr("Replace your code with the starter code? Your draft will be lost."))) return;
      editor.setValue(lesson.starter);
      drafts.clear();
      draftState.textContent = tr("Reset to the starter");
      editor.focus();
    });
    renderHistory(history, page.history || [], load);
    resume((page.history || [])[0]);
    var wanted = new URLSearchParams(window.location.search).get("load");
    if (wanted && /^[0-9a-f]+$/.test(wanted)) load("/api/submissions/" + wanted);
    initHints();
    initQuiz(page.urls);
  }

  // ---------- submission permalink ----------

  function initSubmission(page) {
    var s = page.submission;
    var panel = new ResultsPanel(document.getElementById("results"));
    var last = 0;
    s.events.forEach(function (ev) {
      last = ev.id;
      if (ev.type !== "done") panel.handle(ev.type, ev.data);
    });
    if (s.status === "done" || s.status === "error") {
      panel.done({ status: s.status, result: s.result, error: s.error, cancelled: s.cancelled });
      return;
    }
    if (s.position) panel.queued(s.position);
    follow(s, panel, null, last);
  }

  // Code blocks and tables of the lesson text scroll sideways on a narrow screen: let the keyboard reach them.
  function focusableScrollers() {
    document.querySelectorAll(".prose pre, .prose table, .code-card pre").forEach(function (node) {
      if (!node.hasAttribute("tabindex")) node.setAttribute("tabindex", "0");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    focusableScrollers();
    var kind = document.body.dataset.page;
    if (kind === "lesson") initLesson(PAGE);
    else if (kind === "submission") initSubmission(PAGE);
  });
})();
