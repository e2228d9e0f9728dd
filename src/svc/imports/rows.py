"""What a reader makes of a source: one :class:`Row` per event, or a :class:`Refusal`.

A row holds what POST /analytics would take of the event (name, URL, referrer, properties,
time, ``eventId``; :func:`svc.imports.run.check` validates it into the wire format's
:class:`~svc.ingestion.wire.RawEvent`) and what the source knows beyond the wire format: its
own session and visitor identities, the browser, system, device and location it recorded,
and for svc's own exports every column as it was stored.

Standard library only (and :mod:`svc.schema.limits`): the readers load fast (``svcm`` registers
its commands at every start).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from svc.schema.limits import FUTURE_WINDOW_MS, MAX_BATCH_EVENTS, PAST_WINDOW_MS

MAX_BATCH = MAX_BATCH_EVENTS  # events per request (as POST /analytics takes them) or insert
MIN_TS_MS = 946_684_800_000  # 2000-01-01
FUTURE_MS = FUTURE_WINDOW_MS
HTTP_MAX_AGE_MS = PAST_WINDOW_MS


class ImportFailed(Exception):
    """The import cannot go on: a source cannot be read, or the store refused a chunk.
    Running the same import again goes on from where it stopped."""


@dataclass(slots=True)
class Row:
    """One event read from a source."""

    where: str
    name: str
    url: str
    ts_ms: int
    event_id: str = ""
    referrer: str = ""
    session: str = ""  # the source's session identity
    visitor: str = ""  # the source's visitor identity
    properties: dict[str, Any] = field(default_factory=dict)
    screen: int = 0
    # what ingestion derives from the user agent and the address, as far as the source knows
    # it, by the events table's column names (svc.schema.row.EventRow): browser, os, country...
    fields: dict[str, str] = field(default_factory=dict)
    stored: dict[str, Any] | None = None  # every column of an svc export (kept as it is)
    received_ms: int = 0
    source_hint: str = ""  # a source name without referrer (Plausible's "Google")


@dataclass(slots=True)
class Refusal:
    where: str
    reason: str


Item = Row | Refusal


@dataclass
class Source:
    """One file (or zip member, or stdin) to read."""

    label: str
    open: Callable[[], IO[bytes]]
    size: int
    kind: str = ""  # ndjson, csv, parquet, umami, ga4, plausible:<table>


def event_id_of(*parts: str) -> str:
    digest = hashlib.blake2b(
        "\x1f".join(parts).encode(), digest_size=16, person=b"svcm-import"
    ).hexdigest()
    return "imp_" + digest


class Occurrences:
    """Identity of rows without an id of their own: a hash of their content and how many
    identical rows came before it with the same time (identical rows are neighbours in a
    time-ordered export; the memory stays that of one instant)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.ts: Any = None
        self.counts: dict[str, int] = {}

    def identity(self, ts: Any, content: str) -> str:
        if ts != self.ts:
            self.ts, self.counts = ts, {}
        n = self.counts.get(content, 0)
        self.counts[content] = n + 1
        return event_id_of(self.namespace, content, str(n))


def parse_time(value: Any) -> int:
    """Milliseconds since the epoch from ms (int), seconds (float < 1e11) or ISO 8601 text."""
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError("no time")
    if isinstance(value, int | float):
        ms = int(value if value > 1e11 else value * 1000)
        return ms
    text = str(value).strip()
    if re.fullmatch(r"\d{10,13}(\.\d+)?", text):
        return parse_time(float(text))
    text = text.replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # exports are in UTC
    return int(parsed.timestamp() * 1000)


def as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def reason_of(exc: Exception) -> str:
    """Why a row that raised ``exc`` while read is refused, for people."""
    text = str(exc)
    if "isoformat" in text or "Invalid isoformat" in text or text == "no time":
        return "no readable time (ts_ms, ts or created_at)"
    return text


def text_lines(f: IO[bytes]) -> io.TextIOWrapper:
    """A binary source as text for the ``csv`` module (UTF-8, a byte order mark skipped)."""
    return io.TextIOWrapper(f, encoding="utf-8-sig", errors="strict", newline="")
