"""docs/authoring.md's table of finding ids is what an author writes `expect.findings`, `expect.absent` and a
lesson mutant's `caught_by` from: it must list every finding the grader's catalog can word, and nothing else."""

import re

from conftest import ROOT

from grader.lesson.check_specs import BUILT_IN_CHECKS
from grader.wording.catalog import EN


def table_rows() -> list[tuple[str, set[str]]]:
    """(check, the ids of its second column), a note in parentheses left out."""
    text = (ROOT / "docs" / "authoring.md").read_text()
    section = text.split("### Finding ids\n", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    return [
        (check.strip().strip("`"), set(re.findall(r"`([a-z0-9_]+)`", re.sub(r"\(.*?\)", "", ids))))
        for check, ids in rows
    ]


def test_every_finding_id_of_the_catalog_is_in_the_authoring_table_and_no_other():
    catalog = {key for key in EN if "." not in key and key not in ("layer", "text")}
    documented = set().union(*(ids for _, ids in table_rows()))
    assert catalog - documented == set(), "finding ids missing from docs/authoring.md's table"
    assert documented - catalog == set(), "docs/authoring.md lists finding ids the catalog does not have"


def test_each_row_of_the_finding_table_names_a_built_in_check():
    assert {check for check, _ in table_rows()} <= set(BUILT_IN_CHECKS)


def test_every_generic_mutant_is_in_the_authoring_table():
    from grader.authoring.mutants import MUTANTS

    text = (ROOT / "docs" / "authoring.md").read_text()
    section = text.split("## Mutants: proving the checks have power\n", 1)[1].split("\n#", 1)[0]
    listed = {line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")}
    assert {m.name for m in MUTANTS} == listed
