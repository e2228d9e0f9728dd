"""Credential formats: generation, hashing and recognition of svc keys and tokens.

Keys are ``svc_live_`` + 32 base62 characters from :mod:`secrets`; admin tokens are
``svc_admin_`` + 32. Only SHA-256 hashes are stored: the keys are random, so a fast hash
is enough and lookups stay O(1).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string

KEY_PREFIX = "svc_live_"
ADMIN_PREFIX = "svc_admin_"
SHARE_PREFIX = "svc_share_"
_ALPHABET = string.ascii_letters + string.digits
_RANDOM_LENGTH = 32
KEY_PATTERN = re.compile(r"^svc_(live|admin|share)_[A-Za-z0-9]{24,64}$")


def random_base62(length: int = _RANDOM_LENGTH) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_api_key() -> str:
    return KEY_PREFIX + random_base62()


def new_admin_token() -> str:
    return ADMIN_PREFIX + random_base62()


def new_share_token() -> str:
    return SHARE_PREFIX + random_base62()


def new_edge_secret() -> str:
    """An edge secret (svc.http.edge_auth): ``svc_edge_<id>_<random>``, ``<id>`` 8 base62
    characters (its key id), ``<random>`` 40 (238 bits)."""
    return f"svc_edge_{random_base62(8)}_{random_base62(40)}"


def edge_key_id(secret: str) -> str:
    """``svc_edge_<id>_<random>`` names its key id; any other secret has the id ``''``."""
    if secret.startswith("svc_edge_"):
        kid, sep, rest = secret[len("svc_edge_") :].partition("_")
        if sep and kid.isalnum() and kid.isascii() and rest.isalnum() and rest.isascii():
            return kid
    return ""


def hash_secret(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def is_well_formed(value: str) -> bool:
    return KEY_PATTERN.match(value) is not None


def hint(value: str) -> str:
    """A recognisable, non-secret fragment of a key: its prefix and last four characters."""
    return value[: value.index("_", 4) + 1] + "..." + value[-4:]


def same_secret(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
