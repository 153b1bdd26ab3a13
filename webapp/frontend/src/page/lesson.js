/* The lesson page (webapp/templates/lessons/lesson.html): the editor with its draft, Run, the live results
   panel, the learner's earlier submissions (found again and followed after a reload), hints and the quiz.
   `env` holds the browser's parts (see main.js). */

import { tr } from "./i18n.js";
import { timeAgo } from "./format.js";
import { PanelState } from "./panel-state.js";
import { ResultsPanel } from "./results.js";
import { follow, reattach, isFinished } from "./stream.js";
import { DraftSaver, draftStore, initialDoc, saveOnLeave, browserStorage } from "./drafts.js";
import { renderHistory } from "./history.js";
import { bindHints } from "./hints.js";
import { Quiz, bindQuiz } from "./quiz.js";
import { makeEditor } from "./editor-host.js";
import { resultMarks } from "./marks.js";
import { initTutor } from "./tutor.js";

export function initLesson(page, env) {
  const { api, win, doc } = env;
  const lesson = page.lesson;
  const draftState = doc.querySelector(".draft-state");
  const runButton = doc.getElementById("run-button");
  const state = new PanelState({ api, checkTitles: page.check_titles });
  const panel = new ResultsPanel(doc.getElementById("results"), state, win);
  const history = doc.getElementById("history-list");
  const following = { api, EventSource: env.EventSource, setTimeout: env.setTimeout };
  const host = doc.getElementById("editor-host");
  const drafts = new DraftSaver(draftStore(browserStorage(win), lesson.id, host.dataset.draftOwner || ""), {
    setTimeout: env.setTimeout,
    clearTimeout: env.clearTimeout,
    onSaved: () => { draftState.textContent = tr("Draft saved"); },
  });
  let running = false;
  let editor = null;
  let tutor = null;

  // The tutor (where the server has one) talks about a graded submission only, and about the latest one.
  function offerTutor(sid) {
    if (state.outcome && state.outcome.result) tutor.attach(sid);
  }

  function refreshHistory() {
    api("GET", page.urls.history).then((res) => {
      if (res.ok) renderHistory(history, res.data.submissions, load);
    });
  }

  // An earlier submission back in the editor (from the history, or ?load=<id> from a permalink).
  function load(url) {
    api("GET", url).then((res) => {
      if (!res.ok || typeof res.data.code !== "string") {
        draftState.textContent = tr("Could not load that submission.");
        return;
      }
      editor.setValue(res.data.code);
      drafts.saveNow(res.data.code);
      draftState.textContent = tr("Loaded the submission of {time}", { time: timeAgo(res.data.created_at) });
      editor.focus();
    });
  }

  function setRunning(on) {
    running = on;
    runButton.disabled = on;
    runButton.setAttribute("aria-busy", on ? "true" : "false");
  }

  function finished() {
    setRunning(false);
    refreshHistory();
  }

  // The verdict's findings go where the learner types, but only onto the code they were found in: if the editor
  // no longer holds what was graded (typed on while it ran, or another submission loaded) they would name
  // the wrong lines, and the results panel alone says them.
  function markGraded(code) {
    const result = state.outcome && state.outcome.result;
    if (result && editor.getValue() === code) editor.markLines(resultMarks(result, page.check_titles));
  }

  function run() {
    if (running) return;
    setRunning(true);
    state.clearRefusal();
    // The last result stays on screen until the server has accepted this run: a refusal must not hide it.
    const code = editor.getValue();
    editor.markLines([]);
    tutor.hide();
    api("POST", page.urls.submit, { code })
      .then((res) => {
        if (!res.ok) {
          // The server words a refusal in the page's language, with its reason and when to run again.
          panel.refuse(res.data.error || tr("The submission was refused ({status})", { status: res.status }));
          setRunning(false);
          return;
        }
        state.reset();
        state.queued(res.data.position || 1, res.data.no_grader_running);
        refreshHistory();
        follow(res.data, state, {
          ...following,
          onDone: () => {
            finished();
            markGraded(code);
            panel.revealVerdict();
            offerTutor(res.data.id);
          },
        });
      })
      .catch(() => {
        panel.refuse(tr("Could not reach the server."));
        setRunning(false);
      });
  }

  // A reload (or a lost connection) must not lose a grading: show the learner's last submission of this
  // lesson, and follow it live if it is still queued or running.
  function resume(latest) {
    if (!latest) return;
    api("GET", latest.urls.self + "?after=0").then((res) => {
      if (!res.ok || running) return;
      state.reset();
      if (!isFinished(res.data.status)) setRunning(true);
      reattach(res.data, state, {
        ...following,
        onDone: () => {
          finished();
          if (typeof res.data.code === "string") markGraded(res.data.code);
          offerTutor(res.data.id);
        },
      });
    });
  }

  const start = initialDoc(drafts.store.load(), lesson.starter);
  editor = makeEditor(host, start.doc, run, (text) => drafts.changed(text));
  tutor = initTutor(doc, env, editor);
  if (start.restored) {
    const at = drafts.store.savedAt();
    draftState.textContent = at ? tr("Draft restored: saved {time}", { time: timeAgo(at) }) : tr("Draft restored");
  }
  saveOnLeave(drafts, win, doc);
  runButton.addEventListener("click", run);
  doc.getElementById("reset-button").addEventListener("click", () => {
    if (!win.confirm(tr("Replace your code with the starter code? Your draft will be lost."))) return;
    editor.setValue(lesson.starter);
    drafts.clear();
    draftState.textContent = tr("Reset to the starter");
    editor.focus();
  });
  renderHistory(history, page.history || [], load);
  resume((page.history || [])[0]);
  const wanted = new URLSearchParams(win.location.search).get("load");
  if (wanted && /^[0-9a-f]+$/.test(wanted)) load("/api/submissions/" + wanted);
  bindHints(doc);
  bindQuiz(doc, new Quiz(api, page.urls.quiz));
}
