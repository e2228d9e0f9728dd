"""The reads of the snapshots of days not rolled up yet (svc.storage.snapshots): pure
functions of a plan and its facts (:attr:`svc.queries.plan.Facts.snapshots`).

A snapshot of a day holds its sessions as they stood at its version (a time through which
every event received was in the store) and their sums. The sessions that events received at
or after the version reached (changed, or began since) are the only ones whose rows differ
from it: the day's figures now are the snapshot's sums, plus those sessions' rows now, less
their rows in the snapshot (none for a session that began since). Visitors add up the same
way: the visitors of those sessions, less those the snapshot has.
"""

from __future__ import annotations

from datetime import date

from svc.queries.plan import Facts, Plan
from svc.queries.sql.statement import Statement, statement

#: The sessions of the snapshot days that events received at or after the day's snapshot
#: reached (an event of a session of a day is on or after that day). By id alone: the keys'
#: index then skips the other sessions' granules (a pair of day and id within a day: the
#: readers below keep to the snapshot days). Received at or after the oldest of those
#: versions, too: the minmax index on ``received_at`` (storage migration 3) skips the
#: granules of the events stored before it, which are nearly all of them until merges mix
#: the new parts into the old (30 days of 100M events ending today, no change since the
#: snapshot: 98 -> ~10 ms).
_CHANGED = (
    "SELECT session_id FROM events "
    "WHERE project_id = {project:String} AND toDate(ts) >= {snapshot_first:Date} "
    "AND received_at >= fromUnixTimestamp64Milli({snapshot_oldest:Int64}, 'UTC') "
    "AND toDate(session_start) IN {snapshot_days:Array(Date)} "
    "AND toUnixTimestamp64Milli(received_at) >= transform(toDate(session_start), "
    "{snapshot_days:Array(Date)}, {snapshot_versions:Array(Int64)}, toInt64(0))"
)

#: Those sessions' rows now: their partial rows merged here (a GROUP BY of a few thousand
#: sessions' rows; FINAL merged the day's parts: 45 against 22 ms for 2,000 of 530,000).
_NOW = (
    "SELECT session_day, any(visitor_id) AS visitor_id, sum(pageviews) AS pageviews, "
    "sum(events) AS events, dateDiff('millisecond', min(first_ts), max(last_ts)) AS duration_ms, "
    "max(source) AS source FROM sessions WHERE project_id = {project:String} "
    "AND session_day IN {snapshot_days:Array(Date)} AND session_id IN {changed:Array(UInt64)} "
    "GROUP BY session_day, session_id"
)

#: Their rows in the snapshot.
_WAS = (
    "SELECT session_day, visitor_id, pageviews, events, duration_ms, source "
    "FROM snapshot_sessions WHERE project_id = {project:String} "
    "AND (session_day, version) IN {snapshots:Array(Tuple(Date, UInt64))} "
    "AND session_id IN {changed:Array(UInt64)}"
)


def changed(plan: Plan, facts: Facts) -> Statement:
    """The ids of the sessions changed since the snapshots of ``facts`` (:data:`_CHANGED`),
    read once as a fact (:attr:`Facts.changed`). Over 30 days of 100M events ending today,
    with no change since the snapshot: 8 ms, where the statement of :func:`changes` that
    found them itself (three times) took 64-69 ms alone; with none, that one is not read."""
    assert facts.snapshots
    return statement(f"SELECT DISTINCT session_id FROM ({_CHANGED})", plan, facts)


def current(plan: Plan, days: list[date]) -> Statement:
    """The current snapshot (day, version) of each of ``days`` that has one."""
    return Statement(
        "SELECT session_day, max(version) FROM snapshot_days WHERE project_id = {project:String} "
        "AND session_day IN {snapshot_want:Array(Date)} GROUP BY session_day ORDER BY session_day",
        {"project": plan.project_id, "snapshot_want": days},
    )


def sums(plan: Plan, facts: Facts, rolled: Statement | None = None) -> Statement:
    """The snapshots' sums, per dimension ('' the totals, ``source``) and value, in the
    columns of :func:`svc.queries.sql.sessions.rollup_sums`; with ``rolled`` (such a
    statement of the rollups' sums), its rows too, in the same statement (one read fewer
    side by side with the others on two cores)."""
    assert facts.snapshots
    own = statement(
        "SELECT dimension, value, sum(sessions) AS sessions, sum(pageviews) AS pageviews, "
        "sum(events) AS events, sum(bounces) AS bounces, "
        "sum(with_pageview) AS sessions_with_pv, sum(duration_ms) AS duration_ms, "
        "sum(visitors) AS visitors FROM snapshot_sums WHERE project_id = {project:String} "
        "AND (session_day, version) IN {snapshots:Array(Tuple(Date, UInt64))} "
        "GROUP BY dimension, value",
        plan,
        facts,
    )
    if rolled is None:
        return own
    return Statement(f"{own.sql} UNION ALL {rolled.sql}", {**own.params, **rolled.params})


#: The ``dimension`` of the row of :func:`changes` whose ``visitors`` are those of the changed
#: sessions that the snapshots have already (to take away).
SEEN = "seen"


def changes(plan: Plan, facts: Facts) -> Statement:
    """What the sessions changed since the snapshots add to their sums, in the columns of
    :func:`sums` (each may be negative: a session's source or bounce may change), but the
    visitors: ``visitors`` of the totals row holds those of the changed sessions now, and a
    row of dimension :data:`SEEN` how many of them the snapshots of their days have already
    (a visitor id belongs to one day: those are counted in the sums). The changed sessions
    are :attr:`Facts.changed` (:func:`changed`): with none, the sums are the figures."""
    assert facts.snapshots and facts.changed
    rows = (
        "SELECT 1 AS sign, session_day, visitor_id, pageviews AS pv, events AS ev, "
        f"duration_ms AS dur, source FROM ({_NOW}) UNION ALL "
        "SELECT -1 AS sign, session_day, visitor_id, pageviews AS pv, events AS ev, "
        f"duration_ms AS dur, source FROM ({_WAS})"
    )
    seen = (
        f"SELECT '{SEEN}' AS dimension, '' AS value, 0 AS sessions, 0 AS pageviews, "
        "0 AS events, 0 AS bounces, 0 AS sessions_with_pv, 0 AS duration_ms, "
        "uniqExact(session_day, visitor_id) AS visitors FROM snapshot_sessions "
        "WHERE project_id = {project:String} "
        "AND (session_day, version) IN {snapshots:Array(Tuple(Date, UInt64))} "
        f"AND visitor_id IN (SELECT visitor_id FROM ({_NOW}))"
    )
    return statement(
        "SELECT dv.1 AS dimension, dv.2 AS value, sum(sign) AS sessions, "
        "sum(sign * pv) AS pageviews, sum(sign * ev) AS events, "
        "sum(sign * (pv = 1 AND ev = 1)) AS bounces, sum(sign * (pv > 0)) AS sessions_with_pv, "
        "sum(sign * dur) AS duration_ms, "
        "if(dimension = '', uniqExactIf((session_day, visitor_id), sign = 1), 0) AS visitors "
        f"FROM ({rows}) ARRAY JOIN [('', ''), ('source', toString(source))] AS dv "
        f"GROUP BY dimension, value UNION ALL {seen}",
        plan,
        facts,
    )
