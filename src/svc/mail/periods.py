"""Report periods: the last complete day, week (Monday to Sunday) or month in a time zone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from svc.queries.dates import DateRange

REPORT_KINDS = ("daily", "weekly", "monthly")


@dataclass(frozen=True)
class Period:
    kind: str  # daily, weekly, monthly
    rng: DateRange

    @property
    def key(self) -> str:
        """``day:2026-11-23``, ``week:2026-11-16`` (its Monday), ``month:2026-10``."""
        if self.kind == "daily":
            return f"day:{self.rng.first.isoformat()}"
        if self.kind == "weekly":
            return f"week:{self.rng.first.isoformat()}"
        return f"month:{self.rng.first.isoformat()[:7]}"

    @property
    def label(self) -> str:
        """How a mail names it: ``Mon 23 Nov 2026``, ``16–22 Nov 2026``, ``October 2026``."""
        first, last = self.rng.first, self.rng.last
        if self.kind == "daily":
            return first.strftime("%a %d %b %Y")
        if self.kind == "weekly":
            return f"{first.strftime('%d %b')} – {last.strftime('%d %b %Y')}"
        return first.strftime("%B %Y")


def last_complete(kind: str, tz: str, now: datetime) -> Period:
    """The latest period of ``kind`` that has ended in ``tz`` at ``now`` (aware)."""
    today = now.astimezone(ZoneInfo(tz)).date()
    if kind == "daily":
        day = today - timedelta(days=1)
        return Period(kind, DateRange(day, day, tz))
    if kind == "weekly":
        monday = today - timedelta(days=today.weekday()) - timedelta(days=7)
        return Period(kind, DateRange(monday, monday + timedelta(days=6), tz))
    if kind == "monthly":
        last = today.replace(day=1) - timedelta(days=1)
        return Period(kind, DateRange(last.replace(day=1), last, tz))
    raise ValueError(f"not a report kind: {kind!r}")
