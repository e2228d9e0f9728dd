"""Realtime: distinct visitors with an event in the last five minutes, and the page each of
them is on (their latest page view)."""

from __future__ import annotations

from typing import Any

from svc.storage.events import EventStore

WINDOW_SECONDS = 300


def query_realtime(store: EventStore, project_id: str, limit: int = 10) -> dict[str, Any]:
    params = {"project": project_id, "window": WINDOW_SECONDS, "limit": limit}
    recent = (
        "project_id = {project:String} "
        "AND ts >= now64(3, 'UTC') - toIntervalSecond({window:UInt32})"
    )
    visitors = store.query(f"SELECT uniqExact(visitor_id) FROM events WHERE {recent}", params)
    pages = store.query_named(
        "SELECT page AS value, count() AS visitors FROM ("
        "SELECT visitor_id, argMaxIf(path, ts, name = 'page_view') AS page "
        f"FROM events WHERE {recent} GROUP BY visitor_id) "
        "WHERE page != '' GROUP BY value ORDER BY visitors DESC, value LIMIT {limit:UInt32}",
        params,
    )
    return {
        "visitors": int(visitors[0][0]) if visitors else 0,
        "windowSeconds": WINDOW_SECONDS,
        "pages": [{"value": p["value"], "visitors": int(p["visitors"])} for p in pages],
    }
