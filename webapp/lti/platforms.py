"""The platforms (LMSs) this tool trusts, as `amp-dojo lti add-platform` registered them, and the tool
configuration pylti1p3 asks for registrations and deployments (`DatabaseToolConf`).

The platform's key set is kept with its registration (fetched on first use). pylti1p3's own cache never forgets
a key set, so a platform that rotates its key would be refused for good: `refetch_key_set` is what a launch
signed with an unknown kid calls, once (webapp/lti/launch.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import requests
from pylti1p3.deployment import Deployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config import ToolConfAbstract

from webapp.db import transaction
from webapp.lti import keys

KEY_SET_TIMEOUT_S = 5


@dataclass
class Platform:
    id: int
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployments: list[str]


def add(
    db, issuer: str, client_id: str, login_url: str, token_url: str, key_set_url: str, deployments: list[str]
) -> int:
    """Registers the platform (or adds deployments and new URLs to the one of that issuer and client id)."""
    with transaction(db):
        row = db.execute(
            "SELECT id FROM lti_platforms WHERE issuer = ? AND client_id = ?", (issuer, client_id)
        ).fetchone()
        if row is None:
            db.execute(
                "INSERT INTO lti_platforms (issuer, client_id, auth_login_url, auth_token_url, key_set_url, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (issuer, client_id, login_url, token_url, key_set_url, time.time()),
            )
            row = db.execute(
                "SELECT id FROM lti_platforms WHERE issuer = ? AND client_id = ?", (issuer, client_id)
            ).fetchone()
        else:
            db.execute(
                "UPDATE lti_platforms SET auth_login_url = ?, auth_token_url = ?, key_set_url = ?, key_set = NULL "
                "WHERE id = ?",
                (login_url, token_url, key_set_url, row["id"]),
            )
        for deployment in deployments:
            db.execute(
                "INSERT INTO lti_deployments (platform_id, deployment_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (row["id"], deployment),
            )
    return row["id"]


def remove(db, platform_id: int) -> bool:
    """The platform, its deployments and its links (its users' accounts and the courses stay)."""
    with transaction(db):
        contexts = "SELECT id FROM lti_contexts WHERE platform_id = ?"
        for table in ("lti_scores", "lti_line_items"):
            db.execute(f"DELETE FROM {table} WHERE context_ref IN ({contexts})", (platform_id,))
        for table in ("lti_contexts", "lti_accounts", "lti_deployments"):
            db.execute(f"DELETE FROM {table} WHERE platform_id = ?", (platform_id,))
        return db.execute("DELETE FROM lti_platforms WHERE id = ?", (platform_id,)).rowcount == 1


def _platform(db, row) -> Platform:
    deployments = [
        r[0]
        for r in db.execute(
            "SELECT deployment_id FROM lti_deployments WHERE platform_id = ? ORDER BY deployment_id", (row["id"],)
        ).rows()
    ]
    return Platform(
        row["id"],
        row["issuer"],
        row["client_id"],
        row["auth_login_url"],
        row["auth_token_url"],
        row["key_set_url"],
        deployments,
    )


def all_platforms(db) -> list[Platform]:
    return [_platform(db, r) for r in db.execute("SELECT * FROM lti_platforms ORDER BY id").fetchall()]


def find(db, issuer: str, client_id: str | None = None):
    """The registration row of this issuer (and client id, when the request names one), or None."""
    if client_id:
        return db.execute(
            "SELECT * FROM lti_platforms WHERE issuer = ? AND client_id = ?", (issuer, client_id)
        ).fetchone()
    rows = db.execute("SELECT * FROM lti_platforms WHERE issuer = ? ORDER BY id", (issuer,)).fetchall()
    return rows[0] if len(rows) == 1 else None


def origins(db) -> list[str]:
    """Where the registered platforms' pages are served from (their login URLs' origins): who may frame ours."""
    from urllib.parse import urlsplit

    found = set()
    for (url,) in db.execute("SELECT auth_login_url FROM lti_platforms").rows():
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc:
            found.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(found)


def fetch_key_set(url: str) -> dict:
    response = requests.get(url, timeout=KEY_SET_TIMEOUT_S)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError(f"{url} answered no JSON key set")
    return data


def refetch_key_set(db, platform_id: int, url: str) -> dict:
    key_set = fetch_key_set(url)
    db.execute("UPDATE lti_platforms SET key_set = ? WHERE id = ?", (json.dumps(key_set), platform_id))
    return key_set


def registration(db, row) -> Registration:
    """pylti1p3's Registration of a platform row, signed for with the tool's current key."""
    kid, private_pem, public_pem = keys.signing_key(db)
    reg = Registration()
    reg.set_issuer(row["issuer"]).set_client_id(row["client_id"]).set_auth_login_url(row["auth_login_url"])
    reg.set_auth_token_url(row["auth_token_url"]).set_key_set_url(row["key_set_url"])
    reg.set_key_set(json.loads(row["key_set"]) if row["key_set"] else None)
    reg.set_tool_private_key(keys.loaded(private_pem)).set_tool_public_key(public_pem)
    reg.platform_id = row["id"]  # which row a launch's refetch updates
    return reg


class DatabaseToolConf(ToolConfAbstract):
    """Registrations and deployments read from the database, per request. An issuer with several client ids is
    told apart by the client id the request names."""

    def __init__(self, db):
        super().__init__()
        self.db = db

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args, **kwargs):
        row = find(self.db, iss)
        return registration(self.db, row) if row else None

    def find_registration_by_params(self, iss: str, client_id, *args, **kwargs):
        row = find(self.db, iss, client_id)
        return registration(self.db, row) if row else None

    def find_deployment(self, iss: str, deployment_id: str):
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id, *args, **kwargs):
        row = find(self.db, iss, client_id)
        if row is None or not db_has_deployment(self.db, row["id"], deployment_id):
            return None
        return Deployment().set_deployment_id(deployment_id)


def db_has_deployment(db, platform_id: int, deployment_id: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM lti_deployments WHERE platform_id = ? AND deployment_id = ?", (platform_id, deployment_id)
        ).fetchone()
        is not None
    )
