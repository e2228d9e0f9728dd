"""Realtime: distinct visitors with an event in the last five minutes, the page each of them is
on (their latest page view), their sources and countries (their current session's), and the
visitors of each minute of the last thirty."""

from __future__ import annotations

from typing import Any

from svc.queries.run import Runner
from svc.queries.sql import realtime as realtime_sql
from svc.storage.events import EventStore

WINDOW_SECONDS = 300
#: The minutes of the per-minute series, the current (unfinished) one last.
MINUTES = 30


def query_realtime(store: EventStore, project_id: str, limit: int = 10) -> dict[str, Any]:
    rows, minutes, kinds = Runner(store).together(
        realtime_sql.realtime(project_id, WINDOW_SECONDS, limit),
        realtime_sql.realtime_minutes(project_id, MINUTES),
        realtime_sql.realtime_sessions(project_id, WINDOW_SECONDS, limit),
    )
    pages = [r for r in rows if r["value"] != ""][:limit]

    def top(kind: str) -> list[dict[str, Any]]:
        return [
            {"value": r["value"], "visitors": int(r["visitors"])}
            for r in kinds
            if r["kind"] == kind
        ]

    return {
        "visitors": int(rows[0]["total"]) if rows else 0,
        "windowSeconds": WINDOW_SECONDS,
        "pages": [{"value": p["value"], "visitors": int(p["visitors"])} for p in pages],
        "sources": top("source"),
        "countries": top("country"),
        "minutes": [{"time": m["time"], "visitors": int(m["visitors"])} for m in minutes][
            -MINUTES:
        ],
    }
