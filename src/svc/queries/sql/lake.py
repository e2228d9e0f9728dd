"""The statements of the raw-event lake (:mod:`svc.lake`): which (project, UTC day) pairs
have events, and one day's events in the export's columns, in a total order.

Every statement takes ``{through}``: only events *received* before it count (the lake
writer's watermark: every event received before it is in the store). Two writes of a day
with the same events then read the same rows, whatever arrived meanwhile, and an event
received at or after a day's watermark is what makes the day stale.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from svc.queries.sql import EXPORT_COLUMNS
from svc.queries.sql.statement import Statement

#: A total order of the export's rows: two rows that tie on every key are equal in every
#: column the file holds, so the file's bytes do not depend on the store's parts or merges.
LAKE_ORDER = (
    "ts, received_at, event_id, session_id, visitor_id, name, url, referrer, hostname, path, "
    "properties, browser, browser_version, os, os_version, device, screen_width, country, "
    "region, city, source, channel, referrer_host, utm_source, utm_medium, utm_campaign, "
    "utm_content, utm_term, click_id"
)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day)


def lake_days(
    through: datetime,
    last_day: date,
    *,
    since: datetime | None = None,
    new_after: date | None = None,
) -> Statement:
    """(project, UTC day, events, newest receipt in ms) of the days up to ``last_day`` with
    events received before ``through``; with ``since``, only the days with an event received
    at or after it, or (``new_after``) a day after ``new_after``."""
    params: dict[str, object] = {"through": through, "end": _midnight(last_day + timedelta(1))}
    where = "ts < {end:DateTime64(3, 'UTC')} AND received_at < {through:DateTime64(3, 'UTC')}"
    if since is not None:
        params["since"] = since
        extra = "received_at >= {since:DateTime64(3, 'UTC')}"
        if new_after is not None:
            params["after"] = _midnight(new_after + timedelta(1))
            extra += " OR ts >= {after:DateTime64(3, 'UTC')}"
        where += f" AND ({extra})"
    sql = (
        "SELECT project_id, toDate(ts) AS day, count(), "
        "toUnixTimestamp64Milli(max(received_at)) FROM events "
        f"WHERE {where} GROUP BY project_id, day ORDER BY project_id, day"
    )
    return Statement(sql, params)


def _day_params(project_id: str, day: date, through: datetime) -> dict[str, object]:
    return {
        "project": project_id,
        "start": _midnight(day),
        "end": _midnight(day + timedelta(1)),
        "through": through,
    }


_DAY_WHERE = (
    "project_id = {project:String} AND ts >= {start:DateTime64(3, 'UTC')} "
    "AND ts < {end:DateTime64(3, 'UTC')} AND received_at < {through:DateTime64(3, 'UTC')}"
)


def lake_day_summary(project_id: str, day: date, through: datetime) -> Statement:
    """A day's events received before ``through``: count, first and last ``ts`` and newest
    receipt (ms)."""
    sql = (
        "SELECT count(), toUnixTimestamp64Milli(min(ts)), toUnixTimestamp64Milli(max(ts)), "
        f"toUnixTimestamp64Milli(max(received_at)) FROM events WHERE {_DAY_WHERE}"
    )
    return Statement(sql, _day_params(project_id, day, through))


def lake_day_events(project_id: str, day: date, through: datetime) -> Statement:
    """A day's events received before ``through``, in the export's columns, in
    :data:`LAKE_ORDER` (write it with :func:`svc.queries.sql.into_parquet_file`)."""
    sql = f"SELECT {EXPORT_COLUMNS} FROM events WHERE {_DAY_WHERE} ORDER BY {LAKE_ORDER}"
    return Statement(sql, _day_params(project_id, day, through))


def lake_day_projects(day: date, through: datetime) -> Statement:
    """The projects with events on a UTC day received before ``through``, sorted."""
    sql = (
        "SELECT DISTINCT project_id FROM events WHERE ts >= {start:DateTime64(3, 'UTC')} "
        "AND ts < {end:DateTime64(3, 'UTC')} AND received_at < {through:DateTime64(3, 'UTC')} "
        "ORDER BY project_id"
    )
    params = {"start": _midnight(day), "end": _midnight(day + timedelta(1)), "through": through}
    return Statement(sql, params)
