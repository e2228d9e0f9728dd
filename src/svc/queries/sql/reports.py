"""The statements of each report, from a plan and its facts (pure functions; the runner runs
them, the report modules shape their rows)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Any

from svc.queries.dimensions import DIMENSIONS, Dimension
from svc.queries.plan import Facts, FunnelPass, Plan
from svc.queries.sql.sessions import (
    ROLLED_SESSION_AGGREGATES,
    SESSION_AGGREGATES,
    current_rolled_days,
    event_name_rows,
    event_rows,
    events_where,
    of_unrolled_days,
    page_rows,
    rolled_session_rows,
    session_rows,
)
from svc.queries.sql.statement import Statement, statement
from svc.schema.measurements import COUNTED_SQL
from svc.schema.steps import step_key, step_key_sql

# GET /metrics ---------------------------------------------------------------------------------


def metrics(plan: Plan, facts: Facts) -> Statement:
    """Per first-event source, and a rollup row (source ''), of the session aggregates."""
    sessions = session_rows(plan, facts, {"src": DIMENSIONS["source"]})
    return statement(
        f"SELECT src, {SESSION_AGGREGATES} FROM ({sessions}) "
        "GROUP BY src WITH ROLLUP ORDER BY sessions DESC, src",
        plan,
        facts,
    )


def rolled_metrics(plan: Plan, facts: Facts) -> Statement:
    """Per source, and a rollup row (source ''), the session aggregates of the rolled days'
    sessions (``rolled_sessions``) that pass the filters on the page and session dimensions:
    every event of theirs is in the range."""
    sessions = rolled_session_rows(plan, facts, {"src": DIMENSIONS["source"]})
    return statement(
        f"SELECT src, {ROLLED_SESSION_AGGREGATES} FROM ({sessions}) GROUP BY src WITH ROLLUP",
        plan,
        facts,
    )


# GET /metrics/breakdown -----------------------------------------------------------------------

#: The orders of a breakdown: the figure each sorts by.
ORDER_COLUMNS = {
    "visitors": "visitors",
    "sessions": "sessions",
    "pageviews": "pageviews",
    "events": "events",
    "bounceRate": "bounces / greatest(sessions_with_pv, 1)",
    "avgSessionDuration": "duration_ms / greatest(sessions, 1)",
    "value": "value",
}


def breakdown_rows(plan: Plan, facts: Facts, dim: Dimension, kind: str) -> str:
    """The rows a breakdown by ``dim`` aggregates by value (``kind``: see
    :func:`svc.queries.breakdown.rows_kind`): one per session (a session dimension); per
    session and page (the page with no filter on other event dimensions: the session pages);
    the page views of the sessions and the other events by name (the event name, likewise);
    else per session and value of the events that pass the filters, from ``report_events``
    when they are all in it (a custom property, filters on event names or properties), or
    from the events."""
    if kind == "session":
        return session_rows(plan, facts, {"value": dim})
    if kind == "page":
        return page_rows(plan, facts)
    if kind == "event_name":
        return event_name_rows(plan, facts, dim)
    return event_rows(plan, facts, dim)


def only_values(
    only: Sequence[str] | None, column: str = "value", joined: str = "WHERE"
) -> tuple[str, dict[str, Any]]:
    """``{joined} <column> IN <only>`` with a space each side: a condition that keeps the
    rows whose ``column`` is one of ``only`` (the values a comparison asks the other range
    about), and the values it binds; with no ``only``, a space and nothing to bind."""
    if only is None:
        return " ", {}
    return f" {joined} {column} IN {{only:Array(String)}} ", {"only": list(only)}


def breakdown(
    plan: Plan,
    facts: Facts,
    dim: Dimension,
    kind: str,
    order: str,
    limit: int,
    offset: int,
    only: Sequence[str] | None = None,
) -> Statement:
    """A breakdown's page of rows, ordered (``order``: a name of :data:`ORDER_COLUMNS`,
    ``-`` for descending), with the count of every row; with ``only``, of those values
    alone."""
    name = order.lstrip("-+")
    direction = "DESC" if order.startswith("-") else "ASC"
    keep, values = only_values(only)
    return statement(
        f"SELECT value, {SESSION_AGGREGATES}, count() OVER () AS total_rows "
        f"FROM ({breakdown_rows(plan, facts, dim, kind)}){keep}GROUP BY value "
        f"ORDER BY {ORDER_COLUMNS[name]} {direction}, value ASC "
        "LIMIT {limit:UInt32} OFFSET {offset:UInt32}",
        plan,
        facts,
        limit=limit,
        offset=offset,
        **values,
    )


def by_value(
    plan: Plan, facts: Facts, dim: Dimension, kind: str, only: Sequence[str] | None = None
) -> Statement:
    """Per value of ``dim`` (with ``only``, of those alone), the session aggregates of the
    days not rolled up."""
    keep, values = only_values(only)
    return statement(
        f"SELECT value, {SESSION_AGGREGATES} FROM ({breakdown_rows(plan, facts, dim, kind)}) "
        f"{keep}GROUP BY value",
        plan,
        facts,
        **values,
    )


def rolled_by_value(plan: Plan, facts: Facts, dim: Dimension) -> Statement:
    """Per value of the session dimension ``dim``, the session aggregates of the rolled
    days' sessions (``rolled_sessions``)."""
    return statement(
        f"SELECT value, {ROLLED_SESSION_AGGREGATES} "
        f"FROM ({rolled_session_rows(plan, facts, {'value': dim})}) GROUP BY value",
        plan,
        facts,
    )


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


