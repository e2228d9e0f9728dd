"""The retention job: deletes what each project keeps no longer, and records how far back its
data now goes.

One job for every project, in the store's one set of tables (a TTL expression cannot read a
project's own setting): for each project, the days before its raw horizon are rolled up if
they never were (svc.storage.rollups), then its raw rows before the horizon are deleted
(svc.queries.sql.retention.RAW), then its rollups before the rollup horizon (ROLLUPS), and the
horizons are recorded (``retention_horizons``, storage/migrations/020), and last the raw-event
lake's days before each raw horizon are deleted (when the service has a lake: :attr:`lake`,
svc.lake.schedule.Lake.expire). A month partition that
every project with rows in it has left behind is dropped whole; otherwise the project's rows
are deleted by a mutation. Runs on the rollups' loop (svc.runtime), after a pass, every
``SVC_RETENTION_INTERVAL_SECONDS``; nothing is read while no project has a horizon.

The readers ask :meth:`RetentionJob.raw_from` where a project's raw rows begin: the later of
its policy's horizon (so an answer does not change when the job runs) and the recorded one
(rows deleted stay deleted when a retention is made longer).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Protocol

from svc.meta.store import Project
from svc.queries.sql import retention as sql
from svc.queries.sql.statement import Statement
from svc.retention.policy import retention_of
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups

log = logging.getLogger(__name__)

#: "No horizon recorded": before any stored day.
_EPOCH = date(1970, 1, 1)


class LakeDays(Protocol):
    """The raw-event lake as the job expires it (svc.lake.schedule.Lake)."""

    def expire(self, horizons: Mapping[str, date]) -> Sequence[tuple[str, date]]:
        """Delete each project's days before its horizon; the (project, day) pairs deleted."""
        ...


@dataclass
class RunReport:
    """What one run did."""

    rolled_up_days: int = 0
    dropped_partitions: list[str] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    recorded: dict[str, tuple[date, date]] = field(default_factory=dict)
    #: the lake's days deleted, ``<project>:<day>``
    lake_days: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def did_anything(self) -> bool:
        return bool(
            self.rolled_up_days or self.dropped_partitions or self.deletes or self.lake_days
        )


