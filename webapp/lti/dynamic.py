"""LTI Dynamic Registration (IMS LTI-DR 1.0): an LMS administrator pastes one URL into the LMS, which opens it with
its OpenID configuration's address and a registration token; the tool reads that configuration, posts its own
(login, launch, JWKS, scopes, deep linking) to the platform's registration endpoint, and stores the platform with
the client id and deployment the platform answered, as `amp-dojo lti add-platform` would.

The URL carries a signed, expiring grant made by `amp-dojo lti registration-url` (an admin's act): without it
anyone could make this tool trust a platform of their own, whose launches then make accounts and instructors."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from itsdangerous import BadSignature, URLSafeTimedSerializer
from pylti1p3.dynamic_registration import DynamicRegistration

from webapp.i18n import noop_gettext
from webapp.lti import platforms

SALT = "amp-dojo-lti-registration"
GRANT_MAX_AGE_S = 7 * 24 * 3600  # long enough for an LMS admin to get round to it, not a standing invitation
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
HTTP_TIMEOUT_S = 10
SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
]


BAD_GRANT = noop_gettext("This registration link is not valid or has expired: make a new one.")
NOT_ACCEPTED = noop_gettext("The LMS did not accept the registration: try again from the LMS.")


class RegistrationRefused(Exception):
    """The grant or the platform's configuration is not one this tool accepts; the message is for the admin."""


def grant(secret_key: str) -> str:
    return URLSafeTimedSerializer(secret_key, salt=SALT).dumps({"lti": "register"})


def check_grant(secret_key: str, token: str) -> None:
    try:
        URLSafeTimedSerializer(secret_key, salt=SALT).loads(token, max_age=GRANT_MAX_AGE_S)
    except BadSignature as exc:  # SignatureExpired is one
        raise RegistrationRefused(BAD_GRANT) from exc


class _TimedSession(requests.Session):
    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", HTTP_TIMEOUT_S)
        return super().request(*args, **kwargs)


class ToolRegistration(DynamicRegistration):
    client_name = "AMP Dojo"
    description = "Mixed-precision training lessons, graded by a machine"

    def __init__(self, db, urls: dict, openid_configuration: str, registration_token: str | None):
        self.db, self.urls = db, urls
        self.configuration_url, self.registration_token = openid_configuration, registration_token
        self.platform_id: int | None = None

    def get_request_session(self):
        return _TimedSession()

    def get_initiate_login_uri(self) -> str:
        return self.urls["login"]

    def get_jwks_uri(self) -> str:
        return self.urls["jwks"]

    def get_redirect_uris(self) -> list[str]:
        return [self.urls["launch"]]

    def get_target_link_uri(self) -> str:
        return self.urls["launch"]

    def get_domain(self) -> str:
        return urlsplit(self.urls["launch"]).netloc

    def get_logo_uri(self) -> str:
        return self.urls["logo"]

    def get_scopes(self) -> list[str]:
        return SCOPES

    def get_claims(self) -> list[str]:
        return ["iss", "sub", "name", "given_name", "family_name", "email"]

    def get_messages(self) -> list[dict]:
        return [{"type": "LtiDeepLinkingRequest", "target_link_uri": self.urls["launch"], "label": "AMP Dojo lesson"}]

    def get_openid_configuration_endpoint(self) -> str:
        return self.configuration_url

    def get_registration_token(self) -> str | None:
        return self.registration_token

    def get_openid_configuration(self) -> dict:
        configuration = super().get_openid_configuration()
        issuer = configuration.get("issuer") if isinstance(configuration, dict) else None
        # LTI-DR 3.5.1: the configuration's issuer is the prefix of the address it was read from, so a platform
        # cannot claim another's issuer (and so its learners' identities)
        if not isinstance(issuer, str) or not self.configuration_url.startswith(issuer.rstrip("/") + "/"):
            raise RegistrationRefused(
                noop_gettext("The LMS's configuration names an issuer that is not its own address.")
            )
        for field in ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint"):
            if not str(configuration.get(field, "")).startswith(("https://", "http://")):
                raise RegistrationRefused(noop_gettext("The LMS's configuration lacks an endpoint the tool needs."))
        return configuration

    def complete_registration(self, openid_configuration: dict, openid_registration: dict) -> int:
        client_id = openid_registration.get("client_id")
        deployment = (openid_registration.get(TOOL_CONFIG) or {}).get("deployment_id")
        if not isinstance(client_id, str) or not client_id or not isinstance(deployment, str) or not deployment:
            raise RegistrationRefused(
                noop_gettext("The LMS answered the registration without a client id or a deployment id.")
            )
        self.platform_id = platforms.add(
            self.db,
            openid_configuration["issuer"],
            client_id,
            openid_configuration["authorization_endpoint"],
            openid_configuration["token_endpoint"],
            openid_configuration["jwks_uri"],
            [deployment],
        )
        return self.platform_id


def register(db, urls: dict, openid_configuration: str, registration_token: str | None) -> int:
    """Registers this tool with the platform whose configuration lies at `openid_configuration`; its id here."""
    if not openid_configuration.startswith(("https://", "http://")):
        raise RegistrationRefused(noop_gettext("The LMS sent no address of its OpenID configuration."))
    registration = ToolRegistration(db, urls, openid_configuration, registration_token)
    registration.register()
    return registration.platform_id
