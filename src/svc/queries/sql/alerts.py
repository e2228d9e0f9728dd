"""The statement of traffic alerts (svc.mail.alerts): visitors of given hours, in total or by
one of a few columns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from svc.queries.sql.statement import Statement

#: What an alert breaks the change down by: a name and its column of ``events``.
HOURLY_COLUMNS = {"total": "''", "source": "source", "page": "path", "country": "country"}


def hourly_visitors(project_id: str, hours: list[datetime], by: str) -> Statement:
    """Visitors in each of ``hours`` (aware starts of hour-long spans, any offset; at least
    one), by ``by`` (a key of :data:`HOURLY_COLUMNS`): rows (slot, value, visitors), ``slot``
    the 1-based index of the hour in ``hours`` (hours without events have no row)."""
    column = HOURLY_COLUMNS[by]
    starts = [int(h.timestamp()) for h in hours]
    first = min(hours).astimezone(UTC).replace(tzinfo=None)
    last = (max(hours) + timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    sql = (
        "SELECT arrayFirstIndex(s -> s <= toInt64(toUnixTimestamp(ts)) "
        "AND toInt64(toUnixTimestamp(ts)) < s + 3600, {starts:Array(Int64)}) AS slot, "
        f"{column} AS value, uniqExact(visitor_id) AS visitors "
        "FROM events WHERE project_id = {project:String} "
        "AND ts >= {start:DateTime64(3, 'UTC')} AND ts < {end:DateTime64(3, 'UTC')} "
        "AND slot > 0 GROUP BY slot, value"
    )
    return Statement(sql, {"project": project_id, "starts": starts, "start": first, "end": last})
