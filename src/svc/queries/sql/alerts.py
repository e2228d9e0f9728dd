"""The statement of traffic alerts (svc.mail.alerts): visitors of one hour of the day over a run
of days, in total or by one of a few columns."""

from __future__ import annotations

from datetime import datetime

from svc.queries.sql.statement import Statement

#: What an alert breaks the change down by: a name and its column of ``events``.
HOURLY_COLUMNS = {"total": "''", "source": "source", "page": "path", "country": "country"}


def hourly_visitors(project_id: str, start: datetime, end: datetime, by: str) -> Statement:
    """Visitors per UTC hour starting at the hour of ``start`` of the day, from ``start`` to
    ``end`` (naive UTC, whole hours), by ``by`` (a key of :data:`HOURLY_COLUMNS`): rows
    (hour, value, visitors)."""
    column = HOURLY_COLUMNS[by]
    sql = (
        f"SELECT toStartOfHour(ts) AS hour, {column} AS value, uniqExact(visitor_id) AS visitors "
        "FROM events WHERE project_id = {project:String} "
        "AND ts >= {start:DateTime64(3, 'UTC')} AND ts < {end:DateTime64(3, 'UTC')} "
        "AND toHour(ts) = {hour:UInt8} GROUP BY hour, value"
    )
    return Statement(sql, {"project": project_id, "start": start, "end": end, "hour": start.hour})
