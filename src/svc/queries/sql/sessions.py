"""The session rows every report of sessions reads, the statements that read the facts a plan
needs (svc.queries.plan.Needs), and the reads of the rollups: pure functions of a plan and
its facts.

The *session rows* are one row per session with an event in the range that passes the
filters:

``session_id, visitor``; ``pv, ev``: the session's page views and events in the range (that
pass the event filters); ``all_pv, all_ev``: the page views and events that decide a bounce;
``first_ts, last_ts, dur`` (ms); and the session dimensions asked for.

Every session row comes from the ``sessions`` table (one row per session, maintained at
ingestion; see ``storage/migrations/002_sessions.sql``): a session is taken whole, its bounce,
duration, source, entry and exit pages are those of the whole session, also when it crosses an
end of the range. Its page views and events are those in the range that pass the event
filters, counted as the plan's :class:`~svc.queries.plan.Counting` says.

No query groups every event by session with its whole-session figures: a GROUP BY that big
held more than the reads may (they spill to disk past 300 MB) and took 4-5 s over 10M events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from svc.queries.dimensions import Dimension
from svc.queries.plan import Counting, Facts, Plan
from svc.queries.sql.statement import COUNTED_WHERE, Statement, statement
from svc.schema.measurements import COUNTED_SQL
from svc.schema.page_by import page_by_values
from svc.schema.sections import section_dimension, section_sql

_T0, _T1 = "{start:DateTime64(3, 'UTC')}", "{end:DateTime64(3, 'UTC')}"

#: A session's UTC day (the sessions table's key) as the time it begins.
_DAY_START = "toDateTime64({day}, 3, 'UTC')"

#: The events outside the range from ``{first}`` to its start and from its end to ``{last}``.
_OUTSIDE = (
    "((ts >= {{{first}:DateTime64(3, 'UTC')}} AND ts < {{start:DateTime64(3, 'UTC')}}) "
    "OR (ts >= {{end:DateTime64(3, 'UTC')}} AND ts < {{{last}:DateTime64(3, 'UTC')}}))"
)


def session_key(alias: str = "", day: str | None = None) -> str:
    """One 64-bit number per session, for grouping and joining by session: its id XOR a hash
    of its day (a client's session id may name a session on another day too; this is as
    unique as the ids themselves). One key instead of two: a GROUP BY of 3M sessions that
    holds less than the reads may before spilling (690 -> 400 ms over 10M events), a join
    that probes one number (the /blog report 598 -> 541 ms)."""
    return f"bitXor({alias}session_id, intHash64({day or alias + 'session_day'}))"


# the facts: crossing sessions, their events outside the range, rolled days ------------------


def near_crossing(plan: Plan) -> str:
    """The sessions that cross an end of the range among those of its first and last UTC
    days and the days before them: day, id, first and last event (in a UTC range, a time at
    or before the first: see below), and 1. At an end that is a UTC midnight only the day
    before it is read: a session of the day after that crosses it has an event before its
    own day, and :func:`long_crossing` finds it (a day of sessions fewer to read at each end
    of a UTC range)."""
    at_start = (
        "session_day = {day0:Date}"
        if plan.starts_at_utc_midnight
        else "session_day BETWEEN {day0:Date} AND {start_day:Date}"
    )
    at_end = (
        "session_day = {end_day0:Date}"
        if plan.ends_at_utc_midnight
        else "session_day BETWEEN {end_day0:Date} AND {day1:Date}"
    )
    crosses = f"(first_ts < {_T0} AND last_ts >= {_T0}) OR (first_ts < {_T1} AND last_ts >= {_T1})"
    if plan.starts_at_utc_midnight and plan.ends_at_utc_midnight:
        # A UTC range: a session of the day before an end crosses it if it has an event at
        # or after it: one on the day after its own (``next_day_sessions``) or a later one
        # (``long_sessions``), each with the last of those events; its first event is on its
        # day (the one its start names), or before it (``long_sessions``). The span is from
        # the start of its day (or its earlier event) to its last event: every event of the
        # session is in it. A read of a few thousand rows instead of the last event of every
        # session of both days (100M events: 37-53 ms a report).
        # ``two_days``: the session has no row in ``long_sessions``, so every event of it is
        # on its day or the next (Crossing.two_day_start, two_day_end)
        day_start = _DAY_START.format(day="session_day")
        rows = (
            f"SELECT session_day, session_id, {day_start} AS first_ts, last_ts, 1 AS two_days "
            "FROM next_day_sessions WHERE project_id = {project:String} "
            f"AND (({at_start}) OR ({at_end})) UNION ALL "
            "SELECT session_day, session_id, first_ts, last_ts, 0 FROM long_sessions "
            f"WHERE project_id = {{project:String}} AND (({at_start}) OR ({at_end}))"
        )
        return (
            f"SELECT session_day, session_id, least(min(first_ts), {day_start}) AS first_ts, "
            f"max(last_ts) AS last_ts, 1 AS near, min(two_days) AS two_days FROM ({rows}) "
            f"GROUP BY session_day, session_id HAVING {crosses}"
        )
    return (
        "SELECT session_day, session_id, first_ts, last_ts, 1 AS near, 0 AS two_days "
        "FROM sessions FINAL "
        f"WHERE project_id = {{project:String}} AND (({at_start}) OR ({at_end})) AND ({crosses})"
    )


def long_crossing(plan: Plan) -> str:
    """The sessions of ``long_sessions`` that cross an end of the range where
    :func:`near_crossing` does not look (and some where it does): day, id, a time at or
    before its first event and one at or after its last (its events outside its day and the
    next, and those two days), and 0. Each condition is exact: a session on the first day of
    the range or after it has an event before its start only if that event is before the
    session's day (and so in this table; at a start that is not a UTC midnight, one of the
    first day may be missed here, but near_crossing finds it), one on a day before the day
    before has an event after it only if that event is after the day after its own; likewise
    at the end. (A handful of rows: no index needed.)"""
    first = f"least(min(first_ts), {_DAY_START.format(day='session_day')})"
    last = f"greatest(max(last_ts), {_DAY_START.format(day='session_day + 2')})"
    return (
        f"SELECT session_day, session_id, {first}, {last}, 0 AS near, 0 AS two_days "
        "FROM long_sessions "
        "WHERE project_id = {project:String} GROUP BY session_day, session_id HAVING "
        f"(session_day >= {{start_day:Date}} AND min(first_ts) < {_T0}) "
        f"OR (session_day < {{day0:Date}} AND max(last_ts) >= {_T0}) "
        f"OR (session_day >= {{day1:Date}} AND min(first_ts) < {_T1}) "
        f"OR (session_day < {{end_day0:Date}} AND max(last_ts) >= {_T1})"
    )


def crossing_statement(plan: Plan, facts: Facts) -> Statement:
    """The sessions that cross an end of the range: near its ends, and (when not read yet)
    the long ones, in one statement (the column ``near`` tells them apart)."""
    sql = near_crossing(plan)
    if facts.long is None:
        sql = f"{sql} UNION ALL {long_crossing(plan)}"
    return statement(sql, plan, facts)


def long_statement(plan: Plan, facts: Facts) -> Statement:
    return statement(long_crossing(plan), plan, facts)


def outside_events(plan: Plan, facts: Facts, rest: bool = False) -> str:
    """The events outside the range of the sessions that cross an end of it (``facts``: the
    crossing sessions): those of the sessions whose events outside it are within a day of
    its ends between the first and last of them, those of a longer session between its own
    first and last (its id picks its granules out of the days it spans). With ``rest``, not
    those of the sessions whose counts outside come from ``next_day_sessions``
    (:attr:`Crossing.rest_ids`)."""
    assert facts.crossing is not None
    parts = []
    if rest and facts.crossing.rest_ids:
        outside = _OUTSIDE.format(first="rest0", last="rest1")
        parts.append(f"({outside} AND session_id IN {{rest_ids:Array(UInt64)}})")
    elif not rest and facts.crossing.ids:
        outside = _OUTSIDE.format(first="edge0", last="edge1")
        parts.append(f"({outside} AND session_id IN {{crossing:Array(UInt64)}})")
    if facts.crossing.long_ids:
        outside = _OUTSIDE.format(first="long0", last="long1")
        parts.append(f"({outside} AND session_id IN {{long_ids:Array(UInt64)}})")
    return f"({' OR '.join(parts)})" if parts else "0"


#: Per session of :attr:`Crossing.two_day_start` (of the day before a UTC range, every event
#: on it or the next day): its counts outside the range, its total less those of the next
#: day; and per session of :attr:`Crossing.two_day_end` (of the range's last day): those of
#: the day after. From ``next_day_sessions`` (storage/migrations/023) and the sessions table:
#: no event is read.
_TWO_DAY_OUTSIDE = (
    "SELECT session_id, sum(pv) AS opv, sum(ev) AS oev FROM ("
    "SELECT session_id, toInt64(pageviews) AS pv, toInt64(events) AS ev FROM sessions "
    "WHERE project_id = {project:String} AND session_day = {day0:Date} "
    "AND session_id IN {two_day_start:Array(UInt64)} UNION ALL "
    "SELECT session_id, -toInt64(pageviews), -toInt64(events) FROM next_day_sessions "
    "WHERE project_id = {project:String} AND session_day = {day0:Date} "
    "AND session_id IN {two_day_start:Array(UInt64)} UNION ALL "
    "SELECT session_id, toInt64(pageviews), toInt64(events) FROM next_day_sessions "
    "WHERE project_id = {project:String} AND session_day = {end_day0:Date} "
    "AND session_id IN {two_day_end:Array(UInt64)}) GROUP BY session_id"
)


def outside_statement(plan: Plan, facts: Facts) -> Statement:
    """Per session that crosses an end of the range: its page views and events outside the
    range (that pass the event filters, but for a dropping filter: its counts are the
    session's own less the dropped events in the range). Where every event counts there,
    those of the sessions that cross an end of a UTC range and have every event on their
    day or the next come from their rows (:data:`_TWO_DAY_OUTSIDE`; over 30 days of 100M
    events ending today, 61-62 -> 41-46 ms), the others' from their events."""
    assert facts.crossing is not None
    kept = "1" if plan.dropped is not None else plan.event_filter
    c = facts.crossing
    two_days = kept == "1" and bool(c.two_day_start or c.two_day_end)
    events = (
        "SELECT session_id, countIf(name = 'page_view') AS opv, count() AS oev FROM events "
        f"WHERE project_id = {{project:String}} AND {kept} AND {COUNTED_SQL} "
        f"AND {outside_events(plan, facts, rest=two_days)} GROUP BY session_id"
    )
    if not two_days:
        return statement(events, plan, facts)
    if not (c.rest_ids or c.long_ids):
        return statement(_TWO_DAY_OUTSIDE, plan, facts)
    return statement(f"{_TWO_DAY_OUTSIDE} UNION ALL {events}", plan, facts)


def page_outside_statement(plan: Plan, facts: Facts) -> Statement:
    """Per (session, page) of the sessions that cross an end of the range: its key
    ``cityHash64(session_id, path)`` and its page views outside the range (the page rows)."""
    return statement(
        "SELECT cityHash64(session_id, path) AS k, count() FROM events "
        "WHERE project_id = {project:String} AND name = 'page_view' "
        f"AND {outside_events(plan, facts)} GROUP BY k",
        plan,
        facts,
    )


def current_rolled_days(plan: Plan, span: tuple[date, date], property_key: str | None) -> Statement:
    """The rolled-up days of ``span`` and their current versions; for a breakdown by the
    custom property ``property_key``, not the days that had too many values of it."""
    sql = (
        "SELECT session_day, max(version) AS version FROM rollup_days "
        "WHERE project_id = {project:String} AND session_day BETWEEN {r0:Date} AND {r1:Date} "
        "GROUP BY session_day"
    )
    if property_key is not None:
        sql = (
            f"SELECT session_day, version FROM ({sql}) WHERE (session_day, version) NOT IN "
            "(SELECT session_day, version FROM session_rollups "
            "WHERE project_id = {project:String} AND dimension = 'prop-skipped' "
            "AND session_day BETWEEN {r0:Date} AND {r1:Date} AND value = {key:String})"
        )
    params = {"project": plan.project_id, "r0": span[0], "r1": span[1], "key": property_key}
    return Statement(f"{sql} ORDER BY session_day", params)


def received_since(plan: Plan, day: date, version: int) -> Statement:
    """Whether an event of a session of ``day`` was received at or after ``version`` (its
    rollup's: that rollup may lack it until the next pass). For the range's last day, whose
    sessions are not long ones (:attr:`Plan.rollup_span_to_end`): their events are on that
    day and the next. The minmax index on ``received_at`` skips the older granules."""
    return Statement(
        "SELECT count() > 0 FROM events WHERE project_id = {project:String} "
        "AND toDate(ts) BETWEEN {since_day:Date} AND {since_day:Date} + 1 "
        "AND toDate(session_start) = {since_day:Date} "
        "AND toUnixTimestamp64Milli(received_at) >= {since_version:Int64}",
        {"project": plan.project_id, "since_day": day, "since_version": version},
    )


def path_hashes(plan: Plan, days: Sequence[tuple[date, int]]) -> Statement:
    """Per 32-bit hash (xxHash32) of a path of the rolled ``days`` (the rollups' ``path``
    rows, svc.storage.rollups) that the page filters match: whether one path with it
    matches, and whether all do (else a collision)."""
    paths = (
        "SELECT DISTINCT value AS path FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = 'path' "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))}"
    )
    return Statement(
        "SELECT xxHash32(path) AS h, max(matches), min(matches) FROM (SELECT path, "
        f"{plan.event_filter} AS matches FROM ({paths})) GROUP BY h HAVING max(matches)",
        {**plan.params, "days": list(days)},
    )


