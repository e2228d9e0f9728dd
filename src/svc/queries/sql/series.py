"""The statements of GET /metrics/timeseries, from a plan and its facts: per bucket of an
interval, from the events, the hourly table or the daily rollups (pure functions; the
runner runs them, svc.queries.timeseries shapes their rows)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta

from svc.queries.plan import Facts, Plan
from svc.queries.sql.sessions import (
    ROLLED_SESSION_AGGREGATES,
    events_where,
    of_unrolled_days,
    rolled_session_rows,
    session_rows,
)
from svc.queries.sql.statement import Statement, statement

# GET /metrics/timeseries ----------------------------------------------------------------------

#: Per interval: the bucket of a time (grouped by), and its label (formatted once a bucket).
INTERVALS = {
    "hour": "toStartOfHour({t}, {{tz:String}})",
    "day": "toDate({t}, {{tz:String}})",
    "week": "toMonday({t}, {{tz:String}})",
    "month": "toStartOfMonth({t}, {{tz:String}})",
}
_LABELS = {
    "hour": "formatDateTime(bucket, '%Y-%m-%dT%H:00', {tz:String})",
    "day": "toString(bucket)",
    "week": "toString(bucket)",
    "month": "toString(bucket)",
}
#: The labels, for the other series (svc.queries.sql.measurements).
LABELS = _LABELS


def series_events(
    plan: Plan, facts: Facts, interval: str, visitors: bool = True, unrolled: bool = False
) -> Statement:
    """Per bucket: page views, events and (but without ``visitors``) visitors, by event time.
    Without filters, in a zone whose offset is a whole number of hours, from the hourly table
    (24 rows a day, not every event); else from the events that pass the filters, with
    ``unrolled`` only those of the sessions of days not in ``facts.rolled`` (their sessions'
    are read from ``rolled_sessions``: :func:`series_rolled_session_days`)."""
    bucket, label = INTERVALS[interval], _LABELS[interval]
    if not plan.filters and plan.rng.whole_hour_offsets and interval == "hour" and visitors:
        # An hour's bucket is one row of the table: its partial rows merged by FINAL (a merge
        # of sorted parts, one hour at a time) and each visitor set counted as it goes. A
        # GROUP BY held every hour's merged set, and the reader blocks of large sets, at once:
        # 30 days of a 100M-event project peaked at 1.5 GB, this at 0.57 GB (16 rows a block).
        sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='hour')} AS bucket, "
            "pageviews, events, finalizeAggregation(visitors) AS visitors FROM event_hours FINAL "
            "WHERE project_id = {project:String} AND hour >= {start:DateTime64(3, 'UTC')} "
            "AND hour < {end:DateTime64(3, 'UTC')}) SETTINGS max_block_size = 16"
        )
    elif not plan.filters and plan.rng.whole_hour_offsets:
        merged = ", uniqExactMerge(visitors) AS visitors" if visitors else ""
        sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='hour')} AS bucket, "
            f"sum(pageviews) AS pageviews, sum(events) AS events{merged} FROM event_hours "
            "WHERE project_id = {project:String} AND hour >= {start:DateTime64(3, 'UTC')} "
            "AND hour < {end:DateTime64(3, 'UTC')} GROUP BY bucket)"
        )
    else:  # the events that pass the filters: all of them are reported events, or not
        table = "report_events" if plan.reported_events_only() else "events"
        where = events_where(plan, facts)
        if unrolled and facts.rolled:
            where += f" AND {of_unrolled_days()}"
        sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='ts')} AS bucket, "
            "countIf(name = 'page_view') AS pageviews, count() AS events, "
            f"uniqExact(visitor_id) AS visitors FROM {table} WHERE {where} GROUP BY bucket)"
        )
    return statement(sql, plan, facts)


def series_sessions(plan: Plan, facts: Facts, interval: str) -> Statement:
    """Per bucket: sessions, bounces, sessions with a page view and duration, by the
    session's start (clamped to the range)."""
    start = "greatest(first_ts, {start:DateTime64(3, 'UTC')})"
    return statement(
        f"SELECT {_LABELS[interval]} AS time, * FROM "
        f"(SELECT {INTERVALS[interval].format(t=start)} AS bucket, "
        "count() AS sessions, countIf(all_pv = 1 AND all_ev = 1) AS bounces, "
        "countIf(all_pv > 0) AS with_pv, sum(dur) AS duration_ms "
        f"FROM ({session_rows(plan, facts)}) GROUP BY bucket)",
        plan,
        facts,
    )


#: The bucket of a rolled-up UTC day, per interval but the hour: the range's day of the same
#: date (the day that shares most of it: svc.queries.plan.Plan.days_before_raw), its week or
#: month.
ROLLED_DAY_BUCKETS = {
    "day": "session_day",
    "week": "toMonday(session_day)",
    "month": "toStartOfMonth(session_day)",
}


