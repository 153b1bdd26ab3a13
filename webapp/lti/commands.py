"""`amp-dojo lti ...`: register the LMSs this tool trusts, and rotate the tool's signing key."""

from __future__ import annotations

import click


def _with_db(fn):
    from webapp import create_app
    from webapp.db import get_db

    app = create_app()
    with app.app_context():
        return fn(get_db())


@click.group("lti")
def lti():
    """LTI 1.3: the LMS platforms this server trusts (docs/lti.md)."""


@lti.command("add-platform")
@click.option("--issuer", required=True, help="the platform's issuer (iss), e.g. https://canvas.instructure.com")
@click.option("--client-id", required=True, help="the client id the platform gave this tool")
@click.option("--login-url", required=True, help="the platform's OIDC authorization endpoint")
@click.option("--token-url", required=True, help="the platform's OAuth2 access token URL")
@click.option("--jwks-url", required=True, help="the platform's public keyset URL")
@click.option("--deployment", "deployments", multiple=True, required=True, help="a deployment id (repeatable)")
def add_platform(issuer, client_id, login_url, token_url, jwks_url, deployments):
    """Register (or update) a platform and its deployment ids."""
    from webapp.lti import platforms

    for url in (login_url, token_url, jwks_url):
        if not url.startswith(("https://", "http://")):
            raise click.BadParameter(f"{url}: not an http(s) URL")
    pid = _with_db(lambda db: platforms.add(db, issuer, client_id, login_url, token_url, jwks_url, list(deployments)))
    click.echo(f"platform {pid}: {issuer} (client id {client_id}), deployments {', '.join(deployments)}")


@lti.command("list")
def list_platforms():
    """The registered platforms."""
    from webapp.lti import platforms

    for p in _with_db(platforms.all_platforms):
        click.echo(f"{p.id}\t{p.issuer}\t{p.client_id}\t{','.join(p.deployments)}\t{p.auth_login_url}")


@lti.command("remove")
@click.argument("platform_id", type=int)
def remove(platform_id):
    """Forget a platform: its launches stop working; its users' accounts and courses stay."""
    from webapp.lti import platforms

    if not _with_db(lambda db: platforms.remove(db, platform_id)):
        raise click.ClickException(f"no platform {platform_id}")
    click.echo(f"platform {platform_id} removed")


@lti.command("rotate-key")
@click.option("--retire", "retire_kid", help="retire this kid instead (it leaves the JWKS)")
def rotate_key(retire_kid):
    """Make a new signing key (the old ones stay published until retired)."""
    from webapp.lti import keys

    if retire_kid:
        if not _with_db(lambda db: keys.retire(db, retire_kid)):
            raise click.ClickException(f"no key {retire_kid}")
        click.echo(f"key {retire_kid} retired")
        return
    click.echo(f"new signing key {_with_db(keys.rotate)}")


@lti.command("registration-url")
def registration_url():
    """A link an LMS administrator pastes into the LMS (LTI Dynamic Registration), valid for 7 days."""
    from flask import url_for

    from webapp import create_app
    from webapp.lti import dynamic

    app = create_app()
    if not app.config.get("PUBLIC_URL"):
        raise click.ClickException("set PUBLIC_URL (the address the LMS reaches this server at) first")
    with app.test_request_context(base_url=app.config["PUBLIC_URL"]):
        click.echo(url_for("lti.register", grant=dynamic.grant(app.config["SECRET_KEY"]), _external=True))
