"""Time series by hour, day, week (from Monday) or month in the range's time zone,
zero-filled. Page views, events and visitors are counted by event time; sessions, bounce rate
and duration by the session's start (clamped to the range).

Where each figure comes from:

- Page views and events: without filters, in a zone whose offset is a whole number of hours,
  sums over the hourly table (``event_hours``: per UTC hour); else from the events.
- Without filters, in a range of UTC days (its zone's offset is 0 at each of its midnights:
  UTC, or London in winter), the figures are added up per UTC day (:func:`by_utc_days`):
  by day, week or month, the visitors from the daily rollups' distinct visitor ids
  (svc.queries.series_visitors: exact, no visitor set of the whole range is merged), but in
  a bucket with a day not rolled up (today) or one a long session's events reach, merged from
  the hourly table's exact visitor sets (those days alone where it can); by the hour, each
  hour's visitor set merged. The sessions, bounces and duration of every rolled-up day of
  the range come from its rollups (a UTC day's sessions begin on that day: the same bucket;
  by the hour, the rollups' rows per hour of start), but a day with a session that has an
  event before its day (it begins then), and those of the other days from the session rows.
  Another zone's days are not UTC days, which the rollups hold, so it is read as follows.
- Otherwise the visitors are merged from the hourly table (zones of whole hours, no filters)
  or counted from the events, and the sessions come from the session rows; but without
  filters, by day, week or month in a zone of whole hours (Berlin, New York: each UTC hour
  is in one bucket), those of the rolled-up UTC days wholly inside the range come from the
  rollups' ``start_hour`` rows, each hour's sessions in the bucket of that hour
  (:func:`by_start_hours`); and under filters on the page and session dimensions, by day,
  week or month, the rolled-up days that lie in one bucket come from ``rolled_sessions``
  (svc.queries.series_rolled), the others and their events as above.

The days before the project's raw events (retention: svc.retention) hold only rollups: their
page views, events and visitors come from the hourly table as above (their long sessions are
gone, so their visitors are merged), and, without filters and by day, week or month, their
sessions, bounces and duration from the daily rollups (``session_rollups``' totals), a UTC
day's sessions whole in the bucket of its date (in another zone, the day of the range that
shares most of it, as GET /metrics reads it). An hourly series has no sessions on those days:
the rollups hold whole days.

The rollups are as fresh as their last pass (a minute by default), as GET /metrics reads
them: an event received since may show in the page views of a rolled-up day before its
visitors and sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, time, timedelta
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.dates import DateRange
from svc.queries.plan import Facts, Needs, Plan, Query, plan
from svc.queries.run import Runner
from svc.queries.series_rolled import rolled_series, takes_rolled_sessions
from svc.queries.series_visitors import BucketVisitors, LongSpan, RolledDay, bucket_visitors
from svc.queries.shape import percent
from svc.queries.sql import series as series_sql
from svc.storage.events import EventStore

#: The intervals of a series (svc.queries.sql.series.INTERVALS buckets each).
INTERVALS = tuple(series_sql.INTERVALS)


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


def bucket_spans(rng: DateRange, interval: str) -> list[tuple[str, date, date]]:
    """Every bucket of the range (``interval``: day, week or month) with its label and its
    first and last day in the range."""
    out = []
    for label in buckets(rng, interval):
        first = date.fromisoformat(label)
        if interval == "day":
            last = first
        elif interval == "week":
            last = first + timedelta(days=6)
        else:
            last = date(first.year + first.month // 12, first.month % 12 + 1, 1) - timedelta(1)
        out.append((label, max(first, rng.first), min(last, rng.last)))
    return out


def by_utc_days(p: Plan, interval: str) -> bool:
    """Whether the series adds up its figures per UTC day (see the module docstring): without
    filters, in a range whose days are UTC days."""
    if p.filters:
        return False
    zone = p.rng.zone
    return all(
        datetime.combine(p.rng.first + timedelta(days=i), time(0), zone).utcoffset() == timedelta(0)
        for i in range(p.rng.days + 1)
    )


def query_timeseries(
    store: EventStore, query: Query, interval: str, *, sums: bool = False
) -> dict[str, Any]:
    """The zero-filled series of ``query`` by ``interval`` (GET /metrics/timeseries); with
    ``sums``, each point also has the sums its shares and averages are made of: ``bounces``,
    ``withPageview`` (sessions with a page view) and ``durationMs`` (what series of several
    projects add up: svc.queries.overview)."""
    p = plan(query)
    runner = Runner(store)
    if by_utc_days(p, interval):
        return _from_utc_days(runner, p, interval, sums)
    if takes_rolled_sessions(p, interval):  # under filters, rolled days from rolled_sessions
        read = rolled_series(runner, p, interval)
        if read is not None:
            return _series(p, interval, read[0], read[1], with_sums=sums)
    hours = by_start_hours(p, interval)
    facts = runner.facts(p, Needs(edges=True, rollups=hours or rolls_up(p, interval)))
    old = before_raw(p, facts)  # the days before the raw events: whole, by their date
    by_hours = _start_hour_days(runner, p, facts, old) if hours else ()
    facts = replace(facts, rolled=old.rolled + by_hours)  # the session rows leave them out
    statements = [
        series_sql.series_events(p, facts, interval),
        series_sql.series_sessions(p, facts, interval),
    ]
    if old.rolled:
        statements.append(series_sql.series_rolled_sessions(p, old, interval))
    if by_hours:
        rolled = replace(facts, rolled=by_hours)
        statements.append(series_sql.series_rolled_start_hours(p, rolled, interval))
    event_rows, *session_answers = runner.together(*statements)
    return _series(p, interval, event_rows, session_answers, with_sums=sums)


def by_start_hours(p: Plan, interval: str) -> bool:
    """Whether the sessions of the rolled-up days are read from the rollups' ``start_hour``
    rows, by day, week or month in another zone than UTC's days: without filters, in a zone
    whose offset is a whole number of hours all through the range (each UTC hour is in one
    bucket). Over 30 days of 100M events, the session rows of every day grouped by their
    start in the zone were most of the series' time."""
    return not p.filters and interval in series_sql.ROLLED_DAY_BUCKETS and p.rng.whole_hour_offsets


