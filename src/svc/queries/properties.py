"""Custom properties: the keys seen in a scope, and the values of one key.

Both read ``report_events``, which holds every event that carries properties (every event but
a page view without them: storage/migrations/008), a seventh of the events."""

from __future__ import annotations

from typing import Any

from svc.queries.scope import QueryScope
from svc.storage.events import EventStore


def query_property_keys(store: EventStore, scope: QueryScope, limit: int = 100) -> dict[str, Any]:
    rows = store.query_named(
        "SELECT arrayJoin(mapKeys(properties)) AS key, count() AS events "
        f"FROM report_events WHERE {scope.events_where()} GROUP BY key "
        f"ORDER BY events DESC, key LIMIT {{{scope.bind('limit', limit)}:UInt32}}",
        scope.params,
    )
    return {"keys": [{"key": r["key"], "events": int(r["events"])} for r in rows]}


def query_property_values(
    store: EventStore, scope: QueryScope, key: str, limit: int = 100
) -> dict[str, Any]:
    k = scope.bind("prop_key", key)
    rows = store.query_named(
        f"SELECT properties[{{{k}:String}}] AS value, count() AS events, "
        "uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {scope.events_where()} "
        f"AND mapContains(properties, {{{k}:String}}) "
        f"GROUP BY value ORDER BY events DESC, value "
        f"LIMIT {{{scope.bind('limit', limit)}:UInt32}}",
        scope.params,
    )
    return {
        "key": key,
        "values": [
            {"value": r["value"], "events": int(r["events"]), "visitors": int(r["visitors"])}
            for r in rows
        ],
    }
