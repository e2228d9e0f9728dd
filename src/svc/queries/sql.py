"""Every SQL statement of the query side is built here, with bound parameters only.

Values never enter SQL text: they are passed as ClickHouse ``{name:Type}`` parameters. Only
identifiers chosen from fixed tables in this module are written into the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries.dates import DateRange
from svc.queries.scope import QueryScope


@dataclass
class Statement:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)


def usage_by_project_month(since_month_start: Any) -> Statement:
    sql = (
        "SELECT project_id, formatDateTime(received_at, '%Y-%m', 'UTC') AS month, count() "
        "FROM events WHERE received_at >= {since:DateTime64(3, 'UTC')} "
        "GROUP BY project_id, month"
    )
    return Statement(sql, {"since": since_month_start})


def recent_sessions(since: Any) -> Statement:
    """Sessions with events received since ``since``: project, visitor, session id, and its
    start, first and last event times (ms)."""
    sql = (
        "SELECT project_id, any(visitor_id), session_id, "
        "toUnixTimestamp64Milli(min(session_start)), "
        "toUnixTimestamp64Milli(min(ts)), toUnixTimestamp64Milli(max(ts)) "
        "FROM events WHERE received_at >= {since:DateTime64(3, 'UTC')} "
        "GROUP BY project_id, session_id"
    )
    return Statement(sql, {"since": since})


def recent_event_ids(since: Any) -> Statement:
    sql = (
        "SELECT project_id, event_id, toUnixTimestamp64Milli(min(received_at)) "
        "FROM events WHERE received_at >= {since:DateTime64(3, 'UTC')} AND event_id != '' "
        "GROUP BY project_id, event_id"
    )
    return Statement(sql, {"since": since})


EXPORT_COLUMNS = (
    "toUnixTimestamp64Milli(ts) AS ts_ms, name AS event, url, hostname, path, referrer, "
    "referrer_host, source, channel, utm_source, utm_medium, utm_campaign, utm_content, "
    "utm_term, click_id, toString(session_id) AS session_id, toString(visitor_id) AS "
    "visitor_id, event_id, properties, browser, browser_version, os, os_version, device, "
    "screen_width, country, region, city, toUnixTimestamp64Milli(received_at) AS received_ms"
)


def export_events(project_id: str, rng: DateRange) -> Statement:
    """Every event of a project in a range, oldest first, in the documented export columns."""
    scope = QueryScope(project_id, rng)
    sql = f"SELECT {EXPORT_COLUMNS} FROM events WHERE {scope.range_where} ORDER BY ts, event_id"
    return Statement(sql, scope.params)