def series_events(plan: Plan, facts: Facts, interval: str, visitors: bool = True) -> Statement:
    """Per bucket: page views, events and (but without ``visitors``) visitors, by event time.
    Without filters, in a zone whose offset is a whole number of hours, from the hourly table
    (24 rows a day, not every event); else from the events that pass the filters."""
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
        sql = (
            f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='ts')} AS bucket, "
            "countIf(name = 'page_view') AS pageviews, count() AS events, "
            f"uniqExact(visitor_id) AS visitors FROM {table} WHERE {events_where(plan, facts)} "
            "GROUP BY bucket)"
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


# GET /metrics/goals and /metrics/funnel -------------------------------------------------------


def goal_condition(kind: str, target: str, name: str) -> tuple[str, dict[str, Any]]:
    """The condition of a goal (``event`` and a name, or ``page`` and a path pattern where
    ``*`` matches any characters) over an event, its value bound as ``name``."""
    if kind == "event":
        return f"name = {{{name}:String}}", {name: target}
    if "*" not in target:  # the whole path: a comparison, not a regular expression per row
        return f"name = 'page_view' AND path = {{{name}:String}}", {name: target}
    pattern = "^" + ".*".join(re.escape(part) for part in target.split("*")) + "$"
    return f"name = 'page_view' AND match(path, {{{name}:String}})", {name: pattern}


#: A funnel step: its alternatives, each (kind, target) as a goal (svc.queries.conversions).
StepAlternatives = Sequence[tuple[str, str]]


def step_condition(alternatives: StepAlternatives, name: str) -> tuple[str, dict[str, Any]]:
    """The condition of a funnel step over an event: that of one of its ``alternatives``
    (:func:`goal_condition` each, bound as ``name`` then ``name_1``, ``name_2``, ...)."""
    conditions, own = [], {}
    for j, (kind, target) in enumerate(alternatives):
        c, values = goal_condition(kind, target, name if j == 0 else f"{name}_{j}")
        conditions.append(c)
        own.update(values)
    if len(conditions) == 1:
        return conditions[0], own
    return " OR ".join(f"({c})" for c in conditions), own


