"""The interface speaks the page's language: every string the templates and
the browser script show is in the Italian and Indonesian catalogs, with the
same placeholders, and an Italian page shows none of the English ones."""

import html as htmllib
import json
import re
from pathlib import Path

import pytest

from webapp import i18n

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"
PLACEHOLDER = re.compile(r"\{\w+\}")


def ui_strings() -> set[str]:
    found = set()
    for template in (WEBAPP / "templates").rglob("*.html"):
        found |= set(re.findall(r'_\("((?:[^"\\]|\\.)*)"', template.read_text()))
    for script in (WEBAPP / "frontend" / "src" / "page").glob("*.js"):  # the page logic, bundled into amp-dojo.js
        found |= set(re.findall(r'\btr\("((?:[^"\\]|\\.)*)"', script.read_text()))
    python = "\n".join(p.read_text() for p in [*WEBAPP.glob("*.py"), *WEBAPP.glob("tutor/*.py")])
    for literals in re.findall(r'gettext\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', python):  # "..." "..." is one string
        found.add("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', literals)))
    found |= set(re.findall(r'"(?:not_started|attempted|passed)": "([^"]+)"', python))
    return found


def test_the_interface_has_strings_to_translate():
    strings = ui_strings()
    assert len(strings) > 100 and "Your task" in strings and "Grading: {stage}…" in strings


@pytest.mark.parametrize("lang", ["it", "id"])
def test_every_interface_string_is_translated_with_its_placeholders(lang):
    catalog = json.loads((WEBAPP / "translations" / f"{lang}.json").read_text(encoding="utf-8"))
    missing = sorted(ui_strings() - set(catalog))
    assert not missing, f"{lang}.json lacks: {missing}"
    for english, translated in catalog.items():
        for form in forms(translated):
            assert form.strip(), (lang, english)
            assert sorted(PLACEHOLDER.findall(english)) == sorted(PLACEHOLDER.findall(form)), (lang, english)


def forms(entry) -> list[str]:
    """A catalog entry's texts: a plural entry's forms by CLDR category ("other" always among them)."""
    if isinstance(entry, dict):
        assert "other" in entry and set(entry) <= {"zero", "one", "two", "few", "many", "other"}, entry
        return list(entry.values())
    return [entry]


@pytest.mark.parametrize("lang", ["en", "it", "id"])
def test_a_plural_entry_counts_its_n_by_the_languages_rules(lang):
    from babel import Locale

    plurals = {k: v for k, v in i18n.catalog(lang).items() if isinstance(v, dict)}
    assert plurals or lang == "id", lang  # Indonesian tells no counts apart
    for english, entry in plurals.items():
        assert "{n}" in english, english
        one = entry.get(Locale.parse(lang).plural_form(1), entry["other"])
        assert i18n.gettext(english, lang, n=1, total=4) == one.format(n=1, total=4)
        assert i18n.gettext(english, lang, n=2, total=4) == entry["other"].format(n=2, total=4)
        assert i18n.gettext(english, lang, n=10**6, total=4) == entry["other"].format(n=10**6, total=4)  # not "many"


def test_english_has_plural_forms_only_in_its_own_catalog():
    assert all(isinstance(v, dict) for v in i18n.catalog("en").values())
    assert (
        i18n.gettext("{n} learners", "en", n=1) == "1 learner"
        and i18n.gettext("{n} learners", "en", n=2) == "2 learners"
    )


def visible_text(page: str) -> str:
    page = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize("lang", ["it", "id"])
@pytest.mark.parametrize("path", ["/", "/lessons/autocast"])
def test_a_page_in_another_language_shows_no_english_interface_string(client, csrf, lang, path):
    client.post("/lang", data={"lang": lang, "next": "/", "csrf_token": csrf(client)["X-CSRF-Token"]})
    page = client.get(path).get_data(as_text=True)
    assert f'<html lang="{lang}">' in page
    text = " ".join(visible_text(page).split())
    catalog = i18n.catalog(lang)
    left = [e for e in ui_strings() if " " in e and not PLACEHOLDER.search(e) and catalog.get(e) != e and e in text]
    assert not left, f"English left on {path} in {lang}: {left}"
    assert i18n.gettext("Lessons", lang) in text
