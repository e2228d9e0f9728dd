"""The Redis backend against a real redis-server: the Lua token bucket, the quota counter
shared by several ledgers (as by several processes), and failing open when Redis is away."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
import redis

from svc.limits.bucket import Rule, TokenBuckets
from svc.limits.plans import parse_plans
from svc.limits.shared import RedisBuckets, RedisLink, RedisQuotas
from svc.meta.store import Project
from tests.support import free_port


class Usage:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def of(self, project_id: str, month: str) -> int:
        return self.counts[(project_id, month)]

    def add(self, project_id: str, month: str, n: int) -> None:
        self.counts[(project_id, month)] += n


def project(quota: int) -> Project:
    return Project("svc_proj_shared", "shared", "UTC", (), "free", {"monthlyQuota": quota})


async def test_lua_bucket_burst_refill_and_all_or_nothing(redis_url: str) -> None:
    link = RedisLink(redis_url)
    try:
        remote = RedisBuckets(link)
        ip = TokenBuckets(Rule("ip", 5.0, 3))
        proj = TokenBuckets(Rule("project", 5.0, 4))
        checks = [(ip, "1.1.1.1|p"), (proj, "p")]
        now = time.monotonic()
        got = [(await remote.check_all(checks, now)).allowed for _ in range(4)]
        assert got == [True, True, True, False]
        refused = await remote.check_all(checks, now)
        assert refused.rule.name == "ip" and 0 < refused.retry_after <= 0.2
        assert refused.headers()["Retry-After"] == "1"
        # the project bucket gave 3, not 4: refusals took nothing from it
        other = [(ip, "2.2.2.2|p"), (proj, "p")]
        assert (await remote.check_all(other, now)).allowed
        assert not (await remote.check_all(other, now)).allowed
        assert await remote.peek(proj, "p", now) < 1
        await asyncio.sleep(0.25)  # 5 a second: at least one token back
        assert (await remote.check_all(checks, now)).allowed
        # charge takes whatever is left, never below zero
        failures = TokenBuckets(Rule("fail", 0.5, 2))
        for _ in range(4):
            await remote.charge(failures, "9.9.9.9", now)
        assert await remote.peek(failures, "9.9.9.9", now) < 1
        assert remote.fallbacks == 0
        ttl = redis.Redis.from_url(redis_url).pttl("svc:rl:fail:9.9.9.9")
        assert 0 < ttl <= 5000  # gone once full again (burst / rate + 1 s)
    finally:
        await link.close()


async def test_two_ledgers_share_one_exact_quota(redis_url: str) -> None:
    """Two processes' ledgers, each seeded from its own store, reserving concurrently."""
    links = [RedisLink(redis_url), RedisLink(redis_url)]
    try:
        usages = [Usage(), Usage()]
        usages[0].add("svc_proj_shared", "2025-01", 40)  # seeds the month key (SET NX)
        usages[1].add("svc_proj_shared", "2025-01", 7)  # too late: the key exists
        plans = parse_plans("", 100_000)
        ledgers = [RedisQuotas(plans, u, link) for u, link in zip(usages, links, strict=True)]
        p = project(500)
        assert await ledgers[0].reserve(p, "2025-01", 1) == 1
        granted: list[int] = []

        async def sender(ledger: RedisQuotas, n: int) -> None:
            for _ in range(40):
                got = await ledger.reserve(p, "2025-01", n)
                if got > 1:
                    await ledger.release(p.id, "2025-01", 1)  # one was invalid: given back
                    got -= 1
                granted.append(got)

        await asyncio.gather(*(sender(ledgers[i % 2], n) for i, n in enumerate([1, 2, 5, 9] * 3)))
        shared = int(redis.Redis.from_url(redis_url).get("svc:usage:svc_proj_shared:2025-01") or 0)
        assert shared == 41 + sum(granted)
        assert shared <= 500
        assert ledgers[0].used(p.id, "2025-01") == shared == ledgers[1].used(p.id, "2025-01")
        # once full, a last single event is refused by both
        if shared < 500:
            await ledgers[0].reserve(p, "2025-01", 500 - shared)
        assert await ledgers[1].reserve(p, "2025-01", 1) == 0
        assert ledgers[1].exhausted(p, "2025-01")
    finally:
        for link in links:
            await link.close()


async def test_redis_away_fails_open_to_this_process_and_catches_up(redis_url: str) -> None:
    dead = RedisLink(f"redis://127.0.0.1:{free_port()}/0", timeout=0.1)
    try:
        remote = RedisBuckets(dead)
        b = TokenBuckets(Rule("ip", 1.0, 2))
        now = time.monotonic()
        got = [(await remote.check_all([(b, "k")], now)).allowed for _ in range(3)]
        assert got == [True, True, False]  # this process's own buckets
        assert remote.fallbacks == 3 and dead.failures == 1  # one failure, then the circuit
        usage = Usage()
        ledger = RedisQuotas(parse_plans("", 100_000), usage, dead)
        assert await ledger.reserve(project(5), "2025-01", 9) == 5
        assert ledger.unsynced[("svc_proj_shared", "2025-01")] == 5
    finally:
        await dead.close()
    # Redis back: the events counted meanwhile are added to the shared counter
    link = RedisLink(redis_url)
    try:
        client = redis.Redis.from_url(redis_url)
        client.set("svc:usage:svc_proj_shared:2025-01", 10)
        back = RedisQuotas(parse_plans("", 100_000), usage, link)  # the same process, later
        back.unsynced = ledger.unsynced
        assert await back.reserve(project(100), "2025-01", 1) == 1
        assert int(client.get("svc:usage:svc_proj_shared:2025-01") or 0) == 16
        assert not back.unsynced
    finally:
        await link.close()


async def test_concurrent_checks_share_one_script_call(redis_url: str) -> None:
    """Many concurrent requests: their checks go to Redis together, and stay exact."""
    link = RedisLink(redis_url)
    try:
        remote = RedisBuckets(link)
        calls = 0
        run = remote._batcher._run

        async def counting(items: list[Any]) -> list[Any]:
            nonlocal calls
            calls += 1
            return await run(items)

        remote._batcher._run = counting
        per_project = TokenBuckets(Rule("project", 0.001, 100))
        now = time.monotonic()
        decisions = await asyncio.gather(
            *(remote.check_all([(per_project, "p")], now) for _ in range(300))
        )
        assert sum(d.allowed for d in decisions) == 100
        assert calls <= 5, calls  # 300 checks, a few script calls
        ledger = RedisQuotas(parse_plans("", 100_000), Usage(), link)
        granted = await asyncio.gather(
            *(ledger.reserve(project(250), "2025-02", 3) for _ in range(100))
        )
        assert sum(granted) == 250 and sorted(set(granted)) == [0, 1, 3]
    finally:
        await link.close()


@pytest.mark.parametrize("n", [1, 3])
async def test_release_of_a_missing_key_is_harmless(redis_url: str, n: int) -> None:
    link = RedisLink(redis_url)
    try:
        ledger = RedisQuotas(parse_plans("", 100), Usage(), link)
        await ledger.release("svc_proj_none", "2025-01", n)
        assert redis.Redis.from_url(redis_url).get("svc:usage:svc_proj_none:2025-01") is None
    finally:
        await link.close()
