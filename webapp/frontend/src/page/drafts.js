/* The learner's draft of a lesson, kept in the browser's localStorage so that a reload, a closed tab or a
   crash does not lose it. Saved 400 ms after the last change, and at once when the page is hidden or left
   (pagehide, visibilitychange to hidden), so a quick reload right after typing keeps the last keystrokes.
   (Not `unload`/`beforeunload`: browsers may skip them, and they keep a page out of the back/forward cache.)
   Storage, timers and the window/document to listen on come in as parameters. */

export const SAVE_DELAY_MS = 400;

// One draft per lesson and learner in this browser. `user` is the signed-in account's name (lesson.html puts it
// on #editor-host as data-draft-owner), so on a shared classroom computer one account never gets another's
// draft; "" for the anonymous learner, whose drafts keep the key they always had (lesson ids are plain
// identifiers, which encodeURIComponent leaves as they are; it keeps a ":" in either part from faking the other).
export function draftKey(lessonId, user) {
  const base = "amp-dojo:draft:" + encodeURIComponent(lessonId);
  return user ? base + ":user:" + encodeURIComponent(user) : base;
}

// The browser's localStorage, or null where even reaching it throws (some private modes, blocked cookies).
export function browserStorage(win) {
  try {
    return win.localStorage;
  } catch (err) {
    return null;
  }
}

// load/save/clear of one lesson's draft; storage that is missing or refuses (quota, private mode) is no error.
// Beside the text, under its own key, the time it was saved (seconds since the epoch), so a restored draft can say
// from when; a draft saved before that time was kept has none, and is restored all the same.
export function draftStore(storage, lessonId, user, now = () => Date.now()) {
  const key = draftKey(lessonId, user);
  const timeKey = key + ":saved-at";
  const attempt = (fn, fallback = null) => {
    try {
      return storage ? fn() : fallback;
    } catch (err) {
      return fallback; // full, private mode, or blocked
    }
  };
  return {
    key,
    load: () => attempt(() => storage.getItem(key)),
    savedAt() {
      const seconds = Number(attempt(() => storage.getItem(timeKey)));
      return Number.isFinite(seconds) && seconds > 0 ? seconds : null;
    },
    save(text) {
      attempt(() => {
        storage.setItem(key, text);
        storage.setItem(timeKey, String(now() / 1000));
      });
    },
    clear() {
      attempt(() => {
        storage.removeItem(key);
        storage.removeItem(timeKey);
      });
    },
  };
}

// What the editor starts with: the saved draft if there is one, else the starter. `restored` when the draft
// differs from the starter (the page then says "Draft restored").
export function initialDoc(saved, starter) {
  const has = saved !== null && saved !== undefined;
  return { doc: has ? saved : starter, restored: has && saved !== starter };
}

/* Saves the text of the last change after `delay` ms without changes; flush() saves a pending change now.
   onSaved(text) is called after each save of a change (the page says "Draft saved"). */
export class DraftSaver {
  constructor(store, { delay = SAVE_DELAY_MS, setTimeout: later, clearTimeout: cancel, onSaved } = {}) {
    this.store = store;
    this.delay = delay;
    this.later = later || ((fn, ms) => setTimeout(fn, ms));
    this.cancel = cancel || ((id) => clearTimeout(id));
    this.onSaved = onSaved || (() => {});
    this.timer = null;
    this.pending = null; // { text } while a change waits to be saved
  }

  changed(text) {
    this.pending = { text };
    this.stopTimer();
    this.timer = this.later(() => {
      this.timer = null;
      this.flush();
    }, this.delay);
  }

  // Saves the waiting change, if any; true if it saved.
  flush() {
    this.stopTimer();
    if (!this.pending) return false;
    const { text } = this.pending;
    this.pending = null;
    this.store.save(text);
    this.onSaved(text);
    return true;
  }

  // Saves `text` now (a submission loaded into the editor), dropping any change still waiting.
  saveNow(text) {
    this.stopTimer();
    this.pending = null;
    this.store.save(text);
  }

  // Forgets the draft (reset to the starter), including a change still waiting.
  clear() {
    this.stopTimer();
    this.pending = null;
    this.store.clear();
  }

  stopTimer() {
    if (this.timer !== null) this.cancel(this.timer);
    this.timer = null;
  }
}

// Saves the waiting change when the page goes away or out of sight. `win` and `doc` are event targets
// (the window and the document); returns a function that removes the listeners.
export function saveOnLeave(saver, win, doc) {
  const onPageHide = () => saver.flush();
  const onVisibility = () => {
    if (doc.visibilityState === "hidden") saver.flush();
  };
  win.addEventListener("pagehide", onPageHide);
  doc.addEventListener("visibilitychange", onVisibility);
  return () => {
    win.removeEventListener("pagehide", onPageHide);
    doc.removeEventListener("visibilitychange", onVisibility);
  };
}
