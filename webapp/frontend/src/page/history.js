// The learner's previous submissions of a lesson, newest first, each with its verdict and a button that
// loads its code into the editor.

import { tr } from "./i18n.js";
import { clear, el } from "./dom.js";
import { formatPercent, timeAgo } from "./format.js";

// A submission summary's badge: { state, label, score } (score "" until it has one).
export function historyEntry(s) {
  const state = s.cancelled ? "cancelled" : s.status === "done" ? s.result_status : s.status;
  const labels = { pass: tr("Passed"), fail: tr("Failed"), error: tr("Error"), queued: tr("Queued"),
                   running: tr("Running"), cancelled: tr("Cancelled") };
  const score = s.status === "done" && typeof s.score === "number" ? formatPercent(s.score) : "";
  return { state, label: labels[state] || state, score };
}

export function renderHistory(list, items, onLoad) {
  clear(list);
  if (!items.length) {
    list.appendChild(el("li", { className: "muted empty", text: tr("None yet.") }));
    return;
  }
  for (const s of items) {
    const entry = historyEntry(s);
    list.appendChild(el("li", { className: "history-item" },
      el("span", { className: "badge badge-" + entry.state, text: entry.label }),
      el("a", { href: s.urls.page, text: timeAgo(s.created_at) }),
      el("span", { className: "muted", text: entry.score }),
      onLoad ? loadButton(s, onLoad) : null));
  }
}

function loadButton(submission, onLoad) {
  const button = el("button", { type: "button", className: "link-button", text: tr("Load into the editor"),
                                dataset: { testid: "load-submission" } });
  button.addEventListener("click", () => onLoad(submission.urls.self));
  return button;
}
