"""What happened, for whoever listens (blinker signals, as Flask's own): the core sends, extensions such as
webapp.lti connect, and the core never imports them."""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()

# A submission's grading was stored: sender None, with db, row (the submission as stored), result and config.
graded = _signals.signal("graded")
