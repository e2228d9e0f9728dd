"""Daily rollups of the sessions table (``storage/migrations/003_session_rollups.sql``).

A day is rolled up once it is over (its sessions have ended: one hour past its end), and again
whenever events received later change it: a late event (sent with an old ``ts``) or a session
that went on. Every computation of a day writes its rows under a new version and then names
that version in ``rollup_days``; readers take only the named version, so a day is never seen
half-written, and a computation interrupted by a crash is simply not used. Rows of versions no
longer current are deleted some minutes later (:data:`KEEP_OLD_VERSIONS`).

Rollups answer the reports without filters (GET /metrics) for the days wholly inside the
range; the days at its ends and the days not rolled up yet are read from the sessions table.
A rolled day's sessions are also written to ``rolled_sessions`` (migration 11), in the shape
the breakdowns with filters on the page and session dimensions read.

Beside a day's totals (dimension ''), whose ``visitors`` are the distinct visitor ids of its
sessions, a ``next_day`` row holds in ``visitors`` how many of those ids have an event on the
next UTC day (sessions that cross midnight): with them the time series adds up the exact
visitors of a span of days (svc.queries.series_visitors); and ``start_hour`` rows hold the
totals' figures per UTC hour the day's sessions began in (an hourly series' sessions), and
``event_source:<name>`` rows the sessions with an event of that name per source (GET /metrics
under ``event:is:<name>``; their ``event_source`` marker row's ``sessions`` is 1), and
``event_only`` rows the sessions whose every event has one name (GET /metrics under
``event:is_not:<name>`` takes them away; marker row ``event_only``, ''), and
``<dimension>@<section>`` rows the figures per value of each session dimension of the
sessions with an event in a section of the site (svc.schema.sections: a breakdown under a
filter on the page that matches one section's paths, all of them; marker row ``section``,
''). Days
rolled up before those rows existed get them once, under their current version, at the
first pass after start (:meth:`Rollups.fill_added_rows`): small statements a day (1.2 s for
the ``next_day`` rows of the 30 days of a 100M-event project), not the day's whole rollup.
No migration re-rolls the days (as migration 9 did by emptying ``rollup_days``): that would
compute every kept day whole again, and a day before a project's retention horizon
(svc.retention) is never rolled up again, so its rollups would be lost; until a day has its
rows, the series reads it as before (visitors merged, sessions from the session rows).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

from svc.schema.dimensions import DIMENSIONS
from svc.schema.measurements import COUNTED_SQL
from svc.schema.page_by import (
    PAGE_BY_DIMENSIONS,
    PAGE_BY_VALUES,
    page_by_dimension,
    page_by_values,
)
from svc.schema.sections import section_dimension, section_sql
from svc.schema.steps import STEP_KEY_SQL
from svc.storage.events import EventStore
from svc.timeutil import as_date

log = logging.getLogger(__name__)


def rollup_dimensions() -> dict[str, str]:
    """Every dimension rolled up from the sessions table and its value on a row of it ('' holds
    the day's totals): the session dimensions of the query API. The page dimension is rolled
    up from the (session, page) table beside them, the event name and the custom properties
    from the report events and the hostname from the events."""
    dims = {"": "''"}
    dims.update((d.name, d.session_column()) for d in DIMENSIONS.values() if d.level == "session")
    return dims


#: A day is rolled up this long after its end (sessions that began on it have ended).
SETTLE = timedelta(hours=1)
#: Late events are found among the events received since the last check, less this margin
#: (events still in the spool when the last check ran).
RECHECK_MARGIN = timedelta(minutes=10)
#: A day's rollups of an older version are deleted this long after a newer one is current.
KEEP_OLD_VERSIONS = timedelta(minutes=10)
#: At start, the late events of this long ago are looked for (ts may be 7 days in the past).
FIRST_CHECK = timedelta(days=8)


def _day_sql() -> str:
    pairs = ", ".join(f"('{name}', toString({expr}))" for name, expr in rollup_dimensions().items())
    return f"""
INSERT INTO session_rollups
SELECT project_id, dv.1 AS dimension, session_day, dv.2 AS value,
    count(), sum(pageviews), sum(events), countIf(pageviews = 1 AND events = 1),
    countIf(pageviews > 0), sum(dateDiff('millisecond', first_ts, last_ts)),
    uniqExact(visitor_id), {{version:UInt64}}
FROM sessions FINAL
ARRAY JOIN [{pairs}] AS dv
WHERE project_id = {{project:String}} AND session_day = {{day:Date}}
GROUP BY project_id, session_day, dimension, value
"""


def _per_value_sql(dimension: str, rows: str, where: str = "1") -> str:
    """Rows of ``dimension`` (an SQL expression over a row ``p`` of ``rows``: the name as a
    literal, or made from a column) for a day from ``rows`` (``session_id``, ``value``,
    ``pv``, ``ev``: one per session of the day and value) that meet ``where``, with the
    figures of the sessions in each (as a breakdown by an event dimension counts them: the
    value's page views and events, bounce and duration of the whole session)."""
    return f"""
INSERT INTO session_rollups
SELECT {{project:String}}, {dimension} AS dimension_name, {{day:Date}}, p.value,
    count(), sum(p.pv), sum(p.ev), countIf(s.pageviews = 1 AND s.events = 1),
    countIf(s.pageviews > 0), sum(dateDiff('millisecond', s.first_ts, s.last_ts)),
    uniqExact(s.visitor_id), {{version:UInt64}}
FROM ({rows}) AS p
INNER JOIN (
    SELECT session_id, visitor_id, pageviews, events, first_ts, last_ts FROM sessions FINAL
    WHERE project_id = {{project:String}} AND session_day = {{day:Date}}
) AS s ON s.session_id = p.session_id
WHERE {where}
GROUP BY dimension_name, p.value
"""


def _day_events(long: bool) -> str:
    """The events of the sessions of a day: from a day before its start to a day after it,
    and with ``long`` those of its long sessions (``{long_ids}``: storage/migrations/012)
    from ``{long0}`` to ``{long1}``, their first and last events outside those days."""
    near = "ts >= {day:Date} - INTERVAL 1 DAY AND ts < {day:Date} + INTERVAL 2 DAY"
    if long:
        near = (
            f"(({near}) OR (session_id IN {{long_ids:Array(UInt64)}} "
            "AND ts >= {long0:DateTime64(3, 'UTC')} AND ts <= {long1:DateTime64(3, 'UTC')}))"
        )
    return f"project_id = {{project:String}} AND {near} AND toDate(session_start) = {{day:Date}}"


def _event_day_sqls(long: bool) -> tuple[str, ...]:
    """The statements that roll up a day from the events of its sessions (the custom
    properties, the hostnames; the event names: :func:`_event_name_sqls`); with ``long``, for
    a day with long sessions."""
    day_events = _day_events(long)
    # The custom properties of the events of a day's sessions, one row per (session, key,
    # value): the events with that value of the key, page views among them.
    property_rows = f"""
SELECT session_id, key, value, countIf(name = 'page_view') AS pv, count() AS ev
FROM report_events ARRAY JOIN mapKeys(properties) AS key, mapValues(properties) AS value
WHERE {day_events} AND notEmpty(properties)
GROUP BY session_id, key, value"""
    # The keys with more values that day than the rollups hold (``{max_values}``).
    skipped_keys = (
        f"SELECT key FROM ({property_rows}) GROUP BY key "
        "HAVING uniqExact(value) > {max_values:UInt64}"
    )
    # Custom properties: per key and value, as a breakdown by ``prop:<key>`` counts them (the
    # events that carry the key); a key with too many values that day is named in a
    # ``prop-skipped`` row instead, and its breakdown reads that day from the events.
    properties = _per_value_sql(
        "concat('prop:', p.key)", property_rows, where=f"p.key NOT IN ({skipped_keys})"
    )
    skipped_properties = f"""
INSERT INTO session_rollups (project_id, dimension, session_day, value, version)
SELECT {{project:String}}, 'prop-skipped', {{day:Date}}, key, {{version:UInt64}}
FROM ({skipped_keys})
"""
    # The hostname: per hostname, the events of the day's sessions on it.
    hostnames = _per_value_sql(
        "'hostname'",
        "SELECT session_id, toString(hostname) AS value, countIf(name = 'page_view') AS pv, "
        f"count() AS ev FROM events WHERE {day_events} AND {COUNTED_SQL} "
        "GROUP BY session_id, value",
    )
    return hostnames, properties, skipped_properties


#: The page dimension: one row per page with page views that day (a page breakdown counts
#: page views only).
_PAGE_DAY_SQL = _per_value_sql(
    "'page'",
    "SELECT session_id, path AS value, pageviews AS pv, pageviews AS ev FROM session_pages FINAL "
    "WHERE project_id = {project:String} AND session_day = {day:Date} AND pageviews > 0",
)

#: _event_day_sqls for a day without long sessions, and for one with them.
_EVENT_DAY_SQLS = {False: _event_day_sqls(False), True: _event_day_sqls(True)}


def _event_names_sql(long: bool) -> str:
    """Per session of a day and name of its events other than page views (from the report
    events): ``session_id``, ``value`` (the name) and ``ev`` (how many)."""
    return (
        "SELECT session_id, toString(name) AS value, count() AS ev FROM report_events "
        f"WHERE {_day_events(long)} AND name != 'page_view' GROUP BY session_id, value"
    )


def _counted_marker_sql(dimension: str) -> str:
    """The marker row (``dimension``, '') that says a day has its ``dimension`` rows, whose
    ``sessions`` is 1: a reader sums it over the rolled days to count the days that have them."""
    return (
        "INSERT INTO session_rollups (project_id, dimension, session_day, value, sessions, "
        f"version) VALUES ({{project:String}}, '{dimension}', {{day:Date}}, '', 1, "
        "{version:UInt64})"
    )


def _event_name_sqls(long: bool, dimensions: tuple[str, ...]) -> tuple[str, ...]:
    """The rows of the event names of a day in ``dimensions``: ``event`` (per name, the
    day's sessions with an event of that name, as a breakdown by the event name counts them:
    the name's page views and events, bounce and duration of the whole session) and
    ``event_source`` (the same per name and source of those sessions: dimension
    ``event_source:<name>``, the source as the value; GET /metrics under ``event:is:<name>``
    takes its rolled days' traffic sources from them, svc.queries.metrics). The other events
    from the report events, the page views (``page_view``) from the sessions, in one pass
    each over the day's sessions; with ``event_source``, then the marker row (``event_source``,
    '') that says the day has those rows, whose ``sessions`` is 1 (a reader sums it over the
    rolled days to count the days that have them)."""
    pairs = {
        "event": ("'event'", "{value}"),
        "event_source": ("concat('event_source:', {value})", "toString({source})"),
    }

    def array(value: str, source: str) -> str:
        chosen = (pairs[d] for d in dimensions)
        return ", ".join(
            f"({d.format(value=value)}, {v.format(value=value, source=source)})" for d, v in chosen
        )

    source = rollup_dimensions()["source"]
    names = _event_names_sql(long)
    joined = (
        f"SELECT p.value AS value, p.ev AS ev, s.source AS source, s.pageviews AS pageviews, "
        "s.events AS events, s.dur AS dur, s.visitor_id AS visitor_id "
        f"FROM ({names}) AS p INNER JOIN (SELECT session_id, visitor_id, pageviews, events, "
        f"dateDiff('millisecond', first_ts, last_ts) AS dur, {source} AS source "
        "FROM sessions FINAL WHERE project_id = {project:String} AND session_day = {day:Date}"
        ") AS s ON s.session_id = p.session_id"
    )
    others = f"""
INSERT INTO session_rollups
SELECT {{project:String}}, dv.1 AS dimension_name, {{day:Date}}, dv.2 AS name_value,
    count(), 0, sum(ev), countIf(pageviews = 1 AND events = 1), countIf(pageviews > 0),
    sum(dur), uniqExact(visitor_id), {{version:UInt64}}
FROM ({joined}) ARRAY JOIN [{array("value", "source")}] AS dv
GROUP BY dimension_name, name_value
"""
    views = f"""
INSERT INTO session_rollups
SELECT {{project:String}}, dv.1 AS dimension_name, {{day:Date}}, dv.2 AS name_value,
    count(), sum(pageviews), sum(pageviews), countIf(pageviews = 1 AND events = 1),
    count(), sum(dateDiff('millisecond', first_ts, last_ts)),
    uniqExact(visitor_id), {{version:UInt64}}
FROM sessions FINAL ARRAY JOIN [{array("'page_view'", source)}] AS dv
WHERE project_id = {{project:String}} AND session_day = {{day:Date}} AND pageviews > 0
GROUP BY dimension_name, name_value
"""
    if "event_source" not in dimensions:
        return others, views
    return others, views, _counted_marker_sql("event_source")


#: _event_name_sqls of both dimensions (a day's rollup), and of ``event_source`` alone (a day
#: rolled up before the rollups had it: :meth:`Rollups.fill_added_rows`), for a day without
#: long sessions and for one with them.
_EVENT_NAME_SQLS = {
    long: _event_name_sqls(long, ("event", "event_source")) for long in (False, True)
}
_EVENT_SOURCE_SQLS = {long: _event_name_sqls(long, ("event_source",)) for long in (False, True)}


def _event_only_sqls(long: bool) -> tuple[str, ...]:
    """The ``event_only`` rows of a day: per event name (not ``page_view``), the day's
    sessions whose every counted event has that name (dimension ``event_only``, the name as
    the value), with what GET /metrics under ``event:is_not:<name>`` takes from the day's
    totals for them: sessions, events, duration (no page views, so no bounces), and the
    visitors every session of whom that day is such a session (a visitor with another
    session keeps counting); and the same sessions per source (dimension
    ``event_only_source:<name>``). Then the marker row (``event_only``, '') that says the
    day has those rows, whose ``sessions`` is 1. Only sessions without page views can be
    such, and their visitors' other sessions are counted over the day's sessions once."""
    source = rollup_dimensions()["source"]
    names = _event_names_sql(long)
    sessions = (
        "SELECT session_id, visitor_id, events, dur, source, visitor_sessions FROM ("
        "SELECT session_id, visitor_id, pageviews, events, "
        f"dateDiff('millisecond', first_ts, last_ts) AS dur, {source} AS source, "
        "count() OVER (PARTITION BY visitor_id) AS visitor_sessions "
        "FROM sessions FINAL WHERE project_id = {project:String} AND session_day = {day:Date}"
        ") WHERE pageviews = 0"
    )
    only = (
        "SELECT p.value AS value, p.ev AS ev, s.dur AS dur, s.source AS source, "
        "s.visitor_id AS visitor_id, s.visitor_sessions AS visitor_sessions, "
        "count() OVER (PARTITION BY p.value, s.visitor_id) AS only_sessions "
        f"FROM ({names}) AS p INNER JOIN ({sessions}) AS s "
        "ON s.session_id = p.session_id AND s.events = p.ev"
    )
    rows = f"""
INSERT INTO session_rollups
SELECT {{project:String}}, dv.1 AS dimension_name, {{day:Date}}, dv.2 AS name_value,
    count(), 0, sum(ev), 0, 0, sum(dur),
    uniqExactIf(visitor_id, only_sessions = visitor_sessions), {{version:UInt64}}
FROM ({only})
ARRAY JOIN [('event_only', value), (concat('event_only_source:', value), toString(source))] AS dv
GROUP BY dimension_name, name_value
"""
    return rows, _counted_marker_sql("event_only")


#: _event_only_sqls for a day without long sessions, and for one with them.
_EVENT_ONLY_SQLS = {long: _event_only_sqls(long) for long in (False, True)}


#: A day's long sessions: their ids, and their first and last events outside the day and the
#: next (storage/migrations/012).
_LONG_SESSIONS_SQL = (
    "SELECT session_id, min(first_ts), max(last_ts) FROM long_sessions "
    "WHERE project_id = {project:String} AND session_day = {day:Date} GROUP BY session_id"
)


#: The day's sessions as the reports with filters read them (storage/migrations/011): each
#: with ``multi`` (its visitor has another session that day), its duration, and the hashes of
#: the paths of its page views and of its other events, one per event.
_SESSIONS_DAY_SQL = """
INSERT INTO rolled_sessions
SELECT s.project_id, s.session_day, {version:UInt64}, s.visitor_id,
    s.visitor_id IN (
        SELECT visitor_id FROM sessions FINAL
        WHERE project_id = {project:String} AND session_day = {day:Date}
        GROUP BY visitor_id HAVING count() > 1
    ),
    s.pageviews, s.events, dateDiff('millisecond', s.first_ts, s.last_ts),
    s.entry_page, tupleElement(s.exit, 2), s.hostname, s.source, s.channel, s.referrer_host,
    s.utm_source, s.utm_medium, s.utm_campaign, s.utm_content, s.utm_term,
    s.country, s.region, s.city, s.browser, s.browser_version, s.os, s.os_version, s.device,
    p.page_hashes, p.event_hashes
FROM sessions AS s FINAL
LEFT JOIN (
    SELECT session_id,
        arrayFlatten(groupArray(arrayWithConstant(pageviews, xxHash32(path)))) AS page_hashes,
        arrayFlatten(groupArray(arrayWithConstant(events - pageviews, xxHash32(path))))
            AS event_hashes
    FROM session_pages FINAL
    WHERE project_id = {project:String} AND session_day = {day:Date}
    GROUP BY session_id
) AS p ON p.session_id = s.session_id
WHERE s.project_id = {project:String} AND s.session_day = {day:Date}
"""

#: The paths of the events of the day's sessions, a ``path`` row each (the hashes of those a
#: filter on the page matches are worked out from them: svc.queries.run.Runner.facts).
_PATHS_DAY_SQL = """
INSERT INTO session_rollups (project_id, dimension, session_day, value, version)
SELECT DISTINCT {project:String}, 'path', {day:Date}, toString(path), {version:UInt64}
FROM session_pages
WHERE project_id = {project:String} AND session_day = {day:Date}
"""


def _next_day_sql(long: bool) -> str:
    """The ``next_day`` row of a day: how many distinct visitor ids of its sessions have a
    (counted) event on the next UTC day. A session that is not long (storage/migrations/012)
    has its events on its day and the next, so it has one there when its last event is; the
    events of a long one (``{long_ids}``) on that day are read."""
    next_day = "toDateTime64({day:Date} + 1, 3, 'UTC')"
    sessions = (
        "SELECT visitor_id AS v, last_ts, session_id FROM sessions FINAL "
        "WHERE project_id = {project:String} AND session_day = {day:Date}"
    )
    ids = f"SELECT v FROM ({sessions}) WHERE last_ts >= {next_day}"
    if long:
        ids = (
            f"{ids} AND session_id NOT IN {{long_ids:Array(UInt64)}} UNION ALL "
            "SELECT visitor_id AS v FROM events WHERE project_id = {project:String} "
            f"AND ts >= {next_day} AND ts < {next_day} + INTERVAL 1 DAY "
            "AND session_id IN {long_ids:Array(UInt64)} AND toDate(session_start) = {day:Date} "
            f"AND {COUNTED_SQL}"
        )
    return (
        "INSERT INTO session_rollups (project_id, dimension, session_day, value, visitors, "
        "version) SELECT {project:String}, 'next_day', {day:Date}, '', uniqExact(v), "
        f"{{version:UInt64}} FROM ({ids})"
    )


#: _next_day_sql for a day without long sessions, and for one with them.
_NEXT_DAY_SQLS = {False: _next_day_sql(False), True: _next_day_sql(True)}

#: The ``start_hour`` rows of a day: per UTC hour its sessions began in (the value: the
#: hour, ``YYYY-MM-DD HH:00:00``), their figures as the totals hold them; and a row of value
#: '' that says the day has them (a day may have sessions in few hours).
_START_HOUR_SQLS = (
    """
INSERT INTO session_rollups
SELECT {project:String}, 'start_hour', {day:Date},
    toString(toStartOfHour(toDateTime(first_ts, 'UTC'))) AS hour,
    count(), sum(pageviews), sum(events), countIf(pageviews = 1 AND events = 1),
    countIf(pageviews > 0), sum(dateDiff('millisecond', first_ts, last_ts)),
    uniqExact(visitor_id), {version:UInt64}
FROM sessions FINAL
WHERE project_id = {project:String} AND session_day = {day:Date}
GROUP BY hour
""",
    "INSERT INTO session_rollups (project_id, dimension, session_day, value, version) "
    "VALUES ({project:String}, 'start_hour', {day:Date}, '', {version:UInt64})",
)


def _day_sessions(columns: str) -> str:
    """The sessions of a day (``{day}``, ``{project}``) with the figures a rollup row sums,
    ``columns`` (SQL over a row of the sessions table) and ``multi``: whether the visitor has
    another session that day (the visitors of a group are then its sessions with ``multi`` 0
    and the distinct visitors of the others, as in ``rolled_sessions``)."""
    day = "project_id = {project:String} AND session_day = {day:Date}"
    return f"""
        SELECT session_id, visitor_id, pageviews, events, first_ts, last_ts, {columns},
            visitor_id IN (
                SELECT visitor_id FROM sessions FINAL WHERE {day}
                GROUP BY visitor_id HAVING count() > 1
            ) AS multi
        FROM sessions FINAL WHERE {day}"""


def _grouping_masks(names: list[str]) -> list[tuple[int, str]]:
    """Per column of ``names`` (the grouping sets each pair one of them with a key), the
    value of ``grouping(<names>)`` on that set's rows: a bit per argument, the first the
    highest, set where the set lacks it."""
    full = (1 << len(names)) - 1
    return [(full ^ (1 << (len(names) - 1 - i)), name) for i, name in enumerate(names)]


#: The most sections of a day that get ``section`` rows (the most (session, path) rows
#: first): a site whose every path is a section of its own would otherwise roll up a day's
#: sessions a row each. A filter whose section lacks them on a day reads ``rolled_sessions``.
SECTIONS_PER_DAY = 200


def _section_sqls() -> tuple[str, ...]:
    """The ``section`` rows of a day (svc.schema.sections): for each of its
    :data:`SECTIONS_PER_DAY` busiest sections and each rolled-up session dimension, under the
    dimension ``<dimension>@<section>`` (``@<section>`` the totals), the figures of the
    sessions with an event there as a filter on the page counts them: the section's page
    views and events, the bounce and duration of the whole session; then the marker row
    (``section``, '') that says the day has them. One statement: the day's sessions joined to
    their sections (an array each, 2.2M (session, section) rows for a 3.3M-event day), grouped
    by each dimension in one GROUPING SETS (3.6 s for that day; a row per (session, section,
    dimension) through an ARRAY JOIN grouped by name took 8.4 s). Visitors as in
    ``rolled_sessions``: the sessions of visitors with one session that day, and the distinct
    visitors of the others (a session is in a section's group once)."""
    dims = {name: expr for name, expr in rollup_dimensions().items() if name}
    names = list(dims)
    masks = _grouping_masks(names)
    dimension = ", ".join(f"g = {m}, '{section_dimension(n, '')}'" for m, n in masks)
    value = ", ".join(f"g = {m}, toString(`d_{n}`)" for m, n in masks)
    columns = ", ".join(f"{expr} AS `d_{name}`" for name, expr in dims.items())
    keys = ", ".join(f"`d_{name}`" for name in names)
    sets = ", ".join(["(section)", *(f"(section, `d_{name}`)" for name in names)])
    day = "project_id = {project:String} AND session_day = {day:Date}"
    section = section_sql("path")
    top = (
        f"SELECT {section} AS section FROM session_pages FINAL WHERE {day} "
        f"GROUP BY section ORDER BY count() DESC, section LIMIT {SECTIONS_PER_DAY}"
    )
    return (
        f"""
INSERT INTO session_rollups
SELECT {{project:String}}, concat(multiIf({dimension}, '{section_dimension("", "")}'), section),
    {{day:Date}}, multiIf({value}, ''), n, pv, ev, bounces, with_pv, duration_ms, visitors,
    {{version:UInt64}}
FROM (
    SELECT section, {keys}, grouping({keys}) AS g,
        count() AS n, sum(section_pv) AS pv, sum(section_ev) AS ev,
        countIf(s.pageviews = 1 AND s.events = 1) AS bounces, countIf(s.pageviews > 0) AS with_pv,
        sum(dateDiff('millisecond', s.first_ts, s.last_ts)) AS duration_ms,
        countIf(s.multi = 0) + uniqExactIf(s.visitor_id, s.multi = 1) AS visitors
    FROM ({_day_sessions(columns)}) AS s
    INNER JOIN (
        SELECT session_id, groupArray(section) AS sections, groupArray(pv) AS pvs,
            groupArray(ev) AS evs
        FROM (
            SELECT session_id, {section} AS section, sum(pageviews) AS pv, sum(events) AS ev
            FROM session_pages FINAL WHERE {day}
            GROUP BY session_id, section
        )
        WHERE section IN ({top})
        GROUP BY session_id
    ) AS p ON p.session_id = s.session_id
    ARRAY JOIN p.sections AS section, p.pvs AS section_pv, p.evs AS section_ev
    GROUP BY GROUPING SETS ({sets})
)
""",
        "INSERT INTO session_rollups (project_id, dimension, session_day, value, version) "
        "VALUES ({project:String}, 'section', {day:Date}, '', {version:UInt64})",
    )


#: The ``section`` rows of a day (they read the sessions and their pages alone).
_SECTION_SQLS = _section_sqls()


def _page_by_value_sqls() -> tuple[str, ...]:
    """The ``page|<dimension>:<value>`` rows of a day: for each of the
    :data:`PAGE_BY_VALUES` values of each of :data:`PAGE_BY_DIMENSIONS` with the most sessions
    that day (by the day's rows of that dimension, written before), per path the figures of
    the ``page`` rows over the sessions with that value (their page views there, bounce and
    duration of the whole session); then per dimension the values that have them
    (``page_by:<dimension>`` rows, the value), with the marker row (``page_by``, ''). One
    GROUPING SETS statement over the day's (session, page) rows with page views, a value
    outside a dimension's busiest left out of its set. Visitors as in ``rolled_sessions``."""
    dims = {name: rollup_dimensions()[name] for name in PAGE_BY_DIMENSIONS}
    names = list(dims)
    masks = _grouping_masks(names)
    day = "project_id = {project:String} AND session_day = {day:Date}"
    listed = ", ".join(f"'{name}'" for name in names)
    busiest = (
        f"SELECT dimension, value FROM session_rollups WHERE {day} "
        f"AND version = {{version:UInt64}} AND dimension IN ({listed}) "
        f"ORDER BY sessions DESC, value LIMIT {PAGE_BY_VALUES} BY dimension"
    )
    # (one set of the busiest (dimension, value) pairs: the same subquery in each test; a
    # has() over an array of them instead scanned it per row, 4.2-5.9 s against 2.5-2.6 s)
    columns = ", ".join(
        f"if(('{name}', toString({expr})) IN ({busiest}), toString({expr}), '\\0') AS `d_{name}`"
        for name, expr in dims.items()
    )
    keys = ", ".join(f"`d_{name}`" for name in names)
    dimension = ", ".join(
        f"g = {m}, concat('{page_by_dimension(n, '')}', `d_{n}`)" for m, n in masks
    )
    sets = ", ".join(f"(path, `d_{name}`)" for name in names)
    rows = f"""
INSERT INTO session_rollups
SELECT {{project:String}}, dimension, {{day:Date}}, path, n, pv, pv, bounces, n, duration_ms,
    visitors, {{version:UInt64}}
FROM (
    SELECT path, {keys}, grouping({keys}) AS g, multiIf({dimension}, '') AS dimension,
        count() AS n, sum(p.pageviews) AS pv,
        countIf(s.pageviews = 1 AND s.events = 1) AS bounces,
        sum(dateDiff('millisecond', s.first_ts, s.last_ts)) AS duration_ms,
        countIf(s.multi = 0) + uniqExactIf(s.visitor_id, s.multi = 1) AS visitors
    FROM (
        SELECT session_id, path, pageviews FROM session_pages FINAL
        WHERE {day} AND pageviews > 0
    ) AS p
    INNER JOIN ({_day_sessions(columns)}) AS s ON s.session_id = p.session_id
    GROUP BY GROUPING SETS ({sets})
)
WHERE NOT endsWith(dimension, '\\0')
"""
    # (a write cut short may leave the marker without some values: a reader then finds a
    # value without its page rows and reads rolled_sessions, never rows that are not there)
    marked = f"""
INSERT INTO session_rollups (project_id, dimension, session_day, value, version)
SELECT {{project:String}}, concat('{page_by_values("")}', dimension), {{day:Date}}, value,
    {{version:UInt64}} FROM ({busiest})
UNION ALL SELECT {{project:String}}, 'page_by', {{day:Date}}, '', {{version:UInt64}}
"""
    return (rows, marked)


#: The ``page|<dimension>:<value>`` rows of a day (they read the day's rows of those
#: dimensions, the sessions and their pages).
_PAGE_BY_VALUE_SQLS = _page_by_value_sqls()


def _visitor_steps_sqls(long: bool) -> tuple[str, ...]:
    """The ``visitor_steps`` rows of a day (storage/migrations/017 and 025): first, per step
    key, how many visitors of its sessions have it (session_rollups' ``step_visitors`` rows:
    the value the key, ``visitors``); then per visitor the time and step key of each of
    their counted events, and the ranks of their four most common distinct keys by those
    counts (0 the most common), in ascending order, 16 bits each (``rank_key``: the table is
    sorted by it); then the marker row (``visitor_steps``, '') that says the day has them."""
    day_events = f"FROM events WHERE {_day_events(long)} AND {COUNTED_SQL}"
    # the day's keys, most visitors first (max: a pass that wrote the rows twice counts once)
    ranked = (
        "SELECT groupArray(toUInt32(value)) FROM (SELECT value, max(visitors) AS v "
        "FROM session_rollups WHERE project_id = {project:String} "
        "AND dimension = 'step_visitors' AND session_day = {day:Date} "
        "AND version = {version:UInt64} GROUP BY value ORDER BY v DESC, value)"
    )
    return (
        f"""
INSERT INTO session_rollups (project_id, dimension, session_day, value, visitors, version)
SELECT {{project:String}}, 'step_visitors', {{day:Date}}, toString({STEP_KEY_SQL}) AS key,
    uniqExact(visitor_id), {{version:UInt64}}
{day_events}
GROUP BY key
""",
        f"""
INSERT INTO visitor_steps (project_id, session_day, version, visitor_id, ts, keys, rank_key)
WITH ({ranked}) AS ranked
SELECT {{project:String}}, {{day:Date}}, {{version:UInt64}}, visitor_id,
    groupArray(toDateTime(ts, 'UTC')), groupArray({STEP_KEY_SQL}) AS step_keys,
    arrayFold((packed, rank) -> packed * 65536 + least(rank, 65535), arrayResize(
        arraySort(arrayDistinct(arrayMap(k -> toUInt32(transform(k, ranked,
            range(toUInt32(length(ranked))), toUInt32(4294967295))), step_keys))), 4, 0),
        toUInt64(0))
{day_events}
GROUP BY visitor_id
""",
        "INSERT INTO session_rollups (project_id, dimension, session_day, value, version) "
        "VALUES ({project:String}, 'visitor_steps', {day:Date}, '', {version:UInt64})",
    )


#: _visitor_steps_sqls for a day without long sessions, and for one with them.
_VISITOR_STEPS_SQLS = {long: _visitor_steps_sqls(long) for long in (False, True)}

#: The rows added to the rollups after days were rolled up without them, and the marker row
#: (dimension, value) of each that every day rolled up since has.
_ADDED_ROWS = (
    ("next_day", ""),
    ("start_hour", ""),
    ("event_source", ""),
    ("visitor_steps", ""),
    ("event_only", ""),
    ("section", ""),
    ("page_by", ""),
)

#: The statements that write each kind of :data:`_ADDED_ROWS` that reads the day's events, for
#: a day without long sessions and for one with them (the ``start_hour`` rows read the
#: sessions alone: :data:`_START_HOUR_SQLS`).
_ADDED_SQLS: dict[str, dict[bool, tuple[str, ...]]] = {
    "next_day": {long: (_NEXT_DAY_SQLS[long],) for long in (False, True)},
    "event_source": _EVENT_SOURCE_SQLS,
    "visitor_steps": _VISITOR_STEPS_SQLS,
    "event_only": _EVENT_ONLY_SQLS,
}

#: The kinds of :data:`_ADDED_ROWS` a day gets only with at least
#: ``rollup_section_min_sessions`` sessions: their statements, and the marker row alone that
#: a smaller day gets instead (its reports read its rolled sessions: six days of a test
#: store's few sessions took 1.6 s of their 5.5 s rollup in these statements, planning them).
_SIZED_SQLS: dict[str, tuple[tuple[str, ...], str]] = {
    "section": (_SECTION_SQLS, _SECTION_SQLS[-1]),
    "page_by": (
        _PAGE_BY_VALUE_SQLS,
        "INSERT INTO session_rollups (project_id, dimension, session_day, value, version) "
        "VALUES ({project:String}, 'page_by', {day:Date}, '', {version:UInt64})",
    ),
}

#: The sessions of a day under a version (its totals row).
_DAY_SESSIONS_SQL = (
    "SELECT max(sessions) FROM session_rollups WHERE project_id = {project:String} "
    "AND dimension = '' AND value = '' AND session_day = {day:Date} AND version = {version:UInt64}"
)

#: The current version of every rolled-up day without the marker row ``{dimension}``,
#: ``{value}`` (rolled up before the rollups had those rows).
_WITHOUT_SQL = (
    "SELECT project_id, session_day, version FROM (SELECT project_id, session_day, "
    "max(version) AS version FROM rollup_days GROUP BY project_id, session_day) "
    "WHERE (project_id, session_day, version) NOT IN (SELECT project_id, session_day, version "
    "FROM session_rollups WHERE dimension = {dimension:String} AND value = {value:String})"
)

#: The tables of rolled-up rows, each day's under its versions.
_ROLLED_TABLES = ("session_rollups", "rolled_sessions", "visitor_steps")

#: The tables of :data:`_ROLLED_TABLES` that hold rows of a day under a version before
#: ``{stale}``: the only ones worth a DELETE. A DELETE is a mutation that visits every part of
#: the table's partition though it matches nothing (40-150 ms each on a small store), and the
#: first rollup of a day, most of them, has no older version to delete.
_STALE_TABLES_SQL = " UNION ALL ".join(
    f"SELECT '{table}' FROM (SELECT 1 FROM {table} WHERE project_id = {{project:String}} "
    "AND session_day = {day:Date} AND version < {stale:UInt64} LIMIT 1)"
    for table in _ROLLED_TABLES
)


#: A lightweight DELETE that returns once the engine has it, not once it is applied.
_IN_THE_BACKGROUND: Final = {"lightweight_deletes_sync": 0}


class Rollups:
    """Keeps ``session_rollups`` and ``rolled_sessions`` current; :meth:`refresh` is called
    now and then (the runtime's housekeeping), from a worker thread."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._sql = _day_sql()
        self._checked_since: datetime | None = None
        self._last_version: int | None = None
        self.days_computed = 0  # since start, for /health
        self._filled = False  # fill_added_rows ran
        #: How long the last day's computation held the store's write lock (the loader waits
        #: that long; ingestion does not: it appends to the spool).
        self.last_lock_seconds = 0.0

    def refresh(self, now: datetime | None = None, loaded_through_ms: int | None = None) -> int:
        """Roll up the days that are over and not rolled up yet, and those that events
        received since the last call changed. Returns how many days were computed.

        ``loaded_through_ms``: every event received before this time is in the store (the
        runtime knows: nothing older waits in the spool or in a request). It becomes the
        version of the days computed now, and a day is stale only when an event received at
        or after its version is in the store: each change is rolled up once. Without it, a
        margin of :data:`RECHECK_MARGIN` stands in for what the spool may hold, and a day an
        event changed is computed on every call for that long."""
        now = now or datetime.now(UTC)
        if not self._filled:
            self.fill_added_rows()
        last_day = (now - SETTLE).date() - timedelta(days=1)
        since = self._checked_since or (now - FIRST_CHECK)
        exact = loaded_through_ms is not None
        days = self._missing(last_day) | self._changed(since, last_day, exact)
        if days:  # not the days whose raw rows retention deleted (their rollups stay)
            kept_from = self.raw_horizons()
            days = {(p, d) for p, d in days if p not in kept_from or d >= kept_from[p]}
        if not days:
            return 0
        watermark = int(now.timestamp() * 1000) if loaded_through_ms is None else loaded_through_ms
        version = self._next_version(watermark)
        for project_id, day in sorted(days):
            self.compute(project_id, day, version)
        return len(days)

    def _next_version(self, watermark: int) -> int:
        if self._last_version is None:
            rows = self.store.query("SELECT max(version) FROM rollup_days", {})
            self._last_version = int(rows[0][0] or 0) if rows else 0
        version = max(watermark, self._last_version + 1)  # versions only grow
        self._last_version = version
        return version

    def compute_days(self, project_id: str, days: list[date], now: datetime | None = None) -> int:
        """Roll up ``days`` of a project now, under one new version (svc.retention: the days
        whose sessions are about to be deleted and that were never rolled up). How many."""
        if not days:
            return 0
        version = self._next_version(int((now or datetime.now(UTC)).timestamp() * 1000))
        for day in days:
            self.compute(project_id, day, version)
        return len(days)

    def raw_horizons(self) -> dict[str, date]:
        """Per project, the first day whose raw rows retention kept (storage/migrations/020):
        the days before it are never rolled up again nor forgotten."""
        rows = self.store.query(
            "SELECT project_id, max(raw_from) FROM retention_horizons GROUP BY project_id", {}
        )
        return {str(p): as_date(d) for p, d in rows}

    def fill_added_rows(self) -> int:
        """Write the ``next_day``, ``start_hour``, ``event_source``, ``visitor_steps``,
        ``event_only``, ``section`` and ``page_by`` rows of every rolled-up day that lacks
        them (rolled up before the rollups had them), under its current version, but the days
        whose sessions retention deleted. Once per start, before the first pass. How many
        days got rows."""
        self._filled = True
        kept_from = self.raw_horizons()
        filled: set[tuple[str, date]] = set()
        for dimension, value in _ADDED_ROWS:
            rows = self.store.query(_WITHOUT_SQL, {"dimension": dimension, "value": value})
            days = [
                (str(p), as_date(d), int(v))
                for p, d, v in rows
                if p not in kept_from or as_date(d) >= kept_from[p]
            ]
            for project_id, day, version in sorted(days):
                params = {"project": project_id, "day": day, "version": version}
                if dimension in _ADDED_SQLS:
                    params = self._long_params(params)
                    sqls = _ADDED_SQLS[dimension]["long_ids" in params]
                elif dimension in _SIZED_SQLS:
                    sqls = self._sized_sqls((dimension,), params)
                else:
                    sqls = _START_HOUR_SQLS
                with self.store.write_lock:
                    for sql in sqls:
                        self.store.client.command(sql, parameters=params)
                filled.add((project_id, day))
        return len(filled)

    def _sized_sqls(self, kinds: tuple[str, ...], params: dict[str, Any]) -> tuple[str, ...]:
        """The statements of the day of ``params``'s rows of ``kinds`` (of :data:`_SIZED_SQLS`):
        their markers alone for a day with fewer sessions than ``rollup_section_min_sessions``
        (by its version's totals row, written first)."""
        rows = self.store.query(_DAY_SESSIONS_SQL, params)
        sessions = int(rows[0][0] or 0) if rows else 0
        small = sessions < self.store.settings.rollup_section_min_sessions
        return tuple(
            sql
            for kind in kinds
            for sql in ((_SIZED_SQLS[kind][1],) if small else _SIZED_SQLS[kind][0])
        )

    def _long_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` (a project and a day) with the day's long sessions, if it has some:
        their ids, and the first and last of their events outside the day and the next."""
        # A session that goes on for days has events beyond the day after its own.
        long = self.store.query(_LONG_SESSIONS_SQL, params)
        if long:
            params.update(
                long_ids=[int(r[0]) for r in long],
                long0=min(_as_utc(r[1]) for r in long).replace(tzinfo=None),
                long1=max(_as_utc(r[2]) for r in long).replace(tzinfo=None),
            )
        return params

    def compute(self, project_id: str, day: date, version: int) -> None:
        """(Re)compute one day of one project under ``version``, then make it current."""
        params = self._long_params(
            {
                "project": project_id,
                "day": day,
                "version": version,
                "max_values": self.store.settings.rollup_max_property_values,
            }
        )
        long = "long_ids" in params
        with self.store.write_lock:  # never between an insert's tables (EventStore.write_lock)
            locked = time.perf_counter()
            self.store.client.command(self._sql, parameters=params)
            self.store.client.command(_PAGE_DAY_SQL, parameters=params)
            for sql in (*_EVENT_NAME_SQLS[long], *_EVENT_ONLY_SQLS[long], *_EVENT_DAY_SQLS[long]):
                self.store.client.command(sql, parameters=params)
            self.store.client.command(_SESSIONS_DAY_SQL, parameters=params)
            self.store.client.command(_PATHS_DAY_SQL, parameters=params)
            self.store.client.command(_NEXT_DAY_SQLS[long], parameters=params)
            for sql in (*_START_HOUR_SQLS, *self._sized_sqls(("section", "page_by"), params)):
                self.store.client.command(sql, parameters=params)
            for sql in _VISITOR_STEPS_SQLS[long]:
                self.store.client.command(sql, parameters=params)
            self.last_lock_seconds = time.perf_counter() - locked
        self.store.client.command(
            "INSERT INTO rollup_days (project_id, session_day, version) "
            "VALUES ({project:String}, {day:Date}, {version:UInt64})",
            parameters=params,
        )
        # Older versions go, once no reader can still be using one (a reader takes the
        # current version, then reads its rows at once). The engine applies each DELETE in
        # the background: no reader reads those rows, and waiting for it kept the pass
        # 0.35-1.1 s a table on the 10M bench store (the wait is on the engine's background
        # pool; the DELETE itself is 57-114 ms of CPU).
        stale = {**params, "stale": version - int(KEEP_OLD_VERSIONS.total_seconds() * 1000)}
        for (table,) in self.store.query(_STALE_TABLES_SQL, stale):
            self.store.client.command(
                f"DELETE FROM {table} WHERE project_id = {{project:String}} "
                "AND session_day = {day:Date} AND version < {stale:UInt64}",
                parameters=stale,
                settings=_IN_THE_BACKGROUND,
            )
        self.days_computed += 1

    def forget(self, project_id: str) -> None:
        """Drop a project's rollups (its sessions were deleted or rebuilt), but those of the
        days before its raw horizon (svc.retention): their sessions are gone, the rollups
        are all that is left of them."""
        kept_from = self.raw_horizons().get(project_id, date(1970, 1, 1))
        for table in ("rollup_days", *_ROLLED_TABLES):
            self.store.client.command(
                f"DELETE FROM {table} WHERE project_id = {{project:String}} "
                "AND session_day >= {kept_from:Date}",
                parameters={"project": project_id, "kept_from": kept_from},
            )

    def _missing(self, last_day: date) -> set[tuple[str, date]]:
        rows = self.store.query(
            "SELECT DISTINCT project_id, session_day FROM sessions "
            "WHERE session_day <= {last:Date} AND (project_id, session_day) NOT IN "
            "(SELECT project_id, session_day FROM rollup_days)",
            {"last": last_day},
        )
        return {(str(p), as_date(d)) for p, d in rows}

    def _changed(self, since: datetime, last_day: date, exact: bool) -> set[tuple[str, date]]:
        """Rolled-up days with events received since ``since`` and not before their current
        version (with ``exact``, the version is the time through which every event was in the
        store; else less :data:`RECHECK_MARGIN`, for events that were still in the spool);
        moves the mark on. A restart, which looks back :data:`FIRST_CHECK`, does not roll up
        again the days whose events all came before their rollup."""
        rows = self.store.query(
            "SELECT e.project_id, e.day, e.latest, toInt64(toUnixTimestamp64Milli(e.latest)) "
            ">= toInt64(r.version) - {margin:Int64} AS stale FROM (SELECT project_id, "
            "toDate(session_start) AS day, max(received_at) AS latest FROM events "
            "WHERE received_at >= {since:DateTime64(3, 'UTC')} GROUP BY project_id, day) AS e "
            "LEFT JOIN (SELECT project_id, session_day, max(version) AS version FROM rollup_days "
            "GROUP BY project_id, session_day) AS r "
            "ON r.project_id = e.project_id AND r.session_day = e.day",
            {
                "since": since.replace(tzinfo=None),
                "margin": 0 if exact else int(RECHECK_MARGIN.total_seconds() * 1000),
            },
        )
        latest = max((_as_utc(r[2]) for r in rows), default=None)
        if latest is not None:
            self._checked_since = max(since, latest - RECHECK_MARGIN)
        elif self._checked_since is None:
            self._checked_since = since
        return {(str(p), as_date(d)) for p, d, _, stale in rows if stale and as_date(d) <= last_day}


def _as_utc(value: object) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)
