// The tutor's stream and its line links (src/page/tutor.js): server-sent events cut anywhere by the network, and
// "line N" in an answer's words in each language.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseEvents, lineRefs } from "../src/page/tutor.js";

test("events cut across reads come out whole, the partial block kept for the next read", () => {
  const first = parseEvents('event: delta\ndata: {"text": "Look at"}\n\nevent: del');
  assert.deepEqual(first.events, [{ event: "delta", data: { text: "Look at" } }]);
  const second = parseEvents(first.rest + 'ta\ndata: {"text": " line 3"}\n\nevent: done\ndata: {"left": 2}\n\n');
  assert.deepEqual(second.events.map((e) => e.event), ["delta", "done"]);
  assert.equal(second.rest, "");
});

test("an answer's line numbers become links in English, Italian and Indonesian", () => {
  assert.deepEqual(lineRefs("Look at line 7, then riga 9 e baris 12."), [
    { text: "Look at " },
    { text: "line 7", line: 7 },
    { text: ", then " },
    { text: "riga 9", line: 9 },
    { text: " e " },
    { text: "baris 12", line: 12 },
    { text: "." },
  ]);
  assert.deepEqual(lineRefs("no numbers here"), [{ text: "no numbers here" }]);
});
