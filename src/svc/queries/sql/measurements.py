"""The statements of the browser script's extensions' reports (issue 20; docs/api.md, "Page
measurements"): engaged time and scroll depth per page and Web Vitals from
``page_measurements`` (storage/migrations/013: the page measurements alone, with typed
figures), outbound links, downloads and 404s from ``report_events`` (the events other than
plain page views). Each takes the range, the time zone and the filters of every report
(:func:`measured_where`, :func:`svc.queries.sql.sessions.events_where`)."""

from __future__ import annotations

from collections.abc import Sequence

from svc.queries.plan import Facts, Plan
from svc.queries.sql.breakdowns import only_values
from svc.queries.sql.series import INTERVALS, LABELS
from svc.queries.sql.sessions import events_where, session_rows_where
from svc.queries.sql.statement import RANGE_WHERE, Statement, statement
from svc.schema.measurements import VITALS, Vital

#: The columns a vitals breakdown may group by: an expression over a ``page_measurements`` row.
VITAL_GROUPS = {"page": "path", "device": "device", "country": "country"}


def measured_where(plan: Plan, facts: Facts, name: str) -> str:
    """WHERE over ``page_measurements``: the range, the event filters (on the measurement
    event's own page, hostname, properties), and with session filters, membership in a
    session that passes them (as :func:`events_where` for the events); events named ``name``."""
    where = f"{RANGE_WHERE} AND {plan.event_filter} AND name = '{name}'"
    if plan.has_session_filters:
        sessions = (
            f"SELECT s.session_id FROM sessions AS s FINAL WHERE {session_rows_where(plan, facts)}"
        )
        where += f" AND session_id IN ({sessions})"
    return where


# engaged time and scroll depth --------------------------------------------------------------


def _engaged_views(plan: Plan, facts: Facts, paths: bool) -> str:
    """One row per (session, page) with engagement: its key ``k``, whose low 64 bits are the
    page's hash (:data:`_PAGE_HASH`), its engaged time ``e`` (the sum of its ``engaged_ms``)
    and depth ``d`` (the largest ``scroll_pct``).

    Keyed by one UInt128, the session id in the high 64 bits and ``cityHash64(path)`` in the
    low: one wide number groups faster than the two numbers (session, hash) as two keys, and
    much faster than a string key, under the reads' spill settings (2M engaged page views of
    a 10M-event project, loaded host, alternated: 439 -> 280 ms for the totals; two keys
    against a string key had been 218 against 673 ms). It is the pair itself, not a hash of
    it: two pages merge only if one session viewed two paths of the same 64-bit hash."""
    only = " AND path IN {paths:Array(String)}" if paths else ""
    return (
        "SELECT bitOr(bitShiftLeft(toUInt128(session_id), 64), cityHash64(path)) AS k, "
        "sum(engaged_ms) AS e, max(scroll_pct) AS d "
        f"FROM page_measurements WHERE {measured_where(plan, facts, 'engagement')}{only} "
        "GROUP BY k"
    )


#: The page's hash of a key ``k`` of :func:`_engaged_views` (its low 64 bits).
_PAGE_HASH = "toUInt64(bitAnd(k, toUInt128(18446744073709551615)))"

_ENGAGED_FIGURES = (
    "count() AS views, quantileExactInclusive(0.5)(e) AS median_ms, avg(e) AS mean_ms, "
    "countIf(d >= 25) AS d25, countIf(d >= 50) AS d50, countIf(d >= 75) AS d75, "
    "countIf(d >= 100) AS d100"
)


def engagement_by_page(plan: Plan, facts: Facts, paths: Sequence[str]) -> Statement:
    """Per page of ``paths``: the (session, page) views with engagement ``views``, the median
    and mean engaged time (ms) over them, and how many reached 25/50/75/100 % of the page.
    Grouped by the paths' hashes, which are named again from ``paths``."""
    return statement(
        "SELECT p.path AS value, m.views AS views, m.median_ms AS median_ms, "
        "m.mean_ms AS mean_ms, m.d25 AS d25, m.d50 AS d50, m.d75 AS d75, m.d100 AS d100 "
        f"FROM (SELECT {_PAGE_HASH} AS h, {_ENGAGED_FIGURES} "
        f"FROM ({_engaged_views(plan, facts, True)}) GROUP BY h) AS m "
        "INNER JOIN (SELECT arrayJoin({paths:Array(String)}) AS path, cityHash64(path) AS h) "
        "AS p ON m.h = p.h",
        plan,
        facts,
        paths=list(paths),
    )


def engaged_time(plan: Plan, facts: Facts) -> Statement:
    """The engaged time in all (``engaged_ms``) of the page visits the engagement figures
    count, without grouping them: a visit's engaged time is the sum of its events', so the
    sum over the visits is the sum over the events (on 10M events: the scan of the grouped
    read without its grouping of 2M visits, 471 -> 65 ms)."""
    return statement(
        "SELECT sum(engaged_ms) AS engaged_ms "
        f"FROM page_measurements WHERE {measured_where(plan, facts, 'engagement')}",
        plan,
        facts,
    )


