"""Snapshots of the days not rolled up yet (``storage/migrations/016_day_snapshots.sql``).

A day is rolled up an hour after its end (svc.storage.rollups); until then a report read it
from the sessions table, whose rows of today are many small parts merged at read time
(FINAL). Every :attr:`Settings.snapshot_interval_seconds`, when events changed it, such a
day's sessions are copied as they stand (``snapshot_sessions``) with their sums
(``snapshot_sums``) under a version: a time through which every event received was in the
store (the runtime's watermark; without it, now less :data:`~svc.storage.rollups.
RECHECK_MARGIN`). A session that no event received at or after the version reached is the
same in the snapshot as in the sessions table, so a report takes the sums and corrects them
with the others alone (svc.queries.sql.snapshots).

The copy is named in ``snapshot_days`` once written; readers take only named versions. It
takes no write lock (see :meth:`Snapshots.take`). A version's partitions are dropped once
no reader can still be using it: when every day it served has had a newer snapshot or its
rollup for :data:`~svc.storage.rollups.KEEP_OLD_VERSIONS`, or, never named (a crash), when
it is that old itself. Rebuilding a project's sessions (an import) forgets its snapshots
(svc.storage.events.EventStore.rebuild_sessions).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from typing import Any

from svc.storage.events import EventStore
from svc.storage.rollups import KEEP_OLD_VERSIONS, RECHECK_MARGIN, SETTLE
from svc.timeutil import as_date

#: The tables of a snapshot, each partitioned by version.
SNAPSHOT_TABLES = ("snapshot_sessions", "snapshot_sums", "snapshot_days")

#: The days not rolled up yet (from ``{first}``) with their sessions' latest receipt (ms) and
#: current snapshot's version (0: none). An event of a session of a day is on or after it.
_CANDIDATES_SQL = """
SELECT e.project_id, e.day, s.version, toInt64(toUnixTimestamp64Milli(e.latest))
FROM (
    SELECT project_id, toDate(session_start) AS day, max(received_at) AS latest FROM events
    WHERE toDate(ts) >= {first:Date} AND toDate(session_start) >= {first:Date}
    GROUP BY project_id, day
) AS e
LEFT JOIN (
    SELECT project_id, session_day, max(version) AS version FROM snapshot_days
    WHERE session_day >= {first:Date} GROUP BY project_id, session_day
) AS s ON s.project_id = e.project_id AND s.session_day = e.day
"""

_COPY_SQL = """
INSERT INTO snapshot_sessions
SELECT project_id, session_day, {version:UInt64}, session_id, visitor_id, pageviews, events,
    dateDiff('millisecond', first_ts, last_ts), source
FROM sessions FINAL
WHERE project_id = {project:String} AND session_day = {day:Date}
"""

#: The sums as the rollups hold them (svc.storage.rollups): the totals, and per source.
_SUMS_SQL = """
INSERT INTO snapshot_sums
SELECT project_id, session_day, version, dv.1 AS dimension, dv.2 AS value,
    count(), sum(pageviews), sum(events), countIf(pageviews = 1 AND events = 1),
    countIf(pageviews > 0), sum(duration_ms), uniqExact(visitor_id)
