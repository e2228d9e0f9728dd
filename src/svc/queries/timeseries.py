"""Time series by hour, day, week (from Monday) or month in the range's time zone,
zero-filled. Page views, events and visitors are counted by event time; sessions, bounce rate
and duration by the session's start (clamped to the range).

Without filters, in a zone whose offset is a whole number of hours, the event figures come
from the hourly table (``event_hours``: sums and exact visitor sets per UTC hour) instead of
the events; the answers are the same."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.dates import DateRange
from svc.queries.scope import QueryScope, percent
from svc.storage.events import EventStore

#: Per interval: the bucket of a time (grouped by), and its label (formatted once a bucket).
INTERVALS = {
    "hour": "toStartOfHour({t}, {{tz:String}})",
    "day": "toDate({t}, {{tz:String}})",
    "week": "toMonday({t}, {{tz:String}})",
    "month": "toStartOfMonth({t}, {{tz:String}})",
}
LABELS = {
    "hour": "formatDateTime(bucket, '%Y-%m-%dT%H:00', {tz:String})",
    "day": "toString(bucket)",
    "week": "toString(bucket)",
    "month": "toString(bucket)",
}


def parse_interval(value: str | None, rng: DateRange, max_points: int) -> str:
    """The interval asked for (default: ``hour`` for one day, else ``day``); 400 naming
    ``interval`` when it is not one, or when it would make more than ``max_points`` points
    of the range (``SVC_MAX_SERIES_POINTS``): the message names the finest that fits."""
    interval = value or ("hour" if rng.days == 1 else "day")
    if interval not in INTERVALS:
        raise InvalidRequest("`interval` must be hour, day, week or month", field="interval")
    n = count_points(rng, interval)
    if n > max_points:
        fits = [i for i in INTERVALS if count_points(rng, i) <= max_points]
        hint = f"use `interval={fits[0]}` or a shorter range" if fits else "use a shorter range"
        raise InvalidRequest(
            f"`interval`: {interval} from {rng.first} to {rng.last} is {n:,} points, more than "
            f"the {max_points:,} a series may have; {hint}",
            field="interval",
        )
    return interval


def count_points(rng: DateRange, interval: str) -> int:
    """How many points :func:`buckets` gives (without making them)."""
    first, last = rng.first, rng.last
    if interval == "hour":
        return rng.days * 24
    if interval == "day":
        return rng.days
    if interval == "week":
        return (last - (first - timedelta(days=first.weekday()))).days // 7 + 1
    return (last.year - first.year) * 12 + last.month - first.month + 1


def buckets(scope: QueryScope, interval: str) -> list[str]:
    """Every bucket label of the range, in order."""
    first, last = scope.rng.first, scope.rng.last
    if interval == "hour":
        out = []
        day = first
        while day <= last:
            out += [f"{day.isoformat()}T{h:02d}:00" for h in range(24)]
            day += timedelta(days=1)
        return out
    if interval == "day":
        return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
    if interval == "week":
        start = first - timedelta(days=first.weekday())
        return [
            (start + timedelta(weeks=i)).isoformat() for i in range(((last - start).days // 7) + 1)
        ]
    months = []
    cursor = date(first.year, first.month, 1)
    while cursor <= last:
        months.append(cursor.isoformat())
        cursor = date(cursor.year + cursor.month // 12, cursor.month % 12 + 1, 1)
    return months


def query_timeseries(store: EventStore, scope: QueryScope, interval: str) -> dict[str, Any]:
    bucket = INTERVALS[interval]
    scope.load_edges(store)
    label = LABELS[interval]
    if not scope.filters and scope.rng.whole_hour_offsets:  # 24 rows a day, not every event
        event_sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='hour')} AS bucket, "
            "sum(pageviews) AS pageviews, sum(events) AS events, "
            "uniqExactMerge(visitors) AS visitors FROM event_hours "
            "WHERE project_id = {project:String} AND hour >= {start:DateTime64(3, 'UTC')} "
            "AND hour < {end:DateTime64(3, 'UTC')} GROUP BY bucket)"
        )
    else:  # the events that pass the filters: all of them are reported events, or not
        table = "report_events" if scope.reported_events_only() else "events"
        event_sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='ts')} AS bucket, "
            "countIf(name = 'page_view') AS pageviews, count() AS events, "
            f"uniqExact(visitor_id) AS visitors FROM {table} WHERE {scope.events_where()} "
            "GROUP BY bucket)"
        )
    start = "greatest(first_ts, {start:DateTime64(3, 'UTC')})"
    session_sql = (
        f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t=start)} AS bucket, "
        "count() AS sessions, countIf(all_pv = 1 AND all_ev = 1) AS bounces, "
        "countIf(all_pv > 0) AS with_pv, sum(dur) AS duration_ms "
        f"FROM ({scope.sessions()}) GROUP BY bucket)"
    )
    event_rows, session_rows = store.query_named_together(
        (event_sql, scope.params), (session_sql, scope.params)
    )
    by_events = {r["time"]: r for r in event_rows}
    by_sessions = {r["time"]: r for r in session_rows}
    points = []
    for label in buckets(scope, interval):
        e, s = by_events.get(label, {}), by_sessions.get(label, {})
        sessions = int(s.get("sessions", 0))
        points.append(
            {
                "time": label,
                "visitors": int(e.get("visitors", 0)),
                "sessions": sessions,
                "pageviews": int(e.get("pageviews", 0)),
                "events": int(e.get("events", 0)),
                "bounceRate": percent(int(s.get("bounces", 0)), int(s.get("with_pv", 0))),
                "avgSessionDuration": round(int(s.get("duration_ms", 0)) / 1000 / sessions, 1)
                if sessions
                else 0.0,
            }
        )
    return {"interval": interval, "timezone": scope.rng.tz, "points": points}


__all__ = ["count_points", "parse_interval", "query_timeseries"]
