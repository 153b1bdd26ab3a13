"""A course's gradebook as CSV rows: one row per learner, six columns per lesson. The first row is the columns'
stable machine names, in English whatever the page's language (what an LMS import maps); `localized=True`
writes the header in the page's language instead, for a person reading it in a spreadsheet (docs/classroom.md
lists both). Each learner's deadline is their own (an extension's, if granted), and the counted score is the
late policy's (webapp/deadlines.py counted_scores), the same number the LMS passback sends: a verdict an exam
holds back is in neither until the exam closes."""

from __future__ import annotations

from datetime import datetime, timezone

from webapp import deadlines
from webapp.i18n import noop_gettext

# (machine name, its words for a person) of each lesson's columns, in order; "{lesson}" is the lesson's id.
COLUMNS = (
    ("{lesson} best score", noop_gettext("{lesson} best score")),
    ("{lesson} counted score", noop_gettext("{lesson} counted score")),
    ("{lesson} passed at", noop_gettext("{lesson} passed at")),
    ("{lesson} deadline", noop_gettext("{lesson} deadline")),
    ("{lesson} extended", noop_gettext("{lesson} extended")),
    ("{lesson} late", noop_gettext("{lesson} late")),
)
# A gradebook's separator and decimal mark: English spreadsheets read "a,0.5", Italian and Indonesian ones (whose
# decimal mark is the comma) "a;0,5".
STYLES = {"comma": (",", "."), "semicolon": (";", ",")}
BOM = "\ufeff"  # Excel reads a CSV as UTF-8 only when it starts with one


def style_for(asked: str | None, lang: str) -> str:
    if asked in STYLES:
        return asked
    return "comma" if lang == "en" else "semicolon"


def header(lesson_ids: list[str], translate=None) -> list[str]:
    """The machine names, or (`translate`: the page's gettext) the localized words."""
    row = [translate("username") if translate else "username"]
    for lesson in lesson_ids:
        for machine, words in COLUMNS:
            row.append(translate(words, lesson=lesson) if translate else machine.format(lesson=lesson))
    return row


def rows(db, course_id: int, lessons: list, learners: list, table: dict, style: str, yes_no=("yes", "no")) -> list:
    """One list of cells per learner (`table`: classroom.progress)."""
    counted = deadlines.counted_scores(db, course_id, learners, lessons)
    decimal = STYLES[style][1]
    out = []
    for person in learners:
        row = [cell(person["username"])]
        for item in lessons:
            lesson = item["lesson"]
            mine = counted[(person["learner"], lesson)]
            p = table.get((person["learner"], lesson))
            passed = p is not None and p.passed_at is not None
            row += [
                score(p.best_score if p else None, decimal),
                score(mine.score, decimal),
                iso(p.passed_at) if passed else "",
                iso(mine.deadline),
                yes_no[0] if mine.extension is not None else yes_no[1],
                (yes_no[0] if p.late(mine.deadline) else yes_no[1]) if passed else "",
            ]
        out.append(row)
    return out


def score(value: float | None, decimal: str) -> str:
    return "" if value is None else f"{value:.4f}".replace(".", decimal)


def iso(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def cell(text: str) -> str:
    """A spreadsheet must not read a cell as a formula (usernames cannot start so; this is the second wall)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