def path_sections(plan: Plan, days: Sequence[tuple[date, int]]) -> Statement:
    """Per rolled day of ``days`` and section (svc.schema.sections) with a path the page
    filters match: how many of its paths they match, and how many it has (the rollups'
    ``path`` rows)."""
    paths = (
        "SELECT DISTINCT session_day, value AS path FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = 'path' "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))}"
    )
    return Statement(
        f"SELECT session_day, {section_sql('path')} AS section, countIf({plan.event_filter}) "
        f"AS matching, count() AS paths FROM ({paths}) GROUP BY session_day, section "
        "HAVING matching > 0",
        {**plan.params, "days": list(days)},
    )


def section_days(plan: Plan, days: Sequence[tuple[date, int]]) -> Statement:
    """Per rolled day of ``days``: whether it has its ``section`` rows (the marker row,
    svc.storage.rollups), and the sections that have them (the ``@<section>`` totals)."""
    return Statement(
        "SELECT session_day, countIf(dimension = 'section') > 0 AS marked, "
        f"groupArrayIf(substring(dimension, {len(section_dimension('', '')) + 1}), "
        f"startsWith(dimension, '{section_dimension('', '')}')) AS sections "
        "FROM session_rollups WHERE project_id = {project:String} "
        f"AND (dimension = 'section' OR startsWith(dimension, '{section_dimension('', '')}')) "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))} "
        "GROUP BY session_day",
        {"project": plan.project_id, "days": list(days)},
    )


