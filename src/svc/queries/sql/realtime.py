"""The statements of GET /metrics/realtime: the recent visitors, their pages, sources and
countries, per minute (pure functions; svc.queries.realtime runs them and shapes their
rows)."""

from __future__ import annotations

from svc.queries.sql.statement import Statement
from svc.schema.measurements import COUNTED_SQL

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
