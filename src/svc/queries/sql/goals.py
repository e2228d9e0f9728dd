"""The statements of GET /metrics/goals, from a plan and its facts, and the condition of a
goal over an event (pure functions; the runner runs them, svc.queries.conversions shapes
their rows)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from svc.queries.plan import Facts, Plan
from svc.queries.sql.sessions import events_where, of_unrolled_days, page_rows, session_rows
from svc.queries.sql.statement import Statement, statement

# GET /metrics/goals ---------------------------------------------------------------------------


def goal_condition(kind: str, target: str, name: str) -> tuple[str, dict[str, Any]]:
    """The condition of a goal (``event`` and a name, or ``page`` and a path pattern where
    ``*`` matches any characters) over an event, its value bound as ``name``."""
    if kind == "event":
        return f"name = {{{name}:String}}", {name: target}
    if "*" not in target:  # the whole path: a comparison, not a regular expression per row
        return f"name = 'page_view' AND path = {{{name}:String}}", {name: target}
    pattern = "^" + ".*".join(re.escape(part) for part in target.split("*")) + "$"
    return f"name = 'page_view' AND match(path, {{{name}:String}})", {name: pattern}


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