def page_by_days(
    plan: Plan, days: Sequence[tuple[date, int]], dimension: str, value: str
) -> Statement:
    """Per rolled day of ``days``: whether it has its ``page_by`` rows (the marker row,
    svc.storage.rollups), whether ``value`` of ``dimension`` has page rows of its own
    (svc.schema.page_by), and whether it has sessions (the rollups' row of that value)."""
    return Statement(
        "SELECT session_day, countIf(dimension = 'page_by') > 0 AS marked, "
        "countIf(dimension = {page_by_values:String}) > 0 AS rolled, "
        "countIf(dimension = {page_by_dimension:String}) > 0 AS present "
        "FROM session_rollups WHERE project_id = {project:String} "
        "AND ((dimension = 'page_by' AND value = '') OR (value = {page_by_value:String} "
        "AND dimension IN ({page_by_values:String}, {page_by_dimension:String}))) "
        "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))} GROUP BY session_day",
        {
            "project": plan.project_id,
            "days": list(days),
            "page_by_values": page_by_values(dimension),
            "page_by_dimension": dimension,
            "page_by_value": value,
        },
    )


# the session rows -----------------------------------------------------------------------------


def days(plan: Plan, facts: Facts, alias: str = "") -> str:
    """The rows of a table keyed like the sessions (``alias``: ``s.``) that the session rows
    read: those of the days of the range and the day before, and the long sessions on other
    days that cross an end of it (read: ``facts.long``; else read here), but on days taken
    from the rollups or a snapshot (the days left are named one by one: a range of days
    less those read the whole range's granules of the key, GET /metrics over 100M events
    ~50 ms more)."""
    day, sid = f"{alias}session_day", f"{alias}session_id"
    if facts.rolled or facts.snapshots:  # the days left, named: the key picks their granules
        where = f"{day} IN {{session_days:Array(Date)}}"
    else:
        where = f"{day} BETWEEN {{day0:Date}} AND {{day1:Date}}"
    if facts.long is None:
        far = (
            "(SELECT session_day, session_id FROM long_sessions "
            "WHERE project_id = {project:String} "
            "AND (session_day < {day0:Date} OR session_day > {day1:Date}))"
        )
        where = f"({where} OR ({day}, {sid}) IN {far})"
    elif facts.far(plan):
        where = f"({where} OR ({day}, {sid}) IN {{far:Array(Tuple(Date, UInt64))}})"
    return where