def goals(plan: Plan, facts: Facts, targets: Sequence[tuple[str, str]]) -> Statement:
    """The visitors in scope, and per goal (kind, target) its visitors ``v<i>`` and events
    ``e<i>``."""
    own: dict[str, Any] = {}
    cols = []
    for i, (kind, target) in enumerate(targets):
        c, values = goal_condition(kind, target, f"g{i}")
        own.update(values)
        cols.append(f"uniqExactIf(visitor_id, {c}) AS v{i}, countIf({c}) AS e{i}")
    return statement(
        f"SELECT uniqExact(visitor_id) AS visitors, {', '.join(cols)} FROM events "
        f"WHERE {events_where(plan, facts)}",
        plan,
        facts,
        **own,
    )


# The goals without filters, as the session reports read them (svc.queries.conversions):
# the days wholly inside the range from the daily rollups, the others from the session rows,
# the session pages and the report events. A stored visitor id belongs to one UTC day (that
# of its sessions' start: svc.ingestion.identity), so the visitors of the two parts add up.


def goal_sessions(plan: Plan, facts: Facts) -> Statement:
    """Over the session rows of the days not rolled up (``facts``: ``Needs(edges=True)``):
    their ``visitors`` (every one has an event in the range), the visitors with a page view
    in the range (``viewers``) and those page views (``pageviews``)."""
    return statement(
        "SELECT uniqExact(visitor) AS visitors, uniqExactIf(visitor, pv > 0) AS viewers, "
        f"sum(pv) AS pageviews FROM ({session_rows(plan, facts)})",
        plan,
        facts,
    )


def goal_pages(plan: Plan, facts: Facts, paths: Sequence[str]) -> Statement:
    """Per path of ``paths`` with page views in the range on the days not rolled up: its
    visitors and page views (``value``, ``visitors``, ``pageviews``), from the session pages
    of those paths joined to their sessions (:func:`~svc.queries.sql.sessions.page_rows`,
    corrected at the ends of the range: ``facts`` of ``Needs(page_edges=True)``)."""
    from dataclasses import replace

    on_paths = replace(plan, event_conditions=("path IN {goal_paths:Array(String)}",))
    return statement(
        "SELECT value, uniqExact(visitor) AS visitors, sum(pv) AS pageviews "
        f"FROM ({page_rows(on_paths, facts)}) GROUP BY value",
        plan,
        facts,
        goal_paths=list(paths),
    )


def goal_events(plan: Plan, facts: Facts, names: Sequence[str]) -> Statement:
    """Per event name of ``names`` (never ``page_view``: the report events hold every other
    event, not every page view) with events in the range of the sessions of the days not
    rolled up: its visitors and events (``value``, ``visitors``, ``events``)."""
    assert "page_view" not in names
    where = f"{events_where(plan, facts)} AND name IN {{goal_names:Array(String)}}"
    if facts.rolled:  # (in a form the table's key by the day of ``ts`` prunes with)
        where += f" AND {of_unrolled_days()}"
    return statement(
        "SELECT toString(name) AS value, uniqExact(visitor_id) AS visitors, count() AS events "
        f"FROM report_events WHERE {where} GROUP BY value",
        plan,
        facts,
        goal_names=list(names),
    )


def goal_rollups(plan: Plan, facts: Facts, paths: Sequence[str], names: Sequence[str]) -> Statement:
    """The rolled-up days' figures (``facts.rolled``): the totals (dimension ''), the rows of
    the page dimension for ``paths`` and of the event dimension for ``names`` (``page_view``
    too), summed over the days: ``dimension``, ``value``, ``visitors``, ``pageviews``,
    ``events``."""
    assert facts.rolled
    return statement(
        "SELECT dimension, value, sum(visitors) AS visitors, sum(pageviews) AS pageviews, "
        "sum(events) AS events FROM session_rollups WHERE project_id = {project:String} "
        "AND dimension IN ('', 'page', 'event') AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
        "AND (dimension = '' OR (dimension = 'page' AND value IN {goal_paths:Array(String)}) "
        "OR (dimension = 'event' AND value IN {goal_names:Array(String)})) "
        "GROUP BY dimension, value",
        plan,
        facts,
        goal_paths=list(paths),
        goal_names=list(names),
    )


