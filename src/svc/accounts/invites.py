"""Invitations and password resets: expiring single-use tokens, stored hashed.

An invitation asks an email to join a team with a role, or to be a guest of one project.
Taking a token (:func:`take_invitation`, :func:`take_reset`) is one conditional UPDATE, so
two concurrent uses cannot both succeed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select, update

from svc.accounts import tokens
from svc.accounts.store import writable
from svc.errors import NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import iso_ms, now_ms

I = tables.invitations  # noqa: E741
P = tables.password_resets


@dataclass(frozen=True)
class Invitation:
    id: str
    email: str
    team_id: str | None
    project_id: str | None
    role: str
    invited_by: str | None
    created_at: int
    expires_at: int
    accepted_at: int | None
    revoked_at: int | None

    @property
    def pending(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and self.expires_at > now_ms()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "email": self.email,
            "teamId": self.team_id,
            "projectId": self.project_id,
            "role": self.role,
            "createdAt": iso_ms(self.created_at),
            "expiresAt": iso_ms(self.expires_at),
            "acceptedAt": iso_ms(self.accepted_at),
        }


def _invitation(row: Any) -> Invitation:
    return Invitation(
        row.id,
        row.email,
        row.team_id,
        row.project_id,
        row.role,
        row.invited_by,
        row.created_at,
        row.expires_at,
        row.accepted_at,
        row.revoked_at,
    )


def create_invitation(
    meta: MetaStore,
    email: str,
    *,
    team_id: str | None,
    project_id: str | None,
    role: str,
    invited_by: str | None,
    ttl_ms: int,
) -> tuple[Invitation, str]:
    """A new invitation and its clear token (shown once: in the mail, or to copy)."""
    writable(meta)
    now = now_ms()
    clear, digest = tokens.new_token(tokens.INVITE_PREFIX)
    inv_id = tokens.new_id("inv_")
    with meta.engine.begin() as conn:
        conn.execute(
            insert(I).values(
                id=inv_id,
                hash=digest,
                email=email,
                team_id=team_id,
                project_id=project_id,
                role=role,
                invited_by=invited_by,
                created_at=now,
                expires_at=now + ttl_ms,
            )
        )
    return get_invitation(meta, inv_id), clear


def get_invitation(meta: MetaStore, invitation_id: str) -> Invitation:
    with meta.engine.connect() as conn:
        row = conn.execute(select(I).where(I.c.id == invitation_id)).first()
    if row is None:
        raise NotFound(f"no invitation {invitation_id!r}")
    return _invitation(row)


def find_invitation(meta: MetaStore, token: str) -> Invitation:
    """The pending invitation of a token; 404 when unknown, used, revoked or expired (one
    answer for all: the token is the credential)."""
    row = None
    if tokens.well_formed(token, tokens.INVITE_PREFIX):
        with meta.engine.connect() as conn:
            row = conn.execute(select(I).where(I.c.hash == tokens.digest(token))).first()
    if row is None or not _invitation(row).pending:
        raise NotFound("this invitation is unknown, used, withdrawn or expired")
    return _invitation(row)


def take_invitation(meta: MetaStore, invitation_id: str) -> None:
    """Mark the invitation used; 404 when it is no longer pending (used a moment ago)."""
    writable(meta)
    now = now_ms()
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(I)
            .where(
                I.c.id == invitation_id,
                I.c.accepted_at.is_(None),
                I.c.revoked_at.is_(None),
                I.c.expires_at > now,
            )
            .values(accepted_at=now)
        )
    if result.rowcount != 1:
        raise NotFound("this invitation is unknown, used, withdrawn or expired")


def pending_invitations(
    meta: MetaStore, *, team_id: str | None = None, project_id: str | None = None
) -> list[Invitation]:
    """The pending invitations of a team (team roles) or of a project (guests)."""
    stmt = select(I).where(
        I.c.accepted_at.is_(None), I.c.revoked_at.is_(None), I.c.expires_at > now_ms()
    )
    if team_id is not None:
        stmt = stmt.where(I.c.team_id == team_id, I.c.project_id.is_(None))
    if project_id is not None:
        stmt = stmt.where(I.c.project_id == project_id)
    with meta.engine.connect() as conn:
        rows = conn.execute(stmt.order_by(I.c.created_at)).all()
    return [_invitation(r) for r in rows]


def revoke_invitation(
    meta: MetaStore,
    invitation_id: str,
    team_id: str | None = None,
    *,
    project_id: str | None = None,
) -> None:
    """Withdraw a pending invitation of a team (``team_id``: one to a team role) or of a
    project (``project_id``: one to be its guest); name exactly one. From then on its link
    is unknown to :func:`find_invitation` and :func:`take_invitation` (404). 404 when the
    invitation is not a pending one of that team or project (another's, accepted, withdrawn
    already), so a right on one team or project withdraws nothing of another."""
    if (team_id is None) == (project_id is None):
        raise ValueError("name the team or the project of the invitation, not both")
    writable(meta)
    where = [I.c.id == invitation_id, I.c.accepted_at.is_(None), I.c.revoked_at.is_(None)]
    if team_id is not None:
        where += [I.c.team_id == team_id, I.c.project_id.is_(None)]
    else:
        where.append(I.c.project_id == project_id)
    with meta.engine.begin() as conn:
        result = conn.execute(update(I).where(*where).values(revoked_at=now_ms()))
    if result.rowcount != 1:
        what = "this team" if team_id is not None else "this project's guests"
        raise NotFound(f"no pending invitation {invitation_id!r} of {what}")


# password resets --------------------------------------------------------------------------


def create_reset(meta: MetaStore, account_id: str, ttl_ms: int) -> str:
    """A new password-reset token of the account (clear; mailed, never shown by the API)."""
    writable(meta)
    now = now_ms()
    clear, digest = tokens.new_token(tokens.RESET_PREFIX)
    with meta.engine.begin() as conn:
        conn.execute(
            insert(P).values(
                id=tokens.new_id("rst_"),
                hash=digest,
                account_id=account_id,
                created_at=now,
                expires_at=now + ttl_ms,
            )
        )
    return clear


def take_reset(meta: MetaStore, token: str) -> str | None:
    """Spend a reset token: the account id the first time, None when unknown, used or
    expired. Every other outstanding reset token of the account is spent with it."""
    if not tokens.well_formed(token, tokens.RESET_PREFIX):
        return None
    writable(meta)
    now = now_ms()
    digest = tokens.digest(token)
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(P)
            .where(P.c.hash == digest, P.c.used_at.is_(None), P.c.expires_at > now)
            .values(used_at=now)
        )
        if result.rowcount != 1:
            return None
        account_id: str | None = conn.scalar(select(P.c.account_id).where(P.c.hash == digest))
        if account_id is not None:
            _spend_resets(conn, account_id, now)
    return account_id


def spend_resets(meta: MetaStore, account_id: str) -> int:
    """Spend every outstanding reset token of the account (its password changed another
    way: a link mailed before must not set it again); how many were outstanding."""
    writable(meta)
    with meta.engine.begin() as conn:
        return _spend_resets(conn, account_id, now_ms())


def _spend_resets(conn: Connection, account_id: str, now: int) -> int:
    result = conn.execute(
        update(P).where(P.c.account_id == account_id, P.c.used_at.is_(None)).values(used_at=now)
    )
    return int(result.rowcount)