def session_rows_where(plan: Plan, facts: Facts) -> str:
    """The rows of ``sessions AS s`` with an event in the range (give or take the edge
    corrections) that pass the session filters, on days not taken from the rollups."""
    where = [
        "s.project_id = {project:String}",
        days(plan, facts, "s."),
        f"s.last_ts >= {_T0}",
        f"s.first_ts < {_T1}",
        *(f"({c})" for c in plan.session_conditions),
    ]
    return " AND ".join(where)


def whole_sessions(plan: Plan, facts: Facts) -> str:
    """For :func:`page_rows` and :func:`event_rows`: the sessions table's rows in the range
    that pass the session filters, with their whole-session figures. Neither the event
    filters (the rows joined to these carry them) nor the counts outside the range (a row
    with events in the range has them) are applied here: the joined rows decide which
    sessions count."""
    return (
        "SELECT s.session_id AS session_id, s.session_day AS session_day, "
        "s.visitor_id AS visitor, s.pageviews AS all_pv, s.events AS all_ev, "
        "s.first_ts AS first_ts, s.last_ts AS last_ts, "
        "dateDiff('millisecond', s.first_ts, s.last_ts) AS dur "
        f"FROM sessions AS s FINAL WHERE {session_rows_where(plan, facts)}"
    )


def of_unrolled_days() -> str:
    """The condition on an event that its session is not of a day taken from the rollups,
    with a condition the events table's key (by the UTC day of ``ts``) prunes with: a session
    of an unrolled day has events on that day and the next, unless it is a long one, so an
    event on a rolled day whose day before is rolled too (``inner_rolled_days``) is of a
    rolled day's session or of a session of ``long_sessions`` (a handful, whose ids are
    looked up first). Reading the events of the unrolled days then skips the other days'
    granules instead of reading every event of the range (the hostname breakdown over 100M
    events: 7.7 s -> 0.8-1.6 s with other work running)."""
    return (
        "toDate(session_start) NOT IN {rolled_days:Array(Date)} "
        "AND (toDate(ts) NOT IN {inner_rolled_days:Array(Date)} OR session_id IN "
        "(SELECT session_id FROM long_sessions WHERE project_id = {project:String} "
        "AND session_day NOT IN {rolled_days:Array(Date)}))"
    )


