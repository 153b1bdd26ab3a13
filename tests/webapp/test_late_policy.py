"""The late policy's counted score (webapp/late_policy.py) at its boundaries, time zones included, and
extensions: one learner's deadline moves, nobody else's; the gradebook shows raw and counted scores."""

import csv
import io
import re
from datetime import datetime, timedelta, timezone

import pytest
from test_classroom import course, create_course, submit  # noqa: F401 - the course fixture
from webapp_testing import form, grade_as

from webapp.late_policy import LatePolicy, PolicyError, counted_score, days_late

DEADLINE = datetime(2030, 1, 31, 23, 59, 59, tzinfo=timezone.utc)
PENALTY = LatePolicy("penalty", per_day=0.1, floor=0.6)
ROME = timezone(timedelta(hours=1))  # CET, January
JAKARTA = timezone(timedelta(hours=7))


@pytest.mark.parametrize(
    ("late_by", "accept", "penalty", "cutoff"),
    [
        (timedelta(0), 0.8, 0.8, 0.8),  # exactly at the deadline: on time
        (timedelta(seconds=-1), 0.8, 0.8, 0.8),
        (timedelta(seconds=1), 0.8, 0.72, 0.0),  # one second late is one started day
        (timedelta(days=1), 0.8, 0.72, 0.0),  # 24 hours late: still the first day
        (timedelta(days=1, seconds=1), 0.8, 0.64, 0.0),  # the second day starts
        (timedelta(days=4), 0.8, 0.48, 0.0),  # 1 - 4 * 0.1 = 0.6: at the floor
        (timedelta(days=30), 0.8, 0.48, 0.0),  # never below the floor
    ],
)
def test_each_policy_counts_the_documented_score_at_the_boundaries(late_by, accept, penalty, cutoff):
    at = DEADLINE + late_by
    assert counted_score(0.8, at, DEADLINE, LatePolicy("accept")) == pytest.approx(accept)
    assert counted_score(0.8, at, DEADLINE, PENALTY) == pytest.approx(penalty)
    assert counted_score(0.8, at, DEADLINE, LatePolicy("cutoff")) == pytest.approx(cutoff)
    assert counted_score(0.8, at.timestamp(), DEADLINE.timestamp(), PENALTY) == pytest.approx(penalty)


def test_moments_in_other_time_zones_are_the_same_instants():
    in_rome = DEADLINE.astimezone(ROME)  # 2030-02-01 00:59:59+01:00: the same instant, another calendar day
    assert in_rome.day == 1 and days_late(in_rome, DEADLINE) == 0
    assert days_late(DEADLINE.astimezone(JAKARTA) + timedelta(seconds=1), DEADLINE) == 1
    assert counted_score(1.0, in_rome + timedelta(seconds=1), DEADLINE, LatePolicy("cutoff")) == 0.0
    with pytest.raises(ValueError):  # a naive time is nobody's: refused, not guessed
        counted_score(1.0, DEADLINE.replace(tzinfo=None), DEADLINE, PENALTY)


def test_no_deadline_or_no_score_counts_as_it_is():
    assert counted_score(0.5, DEADLINE + timedelta(days=9), None, LatePolicy("cutoff")) == 0.5
    assert counted_score(None, DEADLINE, DEADLINE, PENALTY) is None
    with pytest.raises(PolicyError):
        LatePolicy("penalty", per_day=1.5)
    with pytest.raises(PolicyError):
        LatePolicy("lenient")


def submit_at(app, client, when: float) -> str:
    """A submission made at `when` (its stored time moved there before it is graded)."""
    from webapp.db import connect

    sid = submit(client)
    with connect(app.config["DATABASE"]) as db:
        db.execute("UPDATE submissions SET created_at = ? WHERE id = ?", (when, sid))
    return sid


def test_an_extension_moves_one_learners_deadline_only_and_the_gradebook_counts_by_it(app, course):  # noqa: F811
    teacher, url = course["teacher"], course["url"]
    ada, bob = course["learners"]["ada"], course["learners"]["bob"]
    late = datetime(2030, 2, 2, 12, tzinfo=timezone.utc).timestamp()  # 2 started days after grad_scaler's deadline
    for client in (ada, bob):
        grade_as(app, submit_at(app, client, late), "pass", score=1.0)
    assert form(teacher, url + "/late-policy", {"kind": "penalty", "per_day": "10", "floor": "50"}).status_code == 303
    html = teacher.get(url).get_data(as_text=True)
    ada_page = re.search(r'<tr data-username="ada">\s*<th scope="row"><a href="([^"]+)"', html).group(1)
    response = form(
        teacher,
        ada_page + "/extensions",
        {"lesson": "grad_scaler", "deadline": "2030-02-05", "note": "ill, doctor's note"},
    )
    assert response.status_code == 303
    rows = {
        r["username"]: r
        for r in csv.DictReader(io.StringIO(teacher.get(url + "/gradebook.csv").get_data(as_text=True)))
    }
    assert rows["ada"]["grad_scaler deadline"].startswith("2030-02-05T23:59:59")
    assert rows["bob"]["grad_scaler deadline"].startswith("2030-01-31T23:59:59")
    assert (rows["ada"]["grad_scaler counted score"], rows["ada"]["grad_scaler late"]) == ("1.0000", "no")
    assert (rows["bob"]["grad_scaler counted score"], rows["bob"]["grad_scaler late"]) == ("0.8000", "yes")
    assert rows["ada"]["grad_scaler extended"] == "yes" and rows["bob"]["grad_scaler extended"] == "no"
    assert rows["bob"]["grad_scaler best score"] == "1.0000"
    mine = ada.get(url.replace("/teach", "")).get_data(as_text=True)
    assert 'data-testid="extended"' in mine and "Feb\u00a05,\u00a02030" in mine and "10%" in mine
    assert "doctor" not in mine  # the note is the instructor's
    assert 'data-testid="extended"' not in bob.get(url.replace("/teach", "")).get_data(as_text=True)
