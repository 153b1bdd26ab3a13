"""LTI 1.3 Advantage: AMP Dojo as a tool inside an LMS (Canvas, Moodle, ...). Its own package, kept out of the
grader and the classroom core (an import contract in pyproject.toml): it reads and links their records, and hears
of gradings and of exam results released through webapp.signals, never the other way round.

    platforms.py   the registered platforms, and pylti1p3's tool configuration over them
    keys.py        the tool's signing keys (JWKS, rotation by kid)
    launch.py      OIDC login initiation and the launch's checks (nonce used once, key set refetched once)
    identity.py    (issuer, sub) -> account, (issuer, deployment, context) -> course, roles
    scores.py      Assignment and Grade Services: line items, the score each learner's lesson should have, its task
    roster.py      Names and Role Provisioning: the course roster
    views.py       the routes (a blueprint), the setup page and the deep-linking chooser
    commands.py    `amp-dojo lti ...`"""

from __future__ import annotations

import threading


def init_app(app) -> None:
    from webapp import signals
    from webapp.lti import scores, views

    app.register_blueprint(views.bp)
    views.exempt_from_csrf(app)
    app.after_request(views.frame_headers)
    signals.graded.connect(scores.on_graded, weak=False)
    signals.released.connect(scores.on_released, weak=False)
    app.extensions["amp_dojo_lti_queue"] = queue = scores.score_queue(app.config)
    queue.app = app
    app.before_request(lambda: start_score_thread(app))


_lock = threading.Lock()


def start_score_thread(app) -> None:
    """The scores' task runner, started by each app process's first request (not under TESTING: tests run the
    tasks themselves)."""
    if app.testing or "amp_dojo_lti_thread" in app.extensions:
        return
    with _lock:
        if "amp_dojo_lti_thread" not in app.extensions:
            from webapp.lti.scores import ScoreThread

            app.extensions["amp_dojo_lti_thread"] = thread = ScoreThread(app.config)
            thread.start()
