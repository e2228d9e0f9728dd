"""Goals and funnels.

A goal is ``event:<name>`` (an event of that name) or ``page:<pattern>`` (a page view whose
path matches; ``*`` matches any characters). A goal's conversions are the visitors with a
matching event; its rate is conversions over all visitors in the scope.

A funnel is 2 to 8 goals as steps, completed in order by one visitor within ``window``
seconds of the first step (ClickHouse ``windowFunnel``).
"""

from __future__ import annotations

from typing import Any

from svc.errors import InvalidRequest
from svc.queries.plan import Facts, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import reports
from svc.storage.events import EventStore

MAX_GOALS = 20


def parse_goal(goal: str, field: str = "goal") -> tuple[str, str]:
    """A goal as (kind, target): ``event`` and a name, or ``page`` and a path pattern."""
    kind, _, target = goal.partition(":")
    if not target or kind not in ("event", "page"):
        raise InvalidRequest(
            f"`{field}` must be event:<name> or page:<path pattern>, got {goal!r}", field=field
        )
    return kind, target


def query_goals(store: EventStore, query: Query, goals: list[str]) -> dict[str, Any]:
    if not goals:
        raise InvalidRequest("name at least one `goal`", field="goal")
    if len(goals) > MAX_GOALS:
        raise InvalidRequest(f"at most {MAX_GOALS} goals", field="goal")
    targets = [parse_goal(g) for g in goals]
    p = plan(query)  # event-level: no facts needed
    row = Runner(store).named(reports.goals(p, Facts(), targets))[0]
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
    store: EventStore, query: Query, steps: list[str], window_seconds: int
) -> dict[str, Any]:
    if not 2 <= len(steps) <= 8:
        raise InvalidRequest("a funnel has 2 to 8 `step`s", field="step")
    if not 1 <= window_seconds <= 30 * 86400:
        raise InvalidRequest("`window` must be 1 second to 30 days", field="window")
    targets = [parse_goal(s, "step") for s in steps]
    stmt = reports.funnel(plan(query), Facts(), targets, window_seconds)
    reached = {int(r["level"]): int(r["visitors"]) for r in Runner(store).named(stmt)}
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
