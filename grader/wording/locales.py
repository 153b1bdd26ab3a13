"""Numbers, dates and plurals as each language writes them, from Babel's CLDR
data: "0,13%" and "12 feb 2026, 04:58:14" on an Italian page, "1 lezione" but
"2 lezioni". The catalogs' templates keep Python's format specs ({loss:.2%}):
the figure is formatted as Python does it, then written with the language's
decimal and grouping symbols, so a translator never touches a format spec.

A plural message is a dict by CLDR plural category ({"one": ..., "other": ...});
the count is its `n` parameter. A category a catalog lacks ("many", which
recent CLDR gives Italian for millions) falls back to "other"."""

from __future__ import annotations

import string
from datetime import datetime, timezone
from functools import lru_cache

from babel import Locale
from babel.dates import format_datetime
from babel.numbers import get_decimal_symbol, get_group_symbol


@lru_cache(maxsize=8)
def _locale(lang: str) -> Locale:
    try:
        return Locale.parse(lang)
    except (ValueError, LookupError):
        return Locale.parse("en")


@lru_cache(maxsize=8)
def _symbols(lang: str) -> tuple[str, str]:
    if lang == "en":  # CLDR's, known without loading Babel's locale data (a tenth of a second of `grader check`)
        return ".", ","
    return get_decimal_symbol(_locale(lang)), get_group_symbol(_locale(lang))


def plural_category(n, lang: str) -> str:
    """The CLDR plural category of the count `n` in `lang` ("one", "other", ...); "other" for a count that is not
    a number (a "?" where the grader did not know it)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return "other"
    return _locale(lang).plural_form(abs(n))


def plural_form(forms: dict, n, lang: str) -> str | None:
    """The form of a plural message for the count `n`: its category's, else "other"'s."""
    return forms.get(plural_category(n, lang)) or forms.get("other")


def choose(template, params: dict, lang: str):
    """A catalog entry as a template: a plural entry's form for the count `params["n"]`, a plain one as it is."""
    if isinstance(template, dict):
        return plural_form(template, (params or {}).get("n"), lang)
    return template


def localize_digits(text: str, lang: str) -> str:
    """A number Python formatted ("1,234.5", "0.13%") with `lang`'s decimal and grouping symbols."""
    decimal, group = _symbols(lang)
    if (decimal, group) == (".", ","):
        return text
    return "".join(decimal if ch == "." else group if ch == "," else ch for ch in text)


def number(value, lang: str, spec: str = "") -> str:
    """`value` formatted by the Python format spec `spec`, written the way `lang` writes numbers."""
    return localize_digits(format(value, spec), lang)


def percent(value: float, lang: str, digits: int = 2) -> str:
    return number(value, lang, f".{digits}%")


def fixed(value: float, lang: str, digits: int = 2) -> str:
    return number(value, lang, f".{digits}f")


def moment(ts: float, lang: str, width: str = "medium") -> str:
    """A moment (seconds since the epoch) in UTC, the same for a whole class, as `lang` writes dates and times."""
    when = datetime.fromtimestamp(ts, timezone.utc)
    return format_datetime(when, width, tzinfo=timezone.utc, locale=_locale(lang)) + " UTC"


class LocaleFormatter(string.Formatter):
    """str.format() whose numbers are written as `lang` writes them: a float, or a number with a format spec, gets
    the language's decimal and grouping symbols; a plain count ({n}) and every string stay as they are."""

    def __init__(self, lang: str):
        super().__init__()
        self.lang = lang

    def format_field(self, value, format_spec):
        text = super().format_field(value, format_spec)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return text
        if isinstance(value, int) and not format_spec:
            return text  # a count, a line or a step: never grouped, so nothing to change
        return localize_digits(text, self.lang)


def format_in(template: str, lang: str, **values) -> str:
    """template.format(**values), with its numbers in `lang`."""
    return LocaleFormatter(lang).format(template, **values)
