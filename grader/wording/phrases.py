"""A check's measured values against its thresholds, in words a learner reads
("update vs FP32 0.43%, needs at most 5.00%"), instead of the result
document's keys. The web app, the terminal report and the notebook all show
these rows: this is the one place that words them, through the message
catalog (grader/wording/catalog.py), in the learner's language. The report's own
phrases (badges, stages, the summary line) are worded here too; how any of
it is laid out is grader/wording/report.py's and amp_dojo/html.py's business."""

from __future__ import annotations

from dataclasses import asdict

from grader.results import ERROR, FAIL, NOT_APPLICABLE, PASS, CheckResult
from grader.wording.catalog import EN, Said, render, say, value_in
from grader.wording.locales import fixed, number, percent


def pct(value: float, lang: str = "en") -> str:
    return percent(value, lang, 2 if abs(value) < 0.1 else 1)


def amount(n: float) -> Said:
    """`n` bytes as a message ("1.5 MiB"), for a check to pass as a parameter of its own message: the figure is
    written with the learner's decimal symbol when that message is ("1,5 MiB" in Italian), not in English now."""
    return say("size.mib", amount=n / 2**20) if abs(n) >= 102400 else say("size.kib", amount=n / 1024)


def size(n: float, lang: str = "en") -> str:
    """`n` bytes in words, in `lang`: "1.5 MiB", "1,5 MiB"."""
    said = amount(n)
    return render(said.key, said.params, lang)


def _parity(m: dict, t: dict, say, lang: str) -> list[tuple]:
    rows = []
    if "max_loss_rel_diff" in m:
        rows.append(
            (
                say("measure.loss"),
                say("measure.at_step", value=pct(m["max_loss_rel_diff"], lang), step=m.get("at_step")),
                say("measure.at_most", x=pct(t["loss_rtol"], lang)) if "loss_rtol" in t else None,
            )
        )
    if m.get("max_update_rel_diff") is not None:
        name = say("measure.update_worst", name=m["worst_param"]) if m.get("worst_param") else say("measure.update")
        rows.append(
            (
                name,
                pct(m["max_update_rel_diff"], lang),
                say("measure.at_most", x=pct(t["update_rtol"], lang)) if "update_rtol" in t else None,
            )
        )
    return rows


