"""Subscriptions to a project's email reports (daily, weekly, monthly) and traffic alerts.

A subscription is a project, an email address (a member's, linked by address only, or
anyone's) and a kind. Each has its own random unsubscribe token, carried in every mail it
gets: the link works without signing in, once (unsubscribing deletes the subscription and
so its token). Blocking functions over the metadata store: call them in a worker thread.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from svc.errors import InvalidRequest, NotFound
from svc.mail.periods import REPORT_KINDS
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import iso_ms, now_ms

KINDS = (*REPORT_KINDS, "alerts")
#: At most this many subscriptions per project.
MAX_PER_PROJECT = 200
EMAIL = re.compile(r"^[^@\s<>\"',;]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")

_t = tables.mail_subscriptions


@dataclass(frozen=True)
class Subscription:
    id: str
    project_id: str
    email: str
    kind: str
    token: str
    last_period: str | None
    created_at: int

    def to_json(self) -> dict[str, Any]:
        """Without the token: it is for the recipient's mail only."""
        return {
            "id": self.id,
            "projectId": self.project_id,
            "email": self.email,
            "kind": self.kind,
            "lastPeriod": self.last_period,
            "createdAt": iso_ms(self.created_at),
        }


def check_email(value: Any, field: str = "email") -> str:
    if not isinstance(value, str) or len(value) > 320 or not EMAIL.match(value.strip()):
        raise InvalidRequest(f"`{field}` must be an email address", field=field)
    return value.strip().lower()


def check_kind(value: Any, field: str = "kind") -> str:
    if value not in KINDS:
        raise InvalidRequest(f"`{field}` must be one of {', '.join(KINDS)}", field=field)
    return str(value)


def subscribe(meta: MetaStore, project_id: str, email: str, kind: str) -> tuple[Subscription, bool]:
    """Subscribe ``email`` to ``kind`` of the project; (the subscription, whether it is new).
    Subscribing twice is one subscription."""
    meta.get_project(project_id)  # NotFound
    found = _find(meta, project_id, email, kind)
    if found is not None:
        return found, False
    with meta.engine.connect() as conn:
        count = len(list(conn.scalars(select(_t.c.id).where(_t.c.project_id == project_id))))
    if count >= MAX_PER_PROJECT:
        raise InvalidRequest(
            f"a project has at most {MAX_PER_PROJECT} subscriptions", field="email"
        )
    sub = Subscription(
        id="sub_" + secrets.token_hex(10),
        project_id=project_id,
        email=email,
        kind=kind,
        token=secrets.token_urlsafe(24),
        last_period=None,
        created_at=now_ms(),
    )
    try:
        with meta.engine.begin() as conn:
            conn.execute(
                _t.insert().values(
                    id=sub.id,
                    project_id=project_id,
                    email=email,
                    kind=kind,
                    token=sub.token,
                    last_period=None,
                    created_at=sub.created_at,
                )
            )
    except IntegrityError:  # a concurrent subscribe won
        found = _find(meta, project_id, email, kind)
        if found is None:
            raise
        return found, False
    return sub, True


def list_subscriptions(
    meta: MetaStore, project_id: str | None = None, kinds: tuple[str, ...] = KINDS
) -> list[Subscription]:
    stmt = select(_t).where(_t.c.kind.in_(kinds)).order_by(_t.c.project_id, _t.c.created_at)
    if project_id is not None:
        stmt = stmt.where(_t.c.project_id == project_id)
    with meta.engine.connect() as conn:
        return [_sub(r) for r in conn.execute(stmt)]


def remove(meta: MetaStore, project_id: str, subscription_id: str) -> Subscription:
    with meta.engine.begin() as conn:
        row = conn.execute(
            select(_t).where(_t.c.id == subscription_id, _t.c.project_id == project_id)
        ).first()
        if row is None:
            raise NotFound(f"no subscription {subscription_id!r} in this project")
        conn.execute(delete(_t).where(_t.c.id == subscription_id))
    return _sub(row)


def find(meta: MetaStore, project_id: str, subscription_id: str) -> Subscription | None:
    with meta.engine.connect() as conn:
        row = conn.execute(
            select(_t).where(_t.c.id == subscription_id, _t.c.project_id == project_id)
        ).first()
    return None if row is None else _sub(row)


def by_token(meta: MetaStore, token: str) -> Subscription | None:
    if not token or len(token) > 64:
        return None
    with meta.engine.connect() as conn:
        row = conn.execute(select(_t).where(_t.c.token == token)).first()
    return None if row is None else _sub(row)


def unsubscribe(meta: MetaStore, token: str) -> Subscription | None:
    """Delete the subscription of this token; None when there is none (used, or unknown)."""
    with meta.engine.begin() as conn:
        row = conn.execute(select(_t).where(_t.c.token == token)).first()
        if row is None:
            return None
        conn.execute(delete(_t).where(_t.c.id == row.id))
    return _sub(row)


def mark_period(meta: MetaStore, subscription_id: str, period_key: str) -> None:
    with meta.engine.begin() as conn:
        conn.execute(update(_t).where(_t.c.id == subscription_id).values(last_period=period_key))


def _find(meta: MetaStore, project_id: str, email: str, kind: str) -> Subscription | None:
    with meta.engine.connect() as conn:
        row = conn.execute(
            select(_t).where(_t.c.project_id == project_id, _t.c.email == email, _t.c.kind == kind)
        ).first()
    return None if row is None else _sub(row)


def _sub(row: Any) -> Subscription:
    return Subscription(
        id=row.id,
        project_id=row.project_id,
        email=row.email,
        kind=row.kind,
        token=row.token,
        last_period=row.last_period,
        created_at=int(row.created_at),
    )
