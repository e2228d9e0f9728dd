"""Writing the tables derived from the events anew from the stored events: the sessions and
what is keyed as they are (their pages, the long sessions, those that cross into the next
day), the event hours, the report events. For events that did not go through the
materialized views (stored before a table existed, or imported), and for the migrations that
make such a table (svc.storage.migrate)."""

from __future__ import annotations

from typing import Any

from svc.schema.measurements import COUNTED_SQL
from svc.storage.tables import (
    EVENT_HOURS_TABLE,
    EVENTS_TABLE,
    LONG_SESSIONS_TABLE,
    NEXT_DAY_SESSIONS_TABLE,
    REPORT_EVENTS_TABLE,
    REPORT_EVENTS_WHERE,
    SESSION_PAGES_TABLE,
    SESSIONS_TABLE,
)
from svc.storage.writes import Writer, counted_write

#: The sessions table's columns taken from the session's first event, after entry_page and
#: exit (storage/migrations/002_sessions.sql).
_SESSION_ENTRY_COLUMNS = (
    "hostname",
    "source",
    "channel",
    "referrer_host",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "country",
    "region",
    "city",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
)


class Rebuilds(Writer):
    """Each method empties a derived table (of one project or all) and fills it from the
    events, on the main client; each counts as a write."""

    @counted_write
    def rebuild_sessions(self, project_id: str | None = None) -> None:
        """Write the sessions table anew from the stored events, of one project or all.

        For events that did not go through the materialized view with a correct
        ``session_start`` (stored before the sessions table existed, or imported): a session
        is keyed by the day of its first event here. Not for use while that project ingests.
        Its (session, page) rows, its long sessions and those that cross into the next day are
        rebuilt too.
        """
        client = self.handles.client
        self._clear("snapshot_days", project_id)  # snapshots of the old rows: never read again
        where, params = self._clear(SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"  # page measurements are no session's events
        entry = ", ".join(f"argMin({c}, ts)" for c in _SESSION_ENTRY_COLUMNS)
        client.command(
            f"INSERT INTO {SESSIONS_TABLE} SELECT project_id, toDate(min(ts)), session_id, "
            "any(visitor_id), min(ts), max(ts), countIf(name = 'page_view'), count(), "
            f"argMin(path, ts), max((ts, path)), {entry} "
            f"FROM {EVENTS_TABLE} WHERE {where} GROUP BY project_id, session_id",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )
        self.rebuild_session_pages(project_id, day="toDate(min(ts))")
        # keyed as the sessions above, by the day of their first event
        where, params = self._clear(LONG_SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        client.command(
            f"INSERT INTO {LONG_SESSIONS_TABLE} SELECT project_id, toDate(min(ts)) AS day, "
            f"session_id, min(ts), max(ts) FROM {EVENTS_TABLE} WHERE {where} "
            "GROUP BY project_id, session_id HAVING toDate(max(ts)) > day + 1",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )
        self.rebuild_next_day_sessions(project_id)

    @counted_write
    def rebuild_next_day_sessions(self, project_id: str | None = None) -> None:
        """Write ``next_day_sessions`` anew from the stored events, of one project or all,
        each session keyed by the day of its first event (as :meth:`rebuild_sessions` keys
        it): its last event of the day after, if it has one, and its page views and events
        then (without deduplication: the blocks may equal those of the rows just deleted)."""
        client = self.handles.client
        where, params = self._clear(NEXT_DAY_SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        by_day = (  # per session and day of its events: the last, the page views, the events
            "SELECT project_id, session_id, toDate(ts) AS d, max(ts) AS last, "
            f"countIf(name = 'page_view') AS pv, count() AS ev FROM {EVENTS_TABLE} "
            f"WHERE {where} GROUP BY project_id, session_id, d"
        )
        client.command(
            f"INSERT INTO {NEXT_DAY_SESSIONS_TABLE} "
            "(project_id, session_day, session_id, last_ts, pageviews, events) "
            "SELECT project_id, day, session_id, next[1].2, next[1].3, next[1].4 "
            "FROM (SELECT project_id, session_id, groupArray((d, last, pv, ev)) AS days, "
            "arrayMin(days.1) AS day, arrayFilter(x -> x.1 = day + 1, days) AS next "
            f"FROM ({by_day}) GROUP BY project_id, session_id) WHERE notEmpty(next)",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000, "insert_deduplicate": 0},
        )

    @counted_write
    def rebuild_session_pages(self, project_id: str | None = None, *, day: str) -> None:
        """Write the ``session_pages`` table anew from the stored events, of one project or
        all, each session keyed by ``day`` (an aggregate over its events: the expression the
        sessions table was keyed by)."""
        where, params = self._clear(SESSION_PAGES_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        self.handles.client.command(
            f"INSERT INTO {SESSION_PAGES_TABLE} SELECT project_id, day, session_id, "
            "page.1, page.2, page.3 FROM (SELECT project_id, session_id, "
            f"{day} AS day, sumMap([path], [toUInt64(name = 'page_view')], [toUInt64(1)]) AS m "
            f"FROM {EVENTS_TABLE} WHERE {where} GROUP BY project_id, session_id) "
            "ARRAY JOIN arrayZip(m.1, m.2, m.3) AS page",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )

    @counted_write
    def rebuild_event_hours(self) -> None:
        """Write the ``event_hours`` table anew from the stored events (the materialized view
        keeps it from then on, imports included)."""
        client = self.handles.client
        client.command(f"TRUNCATE TABLE {EVENT_HOURS_TABLE}")
        client.command(
            f"INSERT INTO {EVENT_HOURS_TABLE} SELECT project_id, toStartOfHour(ts) AS hour, "
            "countIf(name = 'page_view'), count(), uniqExactState(visitor_id) "
            f"FROM {EVENTS_TABLE} WHERE {COUNTED_SQL} GROUP BY project_id, hour",
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )

    @counted_write
    def rebuild_report_events(self) -> None:
        """Copy the stored events that ``report_events`` holds into it anew."""
        client = self.handles.client
        client.command(f"TRUNCATE TABLE {REPORT_EVENTS_TABLE}")
        client.command(
            f"INSERT INTO {REPORT_EVENTS_TABLE} SELECT * FROM {EVENTS_TABLE} "
            f"WHERE {REPORT_EVENTS_WHERE}"
        )

    def _clear(self, table: str, project_id: str | None) -> tuple[str, dict[str, Any]]:
        """Empty ``table`` of one project or all; the WHERE over events of the same scope."""
        client = self.handles.client
        if project_id is None:
            client.command(f"TRUNCATE TABLE {table}")
            return "1", {}
        params = {"project": project_id}
        client.command(
            f"DELETE FROM {table} WHERE project_id = {{project:String}}", parameters=params
        )
        return "project_id = {project:String}", params
