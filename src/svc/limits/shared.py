"""Limits shared by several svc processes through one Redis (``SVC_REDIS_URL``).

* Rate limits: the token buckets live in Redis hashes (tokens, time), updated by one Lua
  script per request that checks every bucket of the request and takes from all or none, with
  Redis's own clock (so the processes' clocks do not matter).
* Quotas: one counter per project and month, ``INCRBY`` to reserve and ``DECRBY`` to give
  back, capped at the quota inside the same script; seeded once per month key (``SET NX``)
  from the process's own count (its event store and spool).

When Redis cannot be reached the limits fail open to this process's own buckets and counts
(ingestion must go on); the events accepted meanwhile are added to the shared counter when
Redis answers again. A failed call keeps this process off Redis for a second.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import redis
import redis.asyncio as aredis

from svc.limits.bucket import Decision, TokenBuckets, check_all, decide, pick
from svc.limits.plans import Plans
from svc.limits.quota import Counts, Quotas
from svc.meta.store import Project

log = logging.getLogger(__name__)

TIMEOUT_S = 0.25
RETRY_AFTER_FAILURE_S = 1.0
QUOTA_KEY_TTL_S = 40 * 86400

BUCKETS_LUA = """
local mode = ARGV[1]
local cost = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local levels = {}
local ok = 1
for i = 1, #KEYS do
  local rate = tonumber(ARGV[2 * i + 1])
  local burst = tonumber(ARGV[2 * i + 2])
  local v = redis.call('HMGET', KEYS[i], 'v', 't')
  local level = burst
  if v[1] then
    local elapsed = now - tonumber(v[2])
    if elapsed < 0 then elapsed = 0 end
    level = tonumber(v[1]) + elapsed * rate
    if level > burst then level = burst end
  end
  levels[i] = level
  if level < cost then ok = 0 end
end
if mode == 'charge' then ok = 1 end
if mode ~= 'peek' and ok == 1 then
  for i = 1, #KEYS do
    local rate = tonumber(ARGV[2 * i + 1])
    local burst = tonumber(ARGV[2 * i + 2])
    local level = levels[i] - cost
    if level < 0 then level = 0 end
    levels[i] = level
    redis.call('HSET', KEYS[i], 'v', string.format('%.6f', level),
               't', string.format('%.6f', now))
    redis.call('PEXPIRE', KEYS[i], math.ceil(burst / rate * 1000) + 1000)
  end
end
local out = {ok}
for i = 1, #KEYS do out[i + 1] = string.format('%.6f', levels[i]) end
return out
"""

RESERVE_LUA = """
local seed = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local quota = tonumber(ARGV[3])
local extra = tonumber(ARGV[5])
local created = redis.call('SET', KEYS[1], seed, 'NX', 'EX', ARGV[4])
if (not created) and extra ~= 0 then redis.call('INCRBY', KEYS[1], extra) end
local total = redis.call('INCRBY', KEYS[1], n)
local granted = n
if quota > 0 and total > quota then
  local excess = total - quota
  if excess > n then excess = n end
  granted = n - excess
  total = redis.call('DECRBY', KEYS[1], excess)
end
return {granted, total}
"""

RELEASE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECRBY', KEYS[1], ARGV[1])
end
return 0
"""


class RedisLink:
    """The connection to Redis: an async client for the hot path, a sync one for reports, and
    a short circuit breaker."""

    def __init__(self, url: str, timeout: float = TIMEOUT_S) -> None:
        self.url = url
        pool = aredis.BlockingConnectionPool.from_url(
            url,
            max_connections=64,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
        self.client = aredis.Redis(connection_pool=pool)
        self.sync = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.down_until = 0.0
        self.failures = 0
        self.last_error: str | None = None
        self._logged_at = 0.0

    def usable(self) -> bool:
        return self.down_until == 0.0 or time.monotonic() >= self.down_until

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]
        self.down_until = now + RETRY_AFTER_FAILURE_S
        if now - self._logged_at > 60:
            self._logged_at = now
            log.warning("redis unavailable, limits fall back to this process: %s", exc)

    def succeeded(self) -> None:
        self.down_until = 0.0

    async def ping(self) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            await self.client.ping()
        except (redis.RedisError, OSError) as exc:
            self.failed(exc)
            return {"reachable": False, "latencyMs": None, "error": type(exc).__name__}
        self.succeeded()
        return {
            "reachable": True,
            "latencyMs": round((time.perf_counter() - started) * 1000, 2),
            "error": None,
        }

    async def close(self) -> None:
        await self.client.aclose()
        self.sync.close()


