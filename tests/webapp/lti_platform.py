"""A real LMS side for the LTI tests: lti1p3platform's classes (OIDC login, id_token signing, JWKS, token endpoint,
deep-linking responses) behind a small Flask app served on loopback in a thread, with the AGS (line items and
scores) and NRPS (a roster in pages, Link headers) endpoints such a platform serves. One per test module."""

from __future__ import annotations

import re
import threading
import time
from functools import lru_cache
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, jsonify, redirect, request
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from werkzeug.serving import make_server

CLIENT_ID = "amp-dojo-client"
DEPLOYMENT = "deployment-1"
CONTEXT = "course-101"
REGISTRATION_TOKEN = "registration-token-1"
ROLES = {
    "learner": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
    "instructor": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"],
}


def new_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


class QueryRequest(Request):
    def __init__(self, metadata):
        self.request = metadata


class PlatformConf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        self.lms = kwargs["lms"]

    def get_registration_by_params(self, **kwargs):
        return self.lms.registration()


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url):
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data, **kwargs):
        return launch_data


@lru_cache(maxsize=16)
def _loaded(private_pem: str):
    return serialization.load_pem_private_key(private_pem.encode(), password=None)


@lru_cache(maxsize=16)
def _kid(private_pem: str) -> str:
    return Registration.get_jwk(private_pem)["kid"]


class FastRegistration(Registration):
    """lti1p3platform's Registration, parsing each private key once per process instead of on every signature."""

    def get_kid(self):
        return _kid(self._platform_private_key)

    @staticmethod
    def encode_and_sign(payload, private_key, headers=None, expiration=None):
        key = _loaded(private_key) if isinstance(private_key, str) else private_key
        return Registration.encode_and_sign(payload, key, headers, expiration)

    def platform_encode_and_sign(self, payload, expiration=None):
        return self.encode_and_sign(payload, self._platform_private_key, {"kid": self.get_kid()}, expiration)


