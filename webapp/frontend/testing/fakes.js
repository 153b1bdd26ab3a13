// Stand-ins for the browser parts that src/page/ takes as parameters: timers, EventSource, the JSON API and
// localStorage. Outside test/, so that `node --test test/` does not take it for a test file.

// Timers on a clock that only moves when the test says so.
export function fakeClock() {
  let now = 0;
  let nextId = 1;
  const timers = new Map(); // id -> { at, fn }
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: now + (ms || 0), fn });
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    pending: () => [...timers.values()].map((t) => t.at - now).sort((a, b) => a - b),
    // Moves the clock by `ms`, running each timer that falls due, in order.
    advance(ms) {
      const end = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = end;
    },
  };
}

// Lets promise callbacks (the fake API's replies) run.
export async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

// An EventSource whose events the test sends; FakeEventSource.instances has every one made.
export class FakeEventSource {
  static instances = [];

  constructor(url) {
    this.url = url;
    this.closed = false;
    this.listeners = {};
    this.onerror = null;
    this.lastEventId = "";
    FakeEventSource.instances.push(this);
  }

  addEventListener(type, fn) {
    (this.listeners[type] = this.listeners[type] || []).push(fn);
  }

  close() {
    this.closed = true;
  }

  // As the browser does: an event without its own id carries the last id the stream had.
  send(type, data, id) {
    if (this.closed) return;
    if (id !== undefined) this.lastEventId = String(id);
    for (const fn of this.listeners[type] || []) fn({ data: JSON.stringify(data), lastEventId: this.lastEventId });
  }

  fail() {
    if (this.onerror) this.onerror(new Error("connection dropped"));
  }
}

// The JSON API of one submission as webapp/api.py answers it: GET <self>?after=N gives the stored events with
// an id above N, and the status. `calls` records every request.
export function fakeServer(sid = "s1") {
  const urls = {
    self: `/api/submissions/${sid}`,
    stream: `/api/submissions/${sid}/stream`,
    cancel: `/api/submissions/${sid}/cancel`,
    page: `/submissions/${sid}`,
  };
  const server = {
    urls,
    events: [],
    status: "running",
    position: null,
    noGrader: false,
    result: null,
    cancelled: false,
    down: false,
    calls: [],
    cancelReply: { ok: true, status: 200, data: {} },
    add(type, data) {
      const id = server.events.length + 1;
      server.events.push({ id, type, data });
      return id;
    },
    detail(after = 0) {
      return {
        id: sid, status: server.status, position: server.position, urls, result: server.result, error: null,
        score: server.result ? server.result.score : null, result_status: server.result ? server.result.status : null,
        cancelled: server.cancelled, events: server.events.filter((e) => e.id > after),
        no_grader_running: server.noGrader,
      };
    },
    api(method, url, body) {
      server.calls.push({ method, url, body });
      if (server.down) return Promise.reject(new TypeError("Failed to fetch"));
      if (method === "POST" && url === urls.cancel) return Promise.resolve(server.cancelReply);
      const m = method === "GET" && url.match(/^(.*)\?after=(\d+)$/);
      if (m && m[1] === urls.self) return Promise.resolve({ ok: true, status: 200, data: server.detail(Number(m[2])) });
      return Promise.resolve({ ok: false, status: 404, data: { error: "no such url" } });
    },
  };
  return server;
}

// localStorage over a Map.
export function fakeStorage() {
  const map = new Map();
  return {
    map,
    getItem: (k) => (map.has(k) ? map.get(k) : null),
    setItem: (k, v) => map.set(k, String(v)),
    removeItem: (k) => map.delete(k),
  };
}
