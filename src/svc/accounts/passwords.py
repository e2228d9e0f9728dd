"""Passwords: argon2id hashes (argon2-cffi's defaults, RFC 9106's low-memory profile: 64 MiB,
3 passes; ``SVC_PASSWORD_HASH_MEMORY_KIB`` and ``SVC_PASSWORD_HASH_ITERATIONS`` change them),
and a verification against a dummy hash for unknown accounts, so that an unknown email costs
the same time as a wrong password. A hash keeps its own parameters: changing them leaves old
hashes valid (they are re-hashed at the next sign-in)."""

from __future__ import annotations

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from svc.errors import InvalidRequest

MIN_LENGTH = 10
MAX_LENGTH = 256

_hasher = PasswordHasher()  # argon2id


def configure(memory_kib: int, iterations: int) -> None:
    """Hash new passwords with these argon2id costs (at start-up)."""
    global _hasher
    if (memory_kib, iterations) != (_hasher.memory_cost, _hasher.time_cost):
        _hasher = PasswordHasher(memory_cost=memory_kib, time_cost=iterations)
        _dummy_hash.cache_clear()


def check_policy(password: object, field: str = "password") -> str:
    """The password when it is acceptable (a string of 10 to 256 characters), else 400."""
    if not isinstance(password, str) or not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidRequest(
            f"`{field}` must be a string of {MIN_LENGTH} to {MAX_LENGTH} characters", field=field
        )
    return password


def hash_password(password: str) -> str:
    """An argon2id hash of ``password`` (with its own salt and parameters)."""
    return _hasher.hash(password)


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash("svc dummy password, never anyone's")


def verify(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``. With no hash (an unknown or disabled
    account, or one that never set a password) a dummy hash is verified instead and False
    returned: the same work either way."""
    target = password_hash or _dummy_hash()
    try:
        _hasher.verify(target, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
    return bool(password_hash)


def needs_rehash(password_hash: str) -> bool:
    """Whether the hash was made with other parameters than today's (re-hash on sign-in)."""
    return _hasher.check_needs_rehash(password_hash)
