"""The HTML pages, read as a browser would get them (without running scripts)."""

import json
import re
from pathlib import Path

import pytest
import yaml

from grader.lesson.loader import load_all

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = load_all()


def page_data(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_lesson_list_shows_every_lesson_with_a_progress_badge(client):
    html = client.get("/").get_data(as_text=True)
    cards = re.findall(r'data-testid="lesson-card" data-lesson-id="([^"]+)" data-progress="([^"]+)"', html)
    assert cards == [(ex_id, "not_started") for ex_id in EXERCISES]
    assert html.count('data-testid="progress"') == len(EXERCISES)
    assert "Not started" in html and "Mixed precision with torch.autocast" in html


@pytest.mark.parametrize("lesson_id", sorted(EXERCISES))
def test_lesson_page_never_contains_the_reference(client, lesson_id):
    """Not the file, nor any three consecutive lines of it (as HTML text or as JSON)."""
    from markupsafe import escape

    ex = EXERCISES[lesson_id]
    html = client.get(f"/lessons/{lesson_id}").get_data(as_text=True)
    lines = ex.reference.splitlines()
    windows = ["\n".join(lines[i : i + 3]) for i in range(len(lines) - 2)]
    secret = [w for w in windows if w not in ex.starter and w not in ex.baseline and w.strip()]
    assert secret, "the reference should differ from the starter"
    for text in [ex.reference] + secret:
        assert str(escape(text)) not in html and json.dumps(text)[1:-1] not in html


@pytest.mark.parametrize("lesson_id", ["autocast", "accelerate"])
def test_the_editor_label_names_every_function_the_learner_writes(client, lesson_id):
    from grader.lesson.loader import load_exercise

    entry = load_exercise(lesson_id).entrypoint
    names = [entry.prepare.name, entry.name] if entry.prepare else [entry.name]
    html = client.get(f"/lessons/{lesson_id}").get_data(as_text=True)
    assert f'data-testid="editor-functions">({", ".join(names)})</span>' in html


def test_lesson_page_has_editor_seed_hints_quiz_and_no_inline_script(client):
    html = client.get("/lessons/autocast").get_data(as_text=True)
    assert page_data(html)["lesson"]["starter"] == EXERCISES["autocast"].starter
    assert 'data-testid="run-button"' in html and 'data-testid="hint-button"' in html
    assert html.count('class="hint" hidden') == len(EXERCISES["autocast"].hints)
    assert html.count('data-testid="quiz-choice"') == sum(len(q.choices) for q in EXERCISES["autocast"].quiz)
    for tag in re.findall(r"<script[^>]*>", html):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
    assert re.search(r"\son[a-z]+=", html) is None  # no inline event handlers
    assert '<pre class="highlight"><code>' in html  # the lesson's code block went through Pygments


def switch_language(client, lang, next_path="/", token=None):
    from webapp_testing import csrf_headers

    token = token if token is not None else csrf_headers(client)["X-CSRF-Token"]
    return client.post("/lang", data={"lang": lang, "next": next_path, "csrf_token": token})


def test_language_switch_is_remembered_in_a_cookie(client):
    response = switch_language(client, "it", "/lessons/autocast")
    assert response.status_code == 303 and response.headers["Location"] == "/lessons/autocast"
    html = client.get("/lessons/autocast").get_data(as_text=True)
    assert '<html lang="it">' in html and "Precisione mista con torch.autocast" in html
    assert client.get("/api/lessons/autocast").get_json()["lang"] == "it"


def test_language_switch_needs_the_sessions_token(client):
    """Another site can link or post to /lang, but not with this session's token."""
    assert switch_language(client, "it", token="forged").status_code == 403
    assert client.get("/lang/it").status_code in (404, 405)
    assert '<html lang="en">' in client.get("/").get_data(as_text=True)


def test_language_switch_never_redirects_off_site(client):
    for target in ("//evil.example/", "https://evil.example/", "javascript:alert(1)", "/\r\nX-Injected: 1"):
        response = switch_language(client, "en", target)
        assert response.headers["Location"] == "/" and "X-Injected" not in response.headers
    assert switch_language(client, "xx").status_code == 400


def test_unknown_pages_are_404(client):
    assert client.get("/lessons/nope").status_code == 404
    assert client.get("/submissions/nope").status_code == 404


@pytest.fixture
def hostile_exercises(tmp_path):
    """The autocast lesson with script, event-handler and javascript: URL injections in its Markdown."""
    data = yaml.safe_load((ROOT / "exercises" / "autocast.yaml").read_text())
    data["lesson"]["en"] = (
        "Intro <script>alert('lesson')</script>\n\n<img src=x onerror=alert(1)>\n\n"
        "[click](javascript:alert(2)) and `code` <b onmouseover=alert(3)>bold</b>\n"
    )
    data["hints"][0] = {"en": "hint <script>alert('hint')</script>"}
    folder = tmp_path / "exercises"
    folder.mkdir()
    (folder / "autocast.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    return folder


def test_lesson_markdown_with_script_and_handlers_is_sanitised(make_app, hostile_exercises):
    client = make_app(EXERCISES=str(hostile_exercises)).test_client()
    html = client.get("/lessons/autocast").get_data(as_text=True)
    assert "<script>alert" not in html
    assert re.search(r"<[a-z]+[^>]*\son(error|mouseover)=", html) is None
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;alert(&#39;lesson&#39;)" in html or "&lt;script&gt;alert('lesson')" in html
    api_html = client.get("/api/lessons/autocast").get_json()["lesson_html"]
    assert "<script" not in api_html and "<img" not in api_html


def test_breadcrumb_and_page_titles_use_the_lesson_title_not_ids(client, submit):
    html = client.get("/lessons/grad_scaler").get_data(as_text=True)
    title = EXERCISES["grad_scaler"].title["en"]
    assert f"Lessons</a> / {title}" in html
    sid = submit(client, EXERCISES["autocast"].starter).get_json()["id"]
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert f"<title>Attempt 1 · {EXERCISES['autocast'].title['en']} · AMP Dojo</title>" in page
    assert f"<title>Submission {sid}" not in page
