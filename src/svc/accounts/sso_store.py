"""Single sign-on's records in the metadata store: the sign-ins under way at the provider
(``oidc_logins``) and the identities linked to accounts (``oidc_identities``).

A sign-in under way is keyed by the SHA-256 of its ``state`` and holds the SHA-256 of the
browser's binding, the nonce and the PKCE verifier; it works once (:func:`take_login` deletes
it in the transaction that reads it: of two requests with the same state, one gets it) and
only until it expires. Every process of one store sees the same records, so a sign-in begun
on one node is finished on any other. Synchronous: call from a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from svc.accounts import tokens
from svc.accounts.store import writable
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import now_ms

L = tables.oidc_logins
I = tables.oidc_identities  # noqa: E741


@dataclass(frozen=True)
class PendingLogin:
    """A sign-in begun at the provider, as :func:`take_login` hands it over (once)."""

    binding_hash: str
    nonce: str
    code_verifier: str


def create_login(
    meta: MetaStore, state: str, binding: str, nonce: str, code_verifier: str, ttl_ms: int
) -> int:
    """Record a sign-in begun now; its expiry (ms). Expired ones are deleted first."""
    writable(meta)
    now = now_ms()
    with meta.engine.begin() as conn:
        conn.execute(delete(L).where(L.c.expires_at <= now))  # housekeeping, indexed
        conn.execute(
            insert(L).values(
                state_hash=tokens.digest(state),
                binding_hash=tokens.digest(binding),
                nonce=nonce,
                code_verifier=code_verifier,
                created_at=now,
                expires_at=now + ttl_ms,
            )
        )
    return now + ttl_ms


def take_login(meta: MetaStore, state: str) -> PendingLogin | None:
    """The sign-in of ``state``, deleted now: None when it is unknown, used or expired."""
    writable(meta)
    digest = tokens.digest(state)
    with meta.engine.begin() as conn:
        row = conn.execute(
            select(L).where(L.c.state_hash == digest, L.c.expires_at > now_ms())
        ).first()
        if row is None:
            return None
        if conn.execute(delete(L).where(L.c.state_hash == digest)).rowcount != 1:
            return None  # another request took it first
    return PendingLogin(row.binding_hash, row.nonce, row.code_verifier)


def find_identity(meta: MetaStore, issuer: str, subject: str) -> str | None:
    """The account id linked to the provider's ``subject``, or None."""
    with meta.engine.connect() as conn:
        found: str | None = conn.scalar(
            select(I.c.account_id).where(I.c.issuer == issuer, I.c.subject == subject)
        )
    return found


def identity_of(meta: MetaStore, issuer: str, account_id: str) -> str | None:
    """The subject at ``issuer`` linked to the account, or None."""
    with meta.engine.connect() as conn:
        found: str | None = conn.scalar(
            select(I.c.subject).where(I.c.issuer == issuer, I.c.account_id == account_id)
        )
    return found


def link_identity(meta: MetaStore, issuer: str, subject: str, account_id: str, email: str) -> bool:
    """Link ``(issuer, subject)`` to the account: True, or False when that identity is
    linked already (to this account or, after a race, another)."""
    writable(meta)
    now = now_ms()
    try:
        with meta.engine.begin() as conn:
            conn.execute(
                insert(I).values(
                    issuer=issuer,
                    subject=subject,
                    account_id=account_id,
                    email=email,
                    created_at=now,
                    last_used_at=now,
                )
            )
    except IntegrityError:
        return False
    return True


def touch_identity(meta: MetaStore, issuer: str, subject: str, email: str) -> None:
    """Record a sign-in with the identity, and the email the provider says now."""
    writable(meta)
    with meta.engine.begin() as conn:
        conn.execute(
            update(I)
            .where(I.c.issuer == issuer, I.c.subject == subject)
            .values(email=email, last_used_at=now_ms())
        )