def _start_hour_days(
    runner: Runner, p: Plan, facts: Facts, old: Facts
) -> tuple[tuple[date, int], ...]:
    """The rolled-up days of ``facts`` (wholly inside the range, no long session that
    crosses an end) that are not before the raw events (``old``) and have their
    ``start_hour`` rows."""
    days = [d for d in facts.rolled if d not in old.rolled]
    if not days:
        return ()
    have = {_day(r[0]) for r in runner.remembered_rows(series_sql.start_hour_days(p, days))}
    return tuple(d for d in days if d[0] in have)


def _from_utc_days(runner: Runner, p: Plan, interval: str, sums: bool) -> dict[str, Any]:
    """The series of :func:`by_utc_days`: the rolled-up days of the range (and the day
    before) and the long sessions that reach it first, then the statements, side by side."""
    first, last = p.rng.first, p.rng.last
    facts = runner.facts(p, Needs(edges=True))
    day_rows, long_rows = runner.remembered_named(
        series_sql.series_rolled_days(p, first - timedelta(days=1), last),
        series_sql.series_long_spans(p, first - timedelta(days=1), last),
    )
    versions = {_day(r["day"]): int(r["version"]) for r in day_rows}
    long = [LongSpan(_day(r["day"]), _day(r["first_day"]), _day(r["last_day"])) for r in long_rows]
    # a day with a session that begins before it (an event before its day) is read from the
    # session rows, which put that session in the bucket of its first event
    early = {s.day for s in long if s.first < s.day}
    # by the hour, only the days with their rows per hour, and none before the raw events
    # (the API says those are not counted by the hour: svc.retention)
    raw_from = p.query.raw_from
    hours = {
        _day(r["day"])
        for r in day_rows
        if int(r["has_hours"]) and (raw_from is None or _day(r["day"]) >= raw_from)
    }
    facts = replace(
        facts,
        rolled=tuple(
            (d, v)
            for d, v in versions.items()
            if first <= d <= last and d not in early and (interval != "hour" or d in hours)
        ),
    )
    if interval == "hour":  # the visitors of each hour merged, the sessions by their hour
        statements = [
            series_sql.series_events(p, facts, interval),
            series_sql.series_sessions(p, facts, interval),
        ]
        if facts.rolled:
            statements.append(series_sql.series_rolled_hours(p, facts))
        event_rows, *session_answers = runner.together(*statements)
        return _series(p, interval, event_rows, session_answers, with_sums=sums)
    # before the raw events, the long sessions are gone: the visitors are merged, as before
    rolled = {
        _day(r["day"]): RolledDay(
            int(r["visitors"]), int(r["next_day"]) if int(r["has_next"]) else None
        )
        for r in day_rows
        if raw_from is None or _day(r["day"]) >= raw_from
    }
    spans = bucket_spans(p.rng, interval)
    visitors = {label: bucket_visitors(a, b, rolled, long) for label, a, b in spans}
    segments = [s for v in visitors.values() for s in v.segments]
    statements = [
        series_sql.series_events(p, facts, interval, visitors=False),
        series_sql.series_sessions(p, facts, interval),
    ]
    if facts.rolled:
        statements.append(series_sql.series_rolled_sessions(p, facts, interval))
    if segments:
        statements.append(series_sql.series_segment_visitors(p, segments))
    answers = runner.together(*statements)
    merged = {s: 0 for s in segments}
    if segments:
        answers, merged_rows = answers[:-1], answers[-1]
        merged.update((segments[int(r["segment"]) - 1], int(r["visitors"])) for r in merged_rows)
    event_rows, *session_answers = answers
    return _series(p, interval, event_rows, session_answers, visitors, merged, sums)


