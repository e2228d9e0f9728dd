"""Token bucket maths: rules, refill, bursts, all-or-nothing checks, headers, the table."""

from __future__ import annotations

import pytest

from svc.limits.bucket import Rule, TokenBuckets, check_all, decide, parse_rule


@pytest.mark.parametrize(
    ("spec", "rate", "burst"),
    [
        ("20", 20.0, 20),
        ("20:200", 20.0, 200),
        ("0.5:3", 0.5, 3),
        ("0.5", 0.5, 1),
        ("30/m", 0.5, 30),
        ("30/min:60", 0.5, 60),
        ("3600/h", 1.0, 3600),
        ("10/s:15", 10.0, 15),
        (" 2 : 4 ", 2.0, 4),
    ],
)
def test_rule_forms(spec: str, rate: float, burst: int) -> None:
    rule = parse_rule("x", spec)
    assert rule.enabled and rule.rate == pytest.approx(rate) and rule.burst == burst


@pytest.mark.parametrize("spec", ["0", "", "off", "0:10", "0/m"])
def test_zero_turns_a_limit_off(spec: str) -> None:
    assert not parse_rule("x", spec).enabled


@pytest.mark.parametrize("spec", ["fast", "-1", "10:x", "10/d", "1:2:3"])
def test_bad_rule_names_the_setting(spec: str) -> None:
    with pytest.raises(ValueError, match="SVC_RATE_LIMIT_X"):
        parse_rule("x", spec, "SVC_RATE_LIMIT_X")


def test_burst_then_refill_at_the_rate() -> None:
    b = TokenBuckets(Rule("t", 2.0, 3))
    now = 1000.0
    assert [b.check("k", now).allowed for _ in range(4)] == [True, True, True, False]
    refused = b.check("k", now)
    assert not refused.allowed and refused.retry_after == pytest.approx(0.5)
    assert refused.reset == pytest.approx(1.5)  # 3 tokens at 2/s from empty
    assert not b.check("k", now + 0.49).allowed
    assert b.check("k", now + 0.5).allowed  # one token back after 1/rate
    assert not b.check("k", now + 0.5).allowed
    # a long pause refills to the burst, never beyond
    assert [b.check("k", now + 100).allowed for _ in range(4)] == [True, True, True, False]
    assert b.denied == 5


def test_keys_are_independent() -> None:
    b = TokenBuckets(Rule("t", 1.0, 1))
    assert b.check("a", 0.0).allowed and not b.check("a", 0.0).allowed
    assert b.check("b", 0.0).allowed


def test_decision_headers() -> None:
    b = TokenBuckets(Rule("t", 1.0, 5))
    ok = b.check("k", 0.0)
    assert ok.headers() == {
        "RateLimit-Limit": "5",
        "RateLimit-Remaining": "4",
        "RateLimit-Reset": "1",
        "RateLimit-Policy": "5;w=5",
    }
    for _ in range(4):
        b.check("k", 0.0)
    refused = b.check("k", 0.25)
    headers = refused.headers()
    assert headers["RateLimit-Remaining"] == "0" and headers["Retry-After"] == "1"
    assert headers["RateLimit-Reset"] == "5"  # 4.75 s to full, rounded up
    slow = decide(Rule("s", 0.1, 1), 0.0, False)
    assert slow.headers()["Retry-After"] == "10"


def test_check_all_takes_from_every_bucket_or_none() -> None:
    per_ip = TokenBuckets(Rule("ip", 1.0, 2))
    per_project = TokenBuckets(Rule("project", 1.0, 3))
    checks = [(per_ip, "1.2.3.4|p"), (per_project, "p")]
    assert check_all(checks, 0.0).allowed
    d = check_all(checks, 0.0)
    assert d.allowed and d.rule.name == "ip" and d.remaining == 0  # the tightest is reported
    refused = check_all(checks, 0.0)
    assert not refused.allowed and refused.rule.name == "ip"
    # the refusal took nothing from the project bucket: another address still has 1
    other = [(per_ip, "5.6.7.8|p"), (per_project, "p")]
    assert check_all(other, 0.0).allowed
    refused = check_all(other, 0.0)
    assert not refused.allowed and refused.rule.name == "project"
    assert per_ip.level("5.6.7.8|p", 0.0) == 1.0  # all or nothing


def test_charge_never_goes_below_zero() -> None:
    b = TokenBuckets(Rule("f", 1.0, 2))
    for _ in range(5):
        b.charge("a", 0.0)
    assert b.level("a", 0.0) == 0.0
    assert b.level("a", 1.0) == 1.0


def test_table_drops_full_buckets_and_stays_bounded() -> None:
    b = TokenBuckets(Rule("t", 10.0, 2), max_keys=5000)
    for i in range(3000):
        b.check(f"k{i}", i * 0.001)
    # buckets refill in 0.2 s: the table holds the keys of the last two windows, not 3000
    assert len(b) <= 401
    for i in range(20_000):
        b.check(f"burst{i}", 100.0)  # all at one instant: nothing is stale
    assert len(b) <= 2 * 5000


def test_forgetting_is_exact_below_the_key_bound() -> None:
    """A bucket is dropped only once it would be full again: its level never jumps."""
    rule = Rule("t", 1.0, 5)
    b = TokenBuckets(rule)
    for _ in range(5):
        assert b.check("drained", 0.0).allowed
    for i in range(20_000):  # other keys come and go; the generations turn every 5 s
        now = i * 0.001
        b.check(f"other{i}", now)
        if i % 7 == 0:
            assert b.level("drained", now) == pytest.approx(min(5.0, now))
    assert len(b) <= 10_010  # two windows of keys (one counted in both)
