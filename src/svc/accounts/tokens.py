"""Random tokens for sessions, invitations and password resets: shown once, stored hashed.

``svc_sess_`` + 40 base62 characters for a session, ``svc_invite_`` for an invitation,
``svc_reset_`` for a password reset. Tokens are random, so SHA-256 is enough to store them."""

from __future__ import annotations

from svc import credentials

SESSION_PREFIX = "svc_sess_"
INVITE_PREFIX = "svc_invite_"
RESET_PREFIX = "svc_reset_"
_LENGTH = 40


def new_token(prefix: str) -> tuple[str, str]:
    """A new token and its hash: ``(clear, hash)``."""
    clear = prefix + credentials.random_base62(_LENGTH)
    return clear, credentials.hash_secret(clear)


def digest(token: str) -> str:
    return credentials.hash_secret(token)


def well_formed(token: str, prefix: str) -> bool:
    """Whether ``token`` has the form of a token of that kind (checked before any lookup)."""
    rest = token[len(prefix) :]
    return token.startswith(prefix) and len(rest) == _LENGTH and rest.isalnum() and rest.isascii()


def new_id(prefix: str) -> str:
    """A record id: ``acc_``, ``team_``, ``ses_``, ``inv_``, ``rst_`` + 16 base62."""
    return prefix + credentials.random_base62(16)
