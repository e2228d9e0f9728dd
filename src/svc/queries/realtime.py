"""Realtime: distinct visitors with an event in the last five minutes, and the page each of
them is on (their latest page view)."""

from __future__ import annotations

from typing import Any

from svc.queries.run import Runner
from svc.queries.sql import reports
from svc.storage.events import EventStore

WINDOW_SECONDS = 300


def query_realtime(store: EventStore, project_id: str, limit: int = 10) -> dict[str, Any]:
    rows = Runner(store).named(reports.realtime(project_id, WINDOW_SECONDS, limit))
    pages = [r for r in rows if r["value"] != ""][:limit]
    return {
        "visitors": int(rows[0]["total"]) if rows else 0,
        "windowSeconds": WINDOW_SECONDS,
        "pages": [{"value": p["value"], "visitors": int(p["visitors"])} for p in pages],
    }