class Lms:
    """The platform: its state (keys, gradebook, roster, deep links) and its Flask app."""

    def __init__(self):
        self.keys = [new_key()]  # the signing key is the last; `published` says which the JWKS shows
        self.published = list(self.keys)
        self.tool = {}  # login, launch, deep_link URLs and the tool's key set
        self.deployment = DEPLOYMENT
        self.line_items: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.deep_links: list[dict] = []
        self.down = False
        self.registrations: list[dict] = []  # what tools posted to the dynamic registration endpoint
        self.issuer_claimed: str | None = None  # a configuration that names another issuer (a negative test)
        self.members = [
            {"user_id": f"m{i}", "name": f"Member {i}", "roles": ROLES["learner"], "status": "Active"} for i in range(3)
        ]
        self.app = self._make_app()
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()

    def rotate(self, keep_old: bool = True):
        self.keys.append(new_key())
        self.published = self.keys[-2:] if keep_old else self.keys[-1:]

    def registration(self) -> Registration:
        private, public = self.keys[-1]
        reg = FastRegistration().set_iss(self.url).set_client_id(CLIENT_ID).set_deployment_id(self.deployment)
        reg.set_oidc_login_url(self.tool["login"]).set_launch_url(self.tool["launch"])
        reg.set_deeplink_launch_url(self.tool["launch"])
        reg.set_platform_private_key(private).set_platform_public_key(public)
        reg.set_tool_key_set(self.tool["jwks"])
        return reg

    def conf(self):
        return PlatformConf(lms=self)

    def login_url(self, user: str, role: str, lesson: str | None = None, deep_link: bool = False) -> str:
        """The tool's login initiation URL the platform sends the browser to (third-party initiated login)."""
        hint = urlencode({"role": role, "lesson": lesson or "", "dl": "1" if deep_link else ""})
        login = Login(None, self.conf())
        login.set_lti_message_hint(hint=hint)
        return login.initiate_login(user)

    def id_token(self, auth_query: dict, **overrides) -> dict:
        """The platform's answer to the tool's authorization request: {id_token, state, launch_url}."""
        fake = QueryRequest(
            {
                "method": "GET",
                "form_data": {},
                "get_data": auth_query,
                "headers": {},
                "content_type": None,
                "path": "/authorize",
                "json": None,
            }
        )
        launch = Launch(fake, self.conf())
        hint = {k: v[0] for k, v in parse_qs(auth_query.get("lti_message_hint", "")).items()}
        user = auth_query["login_hint"]
        launch.set_user_data(
            user, ROLES[hint.get("role", "learner")], full_name=f"User {user}", email_address=f"{user}@lms.example"
        )
        launch.set_launch_context_claim(CONTEXT, context_title="Mixed precision 101")
        launch.set_resource_link_claim("link-" + (hint.get("lesson") or "home"))
        if hint.get("lesson"):
            launch.set_custom_parameters_claim({"lesson": hint["lesson"]})
        launch.set_ags(self.url + "/lineitems", allow_creating_lineitems=True)
        launch.set_nrps(self.url + "/memberships")
        if hint.get("dl"):
            launch.set_dl(self.url + "/deep_link_return", accept_types={"ltiResourceLink"})
        launch.set_id_token_expiration(overrides.pop("expiration", 300))
        launch.set_extra_claims(overrides)
        return launch.lti_launch()

    def _authorized(self, scope: str) -> bool:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        conf = self.conf()
        conf.get_registration()
        try:
            return conf.validate_token(token, allowed_scopes=[scope])
        except Exception:  # noqa: BLE001 - any bad token is a 401
            return False

    def _make_app(self) -> Flask:
        app = Flask("lms")
        ags, score_scope = (
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
            "https://purl.imsglobal.org/spec/lti-ags/scope/score",
        )
        nrps = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"

        @app.before_request
        def maybe_down():
            if self.down and request.path != "/course":
                return "down for maintenance", 503
            return None

        @app.get("/jwks")
        def jwks():
            return jsonify({"keys": [Registration.get_jwk(private) for private, _ in self.published]})

        @app.get("/authorize")
        def authorize():
            data = self.id_token(request.args.to_dict())
            fields = "".join(f'<input type="hidden" name="{k}" value="{data[k]}">' for k in ("id_token", "state"))
            return (
                f'<form id="f" method="post" action="{data["launch_url"]}">{fields}</form>'
                '<script>document.getElementById("f").submit()</script>'
            )

        @app.post("/token")
        def token():
            conf = self.conf()
            conf.get_registration()
            try:
                return jsonify(conf.get_access_token(request.form.to_dict()))
            except Exception as exc:  # noqa: BLE001 - the tool's assertion refused
                return jsonify(error=str(exc)), 400

        @app.route("/lineitems", methods=["GET", "POST"])
        def lineitems():
            if not self._authorized(ags):
                return "", 401
            if request.method == "GET":
                return jsonify(list(self.line_items.values()))
            item = {**request.get_json(force=True), "id": f"{self.url}/lineitems/{len(self.line_items) + 1}"}
            self.line_items[item["id"]] = item
            return jsonify(item), 201

        @app.post("/lineitems/<int:n>/scores")
        def scores(n):
            if not self._authorized(score_scope):
                return "", 401
            self.scores.append(
                {"lineitem": f"{self.url}/lineitems/{n}", **request.get_json(force=True), "received_at": time.time()}
            )
            return "", 204

        @app.get("/memberships")
        def memberships():
            if not self._authorized(nrps):
                return "", 401
            page = int(request.args.get("page", 1))
            body = {"id": request.url, "context": {"id": CONTEXT}, "members": self.members[(page - 1) * 2 : page * 2]}
            response = jsonify(body)
            if page * 2 < len(self.members):
                response.headers["Link"] = f'<{self.url}/memberships?page={page + 1}>; rel="next"'
            return response

        @app.post("/deep_link_return")
        def deep_link_return():
            conf = self.conf()
            conf.get_registration()
            self.deep_links.extend(conf.validate_deeplinking_resp(request.form.to_dict()))
            return "<p id='done'>Added</p>"

        @app.get("/course")
        def course():
            """A platform page with the tool in an iframe (its src starts the login, as an LMS's does)."""
            src = self.login_url(request.args["user"], request.args.get("role", "learner"), request.args.get("lesson"))
            return f'<h1>LMS course</h1><iframe id="tool" src="{src}" width="1000" height="700"></iframe>'

        @app.get("/.well-known/openid-configuration")
        def openid_configuration():
            """LTI Dynamic Registration, the platform's side (lti1p3platform has none): what a tool reads first."""
            return jsonify(
                {
                    "issuer": self.issuer_claimed or self.url,
                    "authorization_endpoint": self.url + "/authorize",
                    "token_endpoint": self.url + "/token",
                    "jwks_uri": self.url + "/jwks",
                    "registration_endpoint": self.url + "/register",
                    "https://purl.imsglobal.org/spec/lti-platform-configuration": {"product_family_code": "test"},
                }
            )

        @app.post("/register")
        def register():
            if request.headers.get("Authorization") != "Bearer " + REGISTRATION_TOKEN:
                return jsonify(error="invalid_token"), 401
            tool = request.get_json(force=True)
            self.registrations.append(tool)
            return jsonify(
                {
                    **tool,
                    "client_id": CLIENT_ID,
                    "https://purl.imsglobal.org/spec/lti-tool-configuration": {
                        **tool["https://purl.imsglobal.org/spec/lti-tool-configuration"],
                        "deployment_id": DEPLOYMENT,
                    },
                }
            )

        @app.get("/start")
        def start():
            return redirect(self.login_url(request.args["user"], request.args.get("role", "learner")))

        return app


def query_of(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def form_fields(html: str) -> dict:
    return dict(re.findall(r'name="([^"]+)" value="([^"]*)"', html))