def series_rolled_sessions(plan: Plan, facts: Facts, interval: str) -> Statement:
    """Per bucket (``interval`` a key of :data:`ROLLED_DAY_BUCKETS`): the sessions, bounces,
    sessions with a page view and duration of the rolled-up days (``facts.rolled``), from the
    daily rollups' totals (dimension ''): a day's sessions whole, in the bucket of its date,
    the columns of :func:`series_sessions`."""
    assert facts.rolled and interval in ROLLED_DAY_BUCKETS
    return statement(
        "SELECT toString(bucket) AS time, * FROM "
        f"(SELECT {ROLLED_DAY_BUCKETS[interval]} AS bucket, sum(sessions) AS sessions, "
        "sum(bounces) AS bounces, sum(with_pageview) AS with_pv, "
        "sum(duration_ms) AS duration_ms FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = '' "
        "AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
        "GROUP BY bucket)",
        plan,
        facts,
    )


def series_rolled_session_days(plan: Plan, facts: Facts) -> Statement:
    """Per rolled day of ``facts.rolled`` (``day``), the figures of the sessions of
    ``rolled_sessions`` that pass the filters on the page and session dimensions (the matching
    page views and events, as :func:`series_events` counts them, and their visitors, who are
    of that day alone: a stored visitor id is mixed with its session's day), in the columns
    of :data:`svc.queries.sql.sessions.ROLLED_SESSION_AGGREGATES`. Every event of those
    sessions is in the range (:func:`svc.queries.sql.sessions.rolled_session_rows`)."""
    assert facts.rolled
    return statement(
        f"SELECT session_day AS day, {ROLLED_SESSION_AGGREGATES} "
        f"FROM ({rolled_session_rows(plan, facts, {})}) GROUP BY day",
        plan,
        facts,
    )


def series_next_days(plan: Plan, facts: Facts) -> Statement:
    """Per rolled day of ``facts.rolled`` (``day``), the page views, events and distinct
    visitors on the next UTC day of its sessions that pass the session filters: those of
    ``next_day_sessions`` (a few thousand a day among a million), which hold their counted
    events there, and whose rows of the sessions table are picked out by their key."""
    assert facts.rolled
    of_days = "project_id = {project:String} AND session_day IN {rolled_days:Array(Date)}"
    crossing = f"SELECT session_day, session_id FROM next_day_sessions WHERE {of_days}"
    passing = " ".join(f"AND ({c})" for c in plan.session_conditions)
    return statement(
        "SELECT n.day AS day, sum(n.pv) AS pageviews, sum(n.ev) AS events, "
        "uniqExact(s.visitor) AS visitors FROM (SELECT session_day AS day, session_id, "
        "sum(pageviews) AS pv, sum(events) AS ev FROM next_day_sessions "
        f"WHERE {of_days} GROUP BY day, session_id) AS n INNER JOIN (SELECT session_day AS "
        "day, session_id, visitor_id AS visitor FROM sessions FINAL "
        f"WHERE {of_days} AND (session_day, session_id) IN ({crossing}) {passing}) AS s "
        "ON s.day = n.day AND s.session_id = n.session_id GROUP BY day",
        plan,
        facts,
    )


def long_session_days(plan: Plan, days: Sequence[date]) -> Statement:
    """Per day of ``days`` with a session in ``long_sessions`` (one with an event outside
    its day and the next): whether one has an event before its day (``early``: it begins
    then)."""
    return Statement(
        "SELECT session_day AS day, min(first_ts) < toDateTime64(session_day, 3, 'UTC') "
        "AS early FROM long_sessions WHERE project_id = {project:String} "
        "AND session_day IN {days:Array(Date)} GROUP BY day",
        {"project": plan.project_id, "days": list(days)},
    )


def series_rolled_days(plan: Plan, first: date, last: date) -> Statement:
    """Per rolled-up UTC day from ``first`` to ``last``: its current ``version``, and from
    its rollups the distinct visitor ids of its sessions (``visitors``), whether the day has
    a ``next_day`` row (``has_next``) and its count (``next_day``: those ids with an event on
    the next day), and whether it has ``start_hour`` rows (``has_hours``; svc.storage.rollups)."""
    return Statement(
        "SELECT r.session_day AS day, r.version AS version, "
        "sumIf(s.visitors, s.dimension = '') AS visitors, "
        "countIf(s.dimension = 'next_day') AS has_next, "
        "sumIf(s.visitors, s.dimension = 'next_day') AS next_day, "
        "countIf(s.dimension = 'start_hour') AS has_hours "
        "FROM (SELECT session_day, max(version) AS version FROM rollup_days "
        "WHERE project_id = {project:String} AND session_day BETWEEN {d0:Date} AND {d1:Date} "
        "GROUP BY session_day) AS r "
        "LEFT JOIN (SELECT session_day, version, dimension, visitors FROM session_rollups "
        "WHERE project_id = {project:String} AND (dimension IN ('', 'next_day') "
        "OR (dimension = 'start_hour' AND value = '')) "
        "AND session_day BETWEEN {d0:Date} AND {d1:Date}) AS s "
        "ON s.session_day = r.session_day AND s.version = r.version "
        "GROUP BY day, version ORDER BY day",
        {"project": plan.project_id, "d0": first, "d1": last},
    )


