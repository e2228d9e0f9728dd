"""The state several nodes share through one Redis (``SVC_REDIS_URL`` with a ClickHouse
server): what one process keeps in memory, kept where every node sees it.

* :class:`SharedIdentity`: a request's events go to Redis in one Lua script call (their fields
  packed in a few arguments, the answers in one string), which runs atomically and in order:
  each event's ``eventId`` is reserved (``SET NX``: a second one is a duplicate, whichever
  node saw the first), then its session is found or started with exactly the rules of
  :class:`svc.ingestion.identity.SessionTracker` (the derived session of (project, visitor)
  under today's visitor hash or yesterday's, the start and first person of a client-named
  session, the live session a page measurement joins). Redis runs scripts one at a time, so
  the nodes' requests are assigned as one node would assign them in the order Redis received
  them. A derived session's id is a hash of its visitor and start (``derived_session_id``):
  Redis keeps only the start, first, last and arrival times, and the caller hashes. Keys
  expire as the tracker forgets: a derived session ``timeout`` after its last event's time or
  arrival (whichever is later), a client-named one ``CLIENT_SESSION_MEMORY_MS`` after it was
  last seen, an event id after the dedup window.
* :class:`SharedReplays`: the signatures of signed edge requests already served
  (``SET NX`` until the signature leaves its window).
* :class:`SharedGeneration`: a counter every node increments once a write of its own to the
  store has returned; a node's read memo keeps rows under (its own generation, this counter)
  as read before the read began, so no node serves rows another node's write made stale.

Redis out of reach: each caller falls back to its own process's state (ingestion goes on,
inexact across nodes while it lasts; the memo keeps nothing), counted in :attr:`Link.fallbacks`,
and tries Redis again a second later. One Redis (a primary, with a replica for failover), not
Redis Cluster: the scripts name keys they build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aredis

log = logging.getLogger(__name__)

#: A call that takes longer fails over to the node's own state: longer than the limits'
#: (0.25 s), since an answer here is what keeps sessions exact across nodes.
TIMEOUT_S = 2.0
RETRY_AFTER_FAILURE_S = 1.0
PREFIX = "svc:n:"

# ARGV: timeout ms, dedup window ms, client memory ms, pending ms; then the events, one string
# of 8 fields each, separated by spaces: kind, project (its index among the projects), visitor
# today, visitor yesterday, ts ms, arrival ms, client session id, event id's length in bytes
# (0: none); then the event ids, one string of them end to end; then the projects.
# Out: one string of 3 fields per event, separated by spaces: flag (-2 an id reserved by a
# request not answered yet, -1 duplicate, 0 today's visitor, 1 yesterday's, 2 no live session,
# 3 a client-named session), start ms, the client session's person (its first visitor; 0).
# A session's hash is read once per request and written once at its end (the script runs
# alone: what it reads is what it wrote), so a request of one visitor's events costs one read
# and one write of its session, plus the event ids' reservations.
IDENTIFY_LUA = """
local P = KEYS[1]
local T = tonumber(ARGV[1])
local CM = ARGV[3]
local PENDING = ARGV[4]
local IDS = ARGV[6]
local out = {}
local mine = {}
local cache = {}  -- key -> its session ({st, f, l, sn, v, now}), or false: none
local dirty = {}  -- the keys to write at the end, in the order first written
local kinds = {}  -- key -> 'd' or 'c', for the keys in dirty
local function session(key)
  local c = cache[key]
  if c == nil then
    local s = redis.call('HMGET', key, 'st', 'f', 'l', 's', 'v')
    c = false
    if s[1] then
      c = {st = tonumber(s[1]), f = tonumber(s[2]), l = tonumber(s[3]), sn = tonumber(s[4]),
           v = s[5]}
    end
    cache[key] = c
  end
  return c
