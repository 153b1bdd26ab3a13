// Following a submission while it is graded: its server-sent event stream, or polling GET <self>?after=<id>
// when there is no EventSource or the stream drops; and cancelling it. No DOM here: `panel` is a PanelState
// (panel-state.js) or anything with its methods (watch, handle, queued, done, setStatus), and the browser's
// parts (api, EventSource, setTimeout) come in as options, so node's test runner can drive it.

import { tr } from "./i18n.js";

export const STREAM_EVENTS = ["queued", "progress", "check", "done"];
export const POLL_MS = 1000;
export const RETRY_MS = 2000;

export function isFinished(status) {
  return status === "done" || status === "error";
}

// The `done` event's data, from a submission's stored detail (GET /api/submissions/<id>).
export function doneOf(detail) {
  return {
    status: detail.status,
    result: detail.result,
    error: detail.error,
    score: detail.score,
    result_status: detail.result_status,
    cancelled: detail.cancelled,
  };
}

// Shows a submission's stored events (all but `done`, which the caller decides on); returns the last event id.
export function replay(panel, detail) {
  let last = 0;
  for (const ev of detail.events || []) {
    last = Math.max(last, ev.id);
    if (ev.type !== "done") panel.handle(ev.type, ev.data);
  }
  return last;
}

/* Follows a submission live from event `after` (0: from the start). Each event reaches the panel once and in
   order; the `done` event ends it: the stream is closed, no more polling, onDone(data) is called once.
   A stream that errors (the connection dropped, the server ended it, too many streams open) is closed and
   polling takes over from the last event seen, every POLL_MS; a failed poll says so and retries after
   RETRY_MS. Returns a handle that says where it is (for the tests; the page does not need it). */
export function follow(submission, panel, options = {}) {
  const api = options.api;
  const EventSourceClass = options.EventSource || null;
  const later = options.setTimeout || ((fn, ms) => setTimeout(fn, ms));
  const onDone = options.onDone || null;
  let lastId = options.after || 0;
  let finished = false;
  let source = null;
  let polls = 0;
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
    polls += 1;
    api("GET", submission.urls.self + "?after=" + lastId)
      .then((res) => {
        if (!res.ok) throw new Error("status " + res.status);
        const d = res.data;
        for (const ev of d.events || []) {
          // the server sends only events after `after`; one it sent again would not be shown twice
          if (ev.type !== "done" && !(ev.id <= lastId)) handle(ev.type, ev.data, ev.id);
        }
        if (d.status === "queued" && d.position) panel.queued(d.position, d.no_grader_running);
        if (isFinished(d.status)) handle("done", doneOf(d));
        else later(poll, POLL_MS);
      })
      .catch(() => {
        if (finished) return;
        panel.setStatus(tr("Lost contact with the server; retrying…"), "running");
        later(poll, RETRY_MS);
      });
  }

  const handleOut = {
    get lastId() { return lastId; },
    get finished() { return finished; },
    get polls() { return polls; },
    get source() { return source; },
  };

  if (!EventSourceClass) {
    poll();
    return handleOut;
  }
  source = new EventSourceClass(submission.urls.stream + (lastId ? "?last_event_id=" + lastId : ""));
  for (const type of STREAM_EVENTS) {
    source.addEventListener(type, (event) => handle(type, JSON.parse(event.data), Number(event.lastEventId) || 0));
  }
  source.onerror = () => {
    if (finished) return;
    source.close();
    poll();
  };
  return handleOut;
}

/* A submission found again (a reload of the lesson, its permalink): its stored events, then its verdict if it
   has one, or else it is followed live from its last stored event. Returns follow()'s handle, or null when the
   submission was over. */
export function reattach(detail, panel, options = {}) {
  const last = replay(panel, detail);
  if (isFinished(detail.status)) {
    panel.done(doneOf(detail));
    return null;
  }
  if (detail.status === "queued" && detail.position) panel.queued(detail.position, detail.no_grader_running);
  return follow(detail, panel, { ...options, after: last });
}

/* Asks the server to stop a queued or running grading: POST <cancel> with {}. The stream (or the polling)
   then brings the `done` event that says it was cancelled. A 409 means it had finished already: nothing to
   undo either. Resolves to { ok, status, message } where message says why it failed. */
export function sendCancel(api, submission) {
  return api("POST", submission.urls.cancel, {}).then(
    (res) => {
      if (res.ok || res.status === 409) return { ok: true, status: res.status, message: null };
      const message = (res.data && res.data.error) || tr("Could not cancel ({status})", { status: res.status });
      return { ok: false, status: res.status, message };
    },
    () => ({ ok: false, status: null, message: tr("Could not reach the server.") }),
  );
}
