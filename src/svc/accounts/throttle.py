"""Sign-in attempts: failures limited per client address and per email (token buckets of
:mod:`svc.limits.bucket`); and password-reset requests, each limited the same way
(:meth:`SignInThrottle.take`, :func:`reset_throttle`).

Only failures take a token; while either bucket is empty, sign-in answers 429
``rate_limited`` (with ``Retry-After``) without checking the password, whatever the email:
an unknown email is limited exactly as a known one, so the limit reveals nothing.

Where the buckets live: with ``SVC_REDIS_URL`` set, in the Redis the rate limits use (the
same :class:`~svc.limits.shared.RedisBuckets`, keys ``svc:rl:signin_address:<digest>`` and
``svc:rl:signin_account:<digest>``), so every svc process on one store counts the same
failures; without it, in this process. When Redis cannot be reached, this process's own
buckets stand in (as for the rate limits), so sign-in goes on, limited per process. Buckets
are keyed by a digest of the address or email, never the value itself. A check and the
charge of a failure are separate calls: attempts already past the check when the limit is
reached still count, and may each get their answer (as within one process).
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import TYPE_CHECKING

from svc.errors import RateLimited
from svc.limits.bucket import Rule, TokenBuckets, parse_rule

if TYPE_CHECKING:  # imported where SVC_REDIS_URL is set (svc.limits.core)
    from svc.limits.shared import RedisBuckets


def _digest(value: str) -> str:
    return hashlib.blake2b(value.encode(), digest_size=16).hexdigest()


class SignInThrottle:
    def __init__(
        self,
        per_address: str,
        per_account: str,
        shared: RedisBuckets | None = None,
        *,
        kind: str = "signin",
        what: str = "failed sign-ins",
    ) -> None:
        """``shared``: the rate limits' Redis buckets (:attr:`svc.limits.core.Limits.remote`),
        or None to count in this process only. ``kind`` names the buckets and the settings
        (``SVC_<KIND>_LIMIT_PER_ADDRESS``, ``..._PER_ACCOUNT``); ``what`` is counted, as the
        429's message says it."""
        upper = kind.upper()
        self.what = what
        self.address_rule: Rule = parse_rule(
            f"{kind}_address", per_address, f"SVC_{upper}_LIMIT_PER_ADDRESS"
        )
        self.account_rule: Rule = parse_rule(
            f"{kind}_account", per_account, f"SVC_{upper}_LIMIT_PER_ACCOUNT"
        )
        self.by_address = TokenBuckets(self.address_rule) if self.address_rule.enabled else None
        self.by_account = TokenBuckets(self.account_rule) if self.account_rule.enabled else None
        self.shared = shared

    @property
    def backend(self) -> str:
        return "redis" if self.shared is not None else "memory"

    def _buckets(self, address: str, email: str) -> list[tuple[TokenBuckets, str, str]]:
        return [
            (buckets, _digest(key), what)
            for buckets, key, what in (
                (self.by_address, address, "from this address"),
                (self.by_account, email, "for this account"),
            )
            if buckets is not None
        ]

    async def check(self, address: str, email: str) -> None:
        """429 while the address's or the email's failures bucket is empty."""
        now = time.monotonic()
        for buckets, key, what in self._buckets(address, email):
            if self.shared is not None:
                level = await self.shared.peek(buckets, key, now)
            else:
                level = buckets.level(key, now)
            if level < 1.0:
                rule = buckets.rule
                wait = max(1, math.ceil((1.0 - level) / rule.rate))
                raise RateLimited(
                    f"too many {self.what} {what}: retry in {wait} s ({rule.setting})",
                    headers={"Retry-After": str(wait)},
                )

    async def failed(self, address: str, email: str) -> None:
        """Take a token from the address's and the email's buckets (a failure happened)."""
        now = time.monotonic()
        for buckets, key, _what in self._buckets(address, email):
            if self.shared is not None:
                await self.shared.charge(buckets, key, now)
            else:
                buckets.charge(key, now)

    async def take(self, address: str, email: str) -> None:
        """Count one attempt whatever its outcome: 429 while the address's or the email's
        bucket is empty (nothing taken then), else a token from each."""
        await self.check(address, email)
        await self.failed(address, email)


def reset_throttle(
    per_address: str, per_account: str, shared: RedisBuckets | None = None
) -> SignInThrottle:
    """The limits of POST /auth/reset: every request takes a token from its client address's
    bucket and from its email's (known or not, so the limit reveals nothing)."""
    return SignInThrottle(
        per_address, per_account, shared, kind="reset", what="password-reset requests"
    )
