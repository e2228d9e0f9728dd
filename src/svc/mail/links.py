"""Where every link in every mail points: ``SVC_BASE_URL``, the service's public address, and
nothing else.

A link in a mail (a password reset, an invitation, a report's dashboard link, an alert, an
unsubscribe link) is never built from a request: a request's ``Host`` header is whatever its
sender wrote, and a reset link to ``http://attacker.example/...`` mailed to the victim hands
the token to the attacker's page. So mail needs ``SVC_BASE_URL``: with ``SVC_SMTP_URL`` set
and no ``SVC_BASE_URL`` the service refuses to start (:func:`check_settings`), and mail that
would carry a link while it is unset (reports and alerts waiting in the outbox while mail is
off) is not made (:func:`public_base` raises :class:`NoBaseUrl`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from svc.settings import Settings

HINT = "set SVC_BASE_URL to the service's public address, such as https://stats.example.com"


class NoBaseUrl(ValueError):
    """Mail with a link was asked for, and ``SVC_BASE_URL`` is not set."""


def check_base_url(value: str) -> str:
    """``value`` without a trailing slash, when it is an absolute http(s) URL with a host and
    without a query or a fragment; else ValueError naming ``SVC_BASE_URL``."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(
            f"setting SVC_BASE_URL: {value!r} is not an absolute http(s) address without a "
            "query or fragment (such as https://stats.example.com)"
        )
    return value.rstrip("/")


def check_settings(settings: Settings) -> None:
    """ValueError when mail is on (``SVC_SMTP_URL``) without ``SVC_BASE_URL``, or when
    ``SVC_BASE_URL`` is set and malformed. Called at start-up (:func:`svc.app.create_app`)."""
    if settings.base_url:
        check_base_url(settings.base_url)
    elif settings.smtp_url:
        raise ValueError(
            "setting SVC_SMTP_URL is set but SVC_BASE_URL is not: mail carries links (password "
            f"resets, invitations, reports, unsubscribe), built only from SVC_BASE_URL: {HINT}"
        )


def public_base(settings: Settings) -> str:
    """The public address links in mail start with (no trailing slash); :class:`NoBaseUrl`
    when ``SVC_BASE_URL`` is not set."""
    if not settings.base_url:
        raise NoBaseUrl(f"mail with a link needs SVC_BASE_URL: {HINT}")
    return check_base_url(settings.base_url)


def dashboard_link(settings: Settings, fragment: str) -> str:
    """``<SVC_BASE_URL>/dashboard#<fragment>``: a link to the dashboard carrying a token in
    its fragment (never sent to a server, so never in an access log)."""
    return f"{public_base(settings)}/dashboard#{fragment}"