def counts_by_session(plan: Plan, table: str, condition: str, value: str | None = None) -> str:
    """Per session (and ``value``, an expression over an event, when given) with events in
    the range in ``table`` that meet ``condition``: its :func:`session_key` ``k`` (and
    ``value``), and those events' page views ``pv`` and count ``ev``."""
    key = session_key(day="toDate(session_start)")
    by = "k" if value is None else "k, value"
    value_col = "" if value is None else f"{value} AS value, "
    return (
        f"SELECT {key} AS k, {value_col}countIf(name = 'page_view') AS pv, count() AS ev "
        f"FROM {table} WHERE {COUNTED_WHERE} AND {condition} GROUP BY {by}"
    )


def session_rows(plan: Plan, facts: Facts, extra: dict[str, Dimension] | None = None) -> str:
    """The session rows (see the module docstring); ``extra`` maps alias -> session
    dimension. The facts must hold the crossing sessions' events outside the range
    (``Needs(edges=True)``)."""
    if facts.outside is None:
        raise RuntimeError("the session rows need the facts of Needs(edges=True)")
    pv, ev = "s.pageviews", "s.events"
    source = "sessions AS s FINAL"
    counting = plan.counting
    if counting is Counting.IN_RANGE:  # the sessions with a matching event
        condition = plan.event_filter
        if facts.rolled:  # their sessions are left out below (events of unrolled days only)
            condition = f"({condition}) AND {of_unrolled_days()}"
        matching = counts_by_session(plan, plan.event_table(), condition)
        source += f" INNER JOIN ({matching}) AS m ON m.k = {session_key('s.')}"
        pv, ev = "m.pv", "m.ev"
    elif counting is Counting.DROPPED:  # the sessions' own counts less the dropped events'
        condition = f"({plan.dropped})"
        if facts.rolled:  # their sessions are left out below
            condition += f" AND {of_unrolled_days()}"
        dropped = counts_by_session(plan, "report_events", condition)
        source += f" LEFT JOIN ({dropped}) AS n ON n.k = {session_key('s.')}"
        pv, ev = "s.pageviews - n.pv", "s.events - n.ev"
    elif counting is Counting.PAGES:  # page filters: the sessions with a matching page
        matching = (
            f"SELECT {session_key()} AS k, sum(pageviews) AS pv, sum(events) AS ev "
            f"FROM session_pages FINAL WHERE project_id = {{project:String}} "
            f"AND {days(plan, facts)} "
            f"AND {plan.event_filter} GROUP BY k"
        )
        source += f" INNER JOIN ({matching}) AS m ON m.k = {session_key('s.')}"
        pv, ev = "m.pv", "m.ev"
    if counting is Counting.IN_RANGE or not facts.outside:  # nothing outside to take away
        opv = oev = "toUInt64(0)"
    else:
        crosses = f"(s.first_ts < {_T0} OR s.last_ts >= {_T1})"
        opv, oev = (
            f"if({crosses}, transform(s.session_id, {{edge_ids:Array(UInt64)}}, "
            f"{{{name}:Array(UInt64)}}, toUInt64(0)), toUInt64(0))"
            for name in ("edge_pv", "edge_ev")
        )
    cols = [
        "s.session_id AS session_id",
        "s.visitor_id AS visitor",
        f"{pv} - {opv} AS pv",
        f"{ev} - {oev} AS ev",
        "s.pageviews AS all_pv",
        "s.events AS all_ev",
        "s.first_ts AS first_ts",
        "s.last_ts AS last_ts",
        "dateDiff('millisecond', s.first_ts, s.last_ts) AS dur",
        "s.session_day AS session_day",
    ]
    cols += [f"{dim.session_column()} AS {alias}" for alias, dim in (extra or {}).items()]
    rows = f"SELECT {', '.join(cols)} FROM {source} WHERE {session_rows_where(plan, facts)}"
    return f"SELECT * FROM ({rows}) WHERE ev > 0"  # an event in the range


def page_rows(plan: Plan, facts: Facts) -> str:
    """One row per (session, page) with page views in the range that passes the filters:
    ``value`` (the path), ``pv`` and ``ev`` (its page views in the range), and the session's
    ``visitor``, ``all_pv``, ``all_ev`` and ``dur``, the columns :data:`SESSION_AGGREGATES`
    reads. From the (session, page) table, whose rows the page filters select, joined to the
    sessions table's rows that pass the session filters (:func:`whole_sessions`): no grouping
    of events by session. The facts must hold ``Needs(page_edges=True)``."""
    assert plan.pages_only and facts.page_outside is not None
    outside = (
        f"if(s.first_ts < {_T0} OR s.last_ts >= {_T1}, transform(cityHash64(p.session_id, "
        "p.path), {edge_page_keys:Array(UInt64)}, {edge_page_pv:Array(UInt64)}, "
        "toUInt64(0)), toUInt64(0))"
        if facts.page_outside
        else "toUInt64(0)"
    )
    pages = (
        "SELECT session_day, session_id, path, pageviews FROM session_pages FINAL "
        f"WHERE project_id = {{project:String}} AND {days(plan, facts)} AND pageviews > 0 "
        f"AND {plan.event_filter}"
    )
    rows = (
        f"SELECT p.path AS value, s.visitor AS visitor, p.pageviews - {outside} AS pv, "
        "s.all_pv AS all_pv, s.all_ev AS all_ev, s.dur AS dur "
        f"FROM ({pages}) AS p INNER JOIN ({whole_sessions(plan, facts)}) AS s "
        f"ON {session_key('s.')} = {session_key('p.')}"
    )
    return f"SELECT *, pv AS ev FROM ({rows}) WHERE pv > 0"