def funnel_visitors(plan: Plan) -> Statement:
    """About how many visitors a funnel over the range groups: the daily rollups' visitors
    of the days its sessions began on (the latest version of each; days not rolled up count
    none)."""
    return statement(
        "SELECT sum(v) FROM (SELECT argMax(visitors, version) AS v FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = '' AND value = '' "
        "AND session_day BETWEEN {day0:Date} AND {day1:Date} GROUP BY session_day)",
        plan,
        Facts(),
    )


def long_session_spans(plan: Plan) -> Statement:
    """Per day, the first and last of its long sessions' events outside their day and the
    next, of those that reach into the range (for :func:`svc.queries.plan.funnel_passes`)."""
    return statement(
        "SELECT session_day, min(first_ts), max(last_ts) FROM long_sessions "
        "WHERE project_id = {project:String} GROUP BY session_day "
        "HAVING max(last_ts) >= {start:DateTime64(3, 'UTC')} "
        "AND min(first_ts) < {end:DateTime64(3, 'UTC')}",
        plan,
        Facts(),
    )


def funnel(
    plan: Plan,
    facts: Facts,
    steps: Sequence[StepAlternatives],
    window_seconds: int,
    part: FunnelPass | None = None,
) -> Statement:
    """Per level reached (ClickHouse ``windowFunnel`` over the steps within the window), its
    visitors. A step is reached by an event that matches one of its alternatives
    (:func:`step_condition`): a visitor is at one level however many it matches. When every
    alternative is an event other than a page view, from the report events, which hold every
    such event (storage/migrations/008; 10.5M of the benchmark's 100M); else from the
    events.

    Over 30 days of 100M events the cost of a funnel of page views is the GROUP BY: ~17M
    visitors' windowFunnel states (the home page is a step), which pass the reads' 300 MB and
    spill (12.8 s without the spill, 23 s with it, on a loaded host). Tried and left out:
    windowFunnel only for the visitors with a step-2 event (a set of them first: no faster);
    a table of (project, bucket of the visitor, name, path, visitor, ts) per event (980 MB
    more; the steps' rows read by key, yet one GROUP BY as slow, 8 passes by bucket ~0.7 s
    each); one sorted by visitor with the aggregation in order (slower: ~20 s).

    With ``part``, the visitors of that pass alone (svc.queries.plan.funnel_passes): those
    of 17M visitors' states that fit in memory, no spill. Over 30 days of 100M events, in
    5 passes (warm, alternated): 8.0-9.2 -> 4.2-4.8 s, the read's peak 500-550 -> ~240 MB
    above the process's; over 10M (1.7M visitors) one pass is faster (320 against 450 ms)."""
    own: dict[str, Any] = {"window": window_seconds}
    within = ""
    if part is not None:
        within = (
            " AND ts >= {pass_since:DateTime64(3, 'UTC')}"
            " AND ts < {pass_until:DateTime64(3, 'UTC')}"
        )
        own.update(pass_since=part.since.replace(tzinfo=None))
        own.update(pass_until=part.until.replace(tzinfo=None))
        if part.first_day is not None:
            within += " AND toDate(session_start) >= {pass_first:Date}"
            own["pass_first"] = part.first_day
        if part.last_day is not None:
            within += " AND toDate(session_start) <= {pass_last:Date}"
            own["pass_last"] = part.last_day
    if facts.rolled:  # those days' visitors are read from visitor_steps (funnel_step_levels)
        within += f" AND {of_unrolled_days()}"
    custom = all(
        kind == "event" and target != "page_view" for step in steps for kind, target in step
    )
    table = "report_events" if custom else "events"
    conditions = []
    for i, step in enumerate(steps):
        c, values = step_condition(step, f"s{i}")
        own.update(values)
        conditions.append(c)
    # windowFunnel looks only at the events that match a step: the others are left out
    # before the GROUP BY (same levels, a fraction of the rows).
    any_step = " OR ".join(f"({c})" for c in conditions)
    return statement(
        "SELECT level, count() AS visitors FROM ("
        "SELECT visitor_id, windowFunnel({window:UInt64})(toDateTime(ts), "
        f"{', '.join(conditions)}) AS level "
        f"FROM {table} WHERE {events_where(plan, facts)}{within} AND ({any_step}) "
        "GROUP BY visitor_id) "
        "WHERE level > 0 GROUP BY level "
        # The steps match events in every granule (a home page, a common event): reading the
        # step columns first (PREWHERE) skips nothing and costs ~7 % (10M events, 300 ms).
        "SETTINGS optimize_move_to_prewhere = 0",
        plan,
        facts,
        **own,
    )


