"""Lessons as the browser may see them: localised, Markdown rendered on the
server and sanitised, and never the reference solution (or the quiz answers,
which the quiz endpoint reveals one question at a time)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import nh3
from flask import current_app
from markdown_it import MarkdownIt
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from grader.errors import ExerciseNotFound
from grader.lesson import quiz
from grader.lesson.base import LANGUAGES, localize
from grader.lesson.loader import load_all
from grader.lesson.schema import Exercise

ALLOWED_TAGS = {
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "span",
    "div",
    "blockquote",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "hr",
    "br",
    "del",
    "sup",
    "sub",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "div": {"class"},
    "th": {"align"},
    "td": {"align"},
}
FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang or "python")
    except ClassNotFound:
        return ""  # markdown-it escapes and wraps it itself
    return f'<pre class="highlight"><code>{highlight(code, lexer, FORMATTER)}</code></pre>'


_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight}).enable("table")
_md.enable("strikethrough")


def sanitize(html: str) -> str:
    """nh3 behind markdown-it: raw HTML is already escaped; this is the second wall."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )


@lru_cache(maxsize=512)
def markdown(text: str) -> Markup:
    return Markup(sanitize(_md.render(text)))


@lru_cache(maxsize=512)
def markdown_inline(text: str) -> Markup:
    return Markup(sanitize(_md.renderInline(text)))


@lru_cache(maxsize=1)
def pygments_css() -> str:
    # "xcode": every token colour has a contrast of 4.5 or more on the code background (WCAG AA); "friendly"
    # had comments at 2.8
    return HtmlFormatter(style="xcode").get_style_defs(".highlight")


def highlight_code(code: str) -> Markup:
    """A learner's code for the permalink page, with the line numbers that
    findings refer to (Pygments escapes the code)."""
    return Markup(
        highlight(code, get_lexer_by_name("python"), HtmlFormatter(linenos="inline", cssclass="highlight code-view"))
    )


def exercises() -> dict[str, Exercise]:
    """Loaded once per app: lessons change with a deploy, not per request."""
    ext = current_app.extensions
    if "amp_dojo_exercises" not in ext:
        directory = current_app.config.get("EXERCISES")
        problems = []
        ext["amp_dojo_exercises"] = load_all(Path(directory) if directory else None, problems)
        for problem in problems:  # one broken lesson file must not take the others down
            current_app.logger.warning("lesson skipped: %s", problem)
    return ext["amp_dojo_exercises"]


def exercise(lesson_id: str) -> Exercise:
    found = exercises().get(lesson_id)
    if found is None:
        raise ExerciseNotFound(f"no lesson {lesson_id!r}")
    return found


def language(lang: str | None) -> str:
    return lang if lang in LANGUAGES else "en"


def card(ex: Exercise, lang: str, progress: str) -> dict:
    return {
        "id": ex.id,
        "order": ex.order,
        "title": localize(ex.title, lang),
        "summary": localize(ex.summary, lang),
        "progress": progress,
        "url": f"/lessons/{ex.id}",
    }


def public_lesson(ex: Exercise, lang: str) -> dict:
    """Everything a learner needs, as data; built field by field so nothing hidden slips in."""
    return {
        "id": ex.id,
        "lang": lang,
        "title": localize(ex.title, lang),
        "summary": localize(ex.summary, lang),
        "lesson": localize(ex.lesson, lang),
        "lesson_html": str(markdown(localize(ex.lesson, lang))),
        "task": localize(ex.task, lang),
        "task_html": str(markdown(localize(ex.task, lang))),
        "starter": ex.starter_in(lang),
        "baseline": ex.baseline,
        "entrypoint": ex.entrypoint.model_dump(),
        "hints": [localize(h, lang) for h in ex.hints],
        "quiz": [
            {"question": localize(q.question, lang), "choices": [localize(c, lang) for c in q.choices]} for q in ex.quiz
        ],
        "checks": [c.id for c in ex.checks],
    }


def check_titles(ex: Exercise, lang: str) -> dict[str, str]:
    """The titles of a lesson's own checks (the built-in ones are named by the interface's catalog)."""
    return {c.id: localize(c.title, lang) for c in ex.checks if hasattr(c, "python")}


def quiz_answer(ex: Exercise, index: int, choice: int, lang: str, attempt: int = 1) -> dict:
    """The API's answer: grader.lesson.quiz's rule, with the explanation rendered for the page."""
    said = quiz.feedback(ex, index, choice, lang, attempt)
    if said.retry:
        return {"correct": False, "retry": True}
    return {
        "correct": said.correct,
        "answer": said.answer,
        "explanation": said.explanation,
        "explanation_html": str(markdown_inline(said.explanation)),
    }
