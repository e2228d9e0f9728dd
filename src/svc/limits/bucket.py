"""Token buckets: the rule of a limit, its maths, and the in-process table of buckets.

A bucket holds up to ``burst`` tokens and refills at ``rate`` tokens a second; a request takes
one token and is refused when less than one is left. A bucket nobody touched for
``burst / rate`` seconds is full again, the same as no bucket at all: such buckets are dropped
from the table, so it holds only the keys active in the last two such windows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

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
    # header values, made once (the rule is on every request)
    limit_bytes: bytes = field(init=False, repr=False, compare=False)
    policy_bytes: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit_bytes", str(self.burst).encode())
        object.__setattr__(self, "policy_bytes", self.policy().encode())

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


class Decision:
    """The outcome of one check: allowed or not, and what the RateLimit headers say.

    A plain slotted class (made on every request): the header figures are derived on use."""

    __slots__ = ("allowed", "cost", "level", "rule")

    def __init__(self, allowed: bool, rule: Rule, level: float, cost: float = 1.0) -> None:
        self.allowed = allowed
        self.rule = rule
        self.level = level if level > 0.0 else 0.0  # tokens left (after the take if allowed)
        self.cost = cost

    @property
    def remaining(self) -> int:
        return int(self.level)

    @property
    def retry_after(self) -> float:
        """Seconds until a refused request would be allowed (0 when allowed)."""
        return 0.0 if self.allowed else (self.cost - self.level) / self.rule.rate

    @property
    def reset(self) -> float:
        """Seconds until the bucket is full again."""
        return (self.rule.burst - self.level) / self.rule.rate

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
        """The ``RateLimit-*`` headers of an allowed request, as ASGI wants them."""
        rule = self.rule
        level = self.level
        reset = (rule.burst - level) / rule.rate
        return [
            (b"ratelimit-limit", rule.limit_bytes),
            (b"ratelimit-remaining", b"%d" % level),
            (b"ratelimit-reset", b"%d" % -(-reset // 1)),
            (b"ratelimit-policy", rule.policy_bytes),
        ]


def decide(rule: Rule, level: float, allowed: bool, cost: float = 1.0) -> Decision:
    """The decision for a bucket at ``level`` tokens (after the take when allowed)."""
    return Decision(allowed, rule, level, cost)


def pick(decisions: Sequence[Decision]) -> Decision:
    """The decision to report among several buckets: the longest wait when refused, else the
    bucket with the fewest requests left."""
    refused = [d for d in decisions if not d.allowed]
    if refused:
        return max(refused, key=lambda d: d.retry_after)
    return min(decisions, key=lambda d: d.level)


class TokenBuckets:
    """The buckets of one rule in this process, by key (an address, a key hash, a project).

    Not thread-safe: used from the event loop only. The table has two generations: every
    ``burst / rate`` seconds (the time an untouched bucket takes to fill) the older one is
    dropped, which forgets only buckets that are full again, exactly as if they were kept. A
    bucket found in the older generation moves to the newer. Past ``max_keys`` buckets in the
    newer generation the generations turn early (lenient: some buckets are forgotten before
    they are full).
    """

    __slots__ = (
        "_burst",
        "_new",
        "_old",
        "_rate",
        "_turned",
        "_window",
        "denied",
        "max_keys",
        "rule",
    )

    def __init__(self, rule: Rule, max_keys: int = 200_000) -> None:
        self.rule = rule
        self._rate = rule.rate
        self._burst = float(rule.burst)
        self._window = rule.window
        self._new: dict[str, list[float]] = {}
        self._old: dict[str, list[float]] = {}
        self._turned = -math.inf
        self.max_keys = max_keys
        self.denied = 0

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def _turn(self, now: float) -> None:
        self._old = self._new
        self._new = {}
        self._turned = now

    def _entry(self, key: str, now: float) -> list[float] | None:
        if now - self._turned >= self._window:
            self._turn(now)
        entry = self._new.get(key)
        if entry is None:
            entry = self._old.get(key)
            if entry is not None:
                self._new[key] = entry
        return entry

    def level(self, key: str, now: float) -> float:
        """Tokens in the bucket at ``now`` (monotonic seconds), without taking any."""
        entry = self._entry(key, now)
        if entry is None:
            return self._burst
        level = entry[0] + (now - entry[1]) * self._rate
        return level if level < self._burst else self._burst

    def set(self, key: str, level: float, now: float) -> None:
        """Record the bucket of ``key`` at ``level`` tokens at ``now``."""
        entry = self._entry(key, now)
        if entry is not None:
            entry[0] = level
            entry[1] = now
            return
        self._new[key] = [level, now]
        if len(self._new) > self.max_keys:
            self._turn(now)

    def check(self, key: str, now: float, cost: float = 1.0) -> Decision:
        """Take ``cost`` tokens when there are enough; the decision either way."""
        entry = self._entry(key, now)
        if entry is None:
            level = self._burst
        else:
            level = entry[0] + (now - entry[1]) * self._rate
            if level > self._burst:
                level = self._burst
        if level < cost:
            self.denied += 1
            return Decision(False, self.rule, level, cost)
        level -= cost
        if entry is None:
            self._new[key] = [level, now]
            if len(self._new) > self.max_keys:
                self._turn(now)
        else:
            entry[0] = level
            entry[1] = now
        return Decision(True, self.rule, level, cost)

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
    for level in levels:
        if level < cost:
            break
    else:
        tightest: Decision | None = None
        for (buckets, key), level in zip(checks, levels, strict=True):
            buckets.set(key, level - cost, now)
            if tightest is None or level - cost < tightest.level:
                tightest = Decision(True, buckets.rule, level - cost, cost)
        assert tightest is not None
        return tightest
    refused = []
    for (buckets, _key), level in zip(checks, levels, strict=True):
        if level < cost:
            buckets.denied += 1
            refused.append(Decision(False, buckets.rule, level, cost))
    return pick(refused)


def check_two(a: TokenBuckets, key_a: str, b: TokenBuckets, key_b: str, now: float) -> Decision:
    """:func:`check_all` of two buckets and one token, unrolled (the ingestion hot path)."""
    decision = admit_two(a, key_a, b, key_b, now, math.inf)
    assert decision is not None
    return decision


def admit_two(
    a: TokenBuckets, key_a: str, b: TokenBuckets, key_b: str, now: float, quiet: float = 0.5
) -> Decision | None:
    """Take one token from both buckets or from neither. None when taken and each bucket still
    holds more than ``quiet`` of its burst (nothing worth telling the client: no object is
    made); else the decision of the tighter bucket (refused, or allowed and getting low)."""
    entry_a = a._entry(key_a, now)
    entry_b = b._entry(key_b, now)
    level_a = a._burst
    if entry_a is not None:
        level_a = entry_a[0] + (now - entry_a[1]) * a._rate
        if level_a > a._burst:
            level_a = a._burst
    level_b = b._burst
    if entry_b is not None:
        level_b = entry_b[0] + (now - entry_b[1]) * b._rate
        if level_b > b._burst:
            level_b = b._burst
    if level_a < 1.0 or level_b < 1.0:
        return check_all(((a, key_a), (b, key_b)), now)
    level_a -= 1.0
    level_b -= 1.0
    if entry_a is None:
        a.set(key_a, level_a, now)
    else:
        entry_a[0] = level_a
        entry_a[1] = now
    if entry_b is None:
        b.set(key_b, level_b, now)
    else:
        entry_b[0] = level_b
        entry_b[1] = now
    if level_a > quiet * a._burst and level_b > quiet * b._burst:
        return None
    if level_a <= level_b:
        return Decision(True, a.rule, level_a)
    return Decision(True, b.rule, level_b)
