import { test } from "node:test";
import assert from "node:assert/strict";
import {
  draftKey, draftStore, initialDoc, DraftSaver, saveOnLeave, browserStorage, SAVE_DELAY_MS,
} from "../src/page/drafts.js";
import { fakeClock, fakeStorage } from "../testing/fakes.js";

function saver(storage, clock, lesson = "autocast", user = "") {
  const saved = [];
  const store = draftStore(storage, lesson, user);
  const s = new DraftSaver(store, { setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout,
                                    onSaved: (text) => saved.push(text) });
  return { saver: s, saved, store };
}

// The window and the document as event targets, with the document's visibility.
function page() {
  const win = new EventTarget();
  const doc = new EventTarget();
  doc.visibilityState = "visible";
  return { win, doc };
}

test("a draft is kept per lesson, and per account when signed in", () => {
  assert.equal(draftKey("autocast"), "amp-dojo:draft:autocast"); // the anonymous learner: the key drafts always had
  assert.equal(draftKey("autocast", ""), "amp-dojo:draft:autocast");
  assert.notEqual(draftKey("autocast"), draftKey("grad_scaler"));
  assert.equal(draftKey("autocast", "ada"), "amp-dojo:draft:autocast:user:ada");
  assert.notEqual(draftKey("autocast", "ada"), draftKey("autocast", "bob"));
  assert.notEqual(draftKey("a:user:b"), draftKey("a", "b")); // names cannot make one key look like another
  assert.equal(draftKey("a", "b:c"), "amp-dojo:draft:a:user:b%3Ac");

  const storage = fakeStorage();
  draftStore(storage, "autocast", "ada").save("ada's code");
  assert.equal(draftStore(storage, "autocast", "bob").load(), null);
  assert.equal(draftStore(storage, "autocast").load(), null);
  assert.equal(draftStore(storage, "grad_scaler", "ada").load(), null);
  assert.equal(draftStore(storage, "autocast", "ada").load(), "ada's code");
});

test("the editor starts with the draft if there is one, and says so when it differs from the starter", () => {
  assert.deepEqual(initialDoc(null, "starter"), { doc: "starter", restored: false });
  assert.deepEqual(initialDoc("mine", "starter"), { doc: "mine", restored: true });
  assert.deepEqual(initialDoc("starter", "starter"), { doc: "starter", restored: false });
  assert.deepEqual(initialDoc("", "starter"), { doc: "", restored: true }); // an emptied editor stays empty
});

test("a draft keeps the time it was saved, so the restored draft can say from when; reset forgets both", () => {
  const storage = fakeStorage();
  let now = 1_700_000_000_000;
  const store = draftStore(storage, "autocast", "ada", () => now);
  assert.equal(store.savedAt(), null);
  store.save("v1");
  now += 90_000;
  store.save("v2");
  assert.equal(store.load(), "v2");
  assert.equal(store.savedAt(), 1_700_000_090);
  storage.setItem(store.key + ":saved-at", "garbage"); // a time nobody could have saved is no time
  assert.equal(store.savedAt(), null);
  store.clear();
  assert.equal(store.load(), null);
  assert.equal(store.savedAt(), null);
  assert.equal(storage.map.size, 0);
});

test("storage that throws or is missing is no error: nothing is restored", () => {
  const broken = { getItem() { throw new Error("denied"); }, setItem() { throw new Error("quota"); },
                   removeItem() { throw new Error("denied"); } };
  const store = draftStore(broken, "autocast");
  assert.equal(store.load(), null);
  assert.equal(store.savedAt(), null);
  store.save("x");
  store.clear();
  const none = draftStore(null, "autocast");
  assert.equal(none.load(), null);
  none.save("x");
  assert.equal(browserStorage({ get localStorage() { throw new Error("SecurityError"); } }), null);
});

test("typing saves once, the delay after the last change, with the last text", () => {
  const clock = fakeClock();
  const storage = fakeStorage();
  const { saver: s, saved } = saver(storage, clock);
  s.changed("a");
  clock.advance(100);
  s.changed("ab");
  clock.advance(SAVE_DELAY_MS - 1);
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), null);
  s.changed("abc");
  clock.advance(SAVE_DELAY_MS - 1);
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), null);
  clock.advance(1);
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), "abc");
  assert.deepEqual(saved, ["abc"]);
  assert.deepEqual(clock.pending(), []);
});

test("a reload right after typing keeps the last keystrokes: pagehide saves at once", () => {
  const clock = fakeClock();
  const storage = fakeStorage();
  const { saver: s, saved } = saver(storage, clock);
  const { win, doc } = page();
  saveOnLeave(s, win, doc);
  s.changed("def train_step(): pass");
  clock.advance(50);
  win.dispatchEvent(new Event("pagehide"));
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), "def train_step(): pass");
  assert.deepEqual(saved, ["def train_step(): pass"]);
  assert.deepEqual(clock.pending(), []); // and it is not saved a second time
  win.dispatchEvent(new Event("pagehide"));
  assert.equal(saved.length, 1);
});

test("switching away from the tab saves the waiting change; coming back does not", () => {
  const clock = fakeClock();
  const storage = fakeStorage();
  const { saver: s } = saver(storage, clock);
  const { win, doc } = page();
  const stop = saveOnLeave(s, win, doc);
  s.changed("x = 1");
  doc.dispatchEvent(new Event("visibilitychange")); // still visible
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), null);
  doc.visibilityState = "hidden";
  doc.dispatchEvent(new Event("visibilitychange"));
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), "x = 1");
  stop();
  s.changed("x = 2");
  win.dispatchEvent(new Event("pagehide"));
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), "x = 1"); // the listeners are gone
});

test("leaving with nothing changed writes nothing (a draft saved in another tab stays)", () => {
  const clock = fakeClock();
  const storage = fakeStorage();
  storage.setItem("amp-dojo:draft:autocast", "from the other tab");
  const { saver: s, saved } = saver(storage, clock);
  const { win, doc } = page();
  saveOnLeave(s, win, doc);
  win.dispatchEvent(new Event("pagehide"));
  assert.equal(storage.getItem("amp-dojo:draft:autocast"), "from the other tab");
  assert.deepEqual(saved, []);
  assert.equal(s.flush(), false);
});

test("a loaded submission is saved at once and a reset forgets the draft, even with a change waiting", () => {
  const clock = fakeClock();
  const storage = fakeStorage();
  const { saver: s, saved } = saver(storage, clock, "autocast", "ada");
  const key = "amp-dojo:draft:autocast:user:ada";
  s.changed("typed");
  s.saveNow("loaded code");
  clock.advance(SAVE_DELAY_MS * 2);
  assert.equal(storage.getItem(key), "loaded code"); // the older typing does not overwrite it later
  assert.deepEqual(saved, []); // the page says "Loaded the submission …", not "Draft saved"
  s.changed("starter (set by the reset)");
  s.clear();
  clock.advance(SAVE_DELAY_MS * 2);
  assert.equal(storage.getItem(key), null);
  assert.equal(s.flush(), false);
});
