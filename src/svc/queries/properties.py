"""Custom properties: the keys seen in a scope, and the values of one key.

Both read ``report_events``, which holds every event that carries properties (every event but
a page view without them: storage/migrations/008), a seventh of the events."""

from __future__ import annotations

from typing import Any

from svc.queries.plan import Facts, Query, plan
from svc.queries.run import Runner
from svc.queries.sql import reports
from svc.storage.events import EventStore


def query_property_keys(store: EventStore, query: Query, limit: int = 100) -> dict[str, Any]:
    rows = Runner(store).named(reports.property_keys(plan(query), Facts(), limit))
    return {"keys": [{"key": r["key"], "events": int(r["events"])} for r in rows]}


def query_property_values(
    store: EventStore, query: Query, key: str, limit: int = 100
) -> dict[str, Any]:
    rows = Runner(store).named(reports.property_values(plan(query), Facts(), key, limit))
    return {
        "key": key,
        "values": [
            {"value": r["value"], "events": int(r["events"]), "visitors": int(r["visitors"])}
            for r in rows
        ],
    }
