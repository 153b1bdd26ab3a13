"""Sending e-mail: the SMTP server of the SMTP_* settings (docs/configuration.md), used for "forgot password"
links. A message is sent from a thread of its own, so that a request answers as fast whether or not a message
went out (a slow answer would tell that an account exists) and a slow server never holds a request thread."""

from __future__ import annotations

import logging
import smtplib
import ssl
import threading
from email.message import EmailMessage

log = logging.getLogger("amp_dojo.mail")


def configured(config) -> bool:
    """Mail goes out when there is a server to send it and a public address for the links it carries (without
    PUBLIC_URL a link would name whatever host a request claimed: a forged Host header would send a learner's
    link to another site)."""
    return bool(config.get("SMTP_HOST")) and bool(config.get("PUBLIC_URL"))


def message(config, to: str, subject: str, body: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = config.get("SMTP_FROM") or f"amp-dojo@{config['SMTP_HOST']}"
    mail["To"] = to
    mail["Subject"] = subject
    mail.set_content(body)
    return mail


def send_now(config, mail: EmailMessage) -> None:
    """Delivers one message to the SMTP server (STARTTLS first where SMTP_STARTTLS, then SMTP_USER's login)."""
    timeout = float(config.get("SMTP_TIMEOUT") or 10)
    with smtplib.SMTP(config["SMTP_HOST"], int(config.get("SMTP_PORT") or 25), timeout=timeout) as server:
        if config.get("SMTP_STARTTLS"):
            server.starttls(context=ssl.create_default_context())
        if config.get("SMTP_USER"):
            server.login(config["SMTP_USER"], config.get("SMTP_PASSWORD") or "")
        server.send_message(mail)


def send_later(config, mail: EmailMessage) -> threading.Thread:
    """Sends from a background thread; a failure is logged (the sender has had their answer already)."""
    settings = {k: config.get(k) for k in config if k.startswith("SMTP_")}

    def deliver():
        try:
            send_now(settings, mail)
        except (OSError, smtplib.SMTPException) as exc:
            log.warning("a mail was not sent: %s", exc)

    thread = threading.Thread(target=deliver, name="send-mail", daemon=True)
    thread.start()
    return thread
