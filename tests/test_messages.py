"""The grader's message catalog: every message exists in every language with
the same parameters, renders with the parameters the checks pass, and a
result is shown in the learner's language from one source of wording."""

import json
import string
from dataclasses import asdict
from pathlib import Path

import pytest

from grader.results import CheckResult, finding, message_of
from grader.wording import catalog
from grader.wording.catalog import EN, Said, render, say
from grader.wording.phrases import localized, measured_in_words

TRANSLATIONS = Path(catalog.__file__).parent / "translations"
FORMATTER = string.Formatter()


def fields(template) -> set[str]:
    """A template's parameters; a plural entry's are its "other" form's, and every form must have them."""
    if isinstance(template, dict):
        assert "other" in template and set(template) <= {"zero", "one", "two", "few", "many", "other"}, template
        forms = [fields(form) for form in template.values()]
        assert all(f == forms[0] for f in forms), template
        return forms[0]
    return {name for _, name, _, _ in FORMATTER.parse(template) if name}


def forms(template) -> list[str]:
    return list(template.values()) if isinstance(template, dict) else [template]


@pytest.mark.parametrize("lang", ["it", "id"])
def test_every_message_is_translated_with_the_same_parameters(lang):
    catalog = json.loads((TRANSLATIONS / f"{lang}.json").read_text(encoding="utf-8"))
    assert set(catalog) == set(EN), {"missing": sorted(set(EN) - set(catalog)), "stale": sorted(set(catalog) - set(EN))}
    for key, english in EN.items():
        assert all(form.strip() for form in forms(catalog[key])), key
        assert fields(catalog[key]) == fields(english), (lang, key)


def sample(name: str):
    """A value of the kind each parameter name carries, so format specs like {dev:.1%} are exercised."""
    numeric = {
        "dev",
        "tol",
        "mine",
        "base",
        "loss",
        "update",
        "toward",
        "fraction",
        "min",
        "share",
        "ratio",
        "low",
        "high",
        "need",
        "seconds",
        "scale",
        "before",
        "after",
        "limit",
        "amount",
        "cores",
        "backed_off",
        "factor",
    }
    if name in numeric:
        return 0.123
    if name in {
        "n",
        "steps",
        "step",
        "off",
        "total",
        "rounds",
        "line",
        "losses",
        "backwards",
        "forwards",
        "updates",
        "status",
        "a",
        "b",
    }:
        return 3
    if name in {
        "layer",
        "first",
        "measured",
        "where",
        "problems",
        "findings",
        "message",
        "reason",
        "advice",
        "nth",
        "shape",
    }:
        return say("block_not_trained", layer=say("layer.module", name="model.0"))
    return "x"


@pytest.mark.parametrize("lang", ["en", "it", "id"])
def test_every_message_renders_in_every_language(lang):
    for key, english in EN.items():
        params = {name: sample(name) for name in fields(english)}
        text = render(key, params, lang)
        assert text != key, (lang, key)
        assert not any("{" + name in text for name in params), (lang, key, text)


def test_each_finding_has_a_fix():
    findings = [key for key in EN if "." not in key and key not in ("layer", "text")]
    assert len(findings) > 30 and "clip_without_unscale" in findings
    assert all(f"{key}.fix" in EN for key in findings), [k for k in findings if f"{k}.fix" not in EN]


def test_a_layer_is_named_in_the_learners_language():
    from grader.wording.layers import ordinal

    layer = say("layer", nth=ordinal(3), kind="Linear", name="model.2.0", shape=say("shape.features", a=256, b=256))
    assert str(layer) == "the third Linear layer (model.2.0, 256->256)"
    assert render("block_not_trained", {"layer": layer}, "it") == (
        "il terzo livello Linear (model.2.0, 256->256) non è mai stato addestrato"
    )
    assert render("layer", layer.params, "id") == "lapisan Linear ketiga (model.2.0, 256->256)"


