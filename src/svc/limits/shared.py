"""Limits shared by several svc processes through one Redis (``SVC_REDIS_URL``).

* Rate limits: the token buckets live in Redis hashes (tokens, time), updated by a Lua script
  that checks every bucket of a request and takes from all or none, with Redis's own clock
  (so the processes' clocks do not matter).
* Quotas: one counter per project and month, ``INCRBY`` to reserve and ``DECRBY`` to give
  back, capped at the quota inside the same script; seeded once per month key (``SET NX``)
  from the process's own count (its event store and spool).
* The checks (and the reservations) of concurrent requests are coalesced into one script call
  (:class:`Batcher`): Redis runs them in order, atomically, and redis-py's cost is paid per
  call, not per request.

When Redis cannot be reached the limits fail open to this process's own buckets and counts
(ingestion must go on); the events accepted meanwhile are added to the shared counter when
Redis answers again. A failed call keeps this process off Redis for a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

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
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
local a = 1
local k = 1
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  local mode = ARGV[a + 1]
  local cost = tonumber(ARGV[a + 2])
  a = a + 3
  local levels, rates, bursts = {}, {}, {}
  local ok = 1
  for i = 1, n do
    local rate = tonumber(ARGV[a])
    local burst = tonumber(ARGV[a + 1])
    a = a + 2
    rates[i], bursts[i] = rate, burst
    local v = redis.call('HMGET', KEYS[k + i - 1], 'v', 't')
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
    for i = 1, n do
      local level = levels[i] - cost
      if level < 0 then level = 0 end
      levels[i] = level
      redis.call('HSET', KEYS[k + i - 1], 'v', string.format('%.6f', level),
                 't', string.format('%.6f', now))
      redis.call('PEXPIRE', KEYS[k + i - 1], math.ceil(bursts[i] / rates[i] * 1000) + 1000)
    end
  end
  out[#out + 1] = ok
  for i = 1, n do out[#out + 1] = string.format('%.6f', levels[i]) end
  k = k + n
end
return out
"""

COUNTERS_LUA = """
local out = {}
for i = 1, #KEYS do
  local b = (i - 1) * 6
  local op = ARGV[b + 1]
  local n = tonumber(ARGV[b + 3])
  if op == 'r' then
    local quota = tonumber(ARGV[b + 4])
    local extra = tonumber(ARGV[b + 6])
    local created = redis.call('SET', KEYS[i], ARGV[b + 2], 'NX', 'EX', ARGV[b + 5])
    if (not created) and extra ~= 0 then redis.call('INCRBY', KEYS[i], extra) end
    local total = redis.call('INCRBY', KEYS[i], n)
    local granted = n
    if quota > 0 and total > quota then
      local excess = total - quota
      if excess > n then excess = n end
      granted = n - excess
      total = redis.call('DECRBY', KEYS[i], excess)
    end
    out[#out + 1] = granted
    out[#out + 1] = total
  else
    local total = 0
    if redis.call('EXISTS', KEYS[i]) == 1 then total = redis.call('DECRBY', KEYS[i], n) end
    out[#out + 1] = 0
    out[#out + 1] = total
  end
end
return out
"""

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """Coalesces calls made while the previous batch is on its way into one script call.

    Idle, a call goes out on the next turn of the event loop (with whatever else came in that
    turn); busy, calls wait for the batch in flight and then all go together. One round trip
    and one command for many requests: redis-py's cost is per command, not per key.
    """

    def __init__(self, run: Callable[[list[T]], Awaitable[list[R]]], limit: int = 256) -> None:
        self._run = run
        self._limit = limit
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._busy = False

    async def submit(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        if not self._busy:
            self._busy = True
            loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending[: self._limit], self._pending[self._limit :]
        if not batch:
            self._busy = False
            return
        task = asyncio.ensure_future(self._send(batch))
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)

    async def _send(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._run([item for item, _ in batch])
        except BaseException as exc:  # every caller gets the failure (and falls back)
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
        finally:
            self._flush()


_TASKS: set[asyncio.Task[None]] = set()


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


Check = tuple[str, Sequence[tuple[TokenBuckets, str]], float]  # mode, buckets, cost


class RedisBuckets:
    """Token buckets in Redis: each check names every bucket of its request; the checks of
    concurrent requests go to Redis together, in one script call."""

    def __init__(self, link: RedisLink, prefix: str = "svc:rl:") -> None:
        self.link = link
        self.prefix = prefix
        self._script = link.client.register_script(BUCKETS_LUA)
        self._batcher: Batcher[Check, tuple[bool, list[float]]] = Batcher(self._call)
        self.fallbacks = 0

    async def _call(self, checks: list[Check]) -> list[tuple[bool, list[float]]]:
        keys: list[str] = []
        args: list[Any] = []
        prefix = self.prefix
        for mode, buckets, cost in checks:
            args += [len(buckets), mode, cost]
            for b, k in buckets:
                keys.append(f"{prefix}{b.rule.name}:{k}")
                args += [b.rule.rate, b.rule.burst]
        out = await self._script(keys=keys, args=args)
        results: list[tuple[bool, list[float]]] = []
        i = 0
        for _mode, buckets, _cost in checks:
            n = len(buckets)
            results.append((bool(int(out[i])), [float(v) for v in out[i + 1 : i + 1 + n]]))
            i += 1 + n
        return results

    async def _run(
        self, mode: str, checks: Sequence[tuple[TokenBuckets, str]], cost: float
    ) -> tuple[bool, list[float]] | None:
        if not self.link.usable():
            return None
        try:
            result = await self._batcher.submit((mode, checks, cost))
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)
            return None
        self.link.succeeded()
        return result

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
        self._script = link.client.register_script(COUNTERS_LUA)
        self._batcher: Batcher[tuple[str, list[Any]], tuple[int, int]] = Batcher(self._call)

    @staticmethod
    def key(project_id: str, month: str) -> str:
        return f"svc:usage:{project_id}:{month}"

    async def _call(self, ops: list[tuple[str, list[Any]]]) -> list[tuple[int, int]]:
        """Reservations and releases of concurrent requests, in order, in one script call."""
        keys = [key for key, _args in ops]
        args = [a for _key, op_args in ops for a in op_args]
        out = await self._script(keys=keys, args=args)
        return [(int(out[i]), int(out[i + 1])) for i in range(0, len(out), 2)]

    async def reserve(self, project: Project, month: str, n: int) -> int:
        quota = self.plans.quota_of(project)
        self.quota_seen[project.id] = quota
        if n <= 0:
            return 0
        slot = (project.id, month)
        if self.link.usable():
            extra = self.unsynced.pop(slot, 0)
            seed = self.usage.of(project.id, month)
            op = ["r", seed, n, quota, QUOTA_KEY_TTL_S, extra]
            try:
                granted, total = await self._batcher.submit((self.key(*slot), op))
            except (redis.RedisError, OSError) as exc:
                self.link.failed(exc)
                if extra:
                    self.unsynced[slot] = self.unsynced.get(slot, 0) + extra
            else:
                self.link.succeeded()
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
                _, total = await self._batcher.submit((self.key(*slot), ["d", 0, n, 0, 0, 0]))
            except (redis.RedisError, OSError) as exc:
                self.link.failed(exc)
            else:
                self.link.succeeded()
                self.shared[slot] = total
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
