"""The durable spool: a write-ahead log of event rows on disk, with group commit.

Request handlers call :meth:`Spool.append` with ready-made JSONEachRow lines and await it; the
writer task frames the lines of every request waiting as one checksummed record
(:mod:`svc.spool.frames`), writes it, makes it durable with one ``fdatasync`` and only then
releases every waiting request. Requests that arrive during an fsync form the next group.

A write or fsync that fails (a full disk, an I/O error) is undone before anyone is answered:
the segment is truncated back to its last good record and closed, and every request of the
group gets :class:`SpoolUnavailable` (a 503). So an answer that is not a 200 leaves nothing
behind that a later load could store, and the next group starts a new segment.

Segments are files ``<start ms>-<seq>-<node>.log`` while open and ``.ready`` once closed (past
a size or an age). The loader inserts ready segments into the store and deletes them. At
start-up a ``.log`` left by a crash is closed: its good records are kept and a torn tail (an
incomplete last record, never acknowledged) is cut off; damaged records are left for the
loader, which quarantines them (:mod:`svc.spool.quarantine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from svc.spool.frames import Scan, frame, scan

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".log"
READY_SUFFIX = ".ready"


@dataclass
class Segment:
    """A closed spool file waiting for the loader. ``limit``: only the bytes before it are
    records (set when a failed write could not be truncated away)."""

    path: Path
    events: int
    bytes: int
    oldest_ms: int
    limit: int | None = None
    inserted: bool = False  # in the store, not yet deleted (set by the loader's thread)

    @property
    def token(self) -> str:
        return self.path.stem


class SpoolUnavailable(Exception):
    """The spool cannot take events (disk full, directory gone)."""


class Spool:
    """Append-only, group-committed event log in one directory."""

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int,
        flush_interval_ms: int,
        fsync: bool = True,
        node_id: str = "node",
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.flush_interval_ms = flush_interval_ms
        self.fsync = fsync
        self.node_id = node_id
        self.on_ready = on_ready
        self.ready: list[Segment] = []
        self._pending: list[tuple[bytes, int]] = []
        self._pending_events = 0
        self._pending_oldest_ms = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._sealers: list[asyncio.Future[None]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spool-fsync")
        self._fd: int | None = None
        self._open_path: Path | None = None
        self._open_events = 0
        self._open_bytes = 0
        self._open_oldest_ms = 0
        self._open_since = 0.0
        self._seq = 0
        self._start_ms = int(time.time() * 1000)
        self._closing = False
        self._limit: int | None = None
        self.last_error: str | None = None
        self.torn_tails_cut = 0
        self.appended_events = 0
        self.commits = 0

    # start-up -------------------------------------------------------------------------------

    def recover(self) -> list[Segment]:
        """Close segments a previous run left open and list every segment not loaded yet."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in sorted(self.directory.glob("*" + OPEN_SUFFIX)):
            if _cut_torn_tail(path):
                self.torn_tails_cut += 1
            target = path.with_suffix(READY_SUFFIX)
            if path.stat().st_size == 0:
                path.unlink()
                continue
            path.rename(target)
        _fsync_dir(self.directory)
        self.ready = [
            _describe(p) for p in sorted(self.directory.glob("*" + READY_SUFFIX), key=_seg_order)
        ]
        return list(self.ready)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="spool-writer")

    async def close(self) -> None:
        """Commit what is waiting, close the open segment and stop the writer."""
        self._closing = True
        if self._wake is not None:
            self._wake.set()
        if self._task is not None:
            await self._task
        self._executor.shutdown(wait=True)

    # appending ------------------------------------------------------------------------------

    async def append(self, data: bytes, events: int, oldest_ms: int) -> None:
        """Make ``data`` (complete lines) durable; returns once it is on disk."""
        if self._closing or self._wake is None:
            raise SpoolUnavailable("the spool is closed")
        if self.last_error is not None and not self._pending:
            self._probe()
        if not self._pending:
            self._pending_oldest_ms = oldest_ms
        self._pending.append((data, events))
        self._pending_events += events
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._wake.set()
        await future

    async def seal(self) -> Segment | None:
        """Close the open segment once everything appended before this call is committed;
        returns the newest ready segment then (every such event is in it or an older one),
        or None when nothing waits. Raises SpoolUnavailable if the spool is closed."""
        if self._closing or self._wake is None:
            raise SpoolUnavailable("the spool is closed")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sealers.append(future)
        self._rotate_requested = True
        self._wake.set()
        await future
        return self.ready[-1] if self.ready else None

    def rotate_soon(self) -> None:
        """Ask the writer to close the open segment now (it becomes loadable)."""
        self._rotate_requested = True
        if self._wake is not None:
            self._wake.set()

    _rotate_requested = False
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def open_events(self) -> int:
        return self._open_events + self._pending_events

    @property
    def open_bytes(self) -> int:
        return self._open_bytes + sum(len(p) for p, _ in self._pending)

    @property
    def open_oldest_ms(self) -> int:
        return self._open_oldest_ms or self._pending_oldest_ms

    # the writer -----------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        interval = self.flush_interval_ms / 1000
        while True:
            timeout = None
            if self._open_events:
                timeout = max(0.0, self._open_since + interval - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            # Sealers taken with the batch: what they wait for is in it or already written.
            sealers, self._sealers = self._sealers, []
            if self._pending:
                batch, waiters = self._pending, self._waiters
                events, oldest = self._pending_events, self._pending_oldest_ms
                self._pending, self._waiters, self._pending_events = [], [], 0
                try:
                    await loop.run_in_executor(self._executor, self._write, batch, events, oldest)
                except OSError as exc:
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    log.error("spool write failed: %s", self.last_error)
                    for w in waiters:
                        if not w.done():
                            w.set_exception(SpoolUnavailable(self.last_error))
                else:
                    self.last_error = None
                    self.commits += 1
                    self.appended_events += events
                    for w in waiters:
                        if not w.done():
                            w.set_result(None)
            due = self._open_events and (
                self._rotate_requested
                or sealers
                or self._open_bytes >= self.segment_bytes
                or time.monotonic() - self._open_since >= interval
            )
            if due or (self._closing and self._open_events):
                self._rotate_requested = False
                await loop.run_in_executor(self._executor, self._rotate)
            elif self._rotate_requested and not self._open_events:
                self._rotate_requested = False
            for sealer in sealers:
                if not sealer.done():
                    sealer.set_result(None)
            if self._closing and not self._pending:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                    if self._open_path is not None and self._open_events == 0:
                        self._open_path.unlink(missing_ok=True)
                return

    def _write(self, batch: list[tuple[bytes, int]], events: int, oldest_ms: int) -> None:
        """Append the group's record and make it durable, or leave the segment as it was
        before (truncated back, then closed) and raise OSError."""
        if self._fd is None:
            self._open_new()
        assert self._fd is not None
        # One record per group: its requests share the fsync, and fail or succeed together.
        data = frame(b"".join([payload for payload, _ in batch]), events)
        start = self._open_bytes
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            if self.fsync:
                os.fdatasync(self._fd)
        except OSError:
            self._undo(start)
            raise
        if not self._open_events:
            self._open_oldest_ms = oldest_ms
        self._open_events += events
        self._open_bytes += len(data)

    def _undo(self, good_bytes: int) -> None:
        """After a failed write: cut the open segment back to ``good_bytes`` (its acknowledged
        records) and close it, so that nothing of the failed group can ever be loaded, and the
        next group starts a new file (after a failed fsync, the old file's pages are suspect)."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, good_bytes)
            if self.fsync:
                os.fdatasync(self._fd)
        except OSError as exc:  # the loader reads no further than the limit
            log.critical("could not cut spool segment %s back: %s", self._open_path, exc)
            self._limit = good_bytes
        if self._open_events:
            try:
                self._rotate()
                return
            except OSError as exc:
                log.error("could not close spool segment %s: %s", self._open_path, exc)
        self._discard_open()

    def _discard_open(self) -> None:
        """Close the open segment; remove it when it holds no record (else recovery at the
        next start takes it)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._open_path is not None and not self._open_events:
            with contextlib.suppress(OSError):
                self._open_path.unlink()
        self._open_path = None
        self._limit = None
        self._open_events = self._open_bytes = self._open_oldest_ms = 0

    def _open_new(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._seq += 1
        name = f"{self._start_ms:013d}-{self._seq:08d}-{self.node_id}{OPEN_SUFFIX}"
        self._open_path = self.directory / name
        self._fd = os.open(self._open_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if self.fsync:
            _fsync_dir(self.directory)
        self._open_events = self._open_bytes = self._open_oldest_ms = 0
        self._open_since = time.monotonic()

    def _rotate(self) -> None:
        if self._fd is None or self._open_path is None:
            return
        os.close(self._fd)
        self._fd = None
        target = self._open_path.with_suffix(READY_SUFFIX)
        try:
            self._open_path.rename(target)
            if self.fsync:
                _fsync_dir(self.directory)
        except OSError:  # the loader takes it as it is; recovery would close it
            target = self._open_path if self._open_path.exists() else target
        self.ready.append(
            Segment(target, self._open_events, self._open_bytes, self._open_oldest_ms, self._limit)
        )
        self._open_path = None
        self._limit = None
        self._open_events = self._open_bytes = self._open_oldest_ms = 0
        if self.on_ready is not None:  # called from the writer's thread
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self.on_ready)
            else:
                self.on_ready()

    def _probe(self) -> None:
        """After a failure, check whether the directory is writable again."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not os.access(self.directory, os.W_OK):
                raise SpoolUnavailable(f"{self.directory} is not writable")
        except OSError as exc:
            raise SpoolUnavailable(str(exc)) from exc

    def writable(self) -> bool:
        try:
            return os.access(self.directory, os.W_OK) and self.last_error is None
        except OSError:
            return False

    def probe_writable(self, size: int = 4096) -> bool:
        """Check for real that the spool's disk takes a write now (write, fsync and remove a
        small file; blocking, a few ms): clears ``last_error`` when it does, so a service
        that could not write answers 200 again once the disk has room, without waiting for a
        request to try. Returns whether it could."""
        probe = self.directory / f".probe-{os.getpid()}"
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"\0" * size)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                probe.unlink()
            if self.last_error is None:
                self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        with contextlib.suppress(OSError):
            probe.unlink()
        self.last_error = None
        return True


def read_segment(segment: Segment | Path) -> Scan:
    """What a segment holds: its good records and its damaged regions."""
    path = segment.path if isinstance(segment, Segment) else segment
    data = path.read_bytes()
    if isinstance(segment, Segment) and segment.limit is not None:
        data = data[: segment.limit]
    return scan(data)


def _describe(path: Path) -> Segment:
    data = path.read_bytes()
    oldest = int(path.name.split("-", 1)[0])
    return Segment(path, scan(data).events, len(data), oldest)


def _seg_order(path: Path) -> tuple[int, int]:
    parts = path.name.split("-")
    return int(parts[0]), int(parts[1])


def _cut_torn_tail(path: Path) -> bool:
    """Cut an incomplete last record (a write that never completed, so was never
    acknowledged); whether there was one."""
    found = scan(path.read_bytes()).torn_at
    if found is None:
        return False
    log.warning("cut a torn tail of %s at byte %d", path.name, found)
    with open(path, "r+b") as f:
        f.truncate(found)
        f.flush()
        os.fsync(f.fileno())
    return True


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