def test_a_result_document_is_localized_from_its_message_keys():
    f = finding("loss_not_divided", 12, n=4)
    check = CheckResult("call_order", "fail", say("call_order.mistakes", n=2, first=message_of(f)), findings=[f])
    doc = {"checks": [json.loads(json.dumps(check.__dict__, default=lambda o: o.__dict__))], "notes": [], "error": None}
    italian = localized(doc, "it")
    c = italian["checks"][0]
    assert c["message"].startswith("2 errori nell'ordine delle chiamate AMP; il primo: la loss di ogni micro-batch")
    assert c["findings"][0]["message"] == render("loss_not_divided", {"n": 4}, "it")
    assert "loss / 4" in c["findings"][0]["fix"] and c["findings"][0]["id"] == "loss_not_divided"
    assert doc["checks"][0]["message"].startswith("2 mistakes in the order of AMP calls")  # the original is kept


def test_measured_figures_are_worded_once_for_every_language():
    check = CheckResult(
        "parity",
        "pass",
        say("parity.pass", steps=8, loss=0.001, update=0.004),
        {"max_loss_rel_diff": 0.001, "at_step": 3, "max_update_rel_diff": 0.004, "worst_param": "0.0.weight"},
        {"loss_rtol": 0.02, "update_rtol": 0.05},
    )
    assert measured_in_words(check) == [
        "loss vs FP32 0.10% (step 3), needs at most 2.00%",
        "update vs FP32 (worst: 0.0.weight) 0.40%, needs at most 5.00%",
    ]
    assert measured_in_words(check, "it")[0] == "loss rispetto a FP32 0,10% (step 3), richiesto: al massimo 2,00%"
    assert "0,40%" in measured_in_words(check, "id")[1] and "5,00%" in measured_in_words(check, "id")[1]


@pytest.mark.parametrize(
    ("lang", "one", "two"),
    [("en", "1 mistake in", "2 mistakes in"), ("it", "1 errore nell", "2 errori nell"), ("id", "1 ", "2 ")],
)
def test_a_count_message_takes_the_plural_form_of_its_count(lang, one, two):
    first = say("layer.module", name="model.0")
    assert render("call_order.mistakes", {"n": 1, "first": first}, lang).startswith(one)
    assert render("call_order.mistakes", {"n": 2, "first": first}, lang).startswith(two)


def test_a_plural_category_a_catalog_lacks_falls_back_to_other():
    assert render("report.count.pass", {"n": 1_000_000}, "it") == "1000000 superati"  # CLDR: "many" in Italian
    assert render("report.count.pass", {"n": 1}, "it") == "1 superato"


@pytest.mark.parametrize(("lang", "text"), [("en", "12.35%"), ("it", "12,35%"), ("id", "12,35%")])
def test_a_message_writes_its_figures_with_the_languages_decimal_symbol(lang, text):
    rendered = render("parity.pass", {"steps": 8, "loss": 0.12345, "update": 0.5}, lang)
    assert text in rendered and "8" in rendered


def test_a_message_with_wrong_parameters_is_data_not_an_exception():
    assert render("parity.loss", {"dev": "not a number"}, "it") == "parity.loss"
    assert render("no_such_key", {}, "it") == "no_such_key"
    assert str(Said.of({"en": "own words", "it": "parole mie"})) == "own words"
    assert render("text", {"text": {"en": "own words", "it": "parole mie"}}, "it") == "parole mie"


def test_unknown_message_keys_are_refused_where_they_are_written():
    with pytest.raises(KeyError):
        say("no_such_message")


def _stored(check: CheckResult) -> dict:
    """A check as a result document holds it: through JSON, as the web app stores it and reads it back."""
    return json.loads(json.dumps(asdict(check)))


LEAKING = [{"peak_bytes": 40 * 2**20, "retained_bytes": 3 * 2**19} for _ in range(4)]  # 1.5 MiB kept per step
BASELINE = [{"peak_bytes": 32 * 2**20, "retained_bytes": 0} for _ in range(4)]


