"""The loader: moves ready spool segments into the event store, oldest first.

Each segment is inserted with its name as ClickHouse's insert deduplication token, and is
deleted only after the insert succeeded; a crash in between replays it at the next start and
ClickHouse drops the duplicate block. While the store is unreachable the loader backs off and
retries; ingestion keeps spooling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from svc.spool.log import Segment, Spool, read_segment
from svc.storage.events import EventStore

log = logging.getLogger(__name__)


class Loader:
    """Background task inserting spool segments into the store."""

    def __init__(
        self,
        spool: Spool,
        store: EventStore,
        *,
        max_backoff_s: float = 10.0,
        release_memory_s: float = 0.0,
    ) -> None:
        self.spool = spool
        self.store = store
        self.max_backoff_s = max_backoff_s
        self.release_memory_s = release_memory_s  # see EventStore.release_memory; 0: never
        self._released_at = 0.0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.loaded_events = 0
        self.loaded_segments = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_load_ms: float | None = None

    def notify(self) -> None:
        self._wake.set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="spool-loader")

    async def stop(self, drain: bool = True) -> None:
        """Stop; with ``drain`` load what is ready first (best effort: what fails stays spooled)."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if drain:
            await self.drain()

    async def drain(self) -> bool:
        """Load every ready segment now, oldest first; False when one failed (it and the
        younger ones stay spooled). At start-up this runs before the in-memory counts are
        rebuilt from the store, so a segment that a killed process had inserted but not yet
        deleted is replayed (and dropped by its deduplication token) instead of being counted
        twice, once in the store and once in the spool."""
        while self.spool.ready:
            if not await self._load_one(self.spool.ready[0]):
                return False
        return True

    @property
    def backlog_events(self) -> int:
        return sum(s.events for s in self.spool.ready) + self.spool.open_events

    @property
    def backlog_bytes(self) -> int:
        return sum(s.bytes for s in self.spool.ready) + self.spool.open_bytes

    @property
    def oldest_waiting_ms(self) -> int | None:
        candidates = [s.oldest_ms for s in self.spool.ready if s.events]
        if self.spool.open_events and self.spool.open_oldest_ms:
            candidates.append(self.spool.open_oldest_ms)
        return min(candidates) if candidates else None

    @property
    def store_reachable(self) -> bool:
        return self.last_error is None

    async def _run(self) -> None:
        backoff = 0.1
        while not self._stopping:
            if not self.spool.ready:
                self._wake.clear()
                await self._wake.wait()
                continue
            if await self._load_one(self.spool.ready[0]):
                backoff = 0.1
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), backoff)
                self._wake.clear()
                backoff = min(backoff * 2, self.max_backoff_s)

    def _insert(self, data: bytes, token: str) -> None:
        self.store.insert_ndjson(data, token)
        now = time.monotonic()
        if self.release_memory_s and now - self._released_at >= self.release_memory_s:
            self._released_at = now
            try:
                self.store.release_memory()
            except Exception as exc:  # only memory: never fail a load for it
                log.debug("could not release the store's memory: %s", exc)

    async def _load_one(self, segment: Segment) -> bool:
        started = time.perf_counter()
        try:
            data = await asyncio.to_thread(read_segment, segment.path)
            if data:
                await asyncio.to_thread(self._insert, data, segment.token)
        except Exception as exc:  # any store failure: keep the segment, retry later
            if self.last_error is None:
                log.warning("loading %s failed, will retry: %s", segment.path.name, exc)
            self.last_error = f"{type(exc).__name__}: {exc}"[:500]
            self.last_error_at = time.time()
            return False
        segment.path.unlink(missing_ok=True)
        if self.spool.ready and self.spool.ready[0] is segment:
            self.spool.ready.pop(0)
        else:
            self.spool.ready = [s for s in self.spool.ready if s is not segment]
        self.loaded_events += segment.events
        self.loaded_segments += 1
        self.last_load_ms = (time.perf_counter() - started) * 1000
        self.last_error = None
        return True
