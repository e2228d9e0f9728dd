"""The durable record of what the ingestion pipeline dropped: counts and samples.

The in-memory counts (``svc.ingestion.dropped.DropCounts``) are handed here by the runtime's
housekeeping every few seconds and at stop, as usage is (:mod:`svc.meta.usage`), and
:meth:`DroppedRecorder.flush` writes them in one transaction:

- ``dropped_counts``: events dropped per (project, UTC day, reason), and under the name of
  a refusal (``rate_limit``, ``quota``: ``svc.ingestion.outcomes.Refusal``) the requests
  refused whole before the pipeline, in the same column. A flush *adds* what this
  process counted since its last flush, so that several processes sharing a metadata store,
  and a process after a restart, add up. A flush that fails is rolled back and handed back
  to the counts (the next one writes it); only a commit whose success is lost (the
  connection drops after the commit) can count its events twice.
- ``dropped_samples``: a few dropped requests per project and day (no address), at most
  ``SAMPLES_PER_REASON`` per reason and ``SAMPLES_PER_DAY`` per day whatever the number of
  processes; those past the bounds are not written. Deleted by :meth:`DroppedRecorder.prune`
  ``SAMPLE_KEEP_MS`` (3 days) after their receipt.

Counts and samples of a project that does not exist (deleted meanwhile) are not written;
``MetaStore.delete_project`` deletes a project's rows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final

from sqlalchemy import bindparam, cast, delete, exists, func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import iso_ms

__all__ = [
    "SAMPLES_PER_DAY",
    "SAMPLES_PER_REASON",
    "SAMPLE_KEEP_MS",
    "USER_AGENT_CHARS",
    "DroppedRecorder",
    "DroppedReport",
    "DroppedSample",
    "Slot",
    "prune",
    "read",
    "record",
]

#: Samples kept per project and UTC day, and per project, day and reason.
SAMPLES_PER_DAY: Final = 20
SAMPLES_PER_REASON: Final = 5
#: How long a sample is kept (ms): 3 days after its receipt.
SAMPLE_KEEP_MS: Final = 3 * 86_400_000
#: A sample's user agent is cut to this many characters.
USER_AGENT_CHARS: Final = 256
#: How often the housekeeping deletes samples past their time (ms).
PRUNE_EVERY_MS: Final = 3_600_000

Slot = tuple[str, str, str]  # (project id, UTC day "YYYY-MM-DD", reason)


@dataclass(frozen=True, slots=True)
class DroppedSample:
    """One dropped request as kept: never its address."""

    project_id: str
    day: str  # UTC day of at_ms
    at_ms: int  # when it was received
    reason: str
    user_agent: str  # at most USER_AGENT_CHARS characters
    path: str
    referrer_host: str
    country: str  # ISO 3166-1 alpha-2, "" when not known


@dataclass(frozen=True, slots=True)
class DroppedReport:
    """GET /projects/{id}/dropped: the counts of every UTC day ``first``..``last`` by reason
    (every one of ``reasons``, 0 included) and the requests refused by refusal (every one of
    ``refusals``), their totals, and the samples of those days still kept, newest first."""

    first: date
    last: date
    reasons: tuple[str, ...]
    days: list[tuple[str, dict[str, int]]]
    samples: list[DroppedSample]
    refusals: tuple[str, ...] = ()
    refused: dict[str, dict[str, int]] = field(default_factory=dict)  # by day, then refusal

    def to_json(self) -> dict[str, Any]:
        totals = dict.fromkeys(self.reasons, 0)
        for _, reasons in self.days:
            for reason, n in reasons.items():
                totals[reason] = totals.get(reason, 0) + n
        refused_totals = dict.fromkeys(self.refusals, 0)
        none = dict.fromkeys(self.refusals, 0)
        for requests in self.refused.values():
            for refusal, n in requests.items():
                refused_totals[refusal] = refused_totals.get(refusal, 0) + n
        return {
            "from": self.first.isoformat(),
            "to": self.last.isoformat(),
            "days": [
                {"date": day, "reasons": reasons, "refused": self.refused.get(day, none)}
                for day, reasons in self.days
            ],
            "totals": totals,
            "total": sum(totals.values()),
            "refusedTotals": refused_totals,
            "refusedTotal": sum(refused_totals.values()),
            "samples": [
                {
                    "time": iso_ms(s.at_ms),
                    "reason": s.reason,
                    "userAgent": s.user_agent,
                    "path": s.path,
                    "referrerHost": s.referrer_host,
                    "country": s.country or None,
                }
                for s in self.samples
            ],
        }


def record(store: MetaStore, counts: Mapping[Slot, int], samples: Sequence[DroppedSample]) -> None:
    """Add ``counts`` to the recorded ones and write ``samples`` within their bounds, in one
    transaction (nothing of it is written when it fails)."""
    rows = [{"p": p, "d": d, "r": r, "n": int(n)} for (p, d, r), n in counts.items() if n > 0]
    if not rows and not samples:
        return
    store._writable()
    with store.engine.begin() as conn:
        if rows:
            conn.execute(_add_counts_statement(store.engine.dialect.name), rows)
        if samples:
            kept = _within_bounds(conn, samples)
            if kept:
                conn.execute(insert(tables.dropped_samples), kept)


def _within_bounds(conn: Any, samples: Sequence[DroppedSample]) -> list[dict[str, Any]]:
    """The rows of the ``samples`` whose project exists and whose (project, day) and (project,
    day, reason) have room left in the store."""
    t = tables.dropped_samples
    by_day: dict[tuple[str, str], list[DroppedSample]] = defaultdict(list)
    for s in samples:
        by_day[(s.project_id, s.day)].append(s)
    projects = set(
        conn.scalars(
            select(tables.projects.c.id).where(tables.projects.c.id.in_({p for p, _ in by_day}))
        )
    )
    kept: list[dict[str, Any]] = []
    for (project_id, day), group in by_day.items():
        if project_id not in projects:
            continue
        per_reason: Counter[str] = Counter(
            dict(
                conn.execute(
                    select(t.c.reason, func.count())
                    .where(t.c.project_id == project_id, t.c.day == day)
                    .group_by(t.c.reason)
                ).all()
            )
        )
        room = SAMPLES_PER_DAY - sum(per_reason.values())
        for s in group:
            if room <= 0:
                break
            if per_reason[s.reason] >= SAMPLES_PER_REASON:
                continue
            per_reason[s.reason] += 1
            room -= 1
            kept.append(
                {
                    "project_id": s.project_id,
                    "day": s.day,
                    "at_ms": s.at_ms,
                    "reason": s.reason,
                    "user_agent": s.user_agent,
                    "path": s.path,
                    "referrer_host": s.referrer_host,
                    "country": s.country,
                }
            )
    return kept


def _add_counts_statement(dialect: str) -> Any:
    """INSERT the (project, day, reason, events) of bound ``p``, ``d``, ``r``, ``n`` if the
    project exists; on an existing row add ``n`` to it. SQLite and PostgreSQL spell the
    upsert alike."""
    upsert: Any = sqlite_insert if dialect == "sqlite" else pg_insert
    t, projects = tables.dropped_counts, tables.projects
    project_id = cast(bindparam("p"), t.c.project_id.type)
    source = select(
        project_id,
        cast(bindparam("d"), t.c.day.type),
        cast(bindparam("r"), t.c.reason.type),
        cast(bindparam("n"), t.c.events.type),
    ).where(exists().where(projects.c.id == project_id))
    stmt = upsert(t).from_select(["project_id", "day", "reason", "events"], source)
    return stmt.on_conflict_do_update(
        index_elements=[t.c.project_id, t.c.day, t.c.reason],
        set_={"events": t.c.events + stmt.excluded.events},
    )


def read(
    store: MetaStore,
    project_id: str,
    first: date,
    last: date,
    reasons: Sequence[str],
    refusals: Sequence[str] = (),
) -> DroppedReport:
    """The counts of the UTC days ``first``..``last`` (both included) by reason, every one of
    ``reasons`` listed (0 when none), the requests refused by each of ``refusals`` (listed
    apart, every one), and the samples of those days."""
    days = [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
    counts = {day: dict.fromkeys(reasons, 0) for day in days}
    refused = {day: dict.fromkeys(refusals, 0) for day in days}
    apart = frozenset(refusals)
    c, s = tables.dropped_counts, tables.dropped_samples
    with store.engine.connect() as conn:
        for day, reason, n in conn.execute(
            select(c.c.day, c.c.reason, c.c.events).where(
                c.c.project_id == project_id, c.c.day >= days[0], c.c.day <= days[-1]
            )
        ):
            if reason in apart:
                refused[day][reason] = int(n)
            else:
                counts[day][reason] = int(n)  # a reason of a later version: shown as it is
        rows = conn.execute(
            select(s)
            .where(s.c.project_id == project_id, s.c.day >= days[0], s.c.day <= days[-1])
            .order_by(s.c.at_ms.desc(), s.c.id.desc())
        ).mappings()
        samples = [
            DroppedSample(
                project_id=row["project_id"],
                day=row["day"],
                at_ms=row["at_ms"],
                reason=row["reason"],
                user_agent=row["user_agent"],
                path=row["path"],
                referrer_host=row["referrer_host"],
                country=row["country"],
            )
            for row in rows
        ]
    return DroppedReport(
        first,
        last,
        tuple(reasons),
        [(day, counts[day]) for day in days],
        samples,
        tuple(refusals),
        refused,
    )


def prune(store: MetaStore, now_ms: int) -> int:
    """Delete the samples received ``SAMPLE_KEEP_MS`` or longer before ``now_ms``; how many."""
    store._writable()
    t = tables.dropped_samples
    with store.engine.begin() as conn:
        result = conn.execute(delete(t).where(t.c.at_ms <= now_ms - SAMPLE_KEEP_MS))
    return int(result.rowcount or 0)


class DroppedRecorder:
    """Writes one process's drop counts and samples into the metadata store, and deletes
    samples past their time at most every :data:`PRUNE_EVERY_MS`. Blocking: call it in a
    worker thread."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta
        self.pruned_at = 0

    def flush(self, counts: Mapping[Slot, int], samples: Sequence[DroppedSample]) -> None:
        """Record what :meth:`DropCounts.take` handed out; raises when it could not (then
        nothing of it was recorded: give it back)."""
        record(self.meta, counts, samples)

    def prune_if_due(self, now_ms: int) -> int:
        """Delete samples past their time when the last pruning is older than an hour."""
        if now_ms - self.pruned_at < PRUNE_EVERY_MS:
            return 0
        deleted = prune(self.meta, now_ms)
        self.pruned_at = now_ms
        return deleted
