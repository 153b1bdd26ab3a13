/* The lesson's quick-check quiz. The server judges each answer (POST /api/quiz/<lesson>/<question> with
   {choice, attempt}); a wrong first answer gets a second try without the explanation. Quiz counts the
   attempts per question and turns the server's reply into what the page says; bindQuiz wires the buttons. */

import { tr } from "./i18n.js";
import { clear, el, withCode } from "./dom.js";

// What to show for the server's reply ({ ok, status, data } from api.js).
export function quizFeedback(res) {
  if (!res.ok) return { ok: false, message: (res.data && res.data.error) || tr("Could not check the answer.") };
  const correct = Boolean(res.data.correct);
  const retry = Boolean(res.data.retry);
  return {
    ok: true,
    correct,
    verdict: (correct ? tr("Right.") : tr("Not quite.")) + " ",
    retry,
    // a retry gets a nudge, not the explanation (that would give the answer away)
    text: retry ? tr("Think again and try another answer.") : null,
    explanation: retry ? null : res.data.explanation,
  };
}

export class Quiz {
  constructor(api, baseUrl) {
    this.api = api;
    this.baseUrl = baseUrl; // /api/quiz/<lesson>/
    this.attempts = {};
  }

  // Sends one answer; counts it as the question's next attempt at once (before the reply). Resolves to
  // quizFeedback(reply) with its `attempt`.
  answer(question, choice) {
    const attempt = (this.attempts[question] || 0) + 1;
    this.attempts[question] = attempt;
    return this.api("POST", this.baseUrl + question, { choice: Number(choice), attempt })
      .then((res) => ({ attempt, ...quizFeedback(res) }));
  }
}

export function bindQuiz(doc, quiz) {
  doc.querySelectorAll(".quiz-choice").forEach((button) => {
    button.addEventListener("click", () => {
      const fieldset = button.closest(".quiz-question");
      const feedback = fieldset.querySelector(".quiz-feedback");
      const question = button.dataset.question;
      const reply = quiz.answer(question, button.dataset.choice);
      fieldset.dataset.attempts = String(quiz.attempts[question]);
      reply.then((said) => {
        clear(feedback);
        if (!said.ok) {
          feedback.textContent = said.message;
          return;
        }
        fieldset.querySelectorAll(".quiz-choice").forEach((b) => {
          b.setAttribute("aria-pressed", b === button ? "true" : "false");
          b.classList.remove("chosen-right", "chosen-wrong");
        });
        button.classList.add(said.correct ? "chosen-right" : "chosen-wrong");
        fieldset.dataset.answered = said.correct ? "right" : "wrong";
        feedback.className = "quiz-feedback " + (said.correct ? "right" : "wrong");
        feedback.appendChild(el("strong", { text: said.verdict }));
        feedback.appendChild(said.retry ? doc.createTextNode(said.text) : withCode(said.explanation));
      });
    });
  });
}