FROM snapshot_sessions ARRAY JOIN [('', ''), ('source', toString(source))] AS dv
WHERE project_id = {project:String} AND session_day = {day:Date} AND version = {version:UInt64}
GROUP BY project_id, session_day, version, dimension, value
"""

_NAME_SQL = (
    "INSERT INTO snapshot_days (project_id, session_day, version) "
    "VALUES ({project:String}, {day:Date}, {version:UInt64})"
)


class Snapshots:
    """Keeps the snapshots of the days not rolled up yet current; :meth:`refresh` runs after
    each pass of the rollups (svc.runtime)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.interval_ms = int(store.settings.snapshot_interval_seconds * 1000)
        self._last_version: int | None = None
        self.taken = 0  # since start
        #: whether the last :meth:`refresh` left a changed day for a later one (too recent)
        self.deferred = False

    def refresh(self, now: datetime | None = None, loaded_through_ms: int | None = None) -> int:
        """Snapshot the days not rolled up yet whose events changed since their snapshot (or
        that have none), but those snapshot less than the interval ago; then drop the
        versions no reader uses. How many days were snapshot."""
        if self.interval_ms <= 0:
            return 0
        now = now or datetime.now(UTC)
        now_ms = int(now.timestamp() * 1000)
        if loaded_through_ms is None:
            loaded_through_ms = now_ms - int(RECHECK_MARGIN.total_seconds() * 1000)
        first = (now - SETTLE).date()  # the rollups take the days before this one
        due = []
        self.deferred = False
        for project, day, version, latest_ms in self._candidates(first):
            changed = version == 0 or latest_ms >= version
            if changed and (version == 0 or version <= now_ms - self.interval_ms):
                due.append((project, day))
            elif changed:  # snapshot less than the interval ago: a later pass takes it
                self.deferred = True
        if due:
            version = self._next_version(loaded_through_ms)
            for project, day in sorted(due):
                self.take(project, day, version)
        self.drop_unused(now_ms)
        return len(due)

    def _candidates(self, first: date) -> list[tuple[str, date, int, int]]:
        rows = self.store.query(_CANDIDATES_SQL, {"first": first})
        return [(str(p), as_date(d), int(v or 0), int(ms)) for p, d, v, ms in rows]

    def _next_version(self, watermark: int) -> int:
        if self._last_version is None:  # also past a snapshot cut short: its rows stay
            self._last_version = max(self._stored_versions(), default=0)
        version = max(watermark, self._last_version + 1)  # versions only grow
        self._last_version = version
        return version

    def take(self, project_id: str, day: date, version: int) -> None:
        """Copy one day's sessions and their sums under ``version``, then name it. The
        version is new for that day (:meth:`refresh` takes one greater than any stored)."""
        params: dict[str, Any] = {"project": project_id, "day": day, "version": version}
        # Without the store's write lock (the loader does not wait): every event received
        # before the version was in the store when it was read, and a batch inserted while
        # the copy runs holds events received at or after it, whose sessions the readers
        # take from the sessions table (the rollups, which have no such correction, lock).
        self.store.client.command(_COPY_SQL, parameters=params)
        self.store.client.command(_SUMS_SQL, parameters=params)
        self.store.client.command(_NAME_SQL, parameters=params)
        self.taken += 1

    def drop_unused(self, now_ms: int) -> list[int]:
        """Drop the partitions of the versions no reader can be using (see the module
        docstring); the versions dropped."""
        keep_ms = int(KEEP_OLD_VERSIONS.total_seconds() * 1000)
        stored = self._stored_versions()
        if not stored:
            return []
        named = self.store.query("SELECT project_id, session_day, version FROM snapshot_days", {})
        rolled = {
            (str(p), as_date(d)): int(v)
            for p, d, v in self.store.query(
                "SELECT project_id, session_day, max(version) FROM rollup_days "
                "WHERE (project_id, session_day) IN "
                "(SELECT project_id, session_day FROM snapshot_days) "
                "GROUP BY project_id, session_day",
                {},
            )
        }
        current: dict[tuple[str, date], int] = {}
        served: dict[int, list[tuple[str, date]]] = defaultdict(list)
        for p, d, v in named:
            key = (str(p), as_date(d))
            current[key] = max(current.get(key, 0), int(v))
            served[int(v)].append(key)
        dropped = []
        for version in sorted(stored):
            # when each day it served stopped being served by it (0: still is)
            ends = []
            for key in served.get(version, []):
                if current[key] > version:
                    ends.append(current[key])
                elif key in rolled:
                    ends.append(rolled[key])
                else:
                    ends.append(0)
            if not ends:  # never named: a snapshot cut short
                ends = [version]
            if all(0 < end <= now_ms - keep_ms for end in ends):
                for table in SNAPSHOT_TABLES:
                    self.store.client.command(f"ALTER TABLE {table} DROP PARTITION {version:d}")
                dropped.append(version)
        return dropped

    def _stored_versions(self) -> set[int]:
        rows = self.store.query(
            "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() "
            "AND table IN {tables:Array(String)} AND active",
            {"tables": list(SNAPSHOT_TABLES)},
        )
        return {int(r[0]) for r in rows}
