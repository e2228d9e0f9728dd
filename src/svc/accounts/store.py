"""Accounts and their sessions in the metadata store (SQLAlchemy Core; SQLite or PostgreSQL).

Every function is synchronous and takes the :class:`~svc.meta.store.MetaStore`; call it from
a worker thread. Emails are kept in lower case, passwords as argon2id hashes, session tokens
and recovery codes as SHA-256 hashes: nothing stored here lets anyone sign in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from svc.accounts import tokens
from svc.errors import Conflict, InvalidRequest, NotFound
from svc.meta import tables
from svc.meta.store import MetadataUnavailable, MetaStore
from svc.timeutil import iso_ms, now_ms

EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+$")
MAX_EMAIL = 254
MAX_NAME = 100

A = tables.accounts
S = tables.account_sessions
R = tables.recovery_codes


@dataclass(frozen=True)
class Account:
    id: str
    email: str
    name: str
    password_hash: str
    totp_secret: str | None
    totp_pending: str | None
    disabled_at: int | None
    created_at: int

    @property
    def active(self) -> bool:
        return self.disabled_at is None

    def to_json(self) -> dict[str, Any]:
        """What the API shows of an account (never a hash or a secret)."""
        return {
            "id": self.id,
            "email": self.email,
            "name": self.name,
            "totpEnabled": self.totp_secret is not None,
            "disabledAt": iso_ms(self.disabled_at),
            "createdAt": iso_ms(self.created_at),
        }


def normalize_email(value: object, field: str = "email") -> str:
    """The email in lower case, when it looks like an address (else 400 naming ``field``)."""
    if not isinstance(value, str):
        raise InvalidRequest(f"`{field}` must be an email address", field=field)
    email = value.strip().lower()
    if len(email) > MAX_EMAIL or not EMAIL.match(email):
        raise InvalidRequest(f"`{field}` must be an email address", field=field)
    return email


def check_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str) or len(value.strip()) > MAX_NAME:
        raise InvalidRequest(
            f"`{field}` must be a string of at most {MAX_NAME} characters", field=field
        )
    return value.strip()


def writable(meta: MetaStore) -> None:
    """503 when the metadata store's file is lost (:meth:`MetaStore.check_file`)."""
    lost = meta.check_file()
    if lost is not None:
        raise MetadataUnavailable(lost)


def _account(row: Any) -> Account:
    return Account(
        id=row.id,
        email=row.email,
        name=row.name,
        password_hash=row.password_hash,
        totp_secret=row.totp_secret,
        totp_pending=row.totp_pending,
        disabled_at=row.disabled_at,
        created_at=row.created_at,
    )


# accounts ---------------------------------------------------------------------------------


def create_account(meta: MetaStore, email: str, password_hash: str, name: str = "") -> Account:
    """A new account; 409 when the email is taken."""
    writable(meta)
    now = now_ms()
    account_id = tokens.new_id("acc_")
    try:
        with meta.engine.begin() as conn:
            conn.execute(
                insert(A).values(
                    id=account_id,
                    email=email,
                    name=name,
                    password_hash=password_hash,
                    created_at=now,
                    updated_at=now,
                )
            )
    except IntegrityError as exc:
        raise Conflict(f"an account with the email {email!r} exists") from exc
    return get_account(meta, account_id)


def get_account(meta: MetaStore, account_id: str) -> Account:
    with meta.engine.connect() as conn:
        row = conn.execute(select(A).where(A.c.id == account_id)).first()
    if row is None:
        raise NotFound(f"no account {account_id!r}")
    return _account(row)


def find_account(meta: MetaStore, email: str) -> Account | None:
    with meta.engine.connect() as conn:
        row = conn.execute(select(A).where(A.c.email == email)).first()
    return None if row is None else _account(row)


def list_accounts(meta: MetaStore) -> list[Account]:
    with meta.engine.connect() as conn:
        rows = conn.execute(select(A).order_by(A.c.created_at, A.c.id)).all()
    return [_account(r) for r in rows]


def _update(meta: MetaStore, account_id: str, **values: Any) -> None:
    writable(meta)
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(A).where(A.c.id == account_id).values(**values, updated_at=now_ms())
        )
    if result.rowcount == 0:
        raise NotFound(f"no account {account_id!r}")


def set_password(meta: MetaStore, account_id: str, password_hash: str) -> None:
    _update(meta, account_id, password_hash=password_hash)


def set_name(meta: MetaStore, account_id: str, name: str) -> None:
    _update(meta, account_id, name=name)


