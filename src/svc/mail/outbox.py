"""The outbox: mail waiting to be sent, kept in the metadata store until an SMTP server took it.

A mail is one row of ``mail_outbox`` (SQLite or PostgreSQL), written by :func:`enqueue` in
the caller's transaction or its own; nothing is lost when the process stops, crashes or the
mail server is down: the worker (:mod:`svc.mail.worker`) sends what is due, and a mail it
could not send is tried again later. Statuses: ``queued`` (waiting, or being sent),
``sent``, ``failed`` (the server refused it for good, a 5xx answer); sent and failed mail is
deleted :data:`KEEP_MS` (30 days) later (:func:`prune`, by the runtime). Delivery is at least
once: a process killed between the server's acceptance and the row's update sends that mail
again after its lease (:data:`LEASE_MS`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, and_, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import now_ms

#: How long a mail handed to the SMTP client is held before another worker may take it (ms).
LEASE_MS = 5 * 60 * 1000
#: The longest wait between two attempts (ms).
MAX_BACKOFF_MS = 3600 * 1000
#: How long a mail sent (or failed for good) stays in the outbox (ms).
KEEP_MS = 30 * 24 * 3600 * 1000
STATUSES = ("queued", "sent", "failed")
#: Headers a mail may not set itself (the message's own).
RESERVED_HEADERS = frozenset(
    ("from", "to", "cc", "bcc", "subject", "date", "message-id", "mime-version", "sender")
)
_HEADER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,60}$")

_t = tables.mail_outbox


@dataclass(frozen=True)
class Attachment:
    """A file sent with a mail. With ``content_id``, an inline part of the HTML body, shown
    where the HTML says ``<img src="cid:{content_id}">``; without, an attachment."""

    filename: str
    content_type: str  # "image/png"
    data: bytes
    content_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "contentType": self.content_type,
            "contentId": self.content_id,
            "data": base64.b64encode(self.data).decode(),
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Attachment:
        return cls(
            value["filename"],
            value["contentType"],
            base64.b64decode(value["data"]),
            value.get("contentId"),
        )


@dataclass(frozen=True)
class OutboxMail:
    """One row of the outbox."""

    id: str
    kind: str
    dedupe_key: str | None
    to: str
    subject: str
    text: str
    html: str | None
    attachments: tuple[Attachment, ...]
    status: str
    attempts: int
    last_error: str | None
    created_at: int
    next_attempt_at: int
    sent_at: int | None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The row without its bodies and attachments (for listings)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "to": self.to,
            "subject": self.subject,
            "status": self.status,
            "attempts": self.attempts,
            "lastError": self.last_error,
            "createdAt": self.created_at,
            "nextAttemptAt": self.next_attempt_at,
            "sentAt": self.sent_at,
        }


Target = MetaStore | Engine | Connection


def enqueue(
    target: Target,
    to: str,
    subject: str,
    text: str,
    html: str | None = None,
    attachments: Sequence[Attachment] = (),
    *,
    kind: str = "other",
    dedupe_key: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> str:
    """Put one mail to one address in the outbox; return its id. It is sent by the runtime's
    worker as soon as possible (within a second or so) when ``SVC_SMTP_URL`` is set, and
    kept, unsent, until it is set otherwise (:func:`svc.mail.mail_enabled` tells which).

    ``target``: the :class:`MetaStore`, its engine, or a :class:`Connection` in a transaction
    of yours (the mail is then written, or not, with the rest of that transaction).
    ``text`` is the plain-text body, ``html`` an optional HTML alternative; ``attachments``
    with a ``content_id`` are inline parts of the HTML. ``kind`` names what the mail is
    ("invitation", "password_reset", "report", "alert", ...: at most 40 characters), for
    listings and logs. ``dedupe_key`` (at most 300 characters): a second mail with the key of
    one already in the outbox (sent or not) is not added, and the first one's id is returned
    (a report is enqueued once per project, period and recipient). ``headers``: more header
    fields (``List-Unsubscribe``, ``Reply-To``, ...; not From, To, Subject, Date, Message-ID).
    The From header is ``SVC_MAIL_FROM``, set when the mail is sent. Blocking: call it in a
    worker thread.
    """
    if not to or "\n" in to or "\r" in to or "@" not in to:
        raise ValueError(f"not a mail address: {to!r}")
    if "\n" in subject or "\r" in subject:
        raise ValueError("a subject is one line")
    for name, value in (headers or {}).items():
        if not _HEADER_NAME.match(name) or name.lower() in RESERVED_HEADERS:
            raise ValueError(f"not a header a mail may set: {name!r}")
        if "\n" in value or "\r" in value:
            raise ValueError(f"header {name} is one line")
    now = now_ms()
    mail_id = "mail_" + secrets.token_hex(12)
    row = {
        "id": mail_id,
        "kind": kind[:40],
        "dedupe_key": dedupe_key,
        "to_addr": to,
        "subject": subject,
        "body_text": text,
        "body_html": html,
        "attachments": json.dumps([a.to_json() for a in attachments]),
        "headers": json.dumps(dict(headers or {})),
        "status": "queued",
        "attempts": 0,
        "created_at": now,
        "next_attempt_at": now,
    }
    if isinstance(target, Connection):
        return _insert(target, row, nested=True)
    engine = target.engine if isinstance(target, MetaStore) else target
    try:
        with engine.begin() as conn:
            return _insert(conn, row, nested=False)
    except IntegrityError:  # a concurrent enqueue of the same key won
        if dedupe_key is None:
            raise
        with engine.connect() as conn:
            found = _by_key(conn, dedupe_key)
        if found is None:
            raise
        return found


def _insert(conn: Connection, row: dict[str, Any], nested: bool) -> str:
    key = row["dedupe_key"]
    if key is not None:
        found = _by_key(conn, key)
        if found is not None:
            return found
    if nested:  # a savepoint, so that a lost race leaves the caller's transaction usable
        try:
            with conn.begin_nested():
                conn.execute(_t.insert().values(**row))
        except IntegrityError:
            found = _by_key(conn, key) if key is not None else None
            if found is None:
                raise
            return found
    else:
        conn.execute(_t.insert().values(**row))
    return str(row["id"])


def _by_key(conn: Connection, key: str) -> str | None:
    found = conn.scalar(select(_t.c.id).where(_t.c.dedupe_key == key))
    return None if found is None else str(found)


def get_mail(target: MetaStore | Engine, mail_id: str) -> OutboxMail | None:
    engine = target.engine if isinstance(target, MetaStore) else target
    with engine.connect() as conn:
        row = conn.execute(select(_t).where(_t.c.id == mail_id)).first()
    return None if row is None else _mail(row)


def list_mail(
    target: MetaStore | Engine, status: str | None = None, kind: str | None = None, limit: int = 100
) -> list[OutboxMail]:
    """The newest mail first, optionally of one status and kind."""
    engine = target.engine if isinstance(target, MetaStore) else target
    stmt = select(_t).order_by(_t.c.created_at.desc(), _t.c.id).limit(limit)
    if status is not None:
        stmt = stmt.where(_t.c.status == status)
    if kind is not None:
        stmt = stmt.where(_t.c.kind == kind)
    with engine.connect() as conn:
        return [_mail(row) for row in conn.execute(stmt)]


# the worker's side ----------------------------------------------------------------------------


def claim_due(engine: Engine, now: int, limit: int = 10) -> list[OutboxMail]:
    """Take up to ``limit`` mails that are due: each is leased (its next attempt moved
    :data:`LEASE_MS` ahead and its attempts counted) by a compare-and-set, so that two workers
    on one database never send the same mail at once."""
    with engine.connect() as conn:
        rows = list(
            conn.execute(
                select(_t)
                .where(and_(_t.c.status == "queued", _t.c.next_attempt_at <= now))
                .order_by(_t.c.next_attempt_at, _t.c.id)
                .limit(limit)
            )
        )
    taken: list[OutboxMail] = []
    for row in rows:
        with engine.begin() as conn:
            result = conn.execute(
                update(_t)
                .where(
                    and_(
                        _t.c.id == row.id,
                        _t.c.status == "queued",
                        _t.c.next_attempt_at == row.next_attempt_at,
                    )
                )
                .values(next_attempt_at=now + LEASE_MS, attempts=row.attempts + 1)
            )
        if result.rowcount == 1:
            taken.append(dataclasses.replace(_mail(row), attempts=row.attempts + 1))
    return taken


def mark_sent(engine: Engine, mail_id: str, now: int) -> None:
    """Record that the server took the mail; its HTML and attachments are dropped (the text
    stays, for the record)."""
    with engine.begin() as conn:
        conn.execute(
            update(_t)
            .where(_t.c.id == mail_id)
            .values(
                status="sent",
                sent_at=now,
                next_attempt_at=now,
                last_error=None,
                body_html=None,
                attachments="[]",
            )
        )


def mark_failed(
    engine: Engine, mail: OutboxMail, error: str, now: int, retry_ms: float, permanent: bool
) -> int | None:
    """Record a failed attempt: the mail is retried after ``retry_ms`` doubled per earlier
    attempt (at most :data:`MAX_BACKOFF_MS`), or, when ``permanent``, marked failed. Returns
    the time of the next attempt, None when there is none."""
    next_at = None if permanent else now + int(backoff_ms(mail.attempts, retry_ms))
    with engine.begin() as conn:
        conn.execute(
            update(_t)
            .where(_t.c.id == mail.id)
            .values(
                status="failed" if permanent else "queued",
                last_error=error[:1000],
                next_attempt_at=next_at if next_at is not None else now,
            )
        )
    return next_at


def prune(engine: Engine, before_ms: int) -> int:
    """Delete the mails sent, or failed for good, before ``before_ms``; return how many. Their
    dedupe keys go with them: reports and alerts keep their own record of what was mailed."""
    with engine.begin() as conn:
        result = conn.execute(
            delete(_t).where(_t.c.status.in_(("sent", "failed")), _t.c.next_attempt_at < before_ms)
        )
    return int(result.rowcount or 0)


def backoff_ms(attempts: int, retry_ms: float) -> float:
    """The wait after the ``attempts``-th failed attempt: ``retry_ms`` × 2^(attempts−1)."""
    return float(min(MAX_BACKOFF_MS, retry_ms * 2 ** max(0, min(attempts - 1, 30))))


def counts(engine: Engine) -> dict[str, int]:
    """How many mails the outbox holds, by status."""
    with engine.connect() as conn:
        rows = conn.execute(select(_t.c.status, func.count()).group_by(_t.c.status))
        found = {str(s): int(n) for s, n in rows}
    return {status: found.get(status, 0) for status in STATUSES}


def _mail(row: Any) -> OutboxMail:
    attachments: Iterable[dict[str, Any]] = json.loads(row.attachments or "[]")
    return OutboxMail(
        id=row.id,
        kind=row.kind,
        dedupe_key=row.dedupe_key,
        to=row.to_addr,
        subject=row.subject,
        text=row.body_text,
        html=row.body_html,
        attachments=tuple(Attachment.from_json(a) for a in attachments),
        status=row.status,
        attempts=int(row.attempts),
        last_error=row.last_error,
        created_at=int(row.created_at),
        next_attempt_at=int(row.next_attempt_at),
        sent_at=None if row.sent_at is None else int(row.sent_at),
        headers=json.loads(row.headers or "{}"),
    )
