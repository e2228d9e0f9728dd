"""Sign-in attempts: failures limited per client address and per email (token buckets of
:mod:`svc.limits.bucket`, in this process).

Only failures take a token; while either bucket is empty, sign-in answers 429
``rate_limited`` (with ``Retry-After``) without checking the password, whatever the email:
an unknown email is limited exactly as a known one, so the limit reveals nothing.
"""

from __future__ import annotations

import math
import time

from svc.errors import RateLimited
from svc.limits.bucket import Rule, TokenBuckets, parse_rule


class SignInThrottle:
    def __init__(self, per_address: str, per_account: str) -> None:
        self.address_rule: Rule = parse_rule(
            "signin_address", per_address, "SVC_SIGNIN_LIMIT_PER_ADDRESS"
        )
        self.account_rule: Rule = parse_rule(
            "signin_account", per_account, "SVC_SIGNIN_LIMIT_PER_ACCOUNT"
        )
        self.by_address = TokenBuckets(self.address_rule) if self.address_rule.enabled else None
        self.by_account = TokenBuckets(self.account_rule) if self.account_rule.enabled else None

    def check(self, address: str, email: str) -> None:
        """429 while the address's or the email's failures bucket is empty."""
        now = time.monotonic()
        for buckets, key, what in (
            (self.by_address, address, "from this address"),
            (self.by_account, email, "for this account"),
        ):
            if buckets is None:
                continue
            level = buckets.level(key, now)
            if level < 1.0:
                rule = buckets.rule
                wait = max(1, math.ceil((1.0 - level) / rule.rate))
                raise RateLimited(
                    f"too many failed sign-ins {what}: retry in {wait} s ({rule.setting})",
                    headers={"Retry-After": str(wait)},
                )

    def failed(self, address: str, email: str) -> None:
        now = time.monotonic()
        if self.by_address is not None:
            self.by_address.charge(address, now)
        if self.by_account is not None:
            self.by_account.charge(email, now)