def event_rows(
    plan: Plan, facts: Facts, dim: Dimension, only: str = "1", table: str | None = None
) -> str:
    """For a breakdown by the event dimension ``dim``: one row per (session, value) of the
    events in the range that pass the event filters, have a value (``dim.rows``) and meet
    ``only``, with their page views ``pv`` and count ``ev``, and the session's ``visitor``,
    ``all_pv``, ``all_ev`` and ``dur`` (whole, as in :func:`page_rows`): the columns
    :data:`SESSION_AGGREGATES` reads. From ``table`` (default: the plan's event table),
    joined to the sessions table's rows."""
    table = table or plan.event_table(dim)
    if facts.rolled:  # read from the rollups instead (their sessions left out below)
        only = f"({only}) AND {of_unrolled_days()}"
    rows = counts_by_session(
        plan, table, f"{plan.event_filter} AND ({dim.rows}) AND ({only})", value=dim.column
    )
    return (
        "SELECT p.value AS value, s.visitor AS visitor, p.pv AS pv, p.ev AS ev, "
        "s.all_pv AS all_pv, s.all_ev AS all_ev, s.dur AS dur "
        f"FROM ({whole_sessions(plan, facts)}) AS s INNER JOIN ({rows}) AS p "
        f"ON p.k = {session_key('s.')}"
    )


def event_name_rows(plan: Plan, facts: Facts, dim: Dimension) -> str:
    """For a breakdown by event name (``dim``) with no filters on event dimensions but the
    page: the ``page_view`` row of every session with page views in the range that passes
    the filters (:func:`session_rows`), and the rows of the other events, all in
    ``report_events`` (:func:`event_rows`)."""
    views = (
        "SELECT 'page_view' AS value, visitor, toUInt64(pv) AS pv, toUInt64(pv) AS ev, "
        f"all_pv, all_ev, dur FROM ({session_rows(plan, facts)}) WHERE pv > 0"
    )
    others = event_rows(plan, facts, dim, only="name != 'page_view'", table="report_events")
    return f"{views} UNION ALL {others}"


def events_where(plan: Plan, facts: Facts) -> str:
    """WHERE for event-level queries: range, event filters, and (with session filters)
    membership in a session that passes them (one with an event in the range: the event's
    own condition asks that)."""
    where = f"{COUNTED_WHERE} AND {plan.event_filter}"
    if plan.has_session_filters:
        sessions = (
            f"SELECT s.session_id FROM sessions AS s FINAL WHERE {session_rows_where(plan, facts)}"
        )
        where += f" AND session_id IN ({sessions})"
    return where


# the rolled-up days -----------------------------------------------------------------------


def rollup_sums(
    plan: Plan, facts: Facts, dimensions: Sequence[str], value: str | None = None
) -> Statement:
    """Sums of the current rollups of the rolled days, per dimension and value, for the
    given rolled-up dimensions ('' for the totals); only the rows of ``value`` if given."""
    assert facts.rolled
    of_value = "" if value is None else "AND value = {rollup_value:String} "
    return statement(
        "SELECT dimension, value, sum(sessions) AS sessions, sum(pageviews) AS pageviews, "
        "sum(events) AS events, sum(bounces) AS bounces, "
        "sum(with_pageview) AS sessions_with_pv, sum(duration_ms) AS duration_ms, "
        "sum(visitors) AS visitors FROM session_rollups "
        "WHERE project_id = {project:String} "
        "AND dimension IN {rollup_dimensions:Array(String)} "
        "AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
        f"{of_value}GROUP BY dimension, value",
        plan,
        facts,
        rollup_dimensions=list(dimensions),
        **({} if value is None else {"rollup_value": value}),
    )


def section_sums(plan: Plan, facts: Facts, dimension: str) -> Statement:
    """Per value of the session ``dimension`` ('' the totals), the session aggregates of the
    rolled days' sessions with an event in ``facts.section`` (the rollups' ``section`` rows,
    svc.storage.rollups): those a filter on the page counts when its matching paths are that
    section's (svc.queries.run)."""
    assert facts.section is not None
    return _rows_once(plan, facts, section_dimension(dimension, facts.section))


def page_by_sums(plan: Plan, facts: Facts) -> Statement:
    """Per page, the figures of the page breakdown over the rolled days' sessions of the one
    value the plan filters on (:attr:`Facts.page_by`: the rollups' rows of that value's
    pages, svc.schema.page_by)."""
    assert facts.page_by is not None
    return _rows_once(plan, facts, facts.page_by)


