"""What a report says when its range reaches before the project's raw events (docs/api.md,
"Retention"): ``rawDataFrom`` and a note of what the days before it hold in this report.

Only the daily rollups (and the hourly event figures) answer those days: GET /metrics and
the breakdowns without filters answer them whole; a time series without filters has the
hourly page views, events and visitors, and by day, week or month the daily sessions, bounce
rate and duration too (an hourly one has no sessions there); every other report (filters,
funnels, goals, revenue, errors, properties) needs the raw events and counts nothing there.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from svc.queries.dates import DateRange
from svc.storage.rollups import rollup_dimensions

#: The header that carries ``rawDataFrom`` too.
HEADER = "X-Svc-Raw-Data-From"


def reaches_before(rng: DateRange, raw_from: date | None) -> bool:
    """Whether ``rng`` begins before the first day of raw events (UTC)."""
    if raw_from is None:
        return False
    return rng.start_utc < datetime.combine(raw_from, time(0), UTC)


def rolled_up(by: object) -> bool:
    """Whether the daily rollups hold a breakdown by ``by``: a session dimension, the page,
    the event name, the hostname or a custom property (svc.storage.rollups)."""
    if not isinstance(by, str):
        return False
    return (
        by in rollup_dimensions() or by in ("page", "event", "hostname") or by.startswith("prop:")
    )


def note(kind: str | None, filtered: bool, raw_from: date, by: object = None) -> str:
    """The note of a report of ``kind`` (``filtered``: with filters; ``by``: a breakdown's
    dimension, a time series' interval) over days before ``raw_from``."""
    kept = f"raw events are kept from {raw_from.isoformat()} (UTC) by the retention policy"
    from_rollups = kind == "metrics" or (kind in ("breakdown", "properties") and rolled_up(by))
    if from_rollups and not filtered:
        return (
            f"{kept}; the days before it are answered from the daily rollups, per UTC day "
            "(each day's sessions counted whole)"
        )
    if kind == "timeseries" and not filtered:
        hourly = (
            f"{kept}; before it, page views, events and visitors come from the hourly rollups "
            "(in a time zone whose offset is whole hours)"
        )
        if by == "hour":
            return (
                f"{hourly}, and sessions, bounce rate and duration are not counted by the hour "
                "(the daily rollups hold whole days: ask for interval=day)"
            )
        return (
            f"{hourly}, and sessions, bounce rate and duration from the daily rollups, per UTC "
            "day (each day's sessions counted whole, in the bucket of the day they began)"
        )
    return f"{kept}; this report needs raw events, so the days before it are not counted"


def annotate(
    body: dict[str, Any], kind: str | None, filtered: bool, rng: DateRange, raw_from: date | None
) -> dict[str, str]:
    """Add ``rawDataFrom`` and a note to ``body`` when ``rng`` reaches before ``raw_from``;
    the headers to answer with (none otherwise)."""
    if raw_from is None or not reaches_before(rng, raw_from):
        return {}
    body["rawDataFrom"] = raw_from.isoformat()
    by = body.get("interval") if kind == "timeseries" else body.get("by")
    if kind == "properties" and "key" in body:  # a key's values: its breakdown's rows
        by = f"prop:{body['key']}"
    body.setdefault("notes", []).append(note(kind, filtered, raw_from, by))
    return {HEADER: raw_from.isoformat()}
