"""The tool's own RSA key pairs: made on first use and kept in the database (so every app process signs with the
same one), published at the JWKS endpoint. Rotation is by kid: `rotate` makes a new key that signs from then on,
while the older ones stay published (a platform may still hold a token they signed) until `retire`d."""

from __future__ import annotations

import json
import time
from functools import lru_cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK

from webapp.db import transaction


def _new_pair() -> tuple[str, str, dict]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = json.loads(JWK.from_pem(pem.encode()).export_public())
    kid = JWK.from_pem(pem.encode()).thumbprint()
    public.update({"kid": kid, "alg": "RS256", "use": "sig"})
    return kid, pem, public


def rotate(db) -> str:
    """A new key pair, which signs from now on; returns its kid."""
    kid, pem, public = _new_pair()
    with transaction(db):
        db.execute(
            "INSERT INTO lti_keys (kid, private_pem, public_jwk, created_at) VALUES (?, ?, ?, ?)",
            (kid, pem, json.dumps(public), time.time()),
        )
    return kid


def signing_key(db) -> tuple[str, str, str]:
    """(kid, private PEM, public PEM) of the newest key that is not retired; the first is made here."""
    row = db.execute(
        "SELECT kid, private_pem FROM lti_keys WHERE retired_at IS NULL ORDER BY created_at DESC LIMIT 1"
    ).fetchone()
    if row is None:
        rotate(db)
        return signing_key(db)
    return row["kid"], row["private_pem"], _public_pem(row["private_pem"])


@lru_cache(maxsize=8)
def _public_pem(private_pem: str) -> str:
    """Loading an RSA private key checks it (tens of ms): once per key and process, not per request."""
    return JWK.from_pem(private_pem.encode()).public().export_to_pem().decode()


def retire(db, kid: str) -> bool:
    """The key stops signing and leaves the JWKS."""
    return db.execute("UPDATE lti_keys SET retired_at = ? WHERE kid = ?", (time.time(), kid)).rowcount == 1


def jwks(db) -> dict:
    signing_key(db)  # a platform that reads the JWKS before any launch finds the key it will see
    rows = db.execute("SELECT public_jwk FROM lti_keys WHERE retired_at IS NULL ORDER BY created_at").fetchall()
    return {"keys": [json.loads(r["public_jwk"]) for r in rows]}


@lru_cache(maxsize=8)
def loaded(private_pem: str):
    """The private key as an object that signs without being parsed again (PyJWT takes it as it takes a PEM)."""
    return serialization.load_pem_private_key(private_pem.encode(), password=None)