end
local function put(key, c, kind)
  cache[key] = c
  if not kinds[key] then kinds[key] = kind; dirty[#dirty + 1] = key end
end
local function active(key, ts)
  local c = session(key)
  return c and ts - c.l <= T
end
local at = 1  -- the next event id's first byte in IDS
for kind, pi, vt, vy, tss, nows, csid, elen in string.gmatch(ARGV[5],
    '(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)') do
  local project = ARGV[6 + tonumber(pi)]
  local ts, now, n = tonumber(tss), tonumber(nows), tonumber(elen)
  local dup = 0
  if n > 0 then
    local key = P .. 'e:' .. project .. ':' .. string.sub(IDS, at, at + n - 1)
    at = at + n
    if mine[key] then
      dup = -1  -- twice in this request
    elseif not redis.call('SET', key, 'p', 'NX', 'PX', PENDING) then
      if redis.call('GET', key) == 'p' then dup = -2 else dup = -1 end
    else
      mine[key] = true
    end
  end
  if dup ~= 0 then
    out[#out + 1] = dup; out[#out + 1] = 0; out[#out + 1] = 0
  elseif kind == 'd' then
    local which, key = 0, P .. 'd:' .. project .. ':' .. vt
    if not active(key, ts) then
      local before = P .. 'd:' .. project .. ':' .. vy
      if active(before, ts) then which, key = 1, before end
    end
    local c = session(key)
    local start = tss
    if c and c.f - T <= ts and ts <= c.l + T then
      if ts > c.l then c.l = ts end
      if ts < c.f then c.f = ts end
      if now > c.sn then c.sn = now end
      c.now = now
      put(key, c, 'd')
      start = c.st
    elseif c and ts < c.f then
      start = tss  -- a late event from well before the current session: its own session
    else
      put(key, {st = ts, f = ts, l = ts, sn = now, now = now}, 'd')
    end
    out[#out + 1] = which; out[#out + 1] = start; out[#out + 1] = 0
  elseif kind == 'c' then
    local key = P .. 'c:' .. project .. ':' .. csid
    local c = session(key)
    if c then
      if ts > c.l then c.l = ts end
      if now > c.sn then c.sn = now end
      put(key, c, 'c')
      out[#out + 1] = 3; out[#out + 1] = c.st; out[#out + 1] = c.v
    else
      put(key, {st = ts, l = ts, v = vt, sn = now}, 'c')
      out[#out + 1] = 3; out[#out + 1] = tss; out[#out + 1] = vt
    end
  elseif kind == 'mc' then
    local c = session(P .. 'c:' .. project .. ':' .. csid)
    if c then
      out[#out + 1] = 3; out[#out + 1] = c.st
    else
      out[#out + 1] = 2; out[#out + 1] = 0
    end
    out[#out + 1] = 0
  else  -- 'md': a page measurement joins the live derived session, whatever its idle time
    local flag, start = 2, 0
    local c = session(P .. 'd:' .. project .. ':' .. vt)
    if c then
      flag, start = 0, c.st
    else
      c = session(P .. 'd:' .. project .. ':' .. vy)
      if c then flag, start = 1, c.st end
    end
    out[#out + 1] = flag; out[#out + 1] = start; out[#out + 1] = 0
  end
end
for _, key in ipairs(dirty) do
  local c = cache[key]
  if kinds[key] == 'd' then
    redis.call('HSET', key, 'st', string.format('%d', c.st), 'f', string.format('%d', c.f),
               'l', string.format('%d', c.l), 's', string.format('%d', c.sn))
    -- kept until the timeout has passed since its last event and its last arrival, by the
    -- nodes' clock (relative to the arrival: Redis's own clock does not matter)
    local until_ms = c.l
    if c.sn > until_ms then until_ms = c.sn end
    local ttl = until_ms + T - c.now
    if ttl < 1 then ttl = 1 end
    redis.call('PEXPIRE', key, string.format('%d', ttl))
  else
    redis.call('HSET', key, 'st', string.format('%d', c.st), 'l', string.format('%d', c.l),
               'v', c.v, 's', string.format('%d', c.sn))
    redis.call('PEXPIRE', key, CM)
  end
end
return table.concat(out, ' ')
"""

# Marks reserved event ids stored. ARGV: the dedup window ms, the project, the event ids.
CONFIRM_LUA = """
local head = KEYS[1] .. 'e:' .. ARGV[2] .. ':'
for i = 3, #ARGV do
  redis.call('SET', head .. ARGV[i], '1', 'PX', ARGV[1])
end
return #ARGV - 2
"""

#: The kinds of event :class:`SharedIdentity` assigns.
DERIVED, CLIENT, MEASURE_DERIVED, MEASURE_CLIENT = "d", "c", "md", "mc"
PENDING, DUPLICATE, TODAY, YESTERDAY, NONE, CLIENT_SESSION = -2, -1, 0, 1, 2, 3
#: How long an event id stays reserved for a request that has not stored it yet (ms): a
#: node killed before its spool took the event leaves it reserved that long, and a retry
#: meanwhile is answered 503 (retry later), then taken.
PENDING_MS = 120_000


@dataclass(frozen=True, slots=True)
class Ask:
    """One event as :class:`SharedIdentity` takes it."""

    kind: str  # DERIVED, CLIENT, MEASURE_DERIVED, MEASURE_CLIENT
    event_id: str  # "" when it has none
    project_id: str
    visitor: int  # today's visitor hash
    before: int  # yesterday's visitor hash (derived sessions, measurements)
    ts_ms: int
    now_ms: int
    client_session: int = 0  # the client-named session's stored id


@dataclass(frozen=True, slots=True)
class Answer:
    flag: int  # PENDING, DUPLICATE, TODAY, YESTERDAY, NONE, CLIENT_SESSION
    start_ms: int
    person: int  # a client-named session's first visitor (CLIENT_SESSION of kind CLIENT)


class Link:
    """The connection to Redis: an async client (requests), a sync one (worker threads), and
    a short circuit breaker: a failed call keeps this process off Redis for a second."""

    def __init__(self, url: str, timeout: float = TIMEOUT_S) -> None:
        self.url = url
        self.client = aredis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.sync = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.down_until = 0.0
        #: calls that failed, and what each caller did instead (its process's own state)
        self.failures = 0
        self.fallbacks = 0
        self.last_error: str | None = None
        self._logged_at = 0.0

    def usable(self) -> bool:
        return self.down_until == 0.0 or time.monotonic() >= self.down_until

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self.failures += 1
        self.fallbacks += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]
        self.down_until = now + RETRY_AFTER_FAILURE_S
        if now - self._logged_at > 60:
            self._logged_at = now
            log.warning("redis unavailable, shared state falls back to this node's: %s", exc)

    def status(self) -> dict[str, Any]:
        return {
            "url": _without_password(self.url),
            "usable": self.usable(),
            "failures": self.failures,
            "fallbacks": self.fallbacks,
            "lastError": self.last_error,
        }

    async def close(self) -> None:
        await self.client.aclose()
        self.sync.close()


class SharedIdentity:
    """Event-id reservations and session assignment in Redis, one script call per request."""

    def __init__(
        self,
        link: Link,
        timeout_ms: int,
        dedup_window_ms: int,
        client_memory_ms: int,
        pending_ms: int = PENDING_MS,
    ) -> None:
        self.link = link
        self._script = link.client.register_script(IDENTIFY_LUA)
        self._confirm = link.client.register_script(CONFIRM_LUA)
        self.window_ms = dedup_window_ms
        self._head = [
            str(timeout_ms),
            str(dedup_window_ms),
            str(client_memory_ms),
            str(pending_ms),
        ]
        self.calls = 0
        self.events = 0

    def _args(self, asks: Sequence[Ask]) -> list[str | bytes]:
        """The script's arguments for ``asks`` (its ARGV, :data:`IDENTIFY_LUA`): a few
        strings, whatever the number of events."""
        projects: dict[str, int] = {}
        fields: list[str] = []
        ids: list[bytes] = []
        for a in asks:
            index = projects.get(a.project_id)
            if index is None:
                index = projects[a.project_id] = len(projects) + 1
            event_id = a.event_id.encode() if a.event_id else b""
            if event_id:
                ids.append(event_id)
            fields.append(
                f"{a.kind} {index} {a.visitor} {a.before} {a.ts_ms} {a.now_ms} "
                f"{a.client_session} {len(event_id)}"
            )
        return [*self._head, " ".join(fields), b"".join(ids), *projects]

    async def assign(self, asks: Sequence[Ask]) -> list[Answer] | None:
        """Each event's answer, in order; None when Redis cannot be reached (the caller
        assigns with its own state)."""
        if not self.link.usable():
            self.link.fallbacks += 1
            return None
        args = self._args(asks)
        try:
            out = await self._script(keys=[PREFIX], args=args)
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)
            return None
        self.link.down_until = 0.0
        self.calls += 1
        self.events += len(asks)
        values = [int(v) for v in out.split()]
        return [Answer(*values[i : i + 3]) for i in range(0, len(values), 3)]

    async def confirm(self, project_id: str, event_ids: Sequence[str]) -> None:
        """Mark reserved event ids stored (their events are in the spool): duplicates for the
        dedup window from now on, in one script call. Redis out of reach: they stay pending
        until :data:`PENDING_MS` ends (a copy sent after that would be stored again)."""
        if not event_ids:
            return
        try:
            await self._confirm(keys=[PREFIX], args=[str(self.window_ms), project_id, *event_ids])
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)

    def confirm_stored(self, rows: Sequence[tuple[str, str, int]], now_ms: int) -> None:
        """At start-up, mark the event ids of the node's spool stored (blocking): rows of
        (project, event id, receipt ms). A node killed between its fsync and
        :meth:`confirm` left them pending."""
        try:
            with self.link.sync.pipeline(transaction=False) as pipe:
                for project_id, event_id, received_ms in rows:
                    ttl = received_ms + self.window_ms - now_ms
                    if ttl > 0:
                        pipe.set(f"{PREFIX}e:{project_id}:{event_id}", b"1", px=ttl)
                pipe.execute()
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)

    async def release(self, project_id: str, event_ids: Sequence[str]) -> None:
        """Forget reserved event ids whose events were not stored (the spool failed)."""
        if not event_ids:
            return
        try:
            await self.link.client.delete(*(f"{PREFIX}e:{project_id}:{e}" for e in event_ids))
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)

    async def forget_project(self, project_id: str) -> int:
        """Delete a deleted project's sessions and event ids; how many keys."""
        n = 0
        for kind in ("d", "c", "e"):
            batch: list[bytes] = []
            async for key in self.link.client.scan_iter(
                match=f"{PREFIX}{kind}:{project_id}:*", count=1000
            ):
                batch.append(key)
                if len(batch) >= 1000:
                    n += await self.link.client.unlink(*batch)
                    batch = []
            if batch:
                n += await self.link.client.unlink(*batch)
        return n


class SharedReplays:
    """Signed edge requests already served, across nodes."""

    def __init__(self, link: Link) -> None:
        self.link = link

    async def first(self, signature: bytes, until_s: float) -> bool | None:
        """True the first time ``signature`` is offered (kept until ``until_s``), False
        after; None when Redis cannot be reached (the caller asks its own guard)."""
        if not self.link.usable():
            self.link.fallbacks += 1
            return None
        try:
            created = await self.link.client.set(
                PREFIX + "r:" + signature.hex(), b"1", nx=True, pxat=int(until_s * 1000) + 1
            )
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)
            return None
        return bool(created)


class SharedGeneration:
    """The count of the nodes' writes to the store (sync: called in worker threads).

    A write whose count could not reach Redis is owed: this node's memo keeps nothing until
    it was delivered (:meth:`current` tries first). The other nodes learn of that write only
    then: while Redis is out of reach for one node and not for the others, they may serve
    rows read before it (docs/operations.md, Several nodes)."""

    KEY = PREFIX + "generation"

    def __init__(self, link: Link) -> None:
        self.link = link
        self._owed = 0
        self._lock = threading.Lock()

    def current(self) -> int | None:
        """The count now; None when Redis cannot be reached (then nothing is kept)."""
        if not self.link.usable():
            return None
        try:
            with self._lock:
                owed, self._owed = self._owed, 0
            if owed:
                try:
                    return int(self.link.sync.incrby(self.KEY, owed))
                except BaseException:
                    with self._lock:
                        self._owed += owed
                    raise
            value = self.link.sync.get(self.KEY)
        except (redis.RedisError, OSError) as exc:
            self.link.failed(exc)
            return None
        return int(value or 0)

    def bump(self) -> None:
        """Count a write that has returned."""
        if self.link.usable():
            try:
                self.link.sync.incr(self.KEY)
                return
            except (redis.RedisError, OSError) as exc:
                self.link.failed(exc)
        with self._lock:
            self._owed += 1


def _without_password(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" not in rest:
        return url
    return scheme + sep + "***@" + rest.split("@", 1)[1]