def funnel_step_days(plan: Plan, first: date, last: date) -> Statement:
    """The rolled-up days from ``first`` to ``last`` whose current version has its
    ``visitor_steps`` rows (storage/migrations/017), and that version."""
    current = current_rolled_days(plan, (first, last), None)
    return Statement(
        f"SELECT session_day, version FROM ({current.sql}) WHERE (session_day, version) IN "
        "(SELECT session_day, version FROM session_rollups WHERE project_id = {project:String} "
        "AND dimension = 'visitor_steps' AND session_day BETWEEN {r0:Date} AND {r1:Date}) "
        "ORDER BY session_day",
        current.params,
    )


def _step_keys(steps: Sequence[StepAlternatives]) -> tuple[list[list[str]], dict[str, Any]]:
    """Per step, its alternatives' keys (svc.schema.steps) as SQL over bound targets
    ``k<i>`` (the first alternative of step ``i``) and ``k<i>_<j>`` (its ``j``-th after)."""
    keys: list[list[str]] = []
    own: dict[str, Any] = {}
    for i, step in enumerate(steps):
        keys.append([])
        for j, (kind, target) in enumerate(step):
            name = f"k{i}" if j == 0 else f"k{i}_{j}"
            keys[-1].append(step_key_sql(kind, name))
            own[name] = target
    return keys, own


def _has_step(keys: Sequence[str]) -> str:
    """SQL: whether a ``visitor_steps`` row's ``keys`` hold one of a step's ``keys``."""
    if len(keys) == 1:
        return f"has(keys, {keys[0]})"
    return f"hasAny(keys, [{', '.join(keys)}])"


def _is_step(keys: Sequence[str], y: str) -> str:
    """SQL: whether the key ``y`` is one of a step's ``keys``."""
    return " OR ".join(f"{y} = {k}" for k in keys)


def step_collisions(
    plan: Plan, days: Sequence[tuple[date, int]], steps: Sequence[StepAlternatives]
) -> Statement:
    """How many paths and event names of ``days`` (the rollups' ``path`` and ``event`` rows)
    have a key of a step's alternative without being one of the alternatives' targets: a
    funnel then reads the events."""
    keys, own = _step_keys(steps)
    names = [
        f"k{i}" if j == 0 else f"k{i}_{j}" for i, step in enumerate(steps) for j in range(len(step))
    ]
    kinds = [kind for step in steps for kind, _ in step]
    targets = ", ".join(
        f"('{'path' if kind == 'page' else 'event'}', {{{name}:String}})"
        for kind, name in zip(kinds, names, strict=True)
    )
    key = step_key("dimension = 'path'", "value", "value")
    every_key = ", ".join(k for step_keys in keys for k in step_keys)
    return Statement(
        "SELECT count() FROM (SELECT DISTINCT dimension, value FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension IN ('path', 'event') "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))}) "
        f"WHERE {key} IN ({every_key}) AND (dimension, value) NOT IN ({targets})",
        {"project": plan.project_id, "days": list(days), **own},
    )


_INSIDE = (
    "x >= toDateTime({start:DateTime64(3, 'UTC')}, 'UTC') "
    "AND x < toDateTime({end:DateTime64(3, 'UTC')}, 'UTC')"
)


