"""The statements of GET /metrics and /metrics/breakdown, from a plan and its facts: the
session aggregates of a range per source, or per value of a dimension (pure functions;
the runner runs them, svc.queries.metrics and svc.queries.breakdown shape their rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from svc.queries.dimensions import DIMENSIONS, Dimension
from svc.queries.plan import Facts, Plan
from svc.queries.sql.sessions import (
    ROLLED_SESSION_AGGREGATES,
    SESSION_AGGREGATES,
    event_name_rows,
    event_rows,
    page_rows,
    rolled_session_rows,
    session_rows,
)
from svc.queries.sql.statement import Statement, statement

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
