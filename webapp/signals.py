"""What happened, for whoever listens (blinker signals, as Flask's own): the core sends, extensions such as
webapp.lti connect, and the core never imports them."""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()

# A submission's grading was stored: sender None, with db, row (the submission as stored), result and config.
graded = _signals.signal("graded")

# The verdicts an exam held back are visible to their learners from `at` on (UTC seconds: the window's close when a
# window that holds them is saved; the time of the change when an instructor's change ends the hold early): sender
# None, with db, course_id, lessons (the exam's; None: all of the course's), at and config (None: from a caller
# without the app, whose listeners then have no queue to use). A listener may hear of one release more than once.
released = _signals.signal("released")