def _steps_params(
    plan: Plan, days: Sequence[tuple[date, int]], edge_days: Sequence[date], own: dict[str, Any]
) -> dict[str, Any]:
    return {
        "project": plan.project_id,
        "start": plan.params["start"],
        "end": plan.params["end"],
        "days": list(days),
        "edge_days": list(edge_days),
        **own,
    }


def funnel_step_levels(
    plan: Plan,
    days: Sequence[tuple[date, int]],
    edge_days: Sequence[date],
    steps: Sequence[StepAlternatives],
    window_seconds: int,
) -> Statement:
    """Per level from 2 up, its visitors, over the visitors of ``days`` (rolled up, with
    their ``visitor_steps`` rows) who have a first step and a second (no other gets past
    level 1): ClickHouse's windowFunnel over each visitor's events (``arrayReduce``: the
    same function as :func:`funnel`'s, per row). On ``edge_days`` (the day before the
    range, its last, the days of long sessions that cross an end) a visitor's events
    outside the range are left out first. Level 1: :func:`funnel_step_firsts` less these.
    A step with alternatives is reached by a key of any of them (one condition per step).

    The rows are sorted by their keys' ranks (storage/migrations/025): the visitors with two
    common steps lie in few granules, and those with a rare one are few. Over 30 days of
    100M events (29M visitors), `/` then `/pricing` (3.8M visitors with both): 0.7-1.0 s
    alone on a loaded host, of which windowFunnel ~0.5 s (1.9-2.0 s sorted by visitor)."""
    keys, own = _step_keys(steps)
    conditions = ", ".join(f"arrayMap(y -> ({_is_step(k, 'y')}), k)" for k in keys)
    window_funnel = (
        f"arrayReduce(concat('windowFunnel(', toString({{window:UInt64}}), ')'), t, {conditions})"
    )
    of_days = (
        "FROM visitor_steps WHERE project_id = {project:String} "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))} "
        f"AND {_has_step(keys[0])} AND {_has_step(keys[1])} AND session_day"
    )
    # the edge days' rows apart: an if() per row over all of them cost ~0.25 s at 100M
    rows = (
        f"SELECT ts AS t, keys AS k {of_days} NOT IN {{edge_days:Array(Date)}} UNION ALL "
        f"SELECT arrayFilter(x -> {_INSIDE}, ts) AS t, "
        f"arrayFilter((y, x) -> {_INSIDE}, keys, ts) AS k {of_days} IN {{edge_days:Array(Date)}}"
    )
    return Statement(
        f"SELECT level, count() AS visitors FROM (SELECT {window_funnel} AS level FROM ({rows})) "
        "WHERE level > 1 GROUP BY level",
        _steps_params(plan, days, edge_days, {"window": window_seconds, **own}),
    )


def funnel_step_firsts(
    plan: Plan,
    days: Sequence[tuple[date, int]],
    edge_days: Sequence[date],
    steps: Sequence[StepAlternatives],
) -> Statement:
    """How many visitors of ``days`` have a first step in the range (``visitors``): on the
    days inside it from their ``step_visitors`` rows (the visitors per step key,
    storage/migrations/025), on ``edge_days`` from ``visitor_steps``, their events in the
    range alone. A first step with alternatives is counted from ``visitor_steps`` on every
    day (the rows that hold a key of one of them): the per-key rows would count a visitor
    with two of them twice."""
    keys, own = _step_keys(steps)
    first = keys[0]
    of_days = (
        "SELECT count() AS v FROM visitor_steps WHERE project_id = {project:String} "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))} "
    )
    edges = (
        f"{of_days}AND session_day IN {{edge_days:Array(Date)}} AND {_has_step(first)} "
        f"AND arrayExists((y, x) -> ({_is_step(first, 'y')}) AND {_INSIDE}, keys, ts)"
    )
    if len(first) == 1:
        inside = (
            # max: a day whose rows were written twice (a pass cut short) counts them once
            "SELECT max(visitors) AS v FROM session_rollups WHERE project_id = {project:String} "
            f"AND dimension = 'step_visitors' AND value = toString({first[0]}) "
            "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))} "
            "AND session_day NOT IN {edge_days:Array(Date)} GROUP BY session_day"
        )
    else:
        inside = f"{of_days}AND session_day NOT IN {{edge_days:Array(Date)}} AND {_has_step(first)}"
    return Statement(
        f"SELECT sum(v) AS visitors FROM ({inside} UNION ALL {edges})",
        _steps_params(plan, days, edge_days, own),
    )