# Web Vitals ---------------------------------------------------------------------------------


def _vital_columns(v: Vital) -> str:
    n = v.name
    return (
        f"count({n}) AS {n}_n, quantileExactInclusive(0.75)({n}) AS {n}_p75, "
        f"countIf({n} <= {v.good}) AS {n}_good, countIf({n} > {v.poor}) AS {n}_poor"
    )


_VITAL_FIGURES = ", ".join(_vital_columns(v) for v in VITALS)


def vitals_by(
    plan: Plan,
    facts: Facts,
    group: str,
    limit: int,
    offset: int,
    order: str,
    only: Sequence[str] | None = None,
) -> Statement:
    """Per value of ``group`` (:data:`VITAL_GROUPS`): the page loads measured ``samples``, and
    per vital its samples, p75 (linear interpolation between the closest ranks, exact) and
    the samples good (at most Google's ``good`` threshold) and poor (above ``poor``); ordered
    by samples or value and paged, with ``total_rows``; with ``only``, of those values."""
    column = VITAL_GROUPS[group]
    direction = "DESC" if order.startswith("-") else "ASC"
    by = "value" if order.lstrip("-+") == "value" else "samples"
    then = "" if by == "value" else ", value"
    keep, values = only_values(only, column, "AND")
    return statement(
        f"SELECT {column} AS value, count() AS samples, {_VITAL_FIGURES}, "
        "count() OVER () AS total_rows "
        f"FROM page_measurements WHERE {measured_where(plan, facts, 'web_vitals')}{keep}"
        f"GROUP BY value ORDER BY {by} {direction}{then} "
        "LIMIT {limit:UInt32} OFFSET {offset:UInt32}",
        plan,
        facts,
        limit=limit,
        offset=offset,
        **values,
    )


def vitals_total(plan: Plan, facts: Facts) -> Statement:
    """The figures of :func:`vitals_by` over every page load in scope."""
    return statement(
        f"SELECT count() AS samples, {_VITAL_FIGURES} "
        f"FROM page_measurements WHERE {measured_where(plan, facts, 'web_vitals')}",
        plan,
        facts,
    )


def vitals_series(plan: Plan, facts: Facts, interval: str) -> Statement:
    """The figures of :func:`vitals_by` per bucket of ``interval`` (by event time, in the
    range's time zone, labelled as the time series label them)."""
    bucket, label = INTERVALS[interval], LABELS[interval]
    return statement(
        f"SELECT {label} AS time, * FROM (SELECT {bucket.format(t='ts')} AS bucket, "
        f"count() AS samples, {_VITAL_FIGURES} "
        f"FROM page_measurements WHERE {measured_where(plan, facts, 'web_vitals')} "
        "GROUP BY bucket)",
        plan,
        facts,
    )


# outbound links, downloads, 404s --------------------------------------------------------------

#: The breakdown kinds over ``report_events``: event name and the value each row is of.
CLICK_KINDS = {
    "outbound": ("outbound", "properties['url']"),
    "download": ("download", "properties['url']"),
    "404": ("404", "path"),
}


def clicks(
    plan: Plan,
    facts: Facts,
    kind: str,
    limit: int,
    offset: int,
    order: str,
    only: Sequence[str] | None = None,
) -> Statement:
    """Per target (the link's URL; for ``404`` the page): its events ``events`` and distinct
    visitors, of the events of the kind that pass the filters, ordered and paged, with
    ``total_rows``; with ``only``, of those targets."""
    name, value = CLICK_KINDS[kind]
    by = order.lstrip("-+")
    direction = "DESC" if order.startswith("-") else "ASC"
    then = "" if by == "value" else ", value"
    keep, values = only_values(only, value, "AND")
    return statement(
        f"SELECT {value} AS value, count() AS events, uniqExact(visitor_id) AS visitors, "
        "count() OVER () AS total_rows "
        f"FROM report_events WHERE {events_where(plan, facts)} AND name = {{kind_name:String}}"
        f"{keep}GROUP BY value ORDER BY {by} {direction}{then} "
        "LIMIT {limit:UInt32} OFFSET {offset:UInt32}",
        plan,
        facts,
        kind_name=name,
        limit=limit,
        offset=offset,
        **values,
    )


def not_found_referrers(plan: Plan, facts: Facts, paths: Sequence[str], per_page: int) -> Statement:
    """For each 404 page of ``paths``: its referrers (``''``: none) with their events, the
    ``per_page`` most frequent."""
    return statement(
        "SELECT path, referrer, count() AS events FROM report_events "
        f"WHERE {events_where(plan, facts)} AND name = '404' AND path IN {{paths:Array(String)}} "
        "GROUP BY path, referrer ORDER BY path, events DESC, referrer "
        "LIMIT {per_page:UInt32} BY path",
        plan,
        facts,
        paths=list(paths),
        per_page=per_page,
    )