def _series(
    p: Plan,
    interval: str,
    event_rows: list[dict[str, Any]],
    session_answers: Sequence[list[dict[str, Any]]],
    visitors: Mapping[str, BucketVisitors] | None = None,
    merged: dict[tuple[date, date], int] | None = None,
    with_sums: bool = False,
) -> dict[str, Any]:
    """The points: per bucket its event figures (``event_rows``, by label) and the sums of its
    session figures (``session_answers``: the session rows' days, the rolled-up days'); with
    ``visitors`` (label -> BucketVisitors) and ``merged``, the visitors of every bucket from
    those (also of one without events)."""
    by_events = {r["time"]: r for r in event_rows}
    by_sessions: dict[str, dict[str, int]] = {}
    for rows in session_answers:
        for r in rows:
            sums = by_sessions.setdefault(r["time"], {})
            for name in ("sessions", "bounces", "with_pv", "duration_ms"):
                sums[name] = sums.get(name, 0) + int(r[name])
    points = []
    for label in buckets(p.rng, interval):
        e, s = by_events.get(label, {}), by_sessions.get(label, {})
        sessions = int(s.get("sessions", 0))
        if visitors is not None and merged is not None:
            seen = visitors[label].total(merged)
        else:
            seen = int(e.get("visitors", 0))
        point: dict[str, Any] = {
            "time": label,
            "visitors": seen,
            "sessions": sessions,
            "pageviews": int(e.get("pageviews", 0)),
            "events": int(e.get("events", 0)),
            "bounceRate": percent(int(s.get("bounces", 0)), int(s.get("with_pv", 0))),
            "avgSessionDuration": round(int(s.get("duration_ms", 0)) / 1000 / sessions, 1)
            if sessions
            else 0.0,
        }
        if with_sums:
            point["bounces"] = int(s.get("bounces", 0))
            point["withPageview"] = int(s.get("with_pv", 0))
            point["durationMs"] = int(s.get("duration_ms", 0))
        points.append(point)
    return {"interval": interval, "timezone": p.rng.tz, "points": points}


def _day(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def rolls_up(p: Plan, interval: str) -> bool:
    """Whether the series reads the sessions of the days before the project's raw events
    from the daily rollups: without filters (the rollups hold every session), by day, week
    or month (they hold whole UTC days, not hours), when the range reaches such a day."""
    return p.may_roll_up() and interval in series_sql.ROLLED_DAY_BUCKETS and bool(p.days_before_raw)


def before_raw(p: Plan, facts: Facts) -> Facts:
    """``facts`` with only the rolled-up days before the raw events (the others, inside the
    range of raw events, are read from the session rows, bucketed by each session's start in
    the range's time zone, as they always were)."""
    old = p.days_before_raw
    if not facts.rolled or old is None:
        return replace(facts, rolled=())
    return replace(facts, rolled=tuple((d, v) for d, v in facts.rolled if d <= old[1]))


__all__ = ["count_points", "parse_interval", "query_timeseries"]
