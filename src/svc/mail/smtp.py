"""SMTP: the server's settings (``SVC_SMTP_URL``), a mail as a MIME message, and one delivery.

``SVC_SMTP_URL``: ``smtp://[user:pass@]host[:port][?starttls=true&timeout=10]`` (port 25 by
default, STARTTLS only when asked) or ``smtps://[user:pass@]host[:port]`` (TLS from the first
byte, port 465 by default). User and password are URL-decoded. Sending uses the standard
library's :mod:`smtplib` and is blocking: the worker calls it in a thread.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from urllib.parse import parse_qs, unquote, urlsplit

from svc.mail.outbox import OutboxMail
from svc.settings import Settings


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    tls: bool  # smtps: TLS from the start
    starttls: bool
    user: str
    password: str
    timeout_s: float

    @classmethod
    def parse(cls, url: str) -> SmtpConfig:
        """Read ``SVC_SMTP_URL``; ValueError names what is wrong."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError("SVC_SMTP_URL: the scheme is smtp:// or smtps://")
        if not parts.hostname:
            raise ValueError("SVC_SMTP_URL: no host")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"starttls", "timeout"}
        if unknown:
            raise ValueError(f"SVC_SMTP_URL: unknown option {sorted(unknown)[0]!r}")
        tls = parts.scheme == "smtps"
        try:
            port = parts.port or (465 if tls else 25)
            timeout_s = float(query.get("timeout", "10"))
        except ValueError as exc:
            raise ValueError(f"SVC_SMTP_URL: {exc}") from None
        return cls(
            host=parts.hostname,
            port=port,
            tls=tls,
            starttls=query.get("starttls", "false").lower() in ("1", "true", "yes", "on"),
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            timeout_s=timeout_s,
        )


def mail_enabled(settings: Settings) -> bool:
    """Whether mail is sent at all (``SVC_SMTP_URL`` is set). When it is not, mail put in the
    outbox stays there, unsent, and is sent once it is set (so show people the link a mail
    would have carried, an invitation's for one)."""
    return bool(settings.smtp_url)


def sender(settings: Settings) -> str:
    """The From address: ``SVC_MAIL_FROM``, else ``svc@`` the host of ``SVC_BASE_URL``."""
    if settings.mail_from:
        return settings.mail_from
    host = urlsplit(settings.base_url).hostname or "localhost"
    return f"svc@{host}"


def build_message(mail: OutboxMail, from_addr: str) -> EmailMessage:
    """The MIME message of a mail: text, with an HTML alternative whose inline images
    (attachments with a Content-ID) are related parts, then the other attachments. Its
    Message-ID names the outbox row, so a mail sent twice is recognisable."""
    msg = EmailMessage()
    msg["From"] = from_addr
    msg["To"] = mail.to
    msg["Subject"] = mail.subject
    msg["Date"] = formatdate(localtime=False)
    domain = parseaddr(from_addr)[1].rpartition("@")[2] or "localhost"
    msg["Message-ID"] = make_msgid(idstring=mail.id, domain=domain)
    for name, value in mail.headers.items():
        msg[name] = value
    msg.set_content(mail.text)
    inline = [a for a in mail.attachments if a.content_id]
    if mail.html is not None:
        msg.add_alternative(mail.html, subtype="html")
        html_part = msg.get_body(("html",))
        assert isinstance(html_part, EmailMessage)
        for a in inline:
            maintype, _, subtype = a.content_type.partition("/")
            html_part.add_related(
                a.data,
                maintype=maintype,
                subtype=subtype,
                cid=f"<{a.content_id}>",
                filename=a.filename,
                disposition="inline",
            )
    for a in mail.attachments:
        if a.content_id and mail.html is not None:
            continue
        maintype, _, subtype = a.content_type.partition("/")
        msg.add_attachment(a.data, maintype=maintype, subtype=subtype, filename=a.filename)
    return msg


class PermanentError(Exception):
    """The server refused the mail for good (a 5xx answer): it is not retried."""


def send(config: SmtpConfig, msg: EmailMessage) -> None:
    """Deliver one message (blocking). Raises :class:`PermanentError` when the server refused
    it with a 5xx answer, any other exception (OSError, a 4xx answer) when it may be retried."""
    client: smtplib.SMTP
    if config.tls:
        client = smtplib.SMTP_SSL(
            config.host,
            config.port,
            timeout=config.timeout_s,
            context=ssl.create_default_context(),
        )
    else:
        client = smtplib.SMTP(config.host, config.port, timeout=config.timeout_s)
    try:
        if config.starttls and not config.tls:
            client.starttls(context=ssl.create_default_context())
        if config.user:
            client.login(config.user, config.password)
        try:
            refused = client.send_message(msg)
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            if codes and all(code >= 500 for code in codes):
                raise PermanentError(f"recipient refused: {exc.recipients}") from exc
            raise
        except (smtplib.SMTPDataError, smtplib.SMTPSenderRefused) as exc:
            if exc.smtp_code >= 500:
                raise PermanentError(f"{exc.smtp_code} {exc.smtp_error!r}") from exc
            raise
        if refused:  # a single recipient: not reached
            raise PermanentError(f"recipient refused: {refused}")
    finally:
        try:
            client.quit()
        except (smtplib.SMTPException, OSError):
            client.close()
