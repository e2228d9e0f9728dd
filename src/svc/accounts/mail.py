"""The one call from accounts into the mail outbox (:mod:`svc.mail`)."""

from __future__ import annotations

from svc.meta.store import MetaStore
from svc.settings import Settings


def mail_on(settings: Settings) -> bool:
    """Whether mail is sent (``SVC_SMTP_URL`` set). Without it, invitations answer with the
    link to copy and nothing is put in the outbox."""
    from svc.mail import mail_enabled

    return mail_enabled(settings)


def send(meta: MetaStore, to: str, subject: str, text: str, kind: str) -> str:
    """Put a plain-text mail in the outbox (sent by the mail worker, with retries); its id.
    Blocking: call it from a worker thread."""
    from svc.mail import enqueue

    return enqueue(meta, to, subject, text, kind=kind)
