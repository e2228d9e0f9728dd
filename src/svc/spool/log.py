"""The durable spool: an append-only log of event rows on disk, with group commit.

Request handlers call :meth:`Spool.append` with ready-made JSONEachRow lines and await it; the
writer task writes everything waiting, makes it durable with one ``fdatasync`` and only then
releases every waiting request. Requests that arrive during an fsync form the next group.

Segments are files ``<start ms>-<seq>.log`` while open and ``.ready`` once closed (past a size
or an age). The loader inserts ready segments into the store and deletes them. At start-up a
``.log`` left by a crash is closed: its complete lines are kept, a torn last line (never
acknowledged) is cut off.
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

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".log"
READY_SUFFIX = ".ready"


@dataclass
class Segment:
    """A closed spool file waiting for the loader."""

    path: Path
    events: int
    bytes: int
    oldest_ms: int

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
        self._pending: list[bytes] = []
        self._pending_events = 0
        self._pending_oldest_ms = 0
        self._waiters: list[asyncio.Future[None]] = []
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
        self.last_error: str | None = None
        self.appended_events = 0
        self.commits = 0

    # start-up -------------------------------------------------------------------------------

    def recover(self) -> list[Segment]:
        """Close segments a previous run left open and list every segment not loaded yet."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.directory.glob("*" + OPEN_SUFFIX)):
            _cut_torn_tail(path)
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
        self._pending.append(data)
        self._pending_events += events
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._wake.set()
        await future

    def rotate_soon(self) -> None:
        """Ask the writer to close the open segment now (it becomes loadable)."""
        self._rotate_requested = True
        if self._wake is not None:
            self._wake.set()

    _rotate_requested = False

    @property
    def open_events(self) -> int:
        return self._open_events + self._pending_events

    @property
    def open_bytes(self) -> int:
        return self._open_bytes + sum(len(p) for p in self._pending)

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
                or self._open_bytes >= self.segment_bytes
                or time.monotonic() - self._open_since >= interval
            )
            if due or (self._closing and self._open_events):
                self._rotate_requested = False
                await loop.run_in_executor(self._executor, self._rotate)
            elif self._rotate_requested and not self._open_events:
                self._rotate_requested = False
            if self._closing and not self._pending:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                    if self._open_path is not None and self._open_events == 0:
                        self._open_path.unlink(missing_ok=True)
                return

    def _write(self, batch: list[bytes], events: int, oldest_ms: int) -> None:
        if self._fd is None:
            self._open_new()
        assert self._fd is not None
        data = b"".join(batch)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if self.fsync:
            os.fdatasync(self._fd)
        if not self._open_events:
            self._open_oldest_ms = oldest_ms
        self._open_events += events
        self._open_bytes += len(data)

    def _open_new(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
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
        self._open_path.rename(target)
        if self.fsync:
            _fsync_dir(self.directory)
        self.ready.append(
            Segment(target, self._open_events, self._open_bytes, self._open_oldest_ms)
        )
        self._open_path = None
        self._open_events = self._open_bytes = self._open_oldest_ms = 0
        if self.on_ready is not None:
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


def read_segment(path: Path) -> bytes:
    """The complete lines of a segment."""
    data = path.read_bytes()
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


def _describe(path: Path) -> Segment:
    data = read_segment(path)
    oldest = int(path.name.split("-", 1)[0])
    return Segment(path, data.count(b"\n"), len(data), oldest)


def _seg_order(path: Path) -> tuple[int, int]:
    parts = path.name.split("-")
    return int(parts[0]), int(parts[1])


def _cut_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    end = data.rfind(b"\n")
    if end + 1 != len(data):
        with open(path, "r+b") as f:
            f.truncate(end + 1)
            f.flush()
            os.fsync(f.fileno())


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
