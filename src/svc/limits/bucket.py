"""Token buckets: the rule of a limit, its maths, and the in-process table of buckets.

A bucket holds up to ``burst`` tokens and refills at ``rate`` tokens a second; a request takes
one token and is refused when less than one is left. A bucket nobody touched for
``burst / rate`` seconds is full again, the same as no bucket at all: such buckets are dropped
from the table, so it stays as small as the set of recently active keys.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

_SPEC = re.compile(
    r"^\s*(?P<count>\d+(?:\.\d+)?)\s*(?:/\s*(?P<unit>s|sec|second|m|min|minute|h|hour))?"
    r"\s*(?::\s*(?P<burst>\d+))?\s*$"
)
_UNIT_SECONDS = {
    None: 1.0,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One limit: ``rate`` tokens a second into a bucket of ``burst``; rate 0 is no limit."""

    name: str
    rate: float
    burst: int
    setting: str = ""

    @property
    def enabled(self) -> bool:
        return self.rate > 0 and self.burst > 0

    @property
    def window(self) -> float:
        """Seconds an empty bucket takes to fill."""
        return self.burst / self.rate if self.rate > 0 else 0.0

    def policy(self) -> str:
        """The ``RateLimit-Policy`` value: ``<burst>;w=<seconds to fill>``."""
        return f"{self.burst};w={max(1, math.ceil(self.window))}"


def parse_rule(name: str, spec: str, setting: str = "") -> Rule:
    """``RATE[/s|/m|/h][:BURST]``: ``20`` is 20 a second with a burst of 20, ``20:200`` allows
    bursts of 200, ``30/m`` is 30 a minute with a burst of 30. ``0`` (or empty) is no limit."""
    text = spec.strip().lower()
    if text in ("", "0", "off", "none"):
        return Rule(name, 0.0, 0, setting)
    match = _SPEC.match(text)
    if match is None:
        raise ValueError(
            f"setting {setting or name}: {spec!r} is not RATE[/s|/m|/h][:BURST], e.g. 20:200"
        )
    count = float(match["count"])
    seconds = _UNIT_SECONDS[match["unit"]]
    burst = int(match["burst"]) if match["burst"] else max(1, math.ceil(count))
    if count <= 0 or burst <= 0:
        return Rule(name, 0.0, 0, setting)
    return Rule(name, count / seconds, burst, setting)


@dataclass(slots=True)
class Decision:
    """The outcome of one check: allowed or not, and what the RateLimit headers say."""

    allowed: bool
    rule: Rule
    remaining: int
    retry_after: float  # seconds until a refused request would be allowed (0 when allowed)
    reset: float  # seconds until the bucket is full again

    def headers(self) -> dict[str, str]:
        """``RateLimit-*`` headers; with ``Retry-After`` when refused."""
        out = {
            "RateLimit-Limit": str(self.rule.burst),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(math.ceil(self.reset)),
            "RateLimit-Policy": self.rule.policy(),
        }
        if not self.allowed:
            out["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        return out

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        return [(k.lower().encode(), v.encode()) for k, v in self.headers().items()]


def decide(rule: Rule, level: float, allowed: bool, cost: float = 1.0) -> Decision:
    """The decision for a bucket at ``level`` tokens (after the take when allowed)."""
    rate = rule.rate
    level = max(0.0, level)
    return Decision(
        allowed,
        rule,
        int(level),
        0.0 if allowed else (cost - level) / rate,
        (rule.burst - level) / rate,
    )


def pick(decisions: Sequence[Decision]) -> Decision:
    """The decision to report among several buckets: the longest wait when refused, else the
    bucket with the fewest requests left."""
    refused = [d for d in decisions if not d.allowed]
    if refused:
        return max(refused, key=lambda d: d.retry_after)
    return min(decisions, key=lambda d: d.remaining)


class TokenBuckets:
    """The buckets of one rule in this process, by key (an address, a key hash, a project).

    Not thread-safe: used from the event loop only. Entries are kept in least-recently-used
    order; stale ones (full again) are dropped from the front as new ones come, and the table
    never holds more than ``max_keys`` (evicting a bucket only makes it full: lenient).
    """

    __slots__ = ("_burst", "_rate", "_table", "denied", "max_keys", "rule")

    def __init__(self, rule: Rule, max_keys: int = 500_000) -> None:
        self.rule = rule
        self._rate = rule.rate
        self._burst = float(rule.burst)
        self._table: OrderedDict[str, list[float]] = OrderedDict()
        self.max_keys = max_keys
        self.denied = 0

    def __len__(self) -> int:
        return len(self._table)

    def level(self, key: str, now: float) -> float:
        """Tokens in the bucket at ``now`` (monotonic seconds), without taking any."""
        entry = self._table.get(key)
        if entry is None:
            return self._burst
        level = entry[0] + (now - entry[1]) * self._rate
        return level if level < self._burst else self._burst

    def set(self, key: str, level: float, now: float) -> None:
        """Record the bucket of ``key`` at ``level`` tokens at ``now``."""
        table = self._table
        entry = table.get(key)
        if entry is not None:
            entry[0] = level
            entry[1] = now
            table.move_to_end(key)
            return
        table[key] = [level, now]
        if len(table) > 1024:
            self._trim(now)

    def _trim(self, now: float) -> None:
        table, rate, burst = self._table, self._rate, self._burst
        for _ in range(2):
            key, entry = next(iter(table.items()))
            if entry[0] + (now - entry[1]) * rate < burst:
                break
            del table[key]
        while len(table) > self.max_keys:
            table.popitem(last=False)

    def check(self, key: str, now: float, cost: float = 1.0) -> Decision:
        """Take ``cost`` tokens when there are enough; the decision either way."""
        level = self.level(key, now)
        if level >= cost:
            self.set(key, level - cost, now)
            return decide(self.rule, level - cost, True, cost)
        self.denied += 1
        return decide(self.rule, level, False, cost)

    def charge(self, key: str, now: float, cost: float = 1.0) -> None:
        """Take ``cost`` tokens whatever is left (never below zero): for what has happened
        already, such as a failed authentication."""
        level = self.level(key, now) - cost
        self.set(key, level if level > 0.0 else 0.0, now)


def check_all(
    checks: Sequence[tuple[TokenBuckets, str]], now: float, cost: float = 1.0
) -> Decision:
    """Take ``cost`` from every bucket only when each has enough (all or nothing)."""
    if len(checks) == 1:
        buckets, key = checks[0]
        return buckets.check(key, now, cost)
    levels = [b.level(k, now) for b, k in checks]
    if all(level >= cost for level in levels):
        decisions = []
        for (buckets, key), level in zip(checks, levels, strict=True):
            buckets.set(key, level - cost, now)
            decisions.append(decide(buckets.rule, level - cost, True, cost))
        return pick(decisions)
    refused = []
    for (buckets, _key), level in zip(checks, levels, strict=True):
        if level < cost:
            buckets.denied += 1
            refused.append(decide(buckets.rule, level, False, cost))
    return pick(refused)