class RedisBuckets:
    """Token buckets in Redis; each check is one script call over every bucket it names."""

    def __init__(self, link: RedisLink, prefix: str = "svc:rl:") -> None:
        self.link = link
        self.prefix = prefix
        self._script = link.client.register_script(BUCKETS_LUA)
        self.fallbacks = 0

    async def _run(
        self, mode: str, checks: Sequence[tuple[TokenBuckets, str]], cost: float
    ) -> tuple[bool, list[float]] | None:
        if not self.link.usable():
            return None
        keys = [f"{self.prefix}{b.rule.name}:{k}" for b, k in checks]
        args: list[Any] = [mode, cost]
        for b, _k in checks:
            args += [b.rule.rate, b.rule.burst]
        try:
            out = await self._script(keys=keys, args=args)
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)
            return None
        self.link.succeeded()
        return bool(int(out[0])), [float(v) for v in out[1:]]

    async def check_all(
        self, checks: Sequence[tuple[TokenBuckets, str]], now: float, cost: float = 1.0
    ) -> Decision:
        """Take ``cost`` from every bucket, or from none when one has too little."""
        result = await self._run("take", checks, cost)
        if result is None:
            self.fallbacks += 1
            return check_all(checks, now, cost)
        allowed, levels = result
        if allowed:
            return pick(
                [decide(b.rule, lv, True, cost) for (b, _k), lv in zip(checks, levels, strict=True)]
            )
        refused = []
        for (b, _k), lv in zip(checks, levels, strict=True):
            if lv < cost:
                b.denied += 1
                refused.append(decide(b.rule, lv, False, cost))
        return pick(refused)

    async def peek(self, buckets: TokenBuckets, key: str, now: float) -> float:
        result = await self._run("peek", [(buckets, key)], 1.0)
        if result is None:
            return buckets.level(key, now)
        return result[1][0]

    async def charge(self, buckets: TokenBuckets, key: str, now: float) -> None:
        if await self._run("charge", [(buckets, key)], 1.0) is None:
            buckets.charge(key, now)


class RedisQuotas(Quotas):
    """The quota ledger shared through Redis; this process's own counts stay in ``usage``
    (they seed the shared counter and take over when Redis is away)."""

    backend = "redis"

    def __init__(
        self,
        plans: Plans,
        usage: Counts,
        link: RedisLink,
        warning_percent: int = 80,
        margin: int = 1000,
    ) -> None:
        super().__init__(plans, usage, warning_percent, margin)
        self.link = link
        self.shared: dict[tuple[str, str], int] = {}
        self.unsynced: dict[tuple[str, str], int] = {}
        self._reserve = link.client.register_script(RESERVE_LUA)
        self._release = link.client.register_script(RELEASE_LUA)

    @staticmethod
    def key(project_id: str, month: str) -> str:
        return f"svc:usage:{project_id}:{month}"

    async def reserve(self, project: Project, month: str, n: int) -> int:
        quota = self.plans.quota_of(project)
        self.quota_seen[project.id] = quota
        if n <= 0:
            return 0
        slot = (project.id, month)
        if self.link.usable():
            extra = self.unsynced.pop(slot, 0)
            seed = self.usage.of(project.id, month)
            try:
                granted, total = await self._reserve(
                    keys=[self.key(*slot)], args=[seed, n, quota, QUOTA_KEY_TTL_S, extra]
                )
            except (redis.RedisError, OSError) as exc:
                self.link.failed(exc)
                if extra:
                    self.unsynced[slot] = self.unsynced.get(slot, 0) + extra
            else:
                self.link.succeeded()
                granted, total = int(granted), int(total)
                if granted:
                    self.usage.add(project.id, month, granted)
                self.shared[slot] = total
                self.note(project.id, month, total, quota)
                return granted
        granted = await super().reserve(project, month, n)
        if granted:
            self.unsynced[slot] = self.unsynced.get(slot, 0) + granted
        return granted

    async def release(self, project_id: str, month: str, n: int) -> None:
        if n <= 0:
            return
        self.usage.add(project_id, month, -n)
        slot = (project_id, month)
        if self.link.usable():
            try:
                total = await self._release(keys=[self.key(*slot)], args=[n])
            except (redis.RedisError, OSError) as exc:
                self.link.failed(exc)
            else:
                self.link.succeeded()
                self.shared[slot] = int(total)
                return
        self.unsynced[slot] = self.unsynced.get(slot, 0) - n

    def peek(self, project_id: str, month: str) -> int:
        shared = self.shared.get((project_id, month))
        return self.usage.of(project_id, month) if shared is None else shared

    def used(self, project_id: str, month: str) -> int:
        """The shared count (a blocking GET; this process's own count if Redis is away)."""
        slot = (project_id, month)
        try:
            value = self.link.sync.get(self.key(*slot))
        except (redis.RedisError, OSError):
            return self.peek(project_id, month)
        if value is None:
            return self.usage.of(project_id, month)
        total = int(value)  # type: ignore[arg-type]
        self.shared[slot] = total
        return total