def set_disabled(meta: MetaStore, account_id: str, disabled: bool) -> None:
    """Disable (and sign out everywhere) or enable an account."""
    _update(meta, account_id, disabled_at=now_ms() if disabled else None)
    if disabled:
        delete_sessions(meta, account_id)


# two-factor -------------------------------------------------------------------------------


def set_totp_pending(meta: MetaStore, account_id: str, secret: str | None) -> None:
    _update(meta, account_id, totp_pending=secret)


def enable_totp(meta: MetaStore, account_id: str, secret: str, recovery_hashes: list[str]) -> None:
    """Two-factor on with ``secret``; the recovery codes replace any earlier ones."""
    writable(meta)
    with meta.engine.begin() as conn:
        conn.execute(
            update(A)
            .where(A.c.id == account_id)
            .values(totp_secret=secret, totp_pending=None, updated_at=now_ms())
        )
        conn.execute(delete(R).where(R.c.account_id == account_id))
        if recovery_hashes:
            conn.execute(
                insert(R), [{"account_id": account_id, "hash": h} for h in recovery_hashes]
            )


def accept_totp_step(meta: MetaStore, account_id: str, step: int) -> bool:
    """Record ``step`` as the account's last accepted two-factor time step: True when it is
    later than the last one (the code is accepted), False when it or a later one was accepted
    already (a replayed code). One conditional UPDATE: of two requests with the same code,
    one wins."""
    writable(meta)
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(A)
            .where(
                A.c.id == account_id,
                (A.c.totp_last_step.is_(None)) | (A.c.totp_last_step < step),
            )
            .values(totp_last_step=step)
        )
    return result.rowcount == 1


def disable_totp(meta: MetaStore, account_id: str) -> None:
    writable(meta)
    with meta.engine.begin() as conn:
        conn.execute(
            update(A)
            .where(A.c.id == account_id)
            .values(totp_secret=None, totp_pending=None, updated_at=now_ms())
        )
        conn.execute(delete(R).where(R.c.account_id == account_id))


def use_recovery_code(meta: MetaStore, account_id: str, code_hash: str) -> bool:
    """Spend a recovery code: True once for each unused code, False ever after."""
    writable(meta)
    with meta.engine.begin() as conn:
        result = conn.execute(
            update(R)
            .where(R.c.account_id == account_id, R.c.hash == code_hash, R.c.used_at.is_(None))
            .values(used_at=now_ms())
        )
    return result.rowcount == 1


def recovery_codes_left(meta: MetaStore, account_id: str) -> int:
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(R.c.hash).where(R.c.account_id == account_id, R.c.used_at.is_(None))
        ).all()
    return len(rows)


# sessions ---------------------------------------------------------------------------------


def create_session(meta: MetaStore, account_id: str, ttl_ms: int) -> tuple[str, str, int]:
    """A new session of the account: ``(session id, clear token, expires at ms)``."""
    writable(meta)
    now = now_ms()
    clear, digest = tokens.new_token(tokens.SESSION_PREFIX)
    session_id = tokens.new_id("ses_")
    with meta.engine.begin() as conn:
        conn.execute(delete(S).where(S.c.expires_at <= now))  # housekeeping, cheap
        conn.execute(
            insert(S).values(
                id=session_id,
                account_id=account_id,
                hash=digest,
                created_at=now,
                expires_at=now + ttl_ms,
            )
        )
    return session_id, clear, now + ttl_ms


def find_session(meta: MetaStore, token: str) -> tuple[str, Account] | None:
    """The session id and account of a valid session token: unexpired, of an enabled account."""
    if not tokens.well_formed(token, tokens.SESSION_PREFIX):
        return None
    with meta.engine.connect() as conn:
        row = conn.execute(
            select(S.c.id.label("session_id"), A)
            .join(A, A.c.id == S.c.account_id)
            .where(S.c.hash == tokens.digest(token), S.c.expires_at > now_ms())
        ).first()
    if row is None or row.disabled_at is not None:
        return None
    return row.session_id, _account(row)


def delete_session(meta: MetaStore, session_id: str) -> None:
    writable(meta)
    with meta.engine.begin() as conn:
        conn.execute(delete(S).where(S.c.id == session_id))


def delete_sessions(meta: MetaStore, account_id: str, keep: str | None = None) -> int:
    """Sign an account out everywhere (but session ``keep``); the number of sessions ended."""
    writable(meta)
    with meta.engine.begin() as conn:
        stmt = delete(S).where(S.c.account_id == account_id)
        if keep is not None:
            stmt = stmt.where(S.c.id != keep)
        return conn.execute(stmt).rowcount
