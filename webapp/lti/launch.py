"""The LTI 1.3 launch (OIDC third-party login initiation, then the platform's form post of an id_token), checked by
pylti1p3 (signature against the platform's key set, iss, aud, deployment id, exp) plus what the library leaves
out: the nonce is used once (a row in lti_nonces that the launch deletes; the library's session check keeps it),
and an unknown kid refetches the platform's key set once (the library's cache never does)."""

from __future__ import annotations

import json
import logging
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import request, session
from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskOIDCLogin, FlaskRequest
from pylti1p3.exception import LtiException
from pylti1p3.session import SessionService

from webapp import security
from webapp.lti import platforms

log = logging.getLogger("amp_dojo.lti")
NONCE_LIFETIME_S = 600
LOGIN_PARAMS = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")
FRAME_FLAG = security.FRAMED  # in the session: it may be read inside an LMS's iframe


class NonceStore(SessionService):
    """The library's session service, whose nonce lives in the database instead: written by the login route,
    and taken (deleted) by the one launch that uses it."""

    def __init__(self, flask_request, db):
        super().__init__(flask_request)
        self.db = db

    def save_nonce(self, nonce: str):
        pass  # the login route stores it with its state and parameters (remember_login)

    def check_nonce(self, nonce: str) -> bool:
        now = time.time()
        self.db.execute("DELETE FROM lti_nonces WHERE expires_at < ?", (now,))
        return self.db.execute("DELETE FROM lti_nonces WHERE nonce = ?", (nonce,)).rowcount == 1


class ToolLaunch(FlaskMessageLaunch):
    """A launch whose platform key set is read from, and refetched into, the database."""

    def __init__(self, db, tool_config):
        flask_request = FlaskRequest()
        super().__init__(flask_request, tool_config, session_service=NonceStore(flask_request, db))
        self.db = db
        self.refetched = False
        self.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})

    def get_public_key(self):
        reg = self._registration
        if reg.get_key_set() is None:
            reg.set_key_set(platforms.refetch_key_set(self.db, reg.platform_id, reg.get_key_set_url()))
            self.refetched = True
        try:
            return super().get_public_key()
        except LtiException as exc:
            if self.refetched or "Unable to find public key" not in str(exc):
                raise
        self.refetched = True  # the platform may have rotated its key: its key set, once more
        reg.set_key_set(platforms.refetch_key_set(self.db, reg.platform_id, reg.get_key_set_url()))
        return super().get_public_key()


def login_redirect(db, launch_url: str):
    """The redirect to the platform's authorization endpoint, its nonce remembered with the login's parameters."""
    session[FRAME_FLAG] = True
    oidc = FlaskOIDCLogin(FlaskRequest(), platforms.DatabaseToolConf(db))
    redirect = oidc.get_redirect_object(launch_url)
    query = parse_qs(urlsplit(redirect.get_redirect_url()).query)
    params = {k: request.values[k] for k in LOGIN_PARAMS if request.values.get(k)}
    db.execute(
        "INSERT INTO lti_nonces (nonce, state, login, expires_at) VALUES (?, ?, ?, ?)",
        (query["nonce"][0], query["state"][0], json.dumps(params), time.time() + NONCE_LIFETIME_S),
    )
    return redirect.do_redirect()


def new_window_link(db, login_url: str) -> str | None:
    """Where a launch whose cookies the browser blocked can start again at the top level (a new window): the
    same login, from the parameters remembered under the launch's state."""
    state = request.form.get("state", "")
    row = db.execute("SELECT login FROM lti_nonces WHERE state = ?", (state,)).fetchone() if state else None
    if row is None:
        return None
    return login_url + "?" + urlencode({**json.loads(row["login"]), "lti1p3_new_window": "1"})


def cookie_blocked() -> bool:
    """The launch carries none of the login's cookies: the state cookie pylti1p3 set did not come back."""
    state = request.form.get("state", "")
    return bool(state) and not request.cookies.get("lti1p3-" + state)


def validated(db):
    """The launch, validated, or LtiException."""
    launch = ToolLaunch(db, platforms.DatabaseToolConf(db))
    launch.get_launch_data()  # validates
    return launch