def _rows_once(plan: Plan, facts: Facts, dimension: str) -> Statement:
    """Per value, the session aggregates of the rolled days' rows of the rollups'
    ``dimension``. A row written twice (a fill interrupted and run again) is taken once: per
    day and value, its figures' maximum."""
    assert facts.rolled
    figures = ("sessions", "pageviews", "events", "bounces", "duration_ms", "visitors")
    once = ", ".join(f"max({f}) AS {f}" for f in (*figures, "with_pageview"))
    sums = ", ".join(f"sum({f}) AS {f}" for f in figures)
    return statement(
        f"SELECT value, {sums}, sum(with_pageview) AS sessions_with_pv FROM ("
        f"SELECT session_day, value, {once} FROM session_rollups "
        "WHERE project_id = {project:String} AND dimension = {rollup_dimension:String} "
        "AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
        "GROUP BY session_day, value) GROUP BY value",
        plan,
        facts,
        rollup_dimension=dimension,
    )


def rolled_sources(plan: Plan, facts: Facts) -> Statement:
    """Sessions per source of the rolled days' sessions that pass the session filters (from
    ``rolled_sessions``: two narrow columns of a day's sessions instead of the sessions
    table): ``value``, ``sessions``."""
    assert facts.rolled
    where = [
        "project_id = {project:String}",
        "session_day IN {rolled_days:Array(Date)}",
        "version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0))",
        *(f"({c})" for c in plan.session_conditions),
    ]
    return statement(
        "SELECT source AS value, count() AS sessions FROM rolled_sessions "
        f"WHERE {' AND '.join(where)} GROUP BY value",
        plan,
        facts,
    )


def rolled_session_rows(plan: Plan, facts: Facts, extra: dict[str, Dimension]) -> str:
    """The session rows of the rolled days, from ``rolled_sessions``: those that pass the
    session filters and have an event on a matching page, with the columns of :func:`session_rows`
    (``extra``: alias -> session dimension) that :data:`ROLLED_SESSION_AGGREGATES` reads,
    ``multi`` and ``session_day``. Every event of these sessions is in the range."""
    pv, ev = "pageviews", "events"
    if plan.event_conditions:  # the page filters: the page views and events that match
        matching = "h -> h IN {matching_hashes:Array(UInt32)}"
        pv = f"arrayCount({matching}, page_hashes)"
        ev = f"pv + arrayCount({matching}, event_hashes)"
    cols = [
        "visitor_id AS visitor",
        "multi",
        "session_day",
        f"{pv} AS pv",
        f"{ev} AS ev",
        "pageviews AS all_pv",
        "events AS all_ev",
        "duration_ms AS dur",
        *(f"{dim.session_column()} AS {alias}" for alias, dim in extra.items()),
    ]
    where = [
        "project_id = {project:String}",
        "session_day IN {rolled_days:Array(Date)}",
        "version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0))",
        *(f"({c})" for c in plan.session_conditions),
    ]
    rows = f"SELECT {', '.join(cols)} FROM rolled_sessions WHERE {' AND '.join(where)}"
    return f"SELECT * FROM ({rows}) WHERE ev > 0"


def rolled_pages(plan: Plan, facts: Facts) -> Statement:
    """Per page of the rolled days, the figures of :data:`ROLLED_SESSION_AGGREGATES` over
    the (session, page) rows of :func:`page_rows`, from ``rolled_sessions`` (the sessions
    that pass the session filters, each page of ``page_hashes`` once with its count of page
    views; with a page filter, the matching hashes alone) instead of the session pages of
    every day joined to their sessions (over 30 days of 100M events, the page breakdown
    filtered by a country: CPU 12-15 -> 4.4 s a request, peak RSS 1.2 -> 0.48 GB, on a busy
    host). The figures are summed by hash, then each hash is named by the ``path`` rows of
    the rolled days (svc.storage.rollups): ``value``, and ``clash`` 1 on a row whose hash is
    the hash of two of their paths or of none (the report then reads every day from the
    session rows: svc.queries.breakdown). Summing by hash before naming, and the session
    filters as a PREWHERE (the day and version are tested on the rows that pass them
    alone), took this statement's CPU from 4.2 to 2.9 s."""
    assert facts.rolled
    of_days = (
        "project_id = {project:String} AND session_day IN {rolled_days:Array(Date)} "
        "AND version = transform(session_day, {rolled_days:Array(Date)}, "
        "{rolled_versions:Array(UInt64)}, toUInt64(0))"
    )
    prewhere = " AND ".join(f"({c})" for c in plan.session_conditions) or "1"
    sessions = (
        "SELECT visitor_id AS visitor, multi, pageviews AS all_pv, events AS all_ev, "
        "duration_ms AS dur, page_hashes FROM rolled_sessions "
        f"PREWHERE {prewhere} WHERE {of_days} AND pageviews > 0"
    )
    matching = " WHERE h IN {matching_hashes:Array(UInt32)}" if plan.event_conditions else ""
    rows = (
        "SELECT visitor, multi, all_pv, all_ev, dur, h, countEqual(page_hashes, h) AS pv, "
        f"pv AS ev FROM ({sessions}) ARRAY JOIN arrayDistinct(page_hashes) AS h{matching}"
    )
    paths = (
        "SELECT xxHash32(value) AS h, any(value) AS path, uniqExact(value) AS n "
        f"FROM session_rollups WHERE dimension = 'path' AND {of_days} GROUP BY h"
    )
    figures = "visitors, sessions, pageviews, events, bounces, sessions_with_pv, duration_ms"
    return statement(
        f"SELECT if(m.n = 1, m.path, '') AS value, m.n != 1 AS clash, {figures} "
        f"FROM (SELECT h, {ROLLED_SESSION_AGGREGATES} FROM ({rows}) GROUP BY h) AS a "
        f"LEFT JOIN ({paths}) AS m ON m.h = a.h",
        plan,
        facts,
    )


