"""The import loop: rows checked as POST /analytics checks events, in batches, the stored
ones skipped, the rest written by a :class:`Sink`, everything counted in a :class:`Summary`.

Two sinks: :class:`svc.imports.store.StoreSink` writes history straight into a data
directory's event store (through :mod:`svc.imports.historical`); ``svcm``'s HTTP sink posts
the events to a running service's POST /analytics, whose own pipeline ingests them. Each
row's ``eventId`` is deterministic, so running the same import again skips what is stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from svc.errors import ApiError
from svc.imports.rows import FUTURE_MS, MAX_BATCH, MIN_TS_MS, Item, Refusal, Row
from svc.ingestion.wire import RawEvent, validate_event

__all__ = ["MAX_BATCH", "Checked", "Sink", "Summary", "batches", "check", "run_import"]

MAX_BATCH_BYTES = 900 * 1024


@dataclass
class Summary:
    read: int = 0
    imported: int = 0
    skipped: int = 0  # stored already (or twice in the input)
    dropped: int = 0  # dropped by the service on purpose
    refused: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    files: list[dict[str, str]] = field(default_factory=list)

    def refuse(self, where: str, reason: str) -> None:
        self.refused[reason] += 1
        examples = self.examples.setdefault(reason, [])
        if len(examples) < 3:
            examples.append(where)

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "read": self.read,
            "imported": self.imported,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "refused": self.refused_total,
            "reasons": [
                {"reason": r, "rows": n, "examples": self.examples.get(r, [])}
                for r, n in self.refused.most_common()
            ],
        }


@dataclass(slots=True)
class Checked:
    """A row and its event as the wire format has it (validated as POST /analytics does)."""

    row: Row
    raw: RawEvent


class Sink(Protocol):
    def stored(self, batch: list[Checked]) -> set[str]:
        """The event ids of ``batch`` that the project has already."""

    def write(self, batch: list[Checked], summary: Summary) -> None: ...

    def finish(self) -> None:
        """After the last write."""


def check(row: Row, now: int, *, max_age_ms: int | None) -> RawEvent | str:
    """The validated event, or why the row is refused (the service's own rules). The event's
    time is the row's (history is older than POST /analytics takes: it is checked here)."""
    obj: dict[str, Any] = {"event": row.name, "url": row.url, "eventId": row.event_id}
    if row.referrer:
        obj["referrer"] = row.referrer
    if row.properties:
        obj["properties"] = row.properties
    try:
        raw = validate_event(obj, now)
    except ApiError as exc:
        return exc.message
    if not row.ts_ms:
        return "no time (ts_ms, ts or created_at)"
    if row.ts_ms < MIN_TS_MS:
        return "the time is before 2000"
    if row.ts_ms > now + FUTURE_MS:
        return "the time is in the future"
    if max_age_ms is not None and row.ts_ms < now - max_age_ms:
        return (
            "older than 7 days: the service takes only the last 7 days over HTTP; import "
            "history on the data directory with --data-dir (service stopped)"
        )
    raw.ts_ms = row.ts_ms
    if 0 < row.screen <= 65535:
        raw.screen = row.screen
    return raw


def batches(items: Iterable[Checked], size: int) -> Iterator[list[Checked]]:
    """``items`` in batches of at most ``size`` events and about ``MAX_BATCH_BYTES``."""
    batch: list[Checked] = []
    weight = 0
    for c in items:
        cost = (
            len(c.row.url)
            + len(c.row.referrer)
            + 200
            + sum(len(str(k)) + len(str(v)) + 8 for k, v in c.raw.properties.items())
        )
        if batch and (len(batch) >= size or weight + cost > MAX_BATCH_BYTES):
            yield batch
            batch, weight = [], 0
        batch.append(c)
        weight += cost
    if batch:
        yield batch


def run_import(
    items: Iterable[Item],
    sink: Sink,
    summary: Summary,
    *,
    now_ms: int,
    max_age_ms: int | None,
    batch_size: int,
    dry_run: bool,
    advance: Callable[[int], None] = lambda n: None,
) -> None:
    """Check every item, skip those stored already (or twice in the input) and write the
    others through ``sink`` (nothing with ``dry_run``), counting all in ``summary``;
    ``advance`` is told of every item read. An exception from the sink (or a source) ends
    the import; ``summary`` then says how far it got."""

    def checked() -> Iterator[Checked]:
        for item in items:
            summary.read += 1
            advance(1)
            if isinstance(item, Refusal):
                summary.refuse(item.where, item.reason)
                continue
            result = check(item, now_ms, max_age_ms=max_age_ms)
            if isinstance(result, str):
                summary.refuse(item.where, result)
                continue
            yield Checked(item, result)

    for batch in batches(checked(), batch_size):
        seen: set[str] = set()
        fresh: list[Checked] = []
        for c in batch:
            if c.row.event_id in seen:
                summary.skipped += 1
                continue
            seen.add(c.row.event_id)
            fresh.append(c)
        if dry_run:
            summary.imported += len(fresh)
            continue
        known = sink.stored(fresh)
        summary.skipped += len(known)
        fresh = [c for c in fresh if c.row.event_id not in known]
        if fresh:
            sink.write(fresh, summary)
