"""Time series by hour, day, week (from Monday) or month in the range's time zone,
zero-filled. Page views, events and visitors are counted by event time; sessions, bounce rate
and duration by the session's start (clamped to the range).

Without filters, in a zone whose offset is a whole number of hours, the event figures come
from the hourly table (``event_hours``: sums and exact visitor sets per UTC hour) instead of
the events; the answers are the same.

The days before the project's raw events (retention: svc.retention) hold only rollups: their
page views, events and visitors come from the hourly table as above, and, without filters and
by day, week or month, their sessions, bounces and duration from the daily rollups
(``session_rollups``' totals), a UTC day's sessions whole in the bucket of its date (in
another zone, the day of the range that shares most of it, as GET /metrics reads it). An
hourly series has no sessions on those days: the rollups hold whole days."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.dates import DateRange
from svc.queries.plan import Facts, Needs, Plan, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import reports
from svc.storage.events import EventStore

#: The intervals of a series (svc.queries.sql.reports.INTERVALS buckets each).
INTERVALS = tuple(reports.INTERVALS)


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


def buckets(rng: DateRange, interval: str) -> list[str]:
    """Every bucket label of the range, in order."""
    first, last = rng.first, rng.last
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


def query_timeseries(store: EventStore, query: Query, interval: str) -> dict[str, Any]:
    p = plan(query)
    runner = Runner(store)
    facts = before_raw(p, runner.facts(p, Needs(edges=True, rollups=rolls_up(p, interval))))
    statements = [
        reports.series_events(p, facts, interval),
        reports.series_sessions(p, facts, interval),
    ]
    if facts.rolled:
        statements.append(reports.series_rolled_sessions(p, facts, interval))
    event_rows, *session_answers = runner.together(*statements)
    by_events = {r["time"]: r for r in event_rows}
    by_sessions: dict[str, dict[str, int]] = {}
    for rows in session_answers:  # the session rows' days, then the rolled-up days'
        for r in rows:
            sums = by_sessions.setdefault(r["time"], {})
            for name in ("sessions", "bounces", "with_pv", "duration_ms"):
                sums[name] = sums.get(name, 0) + int(r[name])
    points = []
    for label in buckets(p.rng, interval):
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
    return {"interval": interval, "timezone": p.rng.tz, "points": points}


def rolls_up(p: Plan, interval: str) -> bool:
    """Whether the series reads the sessions of the days before the project's raw events
    from the daily rollups: without filters (the rollups hold every session), by day, week
    or month (they hold whole UTC days, not hours), when the range reaches such a day."""
    return p.may_roll_up() and interval in reports.ROLLED_DAY_BUCKETS and bool(p.days_before_raw)


def before_raw(p: Plan, facts: Facts) -> Facts:
    """``facts`` with only the rolled-up days before the raw events (the others, inside the
    range of raw events, are read from the session rows, bucketed by each session's start in
    the range's time zone, as they always were)."""
    old = p.days_before_raw
    if not facts.rolled or old is None:
        return replace(facts, rolled=())
    return replace(facts, rolled=tuple((d, v) for d, v in facts.rolled if d <= old[1]))


__all__ = ["count_points", "parse_interval", "query_timeseries"]
