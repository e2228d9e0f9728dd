"""The loader: moves ready spool segments into the event store, oldest first.

Each segment's good records are inserted with its name as ClickHouse's insert deduplication
token, and the segment is deleted only after the insert succeeded; a crash in between replays it
at the next start and ClickHouse drops the duplicate block. While the store is unreachable the
loader backs off and retries; ingestion keeps spooling.

The loader never stalls on bad data. Regions of a segment that fail their checksum are
quarantined (:mod:`svc.spool.quarantine`). When the store refuses a segment while it answers
other queries, the data is at fault: the segment's lines are inserted in halves, recursively,
each part with a token derived from the segment's and the part's bounds (so a replay after a
crash is dropped just the same), and each single line the store refuses is quarantined with
its reason. Everything else goes in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time

from svc.spool.frames import Scan, lines
from svc.spool.log import Segment, Spool, read_segment
from svc.spool.quarantine import Quarantine
from svc.storage.events import EventStore

log = logging.getLogger(__name__)

#: ClickHouse names its errors in parentheses: "... (CANNOT_PARSE_INPUT_ASSERTION_FAILED)".
_ERROR_NAME = re.compile(r"\(([A-Z][A-Z0-9_]{3,})\)")
#: Errors that refuse rows for what they hold (prefixes, or whole names).
DATA_ERROR_PREFIXES = ("CANNOT_PARSE", "CANNOT_READ", "CANNOT_CONVERT")
DATA_ERRORS = frozenset(
    {
        "INCORRECT_DATA",
        "TYPE_MISMATCH",
        "TOO_LARGE_STRING_SIZE",
        "INCORRECT_NUMBER_OF_COLUMNS",
        "CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN",
        "ARGUMENT_OUT_OF_BOUND",
        "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
        "DECIMAL_OVERFLOW",
        "SIZES_OF_COLUMNS_DOESNT_MATCH",
    }
)


def _is_data_error(name: str) -> bool:
    return name in DATA_ERRORS or name.startswith(DATA_ERROR_PREFIXES)


class Loader:
    """Background task inserting spool segments into the store."""

    def __init__(
        self,
        spool: Spool,
        store: EventStore,
        *,
        max_backoff_s: float = 10.0,
        release_memory_s: float = 0.0,
        quarantine: Quarantine | None = None,
    ) -> None:
        self.spool = spool
        self.store = store
        self.quarantine = quarantine or Quarantine(spool.directory / "quarantine")
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
        #: Held while a segment is loaded: who holds it (a backup, svc.backup) knows that no
        #: segment is half-way between the spool and the store until it lets go.
        self.hold = asyncio.Lock()

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

    async def drain(self, max_segments: int | None = None) -> bool:
        """Load every ready segment now (at most ``max_segments``), oldest first; False when
        one failed (it and the younger ones stay spooled). At start-up the oldest runs before
        the in-memory counts are rebuilt from the store, so a segment that a killed process
        had inserted but not yet deleted is replayed (and dropped by its deduplication token)
        instead of being counted twice, once in the store and once in the spool."""
        done = 0
        while self.spool.ready and (max_segments is None or done < max_segments):
            if not await self._load_one(self.spool.ready[0]):
                return False
            done += 1
        return True

    async def wait_loaded(self, segment: Segment | None, timeout_s: float) -> bool:
        """Wait until ``segment`` and every older one are loaded (quarantined parts count as
        done); False when ``timeout_s`` passed first (the store is down or slow)."""
        if segment is None:
            return True
        deadline = time.monotonic() + timeout_s
        self.notify()
        while any(s is segment for s in self.spool.ready):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    @property
    def backlog_events(self) -> int:
        return sum(s.events for s in self.spool.ready) + self.spool.open_events

    @property
    def backlog_bytes(self) -> int:
        return sum(s.bytes for s in self.spool.ready) + self.spool.open_bytes

    @property
    def oldest_waiting_ms(self) -> int | None:
        """The receipt time of the oldest event not in the store yet (spooled)."""
        candidates = [s.oldest_ms for s in self.spool.ready if s.events and not s.inserted]
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

    def _load_scan(self, segment: Segment, found: Scan) -> None:
        """Insert the good records of ``segment`` and quarantine the rest (in a thread).
        Raises when the store cannot be reached or the quarantine cannot be written: the
        segment then stays, and the next try gives the same inserts the same tokens."""
        name = segment.path.name
        if found.bad:
            raw = segment.path.read_bytes()
            for bad in found.bad:
                self.quarantine.put(name, bad.start, raw[bad.start : bad.end], bad.reason, None)
        payload = found.payload()
        if payload:
            try:
                self._insert(payload, segment.token)
            except Exception as exc:
                if not self._data_refused(exc):
                    raise
                log.warning("the store refused %s, loading it line by line: %s", name, exc)
                numbered = [
                    (record.offset, line)
                    for record in found.records
                    for line in lines(record.payload)
                ]
                self._insert_parts(name, segment.token, numbered, 0, len(numbered), exc)
        segment.inserted = True
        self._release_memory()

    def _release_memory(self) -> None:
        now = time.monotonic()
        if self.release_memory_s and now - self._released_at >= self.release_memory_s:
            self._released_at = now
            try:
                self.store.release_memory()
            except Exception as exc:  # only memory: never fail a load for it
                log.debug("could not release the store's memory: %s", exc)

    def _insert_parts(
        self,
        name: str,
        token: str,
        numbered: list[tuple[int, bytes]],
        lo: int,
        hi: int,
        refusal: Exception,
    ) -> None:
        """Insert lines ``[lo, hi)`` (already refused as a whole with ``refusal``) in two
        halves, each tried whole first; quarantine a single line the store refuses."""
        if hi - lo == 1:
            offset, line = numbered[lo]
            reason = f"refused by the store: {type(refusal).__name__}: {refusal}"
            self.quarantine.put(name, offset, line, reason, 1)
            return
        mid = (lo + hi) // 2
        for a, b in ((lo, mid), (mid, hi)):
            try:
                self._insert(b"".join(line for _, line in numbered[a:b]), f"{token}/{a}-{b}")
            except Exception as exc:
                if not self._data_refused(exc):
                    raise
                self._insert_parts(name, token, numbered, a, b, exc)

    def _data_refused(self, exc: Exception) -> bool:
        """Whether ``exc`` refuses the data itself: a ClickHouse error named as a parse or
        conversion failure (:data:`DATA_ERRORS`), from a store that answers a trivial query.
        Anything else (a missing table, memory, disk, a timeout, a lost connection) is the
        store's trouble: the segment waits, nothing is quarantined."""
        names = set(_ERROR_NAME.findall(str(exc)))
        if not names or not all(_is_data_error(n) for n in names):
            return False
        try:
            self.store.insert_client.query("SELECT 1")
        except Exception:
            return False
        return True

    async def _load_one(self, segment: Segment) -> bool:
        """Load ``segment``; False when it stays spooled (retried later). A failure that the
        load's own handling does not foresee (a loaded segment that cannot be deleted) is the
        loader's error as well, never the end of the loader's task or of a start-up drain."""
        try:
            async with self.hold:
                return await self._load_held(segment)
        except Exception as exc:
            if self.last_error is None:
                log.exception("loading %s failed, will retry", segment.path.name)
            self._failed(exc)
            return False

    def _failed(self, exc: Exception) -> None:
        """Record ``exc`` as the loader's error (/health's ``loaderError``)."""
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        self.last_error_at = time.time()

    async def _load_held(self, segment: Segment) -> bool:
        started = time.perf_counter()
        try:
            found = await asyncio.to_thread(read_segment, segment)
            await asyncio.to_thread(self._load_scan, segment, found)
        except Exception as exc:  # any store failure: keep the segment, retry later
            if self.last_error is None:
                log.warning("loading %s failed, will retry: %s", segment.path.name, exc)
            self._failed(exc)
            return False
        segment.path.unlink(missing_ok=True)
        if self.spool.ready and self.spool.ready[0] is segment:
            self.spool.ready.pop(0)
        else:
            self.spool.ready = [s for s in self.spool.ready if s is not segment]
        self.loaded_events += found.events
        self.loaded_segments += 1
        self.last_load_ms = (time.perf_counter() - started) * 1000
        self.last_error = None
        return True
