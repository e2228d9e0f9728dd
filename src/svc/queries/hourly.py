"""Visitors in a few given hours, for traffic alerts (svc.mail.alerts)."""

from __future__ import annotations

from datetime import datetime

from svc.queries.run import Runner
from svc.queries.sql.alerts import HOURLY_COLUMNS, hourly_visitors
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
