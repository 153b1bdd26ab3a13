import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { Quiz, quizFeedback } from "../src/page/quiz.js";
import { hintButton } from "../src/page/hints.js";
import { setCatalog } from "../src/page/i18n.js";

afterEach(() => setCatalog({}));

// The quiz endpoint as webapp/content.py's quiz_answer answers it: a wrong first answer gets a retry.
function quizServer(answers) {
  const calls = [];
  const api = (method, url, body) => {
    calls.push({ method, url, body });
    const question = Number(url.split("/").at(-1));
    if (!(question in answers)) return Promise.resolve({ ok: false, status: 400, data: { error: "no such question" } });
    const correct = body.choice === answers[question];
    if (!correct && body.attempt === 1) return Promise.resolve({ ok: true, status: 200, data: { correct: false, retry: true } });
    return Promise.resolve({ ok: true, status: 200, data: { correct, answer: answers[question],
                                                            explanation: "Use `torch.autocast`." } });
  };
  return { api, calls };
}

test("each answer is sent with the question's attempt count, counted per question", async () => {
  const server = quizServer({ 0: 2, 1: 0 });
  const quiz = new Quiz(server.api, "/api/quiz/autocast/");
  const first = quiz.answer("0", "1");
  assert.equal(quiz.attempts["0"], 1); // counted before the reply
  await first;
  await quiz.answer("0", "2");
  await quiz.answer("1", "0");
  assert.deepEqual(server.calls, [
    { method: "POST", url: "/api/quiz/autocast/0", body: { choice: 1, attempt: 1 } },
    { method: "POST", url: "/api/quiz/autocast/0", body: { choice: 2, attempt: 2 } },
    { method: "POST", url: "/api/quiz/autocast/1", body: { choice: 0, attempt: 1 } },
  ]);
});

test("a wrong first answer is told to think again, without the explanation", async () => {
  const quiz = new Quiz(quizServer({ 0: 2 }).api, "/api/quiz/autocast/");
  const said = await quiz.answer("0", "1");
  assert.deepEqual(said, { attempt: 1, ok: true, correct: false, verdict: "Not quite. ", retry: true,
                           text: "Think again and try another answer.", explanation: null });
});

test("a right answer, and a wrong second one, come with the explanation", async () => {
  const quiz = new Quiz(quizServer({ 0: 2 }).api, "/api/quiz/autocast/");
  const right = await quiz.answer("0", "2");
  assert.equal(right.correct, true);
  assert.equal(right.verdict, "Right. ");
  assert.equal(right.explanation, "Use `torch.autocast`.");
  assert.equal(right.text, null);
  await quiz.answer("0", "1");
  const wrongAgain = await quiz.answer("0", "0");
  assert.equal(wrongAgain.attempt, 3);
  assert.equal(wrongAgain.correct, false);
  assert.equal(wrongAgain.retry, false);
  assert.equal(wrongAgain.explanation, "Use `torch.autocast`.");
});

test("a refused answer shows the server's reason, or a plain one", async () => {
  const quiz = new Quiz(quizServer({}).api, "/api/quiz/autocast/");
  assert.deepEqual(await quiz.answer("5", "0"), { attempt: 1, ok: false, message: "no such question" });
  assert.deepEqual(quizFeedback({ ok: false, status: 500, data: {} }), { ok: false, message: "Could not check the answer." });
});

test("the verdicts are in the page's language", () => {
  setCatalog({ "Right.": "Giusto.", "Not quite.": "Non proprio." });
  assert.equal(quizFeedback({ ok: true, data: { correct: true, explanation: "" } }).verdict, "Giusto. ");
  assert.equal(quizFeedback({ ok: true, data: { correct: false, retry: true } }).verdict, "Non proprio. ");
});

test("the hint button counts the hints shown and stops at the last", () => {
  assert.deepEqual(hintButton(1, 3), { text: "Show another hint (1 of 3)", disabled: false });
  assert.deepEqual(hintButton(3, 3), { text: "All hints shown", disabled: true });
  assert.deepEqual(hintButton(0, 0), { text: "All hints shown", disabled: true });
});
