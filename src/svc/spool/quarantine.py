"""The quarantine: bytes of the spool that cannot be loaded, kept for a person to look at.

Nothing the service acknowledged is ever thrown away silently. A region of a segment that fails
its checksum, and a line the event store refuses, are written to ``<spool>/quarantine/`` (one
``.bin`` file each, named after the segment and the offset, holding the bytes as they were) and
described by one JSON line in ``quarantine/index.jsonl`` (segment, offset, bytes, events when
known, reason, time). The files are made durable before the segment they come from is
deleted. Counts are kept in memory for /health and rebuilt from the index at start-up.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

log = logging.getLogger(__name__)

INDEX_NAME = "index.jsonl"


@dataclass(slots=True)
class QuarantineStats:
    """What the quarantine holds: entries, bytes, and the newest entry's reason and time."""

    entries: int = 0
    bytes: int = 0
    last_reason: str | None = None
    last_at_ms: int | None = None


class Quarantine:
    """A directory of bytes the loader could not load (see the module doc)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.stats = QuarantineStats()
        self._lock = threading.Lock()

    def load_stats(self) -> QuarantineStats:
        """Count what earlier runs quarantined (from the index)."""
        stats = QuarantineStats()
        index = self.directory / INDEX_NAME
        try:
            raw = index.read_bytes()
        except FileNotFoundError:
            raw = b""
        decoder = msgspec.json.Decoder()
        for line in raw.splitlines():
            try:
                entry = decoder.decode(line)
            except msgspec.DecodeError:
                continue  # a torn index line: its .bin file is still there
            stats.entries += 1
            stats.bytes += int(entry.get("bytes", 0))
            stats.last_reason = entry.get("reason")
            stats.last_at_ms = entry.get("at")
        with self._lock:
            self.stats = stats
        return stats

    def put(self, segment: str, offset: int, data: bytes, reason: str, events: int | None) -> Path:
        """Keep ``data`` (from ``segment`` at ``offset``) durably, with ``reason``. Raises
        OSError when it cannot (a full disk): the caller then keeps the segment."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.directory / f"{segment}@{offset}.bin"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        now = int(time.time() * 1000)
        entry: dict[str, object] = {
            "segment": segment,
            "offset": offset,
            "bytes": len(data),
            "events": events,
            "reason": reason[:2000],
            "file": path.name,
            "at": now,
        }
        line = msgspec.json.encode(entry) + b"\n"
        fd = os.open(self.directory / INDEX_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(self.directory)
        with self._lock:
            self.stats.entries += 1
            self.stats.bytes += len(data)
            self.stats.last_reason = reason[:2000]
            self.stats.last_at_ms = now
        log.error(
            "quarantined %d bytes of spool segment %s at offset %d (%s) in %s",
            len(data),
            segment,
            offset,
            reason,
            path,
        )
        return path


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