class RetentionJob:
    """Enforces every project's retention (:meth:`run`) and answers where its raw rows begin
    (:meth:`raw_from`). ``projects`` lists the metadata store's projects (a project the
    store holds rows of and the metadata store does not know gets the settings' retention)."""

    def __init__(
        self,
        store: EventStore,
        rollups: Rollups,
        projects: Callable[[], Sequence[Project]],
        settings: Settings,
    ) -> None:
        self.store = store
        self.rollups = rollups
        self.projects = projects
        self.settings = settings
        #: the raw-event lake, whose days the job expires too (set by svc.lake.schedule.lake_of
        #: when SVC_LAKE_URL is set)
        self.lake: LakeDays | None = None
        self._recorded: dict[str, tuple[date, date]] = {}
        self._lock = threading.Lock()  # one run at a time
        self._last_run: float | None = None
        #: for /internal/metrics: runs done and failed, the last one's end (Unix time) and
        #: time, partitions dropped and deletes done since start
        self.runs = 0
        self.failures = 0
        self.last_success_at = 0.0
        self.last_seconds = 0.0
        self.partitions_dropped = 0
        self.deletes = 0
        self.lake_days_deleted = 0
        self.last_report: RunReport | None = None

    # the readers' side --------------------------------------------------------------------

    def raw_from(self, project: Project, today: date | None = None) -> date | None:
        """The first UTC day whose raw events the project keeps (None: every day): the later
        of its policy's horizon and the one recorded by a run."""
        policy = retention_of(project, self.settings).raw_from(today or _today())
        recorded = self._recorded.get(project.id, (_EPOCH, _EPOCH))[0]
        recorded_or_none = recorded if recorded > _EPOCH else None
        candidates = [d for d in (policy, recorded_or_none) if d is not None]
        return max(candidates) if candidates else None

    def load(self) -> None:
        """Read the recorded horizons (at start; each run reads them again)."""
        rows = self.store.query(sql.horizons().sql, {})
        self._recorded = {str(p): (_as_date(r), _as_date(u)) for p, r, u in rows}

    # the job ------------------------------------------------------------------------------

    def due(self) -> bool:
        interval = self.settings.retention_interval_seconds
        return self._last_run is None or time.monotonic() - self._last_run >= interval

    def run_if_due(self) -> RunReport | None:
        if not self.due():
            return None
        return self.run()

    def run(self, today: date | None = None) -> RunReport:
        """Bring every project's data within its retention (blocking; from a worker
        thread)."""
        with self._lock:
            self._last_run = time.monotonic()
            started = time.perf_counter()
            try:
                report = self._run(today or _today())
            except Exception:
                self.failures += 1
                raise
            report.seconds = self.last_seconds = time.perf_counter() - started
            self.runs += 1
            self.last_success_at = time.time()
            self.partitions_dropped += len(report.dropped_partitions)
            self.deletes += len(report.deletes)
            self.lake_days_deleted += len(report.lake_days)
            self.last_report = report
            if report.did_anything:
                log.info(
                    "retention: rolled up %d day(s), dropped %d partition(s), %d delete(s), "
                    "%d lake day(s) deleted in %.2f s",
                    report.rolled_up_days,
                    len(report.dropped_partitions),
                    len(report.deletes),
                    len(report.lake_days),
                    report.seconds,
                )
            return report

    def _run(self, today: date) -> RunReport:
        report = RunReport()
        known = {p.id: p for p in self.projects()}
        self.load()
        raw: dict[str, date] = {}
        rollups: dict[str, date] = {}
        for project_id in self._project_ids(known) | set(self._recorded):
            # the later of the policy's horizon and the recorded one: rows stored before the
            # recorded horizon since (an import of history) go too
            policy = retention_of(known.get(project_id), self.settings)
            recorded_raw, recorded_rollups = self._recorded.get(project_id, (_EPOCH, _EPOCH))
            raw_h = max(policy.raw_from(today) or _EPOCH, recorded_raw)
            rollup_h = max(policy.rollups_from(today) or _EPOCH, recorded_rollups)
            if raw_h > _EPOCH:
                raw[project_id] = raw_h
            if rollup_h > _EPOCH:
                rollups[project_id] = rollup_h
        if not raw and not rollups:
            return report
        for project_id, before in raw.items():  # never delete a day's sessions unrolled
            days = [_as_date(r[0]) for r in self._rows(sql.days_to_roll_up(project_id, before))]
            report.rolled_up_days += self.rollups.compute_days(project_id, days)
        everyone = self._everyone(known, today)
        self._enforce(sql.RAW, raw, everyone[0], report)
        self._enforce(sql.ROLLUPS, rollups, everyone[1], report)
        for project_id in {*raw, *rollups}:
            horizons = (raw.get(project_id, _EPOCH), rollups.get(project_id, _EPOCH))
            if self._recorded.get(project_id) == horizons:
                continue
            self._command(sql.record(project_id, *horizons))
            self._recorded[project_id] = horizons
            report.recorded[project_id] = horizons
        if self.lake is not None and raw:  # last: a lake that refuses fails the run, retried
            gone = self.lake.expire(raw)
            report.lake_days = [f"{project_id}:{day.isoformat()}" for project_id, day in gone]
        return report

    def _project_ids(self, known: dict[str, Project]) -> set[str]:
        """Every project of the metadata store, and those the store holds rows of (only read
        when the settings keep something less than forever: else those get no horizon)."""
        ids = set(known)
        if self.settings.retention_months > 0:
            ids |= {str(r[0]) for r in self._rows(sql.stored_projects())}
        return ids

    def _everyone(self, known: dict[str, Project], today: date) -> tuple[dict[str, date], ...]:
        """Every project's raw and rollup horizons by its policy and its record (a project
        not listed keeps every day: a partition it has rows in is never dropped whole)."""
        raw: dict[str, date] = {}
        rollups: dict[str, date] = {}
        for project_id, (r, u) in self._recorded.items():
            raw[project_id], rollups[project_id] = r, u
        for project_id in self._project_ids(known):
            policy = retention_of(known.get(project_id), self.settings)
            for horizons, day in (
                (raw, policy.raw_from(today)),
                (rollups, policy.rollups_from(today)),
            ):
                if day is not None:
                    horizons[project_id] = max(horizons.get(project_id, _EPOCH), day)
        return raw, rollups

    def _enforce(
        self,
        tables: Sequence[sql.Kept],
        targets: dict[str, date],
        everyone: dict[str, date],
        report: RunReport,
    ) -> None:
        """Delete each target project's rows before its horizon from ``tables``: whole month
        partitions that every project with rows in them has left behind, then the rest by
        project."""
        if not targets:
            return
        latest = max(targets.values())
        for kept in tables:
            if kept.partitioned:
                for (pid,) in self._rows(sql.old_partitions(kept, latest)):
                    month = int(str(pid))
                    month_end = date(month // 100 + month % 100 // 12, month % 100 % 12 + 1, 1)
                    holders = {str(r[0]) for r in self._rows(sql.projects_in_partition(kept, pid))}
                    if holders and all(everyone.get(p, _EPOCH) >= month_end for p in holders):
                        self._command(sql.drop_partition(kept, str(pid)))
                        report.dropped_partitions.append(f"{kept.table}:{pid}")
            for project_id, before in sorted(targets.items()):
                if int(self._rows(sql.count_before(kept, project_id, before))[0][0]):
                    self._command(sql.delete_before(kept, project_id, before))
                    report.deletes.append(f"{kept.table}:{project_id}<{before}")

    def _rows(self, stmt: Statement) -> Sequence[Sequence[Any]]:
        return self.store.query(stmt.sql, stmt.params)

    def _command(self, stmt: Statement) -> None:
        try:
            self.store.client.command(stmt.sql, parameters=stmt.params)
        finally:
            self.store.note_write()


def _today() -> date:
    return datetime.now(UTC).date()


def _as_date(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value))
