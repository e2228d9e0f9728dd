"""Small time helpers shared by every layer (milliseconds since the epoch, UTC)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_ms(ms: int | None) -> str | None:
    """ISO 8601 in UTC with a Z, or None."""
    if ms is None:
        return None
    return (
        datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def month_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m")


def day_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def as_date(value: object) -> date:
    """A day as a store returns it (a date, a datetime, or its ISO text) as a date."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))
