"""The interface's message catalogs. The English text is the key; each
language has one JSON catalog (webapp/translations/<lang>.json) used by the
templates (`_("...")`) and by the browser script (`t("...")`, the catalog
travels in the page). A missing entry shows the English text, and
tests/webapp/test_i18n.py fails the build for any string of the templates or
the script that a catalog lacks. Placeholders are `{name}`."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TRANSLATIONS = Path(__file__).resolve().parent / "translations"


@lru_cache(maxsize=8)
def catalog(lang: str) -> dict[str, str]:
    path = TRANSLATIONS / f"{lang}.json"
    if lang == "en" or not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def gettext(text: str, lang: str, **values) -> str:
    translated = catalog(lang).get(text) or text
    return translated.format(**values) if values else translated


def noop_gettext(text: str) -> str:
    """Marks a message for the catalogs (and their test) where it is made; it is translated where it is shown."""
    return text
