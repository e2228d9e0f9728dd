"""Daily rollups of the sessions table (``storage/migrations/003_session_rollups.sql``).

A day is rolled up once it is over (its sessions have ended: one hour past its end), and again
whenever events received later change it: a late event (sent with an old ``ts``) or a session
that went on. Every computation of a day writes its rows under a new version and then names
that version in ``rollup_days``; readers take only the named version, so a day is never seen
half-written, and a computation interrupted by a crash is simply not used.

Rollups answer the reports without filters (GET /metrics) for the days wholly inside the
range; the days at its ends and the days not rolled up yet are read from the sessions table.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta

from svc.storage.events import EventStore

log = logging.getLogger(__name__)


def rollup_dimensions() -> dict[str, str]:
    """Every rolled-up dimension and its value on a sessions-table row ('' holds the day's
    totals): the session dimensions of the query API."""
    from svc.queries.dimensions import DIMENSIONS

    dims = {"": "''"}
    dims.update((d.name, d.session_column()) for d in DIMENSIONS.values() if d.level == "session")
    return dims


#: A day is rolled up this long after its end (sessions that began on it have ended).
SETTLE = timedelta(hours=1)
#: Late events are found among the events received since the last check, less this margin
#: (events still in the spool when the last check ran).
RECHECK_MARGIN = timedelta(minutes=10)
#: At start, the late events of this long ago are looked for (ts may be 7 days in the past).
FIRST_CHECK = timedelta(days=8)


def _day_sql() -> str:
    pairs = ", ".join(f"('{name}', toString({expr}))" for name, expr in rollup_dimensions().items())
    return f"""
INSERT INTO session_rollups
SELECT project_id, dv.1 AS dimension, session_day, dv.2 AS value,
    count(), sum(pageviews), sum(events), countIf(pageviews = 1 AND events = 1),
    countIf(pageviews > 0), sum(dateDiff('millisecond', first_ts, last_ts)),
    uniqExact(visitor_id), {{version:UInt64}}
FROM sessions FINAL
ARRAY JOIN [{pairs}] AS dv
WHERE project_id = {{project:String}} AND session_day = {{day:Date}}
GROUP BY project_id, session_day, dimension, value
"""


class Rollups:
    """Keeps ``session_rollups`` current; :meth:`refresh` is called now and then (the
    runtime's housekeeping), from a worker thread."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._sql = _day_sql()
        self._checked_since: datetime | None = None
        self.days_computed = 0  # since start, for /health

    def refresh(self, now: datetime | None = None) -> int:
        """Roll up the days that are over and not rolled up yet, and those that events
        received since the last call changed. Returns how many days were computed."""
        now = now or datetime.now(UTC)
        last_day = (now - SETTLE).date() - timedelta(days=1)
        since = self._checked_since or (now - FIRST_CHECK)
        days = self._missing(last_day) | self._changed(since, last_day)
        version = int(now.timestamp() * 1000)
        for project_id, day in sorted(days):
            self.compute(project_id, day, version)
        return len(days)

    def compute(self, project_id: str, day: date, version: int) -> None:
        """(Re)compute one day of one project under ``version``, then make it current."""
        params = {"project": project_id, "day": day, "version": version}
        self.store.client.command(self._sql, parameters=params)
        self.store.client.command(
            "INSERT INTO rollup_days (project_id, session_day, version) "
            "VALUES ({project:String}, {day:Date}, {version:UInt64})",
            parameters=params,
        )
        self.days_computed += 1

    def forget(self, project_id: str) -> None:
        """Drop a project's rollups (its sessions were deleted or rebuilt)."""
        for table in ("rollup_days", "session_rollups"):
            self.store.client.command(
                f"DELETE FROM {table} WHERE project_id = {{project:String}}",
                parameters={"project": project_id},
            )

    def _missing(self, last_day: date) -> set[tuple[str, date]]:
        rows = self.store.query(
            "SELECT DISTINCT project_id, session_day FROM sessions "
            "WHERE session_day <= {last:Date} AND (project_id, session_day) NOT IN "
            "(SELECT project_id, session_day FROM rollup_days)",
            {"last": last_day},
        )
        return {(str(p), _as_date(d)) for p, d in rows}

    def _changed(self, since: datetime, last_day: date) -> set[tuple[str, date]]:
        """Rolled-up days with events received since ``since``; moves the mark on."""
        rows = self.store.query(
            "SELECT project_id, toDate(session_start) AS day, max(received_at) FROM events "
            "WHERE received_at >= {since:DateTime64(3, 'UTC')} GROUP BY project_id, day",
            {"since": since.replace(tzinfo=None)},
        )
        latest = max((_as_utc(r[2]) for r in rows), default=None)
        if latest is not None:
            self._checked_since = max(since, latest - RECHECK_MARGIN)
        elif self._checked_since is None:
            self._checked_since = since
        return {(str(p), _as_date(d)) for p, d, _ in rows if _as_date(d) <= last_day}


def _as_date(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def _as_utc(value: object) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)
