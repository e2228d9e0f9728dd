"""Two-factor codes (RFC 6238 TOTP through pyotp: 6 digits, 30 s, one step of clock drift
either way) and recovery codes (10 of them, each usable once, stored hashed)."""

from __future__ import annotations

import secrets

import pyotp

from svc import credentials

ISSUER = "svc"
RECOVERY_CODES = 10


def new_secret() -> str:
    return pyotp.random_base32()


def provisioning_uri(secret: str, email: str) -> str:
    """The ``otpauth://`` URI an authenticator app reads (from a QR code or typed)."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def verify(secret: str, code: str) -> bool:
    code = code.strip().replace(" ", "")
    if not (len(code) == 6 and code.isdigit()):
        return False
    return pyotp.TOTP(secret).verify(code, valid_window=1)


def new_recovery_codes() -> list[str]:
    """Fresh recovery codes, ``xxxxx-xxxxx`` of lower-case letters and digits."""
    alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = "".join(secrets.choice(alphabet) for _ in range(10))
        codes.append(raw[:5] + "-" + raw[5:])
    return codes


def recovery_hash(code: str) -> str:
    """The stored form of a recovery code (case, spaces and the dash do not matter)."""
    normal = code.strip().lower().replace("-", "").replace(" ", "")
    return credentials.hash_secret("recovery:" + normal)


def looks_like_recovery_code(code: str) -> bool:
    normal = code.strip().lower().replace("-", "").replace(" ", "")
    return len(normal) == 10 and normal.isalnum()