def _dropped_in_rolled_days(plan: Plan, facts: Facts) -> str:
    """Per session of the rolled days with events the filter drops: its key ``k`` and the
    dropped page views ``pv`` and events ``ev`` (every event of such a session is in the
    range)."""
    assert plan.drops_reported_events and plan.dropped is not None and facts.rolled
    on_days = "toDate(session_start) IN {rolled_days:Array(Date)}"
    return counts_by_session(plan, "report_events", f"({plan.dropped}) AND {on_days}")


def dropped_events(plan: Plan, facts: Facts) -> Statement:
    """The page views and events the filter drops from the rolled days, to take from their
    rollups."""
    return statement(
        "SELECT sum(pv) AS pageviews, sum(ev) AS events "
        f"FROM ({_dropped_in_rolled_days(plan, facts)})",
        plan,
        facts,
    )


def _gone_sessions(plan: Plan, facts: Facts) -> str:
    """The rows of ``sessions AS s`` on the rolled days whose every event the filter drops
    (none with a page view, unless it drops page views: checked first, the cheaper test).
    A session without page views has a partial row without any, so those are looked up
    first in the partial rows (one column, no FINAL), and the key prunes the rows FINAL
    reads to theirs: over 100M events, 4.6-6.1 s -> 1.0-1.2 s with other work running."""
    no_views = (
        ""
        if plan.drops_page_views
        else "AND s.pageviews = 0 AND (s.session_day, s.session_id) IN (SELECT session_day, "
        "session_id FROM sessions WHERE project_id = {project:String} "
        "AND session_day IN {rolled_days:Array(Date)} AND pageviews = 0) "
    )
    return (
        "FROM sessions AS s FINAL WHERE s.project_id = {project:String} "
        f"AND s.session_day IN {{rolled_days:Array(Date)}} {no_views}"
        f"AND ({session_key('s.')}, s.events) IN "
        f"(SELECT k, ev FROM ({_dropped_in_rolled_days(plan, facts)}))"
    )


def gone_sessions(plan: Plan, facts: Facts, dim: Dimension) -> Statement:
    """The sessions of the rolled days that the filter drops whole, per value of the
    session dimension ``dim`` and a ROLLUP row (''), with the figures to take from the
    rollups: sessions, bounces, sessions with a page view, duration, and their visitors
    (less those who kept another session: :func:`kept_visitors`)."""
    return statement(
        f"SELECT {dim.session_column()} AS value, count() AS sessions, "
        "countIf(s.pageviews = 1 AND s.events = 1) AS bounces, "
        "countIf(s.pageviews > 0) AS sessions_with_pv, "
        "sum(dateDiff('millisecond', s.first_ts, s.last_ts)) AS duration_ms, "
        f"uniqExact(s.visitor_id) AS visitors {_gone_sessions(plan, facts)} "
        "GROUP BY value WITH ROLLUP",
        plan,
        facts,
    )


def kept_visitors(plan: Plan, facts: Facts) -> Statement:
    """How many visitors of the sessions the filter drops whole on the rolled days keep
    another session there (they still count)."""
    return statement(
        "SELECT uniqExact(s.visitor_id) AS visitors FROM sessions AS s FINAL "
        "WHERE s.project_id = {project:String} AND s.session_day IN {rolled_days:Array(Date)} "
        f"AND s.visitor_id IN (SELECT s.visitor_id {_gone_sessions(plan, facts)}) "
        f"AND ({session_key('s.')}, s.events) NOT IN "
        f"(SELECT k, ev FROM ({_dropped_in_rolled_days(plan, facts)}))",
        plan,
        facts,
    )


# aggregates over session rows -----------------------------------------------------------------

#: The figures of :data:`SESSION_AGGREGATES` but the visitors.
_SESSION_FIGURES = (
    "count() AS sessions, sum(pv) AS pageviews, "
    "sum(ev) AS events, countIf(all_pv = 1 AND all_ev = 1) AS bounces, "
    "countIf(all_pv > 0) AS sessions_with_pv, sum(dur) AS duration_ms"
)

#: Aggregates over the session rows, shared by every report that shows session metrics.
SESSION_AGGREGATES = f"uniqExact(visitor) AS visitors, {_SESSION_FIGURES}"

#: :data:`SESSION_AGGREGATES` over :func:`rolled_session_rows`: the visitors are the rows
#: whose visitor has no other session that day, and the distinct visitors of the others (the
#: same count; a set of a few visitors instead of all).
ROLLED_SESSION_AGGREGATES = (
    f"countIf(multi = 0) + uniqExactIf(visitor, multi = 1) AS visitors, {_SESSION_FIGURES}"
)
