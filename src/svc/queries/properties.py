"""Custom properties: the keys seen in a scope, and the values of one key.

The keys are read from ``report_events``, which holds every event that carries properties
(every event but a page view without them: storage/migrations/008), a seventh of the events.
The values of a key are the rows of the breakdown by ``prop:<key>``, which the daily rollups
answer on the days they hold the key."""

from __future__ import annotations

from typing import Any

from svc.errors import InvalidRequest
from svc.queries import breakdown
from svc.queries.dimensions import dimension
from svc.queries.plan import Facts, Query, plan
from svc.queries.run import Runner
from svc.queries.sql import custom_events as event_sql
from svc.storage.events import EventStore


def query_property_keys(store: EventStore, query: Query, limit: int = 100) -> dict[str, Any]:
    rows = Runner(store).named(event_sql.property_keys(plan(query), Facts(), limit))
    return {"keys": [{"key": r["key"], "events": int(r["events"])} for r in rows]}


def query_property_values(
    store: EventStore, query: Query, key: str, limit: int = 100
) -> dict[str, Any]:
    """The values of ``key`` by events (most first, then by value): each value's events in
    the range that carry it and their visitors. These are the breakdown's figures of
    ``prop:<key>`` (a value's events are the events with it, its visitors theirs), which the
    rollups answer on the rolled days instead of every event with the key (over 30 days of
    100M events: 897 -> ~190 ms, and no set of 3.1M visitor ids per value, which set the
    service's peak memory at ~510 MB). A key no breakdown can name (one with a control
    character) is read from the events."""
    try:
        dim, dim_params = dimension(f"prop:{key}", "by_key", field="key")
    except InvalidRequest:
        rows = Runner(store).named(event_sql.property_values(plan(query), Facts(), key, limit))
    else:
        page = breakdown.Page(limit, 0, "-events")
        rows = breakdown.query_breakdown(store, query, dim, page, dim_params)["rows"]
    return {
        "key": key,
        "values": [
            {"value": r["value"], "events": int(r["events"]), "visitors": int(r["visitors"])}
            for r in rows
        ],
    }
