"""The first line `grader check` prints, before anything else is imported: the grader's own modules, the lesson
format (pydantic) and then PyTorch take seconds to load on a slow machine, and a terminal that stays blank that
long looks hung. Standard library only, so its three languages live here rather than in the message catalog
(grader/wording/catalog.py), which takes longer to import than this line may wait. On a terminal only: a pipe, a
file or --json gets the report alone."""

from __future__ import annotations

import os
import sys

SAYS = {
    "en": "grader check: {file} (lesson {lesson})",
    "it": "grader check: {file} (lezione {lesson})",
    "id": "grader check: {file} (pelajaran {lesson})",
}
TAKES_VALUE = {"--format", "--output", "-o", "--color", "--device", "--sandbox", "--limit", "--lang"}
QUIET = {"--json", "--format", "--help", "-h"}
LOCALE_ENV = ("LC_ALL", "LC_MESSAGES", "LANG")  # as grader.cli.options.locale_language reads them


def _language(options: dict, environ) -> str:
    """--lang, else AMP_DOJO_LANG, else the locale, else English (grader.cli.options.chosen_language's order)."""
    if options.get("--lang") in SAYS:
        return options["--lang"]
    if (value := environ.get("AMP_DOJO_LANG", "").strip().lower()) in SAYS:
        return value
    for name in LOCALE_ENV:
        if value := environ.get(name, "").strip():
            code = value.split(".")[0].split("@")[0].split("_")[0].split("-")[0].lower()
            return code if code in SAYS else "en"
    return "en"


def _parse(args: list[str]) -> tuple[list[str], dict]:
    positional, options, i = [], {}, 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in TAKES_VALUE and not eq:
            options[name] = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif arg.startswith("-"):
            options[name] = value
        else:
            positional.append(arg)
        i += 1
    return positional, options


def announce(argv: list[str] | None = None, stream=None, environ=None) -> bool:
    """Says which file is graded against which lesson, at once, where a learner watches a terminal; True if it
    did."""
    argv = sys.argv if argv is None else argv
    stream = sys.stderr if stream is None else stream
    if len(argv) < 2 or argv[1] != "check":
        return False
    positional, options = _parse(argv[2:])
    if len(positional) < 2 or QUIET & options.keys() or not stream.isatty():
        return False
    lang = _language(options, os.environ if environ is None else environ)
    print(SAYS[lang].format(file=positional[1], lesson=positional[0]), file=stream, flush=True)
    return True
