"""Goals and funnels.

A goal is ``event:<name>`` (an event of that name) or ``page:<pattern>`` (a page view whose
path matches; ``*`` matches any characters). A goal's conversions are the visitors with a
matching event; its rate is conversions over all visitors in the scope.

A funnel is 2 to 8 goals as steps, completed in order by one visitor within ``window``
seconds of the first step (ClickHouse ``windowFunnel``).
"""

from __future__ import annotations

import re
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.scope import QueryScope, percent
from svc.storage.events import EventStore

MAX_GOALS = 20


def goal_condition(goal: str, scope: QueryScope, name: str, field: str = "goal") -> str:
    kind, _, target = goal.partition(":")
    if not target or kind not in ("event", "page"):
        raise InvalidRequest(
            f"`{field}` must be event:<name> or page:<path pattern>, got {goal!r}", field=field
        )
    if kind == "event":
        return f"name = {{{scope.bind(name, target)}:String}}"
    if "*" not in target:  # the whole path: a comparison, not a regular expression per row
        return f"name = 'page_view' AND path = {{{scope.bind(name, target)}:String}}"
    pattern = "^" + ".*".join(re.escape(part) for part in target.split("*")) + "$"
    return f"name = 'page_view' AND match(path, {{{scope.bind(name, pattern)}:String}})"


def query_goals(store: EventStore, scope: QueryScope, goals: list[str]) -> dict[str, Any]:
    if not goals:
        raise InvalidRequest("name at least one `goal`", field="goal")
    if len(goals) > MAX_GOALS:
        raise InvalidRequest(f"at most {MAX_GOALS} goals", field="goal")
    conditions = [goal_condition(g, scope, f"g{i}") for i, g in enumerate(goals)]
    cols = ", ".join(
        f"uniqExactIf(visitor_id, {c}) AS v{i}, countIf({c}) AS e{i}"
        for i, c in enumerate(conditions)
    )
    row = store.query_named(
        f"SELECT uniqExact(visitor_id) AS visitors, {cols} FROM events "
        f"WHERE {scope.events_where()}",
        scope.params,
    )[0]
    total = int(row["visitors"])
    return {
        "visitors": total,
        "goals": [
            {
                "goal": g,
                "visitors": int(row[f"v{i}"]),
                "events": int(row[f"e{i}"]),
                "conversionRate": percent(int(row[f"v{i}"]), total),
            }
            for i, g in enumerate(goals)
        ],
    }


def query_funnel(
    store: EventStore, scope: QueryScope, steps: list[str], window_seconds: int
) -> dict[str, Any]:
    if not 2 <= len(steps) <= 8:
        raise InvalidRequest("a funnel has 2 to 8 `step`s", field="step")
    if not 1 <= window_seconds <= 30 * 86400:
        raise InvalidRequest("`window` must be 1 second to 30 days", field="window")
    conditions = [goal_condition(s, scope, f"s{i}", "step") for i, s in enumerate(steps)]
    window = scope.bind("window", window_seconds)
    # windowFunnel looks only at the events that match a step: the others are left out
    # before the GROUP BY (same levels, a fraction of the rows).
    any_step = " OR ".join(f"({c})" for c in conditions)
    sql = (
        "SELECT level, count() AS visitors FROM ("
        f"SELECT visitor_id, windowFunnel({{{window}:UInt64}})(toDateTime(ts), "
        f"{', '.join(conditions)}) AS level "
        f"FROM events WHERE {scope.events_where()} AND ({any_step}) GROUP BY visitor_id) "
        "WHERE level > 0 GROUP BY level "
        # The steps match events in every granule (a home page, a common event): reading the
        # step columns first (PREWHERE) skips nothing and costs time (docs/benchmarks.md).
        "SETTINGS optimize_move_to_prewhere = 0"
    )
    reached = {int(r["level"]): int(r["visitors"]) for r in store.query_named(sql, scope.params)}
    counts = [sum(n for level, n in reached.items() if level >= i + 1) for i in range(len(steps))]
    out = []
    for i, step in enumerate(steps):
        previous = counts[i - 1] if i else counts[0]
        out.append(
            {
                "step": step,
                "visitors": counts[i],
                "conversionRate": percent(counts[i], counts[0]),
                "dropOff": previous - counts[i],
                "dropOffRate": percent(previous - counts[i], previous),
            }
        )
    return {"windowSeconds": window_seconds, "steps": out}
