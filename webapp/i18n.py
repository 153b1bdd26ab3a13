"""The interface's message catalogs. The English text is the key; each
language has one JSON catalog (webapp/translations/<lang>.json) used by the
templates (`_("...")`) and by the browser script (`t("...")`, the catalog
travels in the page). A missing entry shows the English text, and
tests/webapp/test_i18n.py fails the build for any string of the templates or
the script that a catalog lacks. Placeholders are `{name}`. A text that counts
something is a dict by CLDR plural category ({"one": ..., "other": ...}), its
count the `n` value, in every catalog where the language tells the counts
apart (English too: en.json holds English's own plural forms only), and its
figures are written as the page's language writes them (grader/wording/locales.py)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from grader.wording.locales import choose, format_in, moment, number

TRANSLATIONS = Path(__file__).resolve().parent / "translations"


@lru_cache(maxsize=8)
def catalog(lang: str) -> dict[str, str | dict[str, str]]:
    path = TRANSLATIONS / f"{lang}.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


class Moment(float):
    """A moment (UTC seconds) among a message's values: written as `lang` writes dates (format_moment)."""


def gettext(text: str, lang: str, **values) -> str:
    values = {k: format_moment(v, lang) if isinstance(v, Moment) else v for k, v in values.items()}
    translated = choose(catalog(lang).get(text), values, lang) or text
    return format_in(translated, lang, **values) if values else translated


def format_moment(ts: float | None, lang: str) -> str:
    """A moment in UTC (the same for a whole class) as the page's language writes dates: "4 dic 2026, 13:27:41"."""
    return "–" if ts is None else moment(ts, lang)


def format_day(ts: float, lang: str) -> str:
    """A day in UTC (a deadline's) as the page's language writes dates: "Jan 31, 2030", "31 gen 2030"."""
    from datetime import datetime, timezone

    from babel.dates import format_date

    return format_date(datetime.fromtimestamp(ts, timezone.utc).date(), "medium", locale=lang)


def format_number(value: float | None, lang: str, spec: str = "") -> str:
    return "–" if value is None else number(value, lang, spec)


def noop_gettext(text: str) -> str:
    """Marks a message for the catalogs (and their test) where it is made; it is translated where it is shown."""
    return text
