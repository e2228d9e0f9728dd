"""Realtime: distinct visitors with an event in the last five minutes, and the page each of
them is on (their latest page view)."""

from __future__ import annotations

from typing import Any

from svc.queries.run import Runner
from svc.queries.sql import reports
from svc.storage.events import EventStore

WINDOW_SECONDS = 300


def query_realtime(store: EventStore, project_id: str, limit: int = 10) -> dict[str, Any]:
    runner = Runner(store)
    visitors = runner.rows(reports.realtime_visitors(project_id, WINDOW_SECONDS))
    pages = runner.named(reports.realtime_pages(project_id, WINDOW_SECONDS, limit))
    return {
        "visitors": int(visitors[0][0]) if visitors else 0,
        "windowSeconds": WINDOW_SECONDS,
        "pages": [{"value": p["value"], "visitors": int(p["visitors"])} for p in pages],
    }
