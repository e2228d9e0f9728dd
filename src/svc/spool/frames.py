"""The spool's record format: framed, checksummed groups of JSONEachRow lines.

A segment is a sequence of records, one per group commit (the requests that shared one
fsync, whose answers all wait for it)::

    magic   4 bytes   b"\\xa5SV1"
    length  u32 LE    bytes of the payload
    events  u32 LE    lines in the payload
    crc     u32 LE    CRC-32 (zlib) of the 8 bytes of length and events, then the payload
    payload           JSONEachRow lines, each ending in a newline

Reading never trusts a length it has not checked: a record is good only when its magic, its
bounds and its checksum all hold. After a bad record the reader looks for the next offset where
a good record starts, so one damaged byte costs the records it touches and nothing else: the
bytes in between form one :class:`BadRegion`, quarantined by the loader. A record that runs past
the end of the file (or a header cut short) at the very end is a *torn tail*: a write that never
completed, hence was never acknowledged; recovery cuts it.

Segments written before records were framed (plain JSONEachRow lines, starting with ``{``) are
read as one record per complete line, without a checksum.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

MAGIC = b"\xa5SV1"
HEADER = struct.Struct("<4sIII")
HEADER_SIZE = HEADER.size  # 16
_COUNTS = struct.Struct("<II")
#: Largest payload a record may claim; a bigger length is damage, not data.
MAX_PAYLOAD = 64 * 1024 * 1024


def frame(payload: bytes, events: int) -> bytes:
    """One record holding ``payload`` (complete JSONEachRow lines) of ``events`` events."""
    counts = _COUNTS.pack(len(payload), events)
    crc = zlib.crc32(payload, zlib.crc32(counts))
    return MAGIC + counts + crc.to_bytes(4, "little") + payload


@dataclass(frozen=True, slots=True)
class Record:
    """A good record: where it starts in the segment, its events and its payload."""

    offset: int
    events: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class BadRegion:
    """Bytes ``[start, end)`` of a segment that hold no good record, and why."""

    start: int
    end: int
    reason: str


@dataclass(slots=True)
class Scan:
    """What a segment holds: its good records in order, its bad regions, and whether it ends
    in a torn tail (bytes from ``torn_at`` on: an incomplete last record)."""

    records: list[Record] = field(default_factory=list)
    bad: list[BadRegion] = field(default_factory=list)
    torn_at: int | None = None
    legacy: bool = False

    @property
    def events(self) -> int:
        return sum(r.events for r in self.records)

    def payload(self) -> bytes:
        """Every good record's lines, in order (a JSONEachRow block)."""
        return b"".join(r.payload for r in self.records)


def _check(data: bytes, pos: int) -> tuple[Record | None, str, bool]:
    """The record at ``pos``, or why there is none and whether it is only cut short (it
    would end past the end of ``data``)."""
    n = len(data)
    if n - pos < HEADER_SIZE:
        if MAGIC.startswith(data[pos : pos + 4]):
            return None, "header cut short", True
        return None, "bad magic", False
    magic, length, events, crc = HEADER.unpack_from(data, pos)
    if magic != MAGIC:
        return None, "bad magic", False
    if length > MAX_PAYLOAD:
        return None, f"length {length} out of bounds", False
    end = pos + HEADER_SIZE + length
    if end > n:
        return None, "record cut short", True
    payload = data[pos + HEADER_SIZE : end]
    if zlib.crc32(payload, zlib.crc32(data[pos + 4 : pos + 12])) != crc:
        return None, "checksum mismatch", False
    if length and not payload.endswith(b"\n"):
        return None, "payload does not end a line", False
    return Record(pos, events, payload), "", False


def _next_good(data: bytes, pos: int) -> int:
    """The first offset after ``pos`` where a good record starts, or ``len(data)``."""
    at = pos
    while True:
        at = data.find(MAGIC, at + 1)
        if at < 0:
            return len(data)
        record, _, _ = _check(data, at)
        if record is not None:
            return at


def scan(data: bytes) -> Scan:
    """Split a segment's bytes into good records and bad regions (see the module doc)."""
    if data[:1] == b"{":
        return _scan_legacy(data)
    out = Scan()
    pos, n = 0, len(data)
    while pos < n:
        record, reason, short = _check(data, pos)
        if record is not None:
            out.records.append(record)
            pos += HEADER_SIZE + len(record.payload)
            continue
        resume = _next_good(data, pos)
        if resume == n and short:
            out.torn_at = pos
        else:
            out.bad.append(BadRegion(pos, resume, reason))
        pos = resume
    return out


def _scan_legacy(data: bytes) -> Scan:
    out = Scan(legacy=True)
    end = data.rfind(b"\n") + 1
    pos = 0
    while pos < end:
        nl = data.index(b"\n", pos) + 1
        out.records.append(Record(pos, 1, data[pos:nl]))
        pos = nl
    if end < len(data):
        out.torn_at = end
    return out


def lines(payload: bytes) -> Iterator[bytes]:
    """The lines of a payload, each with its newline."""
    pos = 0
    while pos < len(payload):
        nl = payload.find(b"\n", pos) + 1 or len(payload)
        yield payload[pos:nl]
        pos = nl
