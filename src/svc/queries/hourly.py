"""Visitors and goals' conversions in a few given hours, for traffic and goal alerts
(svc.mail.alerts, svc.mail.goal_alerts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from svc.queries.run import Runner
from svc.queries.sql.alerts import HOURLY_COLUMNS, GoalTarget, hourly_goals, hourly_visitors
from svc.storage.events import EventStore

BREAKDOWNS = tuple(k for k in HOURLY_COLUMNS if k != "total")


def hours_visitors(
    store: EventStore, project_id: str, hours: list[datetime]
) -> dict[str, dict[datetime, dict[str, int]]]:
    """Visitors of each hour-long span starting at one of ``hours`` (aware, distinct, at least
    one): ``{"total"|"source"|"page"|"country": {hour: {value: visitors}}}``, keyed by the
    datetimes given (``total`` has the value ``""``). An hour without events is absent."""
    runner = Runner(store)
    by = ("total", *BREAKDOWNS)
    answers = [runner.named(hourly_visitors(project_id, hours, b)) for b in by]
    out: dict[str, dict[datetime, dict[str, int]]] = {}
    for name, rows in zip(by, answers, strict=True):
        per_hour: dict[datetime, dict[str, int]] = {}
        for r in rows:
            h = hours[int(r["slot"]) - 1]
            per_hour.setdefault(h, {})[str(r["value"])] = int(r["visitors"])
        out[name] = per_hour
    return out


def hours_conversions(
    store: EventStore, project_id: str, hours: list[datetime], goals: Sequence[GoalTarget]
) -> list[dict[datetime, int]]:
    """Per goal of ``goals`` (at least one; :data:`~svc.queries.sql.alerts.GoalTarget`), in
    the order given, its converting visitors in each hour-long span starting at one of
    ``hours`` (aware, distinct, at least one), keyed by the datetimes given; one statement
    for every goal and hour. An hour without converting visitors is 0 or absent."""
    rows = Runner(store).named(hourly_goals(project_id, hours, goals))
    out: list[dict[datetime, int]] = [{} for _ in goals]
    for r in rows:
        h = hours[int(r["slot"]) - 1]
        for i, per_hour in enumerate(out):
            per_hour[h] = int(r[f"v{i}"])
    return out
