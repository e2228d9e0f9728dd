"""Plans, a project's quota, the monthlyQuota option and the in-process quota ledger."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from svc.errors import Forbidden, InvalidRequest
from svc.limits.plans import (
    check_quota_option,
    guard_quota_option,
    merge_quota_option,
    parse_plans,
)
from svc.limits.quota import Quotas, current_month, month_bounds, seconds_to_next_month
from svc.meta.store import Project


def project(plan: str = "free", **options: object) -> Project:
    return Project("svc_proj_p", "p", "UTC", (), plan, dict(options))


class Usage:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def of(self, project_id: str, month: str) -> int:
        return self.counts[(project_id, month)]

    def add(self, project_id: str, month: str, n: int) -> None:
        self.counts[(project_id, month)] += n


def test_plans_and_quota_sources() -> None:
    plans = parse_plans("pro=1000000, business=10_000_000,unlimited=0", 100_000)
    assert plans.quota("free") == 100_000 and plans.quota("pro") == 1_000_000
    assert plans.quota("business") == 10_000_000 and plans.quota("unlimited") == 0
    assert plans.quota("gone") == 100_000  # a plan no longer configured: free
    assert plans.quota_of(project("pro")) == 1_000_000
    assert plans.quota_of(project("pro", monthlyQuota=50)) == 50
    assert plans.source_of(project("pro", monthlyQuota=50)) == "project"
    assert parse_plans("free=5", 100_000).quota("free") == 5  # SVC_PLANS wins when it names free
    assert plans.check_name("pro") == "pro"
    with pytest.raises(InvalidRequest, match="business, free, pro, unlimited"):
        plans.check_name("platinum")


@pytest.mark.parametrize("spec", ["pro", "pro=-1", "pro=x", "Pro Plan=5"])
def test_bad_plans_setting(spec: str) -> None:
    with pytest.raises(ValueError, match="SVC_PLANS"):
        parse_plans(spec, 100)


def test_quota_option_rules() -> None:
    assert check_quota_option(0) == 0 and check_quota_option(None) is None
    for bad in (-1, 1.5, "100", True):
        with pytest.raises(InvalidRequest):
            check_quota_option(bad)
    p = project(monthlyQuota=10)
    guard_quota_option(True, p, {"monthlyQuota": 99})
    guard_quota_option(False, p, {"monthlyQuota": 10})  # sent back unchanged
    guard_quota_option(False, p, {"excludePaths": []})
    with pytest.raises(Forbidden):
        guard_quota_option(False, p, {"monthlyQuota": 11})
    kept = merge_quota_option(p, {"options": {"excludePaths": ["/a"]}})
    assert kept["options"] == {"excludePaths": ["/a"], "monthlyQuota": 10}
    removed = merge_quota_option(p, {"options": {"monthlyQuota": None}})
    assert removed["options"] == {}
    assert merge_quota_option(p, {"timezone": "UTC"}) == {"timezone": "UTC"}


def test_months() -> None:
    start, end = month_bounds(1_735_689_600_000 + 5)  # 2025-01-01T00:00:00.005Z
    assert (start, end) == (1_735_689_600_000, 1_738_368_000_000)
    assert seconds_to_next_month(end - 1500) == 2
    assert current_month(1_735_689_600_000) == "2025-01"
    assert current_month(1_735_689_599_999) == "2024-12"


async def test_reserve_release_and_the_boundary() -> None:
    usage = Usage()
    quotas = Quotas(parse_plans("", 10), usage)
    p = project()
    assert await quotas.reserve(p, "2025-01", 4) == 4
    assert await quotas.reserve(p, "2025-01", 10) == 6  # straddles: exactly up to the quota
    assert await quotas.reserve(p, "2025-01", 1) == 0
    assert quotas.exhausted(p, "2025-01")
    await quotas.release(p.id, "2025-01", 3)  # 3 were not stored after all
    assert quotas.peek(p.id, "2025-01") == 7 and not quotas.exhausted(p, "2025-01")
    assert await quotas.reserve(p, "2025-02", 5) == 5  # a new month
    warning = quotas.warning(p, "2025-01")
    assert warning is None
    await quotas.reserve(p, "2025-01", 1)
    assert quotas.warning(p, "2025-01") == "80% of 10 events used this month"
    exc = quotas.exceeded(p, 1_738_368_000_000 - 60_000)
    assert exc.status == 429 and exc.code == "quota_exceeded"
    assert exc.headers["Retry-After"] == "60"
    unlimited = Quotas(parse_plans("", 0), usage)
    assert await unlimited.reserve(p, "2025-03", 10**9) == 10**9
    assert unlimited.warning(p, "2025-03") is None


async def test_concurrent_reservations_never_pass_the_quota() -> None:
    usage = Usage()
    quotas = Quotas(parse_plans("", 1000), usage)
    p = project()
    granted: list[int] = []

    async def sender(n: int) -> None:
        for _ in range(50):
            got = await quotas.reserve(p, "2025-01", n)
            await asyncio.sleep(0)  # the durable write happens here
            granted.append(got)

    await asyncio.gather(*(sender(n) for n in (1, 3, 7, 10) for _ in range(5)))
    assert sum(granted) == 1000 == usage.of(p.id, "2025-01")
