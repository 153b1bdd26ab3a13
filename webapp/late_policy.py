"""A course's late policy and the one function that turns a raw score into the score that counts, `counted_score`;
webapp/deadlines.py counted_scores applies it to a learner's lesson for every page and the LMS passback alike.

Three policies (docs/classroom.md, "Late work"):
- `accept`: a late submission counts in full; it is only marked late;
- `penalty`: each started day (24 hours) after the deadline takes `per_day` of the score, down to `floor` (a
  fraction of the raw score): one second late is one day late;
- `cutoff`: the deadline is a hard cutoff; a submission after it counts zero.
A submission exactly at the deadline is on time. Moments are compared as instants: a float is a POSIX timestamp,
a datetime must say its time zone (a naive one is refused: whose midnight would it be?)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from webapp.i18n import noop_gettext

KINDS = ("accept", "penalty", "cutoff")
DAY_S = 86400.0
NAMES = {
    "accept": noop_gettext("Late work is accepted and marked late."),
    "penalty": noop_gettext(
        "Late work loses {per_day}% of its score for each started day after the deadline, down to {floor}% of it."
    ),
    "cutoff": noop_gettext("The deadline is a hard cutoff: work submitted after it counts zero."),
}


class PolicyError(ValueError):
    """A policy that cannot be applied (said to the instructor who set it)."""


@dataclass(frozen=True)
class LatePolicy:
    kind: str = "accept"
    per_day: float = 0.0  # penalty: the fraction of the raw score lost per started day late, 0..1
    floor: float = 0.0  # penalty: the least fraction of the raw score a late submission keeps, 0..1

    def __post_init__(self):
        if self.kind not in KINDS:
            raise PolicyError(noop_gettext("A late policy is one of accept, penalty or cutoff."))
        for value in (self.per_day, self.floor):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1):
                raise PolicyError(noop_gettext("A penalty and its floor are percentages from 0 to 100."))

    def words(self) -> tuple[str, dict]:
        """The policy as the learner and the instructor read it: a catalog key and its values."""
        return NAMES[self.kind], {"per_day": _pct(self.per_day), "floor": _pct(self.floor)}


def _pct(fraction: float) -> str:
    return f"{fraction * 100:g}"


def instant(moment: float | datetime) -> float:
    """A moment as a POSIX timestamp; a datetime without a time zone is refused rather than guessed."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError("a deadline or a submission time needs its time zone")
        return moment.timestamp()
    return float(moment)


def days_late(submitted_at: float | datetime, deadline: float | datetime | None) -> int:
    """Started days (24 hours each) after the deadline: 0 up to and at it, 1 from one second after."""
    if deadline is None:
        return 0
    late_s = instant(submitted_at) - instant(deadline)
    return 0 if late_s <= 0 else math.ceil(late_s / DAY_S)


def counted_score(
    raw: float | None, submitted_at: float | datetime, deadline: float | datetime | None, policy: LatePolicy
) -> float | None:
    """The score that counts for a submission graded `raw` (0..1), made at `submitted_at`, for a learner whose
    deadline (their extension's, if they have one) is `deadline` (None: no deadline, never late)."""
    if raw is None:
        return None
    late = days_late(submitted_at, deadline)
    if late == 0 or policy.kind == "accept":
        return raw
    if policy.kind == "cutoff":
        return 0.0
    kept = max(policy.floor, 1.0 - policy.per_day * late)
    return raw * kept


def best_counted(graded: list[tuple[float | None, float]], deadline: float | None, policy: LatePolicy) -> float | None:
    """The best counted score of one learner's graded submissions of a lesson ((raw, submitted_at) pairs): an
    on-time 0.8 beats a late 1.0 that a penalty took to 0.5."""
    scores = [counted_score(raw, at, deadline, policy) for raw, at in graded if raw is not None]
    return max(scores) if scores else None
