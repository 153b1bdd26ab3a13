"""docs/authoring.md's event table is what an author writes a lesson check from: every kind of event the
worker records must be there with its fields, and every attribute of `ev` in the evidence table."""

import ast
import dataclasses
import re

from conftest import ROOT

from grader.checks.lesson import LessonEvidence

AUTHORING = (ROOT / "docs" / "authoring.md").read_text()


def emitted_kinds() -> set[str]:
    """The first argument of every `….emit("kind", …)` call in the in-sandbox package."""
    kinds = set()
    for path in (ROOT / "grader" / "worker").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "emit"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                kinds.add(node.args[0].value)
    return kinds


def documented_kinds() -> set[str]:
    section = AUTHORING.split("Every event is a dict with `ev`", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {kind for row in rows for kind in re.findall(r"`([a-z0-9_]+)`", row)}


def test_the_worker_emits_events_the_authoring_table_can_be_read_from():
    assert len(emitted_kinds()) > 20  # the AST walk finds the calls


def test_every_event_kind_the_worker_records_is_in_the_authoring_table():
    assert emitted_kinds() - documented_kinds() == set(), "event kinds missing from docs/authoring.md's table"


def test_every_evidence_attribute_is_in_the_authoring_table():
    section = AUTHORING.split("| attribute | what |", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"`ev\.([a-z_]+)", section))
    fields = {f.name for f in dataclasses.fields(LessonEvidence)}
    assert fields - documented == set(), "ev attributes missing from docs/authoring.md's evidence table"
