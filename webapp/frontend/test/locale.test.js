// The page's language decides plurals, decimals and dates (Intl), and plural catalog entries pick their form.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { tr, setCatalog } from "../src/page/i18n.js";
import { formatNumber, formatPercent, timeAgo } from "../src/page/format.js";
import { historyEntry } from "../src/page/history.js";

afterEach(() => setCatalog({}));

const LEARNERS = { "{n} learners": { one: "{n} studente", other: "{n} studenti" } };

test("a plural entry takes the form of its count in the page's language", () => {
  setCatalog(LEARNERS, "it");
  assert.equal(tr("{n} learners", { n: 1 }), "1 studente");
  assert.equal(tr("{n} learners", { n: 2 }), "2 studenti");
  assert.equal(tr("{n} learners", { n: 1000000 }), "1000000 studenti"); // "many" falls back to "other"
});

test("a plural entry without a count uses its other form", () => {
  setCatalog(LEARNERS, "it");
  assert.equal(tr("{n} learners", { n: "?" }), "? studenti");
});

test("Indonesian tells no counts apart", () => {
  setCatalog({ "{n} learners": { other: "{n} pelajar" } }, "id");
  assert.equal(tr("{n} learners", { n: 1 }), "1 pelajar");
});

test("numbers take the page's decimal symbol", () => {
  setCatalog({}, "it");
  assert.equal(formatNumber(0.125, 2), "0,13");
  assert.equal(formatPercent(0.67), "67%");
  setCatalog({}, "en");
  assert.equal(formatNumber(0.125, 2), "0.13");
  setCatalog({}, "id");
  assert.equal(formatNumber(2.5), "2,5");
});

test("a submission's time is written as the page's language writes dates", () => {
  setCatalog({}, "it");
  const italian = timeAgo(1764855000);
  assert.match(italian, /dic 2025/);
  setCatalog({}, "en");
  assert.match(timeAgo(1764855000), /Dec \d+, 2025/);
});

test("the history badge's score is a percentage in the page's language", () => {
  setCatalog({}, "it");
  assert.equal(historyEntry({ status: "done", result_status: "pass", score: 1 }).score, "100%");
});
