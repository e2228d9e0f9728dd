"""The statements of GET /metrics/funnel, from a plan and its facts: over the events, or
over the rolled-up days' ``visitor_steps`` (pure functions; the runner runs them,
svc.queries.conversions shapes their rows)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from svc.queries.plan import Facts, FunnelPass, Plan
from svc.queries.sql.goals import goal_condition
from svc.queries.sql.sessions import current_rolled_days, events_where, of_unrolled_days
from svc.queries.sql.statement import Statement, statement
from svc.schema.steps import step_key, step_key_sql

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
