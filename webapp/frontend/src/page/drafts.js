/* The learner's draft of a lesson, kept in the browser's localStorage so that a reload, a closed tab or a
   crash does not lose it: saved 400 ms after the last change. Storage and timers come in as parameters. */

export const SAVE_DELAY_MS = 400;

// One draft per lesson in this browser.
export function draftKey(lessonId) {
  return "amp-dojo:draft:" + lessonId;
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
export function draftStore(storage, lessonId) {
  const key = draftKey(lessonId);
  return {
    key,
    load() {
      try {
        return storage ? storage.getItem(key) : null;
      } catch (err) {
        return null;
      }
    },
    save(text) {
      try {
        if (storage) storage.setItem(key, text);
      } catch (err) {
        /* full, or private mode */
      }
    },
    clear() {
      try {
        if (storage) storage.removeItem(key);
      } catch (err) {
        /* ignore */
      }
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

  stopTimer() {
    if (this.timer !== null) this.cancel(this.timer);
    this.timer = null;
  }
}