def _coverage(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if "fraction_16bit" not in m:
        return []
    rows = [
        (
            say("measure.fraction_16bit"),
            pct(m["fraction_16bit"], lang),
            say("measure.at_least", x=pct(t["min_fraction"], lang)) if "min_fraction" in t else None,
        )
    ]
    if "distance_toward_amp" in m and m.get("distance_to_fp32", 1) <= m.get("distance_near", 0):
        rows.append((say("measure.toward_amp"), pct(m["distance_toward_amp"], lang), say("measure.toward_amp_needs")))
    return rows


def _memory(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if "ratio" not in m:
        return []
    rows = [
        (
            say("measure.peak"),
            say("measure.peak_value", size=size(m["peak_bytes"], lang), ratio=pct(m["ratio"], lang)),
            say("measure.at_most", x=pct(t["max_ratio"], lang)) if "max_ratio" in t else None,
        )
    ]
    if m.get("retained_bytes_per_step"):
        most = max(max(m["retained_bytes_per_step"]), 0)
        rows.append(
            (
                say("measure.kept"),
                size(most, lang),
                say("measure.at_most", x=size(t["max_retained_bytes_per_step"], lang))
                if "max_retained_bytes_per_step" in t
                else None,
            )
        )
    return rows


def _overflow(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if "params_changed" not in m:
        return []
    scales = (
        "?"
        if m.get("scale_before") is None or m.get("scale_after") is None
        else f"{number(m['scale_before'], lang, 'g')} → {number(m['scale_after'], lang, 'g')}"
    )
    return [
        (say("measure.overflow_changed", step=m["step"]), str(m["params_changed"]), say("measure.none")),
        (say("measure.scale"), scales, say("measure.lower_after")),
    ]


def _speedup(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if "speedup" not in m:
        return []
    return [
        (
            say("measure.speedup"),
            say(
                "measure.speedup_value",
                ratio=fixed(m["speedup"], lang),
                low=fixed(m["ci95_low"], lang),
                high=fixed(m["ci95_high"], lang),
                rounds=m["rounds"],
            ),
            say("measure.lower_bound", x=fixed(t["min_speedup"], lang)) if "min_speedup" in t else None,
        )
    ]


def _ranks(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if m.get("max_rank_update_rel_diff") is None:
        return []
    return [
        (
            say("measure.rank_update", name=m.get("worst_param") or "-", rank=m.get("worst_rank")),
            number(m["max_rank_update_rel_diff"], lang, ".2g"),
            say("measure.at_most", x=number(t["update_rtol"], lang, "g")) if "update_rtol" in t else None,
        )
    ]


def _bottleneck(m: dict, t: dict, say, lang: str) -> list[tuple]:
    if m.get("names") is None:
        return []
    return [
        (
            say("measure.named", answer="BOTTLENECKS"),
            ", ".join(m["names"]) or say("measure.none"),
            ", ".join(t.get("names", [])) or say("measure.none"),
        )
    ]


def _counted(key: str, mine: str, given: str):
    def rows(m: dict, t: dict, say, lang: str) -> list[tuple]:
        if mine not in m:
            return []
        limit = t.get("max_per_step", t.get("max_float32_per_step"))
        out = [
            (
                say(key),
                say("measure.with_given", n=m[mine], given=m.get(given, "?")),
                say("measure.at_most", x=limit) if limit is not None else None,
            )
        ]
        if "toward_reference" in m:
            out.append(
                (say("measure.toward_reference"), pct(m["toward_reference"], lang), say("measure.toward_amp_needs"))
            )
        return out

    return rows


def _step_time(m: dict, t: dict, say, lang: str) -> list[tuple]:
    return [(say("measure.step_time"), value, needs) for _, value, needs in _speedup(m, t, say, lang)]


ROWS = {
    "parity": _parity,
    "coverage": _coverage,
    "memory": _memory,
    "overflow": _overflow,
    "speedup": _speedup,
    "ranks": _ranks,
    "bottleneck": _bottleneck,
    "host_syncs": _counted("measure.syncs", "per_step", "given_per_step"),
    "matmul_dtypes": _counted("measure.float32_matmuls", "float32_per_step", "given_float32_per_step"),
    "transfers": _counted("measure.copies", "per_step", "given_per_step"),
    "step_time": _step_time,
}


def measured_rows(check: CheckResult | dict, lang: str = "en") -> list[tuple[str, str, str | None]]:
    """(what, measured, what is needed) per figure of the check, worded in `lang`: ('loss vs FP32',
    '0.43% (step 3)', 'needs at most 2.00%')."""
    c = asdict(check) if isinstance(check, CheckResult) else check
    fn = ROWS.get(c.get("id"))
    if fn is None:
        return []
    rows = fn(c.get("measured") or {}, c.get("threshold") or {}, lambda key, **p: render(key, p, lang), lang)
    return [
        (name, value, render("measure.needs", {"x": needs}, lang) if needs else None) for name, value, needs in rows
    ]


def measured_in_words(check: CheckResult | dict, lang: str = "en") -> list[str]:
    """One line per figure: 'loss vs FP32 0.43% (step 3), needs at most 2.00%'."""
    return [f"{name} {value}" + (f", {needs}" if needs else "") for name, value, needs in measured_rows(check, lang)]


def _finding(f: dict, lang: str) -> dict:
    text = f.get("text") or {}
    out = dict(f)
    if text.get("message"):
        out["message"] = value_in(text["message"], lang)
    if text.get("fix"):
        out["fix"] = value_in(text["fix"], lang)
    return out


def _parts(doc: dict, lang: str) -> str:
    return " ".join(str(value_in(p, lang)) for p in doc["parts"]) if doc.get("parts") else doc.get("message", "")


def localized(result: dict, lang: str) -> dict:
    """A result document (docs/results.md) with every message the grader worded in `lang`, and each check's
    figures as rows (`measured_words`: [what, measured, needed]); ids, numbers and the learner's output stay as
    they are."""
    doc = dict(result)
    doc["checks"] = [
        {
            **c,
            "message": _parts(c, lang),
            "findings": [_finding(f, lang) for f in c.get("findings", [])],
            "measured_words": [list(r) for r in measured_rows(c, lang)],
        }
        for c in result.get("checks", [])
    ]
    doc["notes"] = [_finding(f, lang) for f in result.get("notes", [])]
    if result.get("error"):
        doc["error"] = {**result["error"], "message": _parts(result["error"], lang)}
    doc["lang"] = lang
    return doc


# -- the report's own phrases (the terminal report, grader hint/quiz, the notebook), from the same catalog ------


def phrase(key: str, lang: str = "en", **params) -> str:
    return render(key, params, lang)


def verdict(status: str, lang: str = "en") -> str:
    return phrase(f"report.verdict.{status}", lang)


def check_name(check_id: str, lang: str = "en", titles: dict | None = None) -> str:
    """A check as a learner reads its name: the built-in ones from the catalog, a lesson's own by its title (in
    `titles`), else its id (which stays in the result document for tools)."""
    key = f"check_name.{check_id}"
    if key in EN:
        return phrase(key, lang)
    return (titles or {}).get(check_id) or check_id


def error_heading(kind: str, lang: str = "en") -> str:
    """What a failed run's error kind means, as the web app heads it."""
    key = f"report.kind.{kind}"
    return phrase(key, lang) if key in EN else phrase("report.kind.other", lang, kind=kind)


def error_in_words(error: dict, lang: str = "en") -> str:
    """The error's message in `lang`, without the "line N: " the runner puts before it: the report shows the
    line itself (file:line, or a line of the notebook cell)."""
    parts = error.get("parts") or []
    if len(parts) == 1 and parts[0].get("key") == "error.at_line":
        return str(value_in((parts[0].get("params") or {}).get("message", ""), lang))
    if parts:
        return " ".join(str(value_in(p, lang)) for p in parts)
    message, line = error.get("message", ""), error.get("line")
    prefix = f"line {line}: "
    return message[len(prefix) :] if line and message.startswith(prefix) else message


def stage_in_words(stage: str, info: dict, lang: str = "en") -> str:
    """A progress event of runner.run(), as a learner follows it."""
    if stage in ("steps", "step"):
        return phrase(f"stage.{stage}", lang, n=info.get("n", "?"), total=info.get("total", "?"))
    if stage in ("timing", "timing_given"):
        if not info.get("rounds"):
            return phrase(f"stage.{stage}", lang)
        text = phrase(f"stage.{stage}_round", lang, n=info["rounds"])
        speed = info.get("speedup")
        return text + (", " + phrase("stage.so_far", lang, x=fixed(speed, lang)) if isinstance(speed, float) else "")
    if stage == "check":
        return phrase(
            "stage.check", lang, check=info.get("check", "?"), verdict=verdict(info.get("status", "error"), lang)
        )
    key = f"stage.{stage}"
    return phrase(key, lang) if key in EN else stage


def counts_in_words(doc: dict, lang: str = "en") -> str:
    """ "2 failed, 1 passed, 1 not applicable": the checks of a result document, in the order a learner acts on
    them."""
    order = (FAIL, ERROR, PASS, NOT_APPLICABLE)
    counts = {s: sum(c["status"] == s for c in doc.get("checks", [])) for s in order}
    return ", ".join(phrase(f"report.count.{s}", lang, n=counts[s]) for s in order if counts[s])


def summary_in_words(doc: dict, lang: str = "en", wall_s: float | None = None) -> str:
    """The closing line of a result document: the verdict, what the checks said, the score and the time the
    grading took (with `wall_s`, the whole command's time too: it also started the sandbox and PyTorch)."""
    syntax = doc["status"] == ERROR and (doc.get("error") or {}).get("kind") == "syntax"  # it never ran
    parts = [phrase("report.summary.syntax" if syntax else f"report.summary.{doc['status']}", lang)]
    if counts := counts_in_words(doc, lang):
        parts.append(counts)
    took = fixed(doc["duration_s"], lang, 1)
    parts.append(phrase("report.score", lang, n=round(doc["score"] * 100)))
    if wall_s is None:
        parts.append(phrase("report.took", lang, seconds=took))
    else:
        parts.append(
            phrase("report.took_wall", lang, seconds=took, wall=fixed(max(wall_s, doc["duration_s"]), lang, 1))
        )
    return " · ".join(parts)
