"""The rule of traffic and goal alerts (svc.mail.alerts, svc.mail.goal_alerts): the project's
thresholds, the hours a baseline is the mean of, and whether a value spiked or dropped
(docs/api.md, "Email reports and alerts")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from svc.meta.store import Project

OPTION = "alerts"
DEFAULTS: dict[str, float] = {
    "spikeFactor": 3.0,
    "dropFactor": 0.3,
    "minVisitors": 10,
    "baselineDays": 7,
}


def thresholds(project: Project) -> dict[str, float]:
    """The project's ``alerts`` option over :data:`DEFAULTS`."""
    own = project.options.get(OPTION)
    return {**DEFAULTS, **(own if isinstance(own, dict) else {})}


def direction(rule: dict[str, float], value: int, baseline: float) -> str | None:
    """``spike``, ``drop`` or None: the rule of svc.mail.alerts' docstring over ``value`` (the
    hour's visitors, or a goal's conversions) and its ``baseline``."""
    minimum = rule["minVisitors"]
    if value >= minimum and value >= rule["spikeFactor"] * baseline:
        return "spike"
    if rule["dropFactor"] > 0 and baseline >= minimum and value <= rule["dropFactor"] * baseline:
        return "drop"
    return None


def compared_hours(hour: datetime, zone: str, days: int) -> list[datetime]:
    """The UTC starts of the same local hour as ``hour`` (aware) in ``zone`` on each of the
    ``days`` local days before, latest first. A day whose clocks skipped that hour (the spring
    change) is left out; of an hour that happened twice (the autumn change), the first."""
    tz = ZoneInfo(zone)
    local = hour.astimezone(tz)
    out: list[datetime] = []
    for k in range(1, days + 1):
        d = local.date() - timedelta(days=k)
        wall = datetime(d.year, d.month, d.day, local.hour, local.minute, tzinfo=tz)
        start = wall.astimezone(UTC)
        if start.astimezone(tz).replace(tzinfo=None) != wall.replace(tzinfo=None):
            continue  # no such time that day
        out.append(start)
    return out
