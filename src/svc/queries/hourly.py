"""Visitors in one hour of the day over several days, for traffic alerts (svc.mail.alerts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from svc.queries.run import Runner
from svc.queries.sql.alerts import HOURLY_COLUMNS, hourly_visitors
from svc.storage.events import EventStore

BREAKDOWNS = tuple(k for k in HOURLY_COLUMNS if k != "total")


def same_hour_visitors(
    store: EventStore, project_id: str, hour: datetime, days: int
) -> dict[str, dict[datetime, dict[str, int]]]:
    """Visitors of the UTC hour starting at ``hour`` (aware) and of the same hour on each of the
    ``days`` days before: ``{"total"|"source"|"page"|"country": {hour: {value: visitors}}}``
    (``total`` has the value ``""``). An hour without events is absent."""
    start = (hour - timedelta(days=days)).astimezone(UTC).replace(tzinfo=None)
    end = (hour + timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    runner = Runner(store)
    by = ("total", *BREAKDOWNS)
    answers = [runner.named(hourly_visitors(project_id, start, end, b)) for b in by]
    out: dict[str, dict[datetime, dict[str, int]]] = {}
    for name, rows in zip(by, answers, strict=True):
        per_hour: dict[datetime, dict[str, int]] = {}
        for r in rows:
            h = r["hour"]
            if isinstance(h, datetime):
                h = h.replace(tzinfo=UTC) if h.tzinfo is None else h.astimezone(UTC)
            per_hour.setdefault(h, {})[str(r["value"])] = int(r["visitors"])
        out[name] = per_hour
    return out