# GET /metrics/revenue and /metrics/errors: with the same WHERE as over the events ---------------


def revenue_currencies(plan: Plan, facts: Facts) -> Statement:
    """Revenue and orders per currency, from the purchases' typed columns
    (storage/migrations/024)."""
    return statement(
        "SELECT currency, sum(order_value) AS revenue, count() AS orders "
        f"FROM purchases WHERE {events_where(plan, facts)} "
        "GROUP BY currency ORDER BY revenue DESC",
        plan,
        facts,
    )


def revenue_items(plan: Plan, facts: Facts, limit: int) -> Statement:
    """The ``limit`` (item, currency) pairs of most revenue (price times quantity), from the
    purchases' typed items."""
    return statement(
        "SELECT item_id, currency, sum(item_quantity) AS quantity, "
        "sum(item_price * item_quantity) AS revenue FROM purchases "
        "ARRAY JOIN item_ids AS item_id, item_quantities AS item_quantity, "
        "item_prices AS item_price "
        f"WHERE {events_where(plan, facts)} "
        "GROUP BY item_id, currency ORDER BY revenue DESC, item_id "
        "LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def revenue_item_names(plan: Plan, facts: Facts, ids: list[str]) -> Statement:
    """The name (``item_name``) each of the items ``ids`` was last sent with, for the items
    that have one. Only the purchases holding one of them are read for their properties (the
    typed ``item_ids`` pick them first), not every purchase of the range."""
    return statement(
        "SELECT item_id, argMax(sent_name, ts) AS item_name FROM purchases "
        "ARRAY JOIN item_ids AS item_id, "
        "arrayMap(i -> JSONExtractString(i, 'item_name'), "
        "JSONExtractArrayRaw(properties['items'])) AS sent_name "
        f"WHERE {events_where(plan, facts)} AND hasAny(item_ids, {{ids:Array(String)}}) "
        "AND item_id IN {ids:Array(String)} AND sent_name != '' GROUP BY item_id",
        plan,
        facts,
        ids=ids,
    )


def _errors_where(plan: Plan, facts: Facts) -> str:
    return f"{events_where(plan, facts)} AND name = 'exception'"


def errors_total(plan: Plan, facts: Facts) -> Statement:
    return statement(
        "SELECT count() AS errors, countIf(properties['fatal'] = 'true') AS fatal "
        f"FROM report_events WHERE {_errors_where(plan, facts)}",
        plan,
        facts,
    )


def errors_top(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        "SELECT properties['description'] AS description, count() AS count, "
        "countIf(properties['fatal'] = 'true') AS fatal, uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {_errors_where(plan, facts)} "
        "GROUP BY description ORDER BY count DESC, description LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def errors_pages(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        f"SELECT path AS value, count() AS count FROM report_events "
        f"WHERE {_errors_where(plan, facts)} "
        "GROUP BY value ORDER BY count DESC, value LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


# GET /metrics/properties ----------------------------------------------------------------------


def property_keys(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        "SELECT arrayJoin(mapKeys(properties)) AS key, count() AS events "
        f"FROM report_events WHERE {events_where(plan, facts)} GROUP BY key "
        "ORDER BY events DESC, key LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def property_values(plan: Plan, facts: Facts, key: str, limit: int) -> Statement:
    return statement(
        "SELECT properties[{prop_key:String}] AS value, count() AS events, "
        "uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {events_where(plan, facts)} "
        "AND mapContains(properties, {prop_key:String}) "
        "GROUP BY value ORDER BY events DESC, value LIMIT {limit:UInt32}",
        plan,
        facts,
        prop_key=key,
        limit=limit,
    )


# GET /metrics/realtime ------------------------------------------------------------------------

_RECENT = (
    "project_id = {project:String} AND ts >= now64(3, 'UTC') - toIntervalSecond({window:UInt32}) "
    f"AND {COUNTED_SQL}"
)


def realtime(project_id: str, window_seconds: int, limit: int) -> Statement:
    """The page each recent visitor is on (their latest page view), by visitors, up to
    ``limit`` of them, and in each row ``total`` the recent visitors (those without a page
    view too: their row, ``value = ''``, comes first when there is one). One statement, one
    read of the window's granules: two, the visitors apart, took 10.6 against 7.4 ms p50 at
    10M events (docs/benchmarks.md, "realtime in one statement")."""
    return Statement(
        "SELECT value, visitors, total FROM (SELECT page AS value, count() AS visitors, "
        "sum(count()) OVER () AS total FROM (SELECT visitor_id, "
        "argMaxIf(path, ts, name = 'page_view') AS page "
        f"FROM events WHERE {_RECENT} GROUP BY visitor_id) GROUP BY value) "
        "ORDER BY value != '', visitors DESC, value LIMIT {limit:UInt32} + 1",
        {"project": project_id, "window": window_seconds, "limit": limit},
    )


def realtime_minutes(project_id: str, minutes: int) -> Statement:
    """Distinct visitors per UTC minute of the last ``minutes`` minutes, the current one last,
    a row for every minute (zeros filled in): ``time`` (``YYYY-MM-DDTHH:MM``), ``visitors``.
    A visitor counts in each minute they had an event in."""
    return Statement(
        "SELECT formatDateTime(m, '%Y-%m-%dT%H:%i', 'UTC') AS time, visitors FROM ("
        "SELECT toStartOfMinute(toDateTime(ts, 'UTC')) AS m, uniqExact(visitor_id) AS visitors "
        "FROM events WHERE project_id = {project:String} "
        "AND ts >= toStartOfMinute(now('UTC')) - toIntervalMinute({back:UInt32}) "
        f"AND {COUNTED_SQL} GROUP BY m "
        "ORDER BY m WITH FILL "
        "FROM toStartOfMinute(now('UTC')) - toIntervalMinute({back:UInt32}) "
        "TO toStartOfMinute(now('UTC')) + toIntervalMinute(1) STEP toIntervalMinute(1))",
        {"project": project_id, "back": minutes - 1},
    )


def realtime_sessions(project_id: str, window_seconds: int, limit: int) -> Statement:
    """The sources and countries of the recent visitors: each visitor once, by the session of
    their latest event (its source and country, as every report attributes a session: its
    first event's), up to ``limit`` of each kind by visitors: ``kind`` (``source`` or
    ``country``), ``value``, ``visitors``. Sessions begun more than a day before the window's
    start are not looked up (their visitors count under neither)."""
    return Statement(
        "SELECT kv.1 AS kind, kv.2 AS value, count() AS visitors FROM ("
        "SELECT session_id, toString(max(source)) AS src, toString(max(country)) AS ctry "
        "FROM sessions WHERE project_id = {project:String} "
        "AND session_day >= toDate(now64(3, 'UTC') - toIntervalSecond({window:UInt32})) - 1 "
        "AND session_id IN (SELECT argMax(session_id, ts) FROM events "
        f"WHERE {_RECENT} GROUP BY visitor_id) GROUP BY session_id) "
        "ARRAY JOIN [('source', src), ('country', ctry)] AS kv "
        "GROUP BY kind, value ORDER BY kind, visitors DESC, value LIMIT {limit:UInt32} BY kind",
        {"project": project_id, "window": window_seconds, "limit": limit},
    )
