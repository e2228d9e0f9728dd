"""The shapes of the answers: figures of aggregate rows as the API writes them."""

from __future__ import annotations

from typing import Any


def session_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON metrics of one aggregate row (see svc.queries.sql.sessions.SESSION_AGGREGATES)."""
    sessions = int(row["sessions"])
    with_pv = int(row["sessions_with_pv"])
    return {
        "visitors": int(row["visitors"]),
        "sessions": sessions,
        "pageviews": int(row["pageviews"]),
        "events": int(row["events"]),
        "bounceRate": percent(int(row["bounces"]), with_pv),
        "avgSessionDuration": round(int(row["duration_ms"]) / 1000 / sessions, 1)
        if sessions
        else 0.0,
    }


def percent(part: int, whole: int) -> str:
    """``"12.3%"``: one decimal and a percent sign; ``"0.0%"`` when ``whole`` is 0."""
    return f"{100 * part / whole:.1f}%" if whole else "0.0%"