@pytest.mark.parametrize(("lang", "point"), [("en", "."), ("it", ","), ("id", ",")])
def test_a_size_a_check_measures_is_written_in_the_learners_language(lang, point):
    from grader.checks import memory
    from grader.lesson.check_specs import MemoryCheck

    spec = MemoryCheck(id="memory", max_ratio={"cpu": 0.9})
    leak = memory.check(spec, "cpu", LEAKING, BASELINE)
    assert leak.status == "fail" and leak.findings[0].id == "memory_leak"
    shown = localized({"checks": [_stored(leak)], "notes": [], "error": None}, lang)["checks"][0]
    grow = f" 1{point}5 MiB "
    assert grow in shown["message"] and grow in shown["findings"][0]["message"], shown
    assert " 1.5 MiB " in leak.message  # the English text, kept for tools and logs

    kept = [{"peak_bytes": 40 * 2**20, "retained_bytes": 0} for _ in range(4)]
    peak = memory.check(spec, "cpu", kept, BASELINE)
    shown = localized({"checks": [_stored(peak)], "notes": [], "error": None}, lang)["checks"][0]
    assert f"40{point}0 MiB" in shown["message"] and f"32{point}0 MiB" in shown["message"], shown["message"]


@pytest.mark.parametrize(("lang", "size"), [("en", "1.5 KiB"), ("it", "1,5 KiB"), ("id", "1,5 KiB")])
def test_a_copys_size_is_written_in_the_learners_language(lang, size):
    from grader.checks import profiling
    from grader.lesson.check_specs import TransfersCheck

    def copies(n_bytes):
        events = [{"ev": "copy", "dir": "h2d", "op": "torch.tensor", "line": 5, "n": 1, "bytes": n_bytes}]
        return [{"step": i, "events": events} for i in range(3)]

    ev = profiling.ProfileEvidence("", "cuda", "bfloat16", copies(1536), copies(1536))
    result = profiling.transfers(TransfersCheck(id="transfers"), ev)
    assert result.findings and result.findings[0].id == "copy_to_device"
    shown = localized({"checks": [_stored(result)], "notes": [], "error": None}, lang)["checks"][0]
    assert f" {size} " in shown["findings"][0]["message"], shown["findings"][0]["message"]


def test_a_size_stored_as_words_by_an_older_grader_still_renders():
    """Results graded before sizes became messages hold the English words; they are shown as they are."""
    assert render("memory_leak", {"grow": "1.5 MiB"}, "it").startswith("ogni step ha lasciato allocati 1.5 MiB")


# Register slips a native reader notices (the learner trial found each): Indonesian addresses the learner with the
# formal "Anda" (never kamu or the -mu suffix) and writes formally ("memiliki", not "punya"), and a grading result is
# not a court's "putusan"; Italian says "tu" (no formal "Lei" imperative), and no "qui" after "questa lezione".
REGISTER_SLIPS = {
    "id": r"\b(kamu|kodemu|milikmu|dirimu|putusan|punya)\b|\b\w+(?<!il)(?<!te)(?<!ta)(?<!ra)(?<!ju)mu\b",
    "it": r"\b(per questa lezione qui|La preghiamo|prema|inserisca|scelga)\b|interruzion[ei]/",
}


@pytest.mark.parametrize("lang", ["it", "id"])
def test_the_catalogs_and_lessons_keep_the_learners_register(lang):
    import re

    root = TRANSLATIONS.parents[2]
    texts = {
        "grader": json.dumps(
            json.loads((TRANSLATIONS / f"{lang}.json").read_text(encoding="utf-8")), ensure_ascii=False
        ),
        "webapp": (root / "webapp" / "translations" / f"{lang}.json").read_text(encoding="utf-8"),
        **{p.name: p.read_text(encoding="utf-8") for p in (root / "exercises").glob("*.yaml")},
    }
    slips = {
        name: sorted(set(m.group(0) for m in re.finditer(REGISTER_SLIPS[lang], text, re.IGNORECASE)))
        for name, text in texts.items()
    }
    assert {name: found for name, found in slips.items() if found} == {}
