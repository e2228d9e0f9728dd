"""Two-factor codes (RFC 6238 TOTP through pyotp: 6 digits, 30 s, one step of clock drift
either way) and recovery codes (10 of them, each usable once, stored hashed).

A code is accepted once: :func:`matched_step` gives the time step a code belongs to, and the
account keeps the last step accepted (:func:`svc.accounts.store.accept_totp_step`), refusing
it and every earlier one (RFC 6238 section 5.2), so a code seen over a shoulder or replayed
from a proxy's log signs nobody in.
"""

from __future__ import annotations

import hmac
import secrets
import time

import pyotp

from svc import credentials

ISSUER = "svc"
RECOVERY_CODES = 10


def new_secret() -> str:
    return pyotp.random_base32()


def provisioning_uri(secret: str, email: str) -> str:
    """The ``otpauth://`` URI an authenticator app reads (from a QR code or typed)."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def matched_step(secret: str, code: str, now: float | None = None) -> int | None:
    """The time step (30 s since the epoch) of the secret whose code ``code`` is, among the
    current one and one either side; None when it is none of them."""
    code = code.strip().replace(" ", "")
    if not (len(code) == 6 and code.isdigit()):
        return None
    generator = pyotp.TOTP(secret)
    current = generator.timecode(time.time() if now is None else now)
    for step in (current, current - 1, current + 1):
        if hmac.compare_digest(code, generator.generate_otp(step)):
            return step
    return None


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
