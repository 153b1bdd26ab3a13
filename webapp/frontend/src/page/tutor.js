/* "Ask about this result" (webapp/templates/lessons/lesson.html, served by webapp/tutor/routes.py): a short
   conversation about one graded submission, streamed as server-sent events over a fetch POST (EventSource cannot
   POST). `delta` adds text, `replace` takes the answer back for the leak guard's hint-level reply, `error` is a
   message in the page's language, `done` says how many questions are left. "line 7" in an answer (riga, baris)
   is a link that puts the editor's cursor on that line. Text goes in as text, never as HTML. */

import { tr } from "./i18n.js";
import { el, clear } from "./dom.js";

// Server-sent events out of what has arrived so far: { events: [{ event, data }], rest } (rest: a partial block).
export function parseEvents(buffer) {
  const blocks = buffer.split("\n\n");
  const rest = blocks.pop();
  const events = [];
  for (const block of blocks) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trim());
    }
    if (!data.length) continue;
    try {
      events.push({ event, data: JSON.parse(data.join("\n")) });
    } catch (err) {
      /* a broken block is skipped */
    }
  }
  return { events, rest };
}

const LINE_WORDS = /\b(line|lines|riga|righe|baris)\s+(\d{1,5})\b/gi;

// An answer's text as pieces: { text } and { text, line } for each "line N" it names.
export function lineRefs(text) {
  const pieces = [];
  let last = 0;
  for (const match of String(text).matchAll(LINE_WORDS)) {
    if (match.index > last) pieces.push({ text: text.slice(last, match.index) });
    pieces.push({ text: match[0], line: Number(match[2]) });
    last = match.index + match[0].length;
  }
  if (last < text.length) pieces.push({ text: text.slice(last) });
  return pieces;
}

export function initTutor(doc, env, editor) {
  const section = doc.getElementById("tutor");
  if (!section) return { attach() {}, hide() {} };
  const form = section.querySelector("form");
  const input = section.querySelector("textarea");
  const button = section.querySelector('[data-testid="tutor-ask"]');
  const list = section.querySelector(".tutor-conversation");
  const left = section.querySelector(".tutor-left");
  const csrf = (doc.querySelector('meta[name="csrf-token"]') || { getAttribute: () => "" }).getAttribute("content");
  let submission = null;
  let turns = [];
  let busy = false;

  function render(node, text) {
    clear(node);
    for (const piece of lineRefs(text)) {
      if (!piece.line) node.appendChild(doc.createTextNode(piece.text));
      else {
        const link = el("button", { type: "button", className: "link-button tutor-line", text: piece.text });
        link.addEventListener("click", () => editor.goToLine(piece.line));
        node.appendChild(link);
      }
    }
  }

  function setBusy(on) {
    busy = on;
    button.disabled = on;
    section.setAttribute("aria-busy", on ? "true" : "false");
  }

  async function ask(question) {
    const answer = el("p", { className: "tutor-answer", "data-testid": "tutor-answer", text: tr("The tutor is writing…") });
    list.appendChild(el("li", { className: "tutor-turn" }, el("p", { className: "tutor-question", text: question }), answer));
    const opened = doc.querySelectorAll(".hint:not([hidden])").length;
    let text = "";
    let failed = false;
    setBusy(true);
    try {
      const res = await env.win.fetch(`/api/submissions/${submission}/tutor`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRF-Token": csrf },
        body: JSON.stringify({ question, hints_opened: opened, history: turns }),
      });
      if (!res.ok) {
        const data = await res.json().catch(() => ({}));
        answer.textContent = data.error || tr("The tutor could not answer ({status}).", { status: res.status });
        answer.classList.add("tutor-error");
        return;
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseEvents(buffer + decoder.decode(value, { stream: true }));
        buffer = parsed.rest;
        for (const { event, data } of parsed.events) {
          if (event === "delta") text += data.text;
          else if (event === "replace") text = data.text;
          else if (event === "error") { text = data.message; failed = true; }
          else if (event === "done" && data.left !== null && data.left !== undefined) {
            left.textContent = tr("Questions left about this result: {n}", { n: data.left });
            if (data.left <= 0) input.disabled = true;
          }
          render(answer, text);
        }
      }
      if (failed) answer.classList.add("tutor-error");
      else turns = turns.concat([{ question, answer: text }]).slice(-3);
    } catch (err) {
      answer.textContent = tr("Could not reach the server.");
      answer.classList.add("tutor-error");
    } finally {
      answer.dataset.state = "done";
      setBusy(false);
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || busy || !submission) return;
    input.value = "";
    ask(question);
  });

  return {
    // A new verdict: a new conversation about it.
    attach(sid) {
      submission = sid;
      turns = [];
      clear(list);
      left.textContent = "";
      input.disabled = false;
      section.hidden = false;
    },
    hide() {
      section.hidden = true;
      submission = null;
    },
  };
}