def series_rolled_start_hours(plan: Plan, facts: Facts, interval: str) -> Statement:
    """Per bucket (``interval`` a key of :data:`ROLLED_DAY_BUCKETS`, in a zone of whole
    hours: each UTC hour is in one bucket): the sessions, bounces, sessions with a page view
    and duration of the rolled-up days (``facts.rolled``, each with its ``start_hour`` rows)
    by the UTC hour their sessions began in (the range's start for an hour before it: a
    session with a late event from before the range), as :func:`series_sessions` buckets a
    session by its start clamped to the range; its columns."""
    assert facts.rolled and interval in ROLLED_DAY_BUCKETS
    start = "greatest(toDateTime64(value, 3, 'UTC'), {start:DateTime64(3, 'UTC')})"
    return _start_hour_sums(plan, facts, _LABELS[interval], INTERVALS[interval].format(t=start))


def _start_hour_sums(plan: Plan, facts: Facts, label: str, bucket: str) -> Statement:
    """Per ``bucket`` (an SQL expression of a ``start_hour`` row's ``value``, its UTC hour),
    labelled by ``label``: the sums of the rolled days' ``start_hour`` rows, in the columns
    of :func:`series_sessions`."""
    return statement(
        f"SELECT {label} AS time, * FROM "
        f"(SELECT {bucket} AS bucket, sum(sessions) AS sessions, "
        "sum(bounces) AS bounces, sum(with_pageview) AS with_pv, "
        "sum(duration_ms) AS duration_ms FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = 'start_hour' AND value != '' "
        "AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
        "GROUP BY bucket)",
        plan,
        facts,
    )


def start_hour_days(plan: Plan, days: Sequence[tuple[date, int]]) -> Statement:
    """The days of ``days`` (rolled up: day, version) whose rollups at that version have
    their ``start_hour`` rows (a day rolled up before they existed gets them at the next
    pass after start: svc.storage.rollups)."""
    return Statement(
        "SELECT session_day FROM session_rollups WHERE project_id = {project:String} "
        "AND dimension = 'start_hour' AND value = '' "
        "AND (session_day, version) IN {hour_days:Array(Tuple(Date, UInt64))}",
        {"project": plan.project_id, "hour_days": list(days)},
    )


def series_rolled_hours(plan: Plan, facts: Facts) -> Statement:
    """Per hour (labelled as :func:`series_sessions` labels it by the hour): the sessions,
    bounces, sessions with a page view and duration of the rolled-up days (``facts.rolled``)
    that began in it, from the rollups' ``start_hour`` rows (UTC hours: a zone of whole
    hours)."""
    assert facts.rolled
    return _start_hour_sums(plan, facts, _LABELS["hour"], "toDateTime(value, 'UTC')")


def series_long_spans(plan: Plan, first: date, last: date) -> Statement:
    """The long sessions (storage/migrations/012) whose events outside their day and the
    next may be on a UTC day from ``first`` to ``last``, or that have one before their day
    and are of such a day: their day, and the first and last UTC days of those events."""
    return Statement(
        "SELECT session_day AS day, toDate(min(first_ts)) AS first_day, "
        "toDate(max(last_ts)) AS last_day FROM long_sessions "
        "WHERE project_id = {project:String} GROUP BY session_day, session_id "
        "HAVING (first_day <= {d1:Date} AND last_day >= {d0:Date}) "
        "OR (day BETWEEN {d0:Date} AND {d1:Date} AND first_day < day)",
        {"project": plan.project_id, "d0": first, "d1": last},
    )


def series_segment_visitors(plan: Plan, segments: Sequence[tuple[date, date]]) -> Statement:
    """Per segment (UTC days, first and last: its index ``segment`` in ``segments``, from 1),
    the distinct visitor ids with an event in it, merged from the hourly table."""
    days: list[date] = []
    ids: list[int] = []
    for i, (first, last) in enumerate(segments, start=1):
        for k in range((last - first).days + 1):
            days.append(first + timedelta(days=k))
            ids.append(i)
    return Statement(
        "SELECT transform(toDate(hour), {days:Array(Date)}, {ids:Array(UInt32)}, toUInt32(0)) "
        "AS segment, uniqExactMerge(visitors) AS visitors FROM event_hours "
        "WHERE project_id = {project:String} AND hour >= {h0:DateTime('UTC')} "
        "AND hour < {h1:DateTime('UTC')} AND toDate(hour) IN {days:Array(Date)} "
        "GROUP BY segment",
        {
            "project": plan.project_id,
            "days": days,
            "ids": ids,
            "h0": datetime.combine(min(days), time(0)),
            "h1": datetime.combine(max(days) + timedelta(days=1), time(0)),
        },
    )
