"""The tutor in a real browser against a real model: the app (a subprocess) talks to llama.cpp's server on loopback
(tests/tutor_model.py), a learner on the Italian page runs a failing autocast submission, asks about the verdict,
and the answer streams in beside it; a "line N" in the answer would move the editor there. The model's words are
never asserted (a 135M model, a dozen tokens): the page's language, the stream's end and no error are."""

from __future__ import annotations

from pathlib import Path

import pytest

from .amp_dojo_live import CHROMIUM, REQUIRE_BROWSER, LiveApp
from .conftest import shared_trusted_runs

if not Path(CHROMIUM).exists() and not REQUIRE_BROWSER:
    pytest.skip(
        f"no Chromium at {CHROMIUM} (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)", allow_module_level=True
    )

from playwright.sync_api import expect

from .test_browser import GRADING_TIMEOUT_MS, LESSON, ROOT, replace_editor_text

WRONG = (ROOT / "tests" / "submissions" / "autocast" / "forward_outside_autocast.py").read_text()


@pytest.fixture(scope="module")
def live_app(tmp_path_factory, model_server):
    """The app with a tutor: short prompts and answers, for a CPU model on a loaded machine."""
    app = LiveApp(
        tmp_path_factory.mktemp("e2e-tutor"),
        settings={
            "TRUSTED_RUNS": str(shared_trusted_runs(tmp_path_factory)),
            "TUTOR_BASE_URL": model_server.base_url,
            "TUTOR_API_KEY": model_server.api_key,
            "TUTOR_MAX_TOKENS": 12,
            "TUTOR_MAX_PROMPT_CHARS": 1300,
            "TUTOR_READ_TIMEOUT_S": 120,
            "TUTOR_ANSWER_TIMEOUT_S": 180,
        },
    )
    app.start(timeout=90)
    try:
        yield app
    finally:
        app.stop()


def test_a_question_on_a_failing_verdict_streams_an_answer_in_the_italian_page(page, js_errors):
    page.goto(f"/lessons/{LESSON}")
    page.locator('.lang-switch button[value="it"]').click()
    page.wait_for_url(f"**/lessons/{LESSON}")
    expect(page.locator("html")).to_have_attribute("lang", "it")
    tutor = page.get_by_test_id("tutor")
    expect(tutor).to_be_hidden()  # no verdict yet, nothing to ask about
    replace_editor_text(page, WRONG)
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    expect(tutor).to_be_visible()
    expect(tutor.locator("h2")).to_have_text("Chiedi di questo risultato")
    page.get_by_test_id("tutor-question").fill("Perché la riga 10 è sbagliata?")
    page.get_by_test_id("tutor-ask").click()
    answer = page.get_by_test_id("tutor-answer")
    expect(answer).to_have_attribute("data-state", "done", timeout=180_000)
    assert "tutor-error" not in (answer.get_attribute("class") or ""), answer.text_content()
    assert answer.text_content().strip() and answer.text_content() != "Il tutor sta scrivendo…"
    expect(tutor.locator(".tutor-left")).to_contain_text("Domande rimaste su questo risultato: 5")
    assert not js_errors, js_errors
