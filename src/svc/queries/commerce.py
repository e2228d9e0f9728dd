"""Revenue from ``purchase`` events (GA4 shape: ``value``, ``currency``, ``transaction_id``,
``items``), and errors from ``exception`` events (``description``, ``fatal``).

Both read ``report_events``, the copy of the events other than plain page views
(storage/migrations/006 and 008), with the same WHERE as over the events: the same answers,
without reading every event's properties."""

from __future__ import annotations

from typing import Any

from svc.queries.scope import QueryScope, percent
from svc.storage.events import EventStore


def query_revenue(store: EventStore, scope: QueryScope, limit: int = 10) -> dict[str, Any]:
    where = f"{scope.events_where()} AND name = 'purchase'"
    currencies = store.query_named(
        "SELECT upper(properties['currency']) AS currency, "
        "sum(toFloat64OrZero(properties['value'])) AS revenue, count() AS orders "
        f"FROM report_events WHERE {where} GROUP BY currency ORDER BY revenue DESC",
        scope.params,
    )
    items = store.query_named(
        "SELECT JSONExtractString(item, 'item_id') AS item_id, currency, "
        "sum(if(JSONHas(item, 'quantity'), JSONExtractFloat(item, 'quantity'), 1)) AS quantity, "
        "sum(JSONExtractFloat(item, 'price') * "
        "if(JSONHas(item, 'quantity'), JSONExtractFloat(item, 'quantity'), 1)) AS revenue "
        "FROM (SELECT upper(properties['currency']) AS currency, "
        "arrayJoin(JSONExtractArrayRaw(properties['items'])) AS item "
        f"FROM report_events WHERE {where}) "
        f"GROUP BY item_id, currency ORDER BY revenue DESC, item_id "
        f"LIMIT {{{scope.bind('limit', limit)}:UInt32}}",
        scope.params,
    )
    return {
        "currencies": [
            {
                "currency": c["currency"],
                "revenue": round(float(c["revenue"]), 2),
                "orders": int(c["orders"]),
                "averageOrderValue": round(float(c["revenue"]) / int(c["orders"]), 2)
                if int(c["orders"])
                else 0.0,
            }
            for c in currencies
        ],
        "topItems": [
            {
                "itemId": i["item_id"],
                "currency": i["currency"],
                "quantity": round(float(i["quantity"]), 3),
                "revenue": round(float(i["revenue"]), 2),
            }
            for i in items
        ],
    }


def query_errors(store: EventStore, scope: QueryScope, limit: int = 10) -> dict[str, Any]:
    where = f"{scope.events_where()} AND name = 'exception'"
    params = scope.params
    lim = scope.bind("limit", limit)
    total = store.query_named(
        "SELECT count() AS errors, countIf(properties['fatal'] = 'true') AS fatal "
        f"FROM report_events WHERE {where}",
        params,
    )[0]
    top = store.query_named(
        "SELECT properties['description'] AS description, count() AS count, "
        "countIf(properties['fatal'] = 'true') AS fatal, uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {where} GROUP BY description ORDER BY count DESC, description "
        f"LIMIT {{{lim}:UInt32}}",
        params,
    )
    pages = store.query_named(
        f"SELECT path AS value, count() AS count FROM report_events WHERE {where} "
        f"GROUP BY value ORDER BY count DESC, value LIMIT {{{lim}:UInt32}}",
        params,
    )
    errors, fatal = int(total["errors"]), int(total["fatal"])
    return {
        "errors": errors,
        "fatal": fatal,
        "fatalShare": percent(fatal, errors),
        "top": [
            {
                "description": t["description"],
                "count": int(t["count"]),
                "fatal": int(t["fatal"]),
                "visitors": int(t["visitors"]),
            }
            for t in top
        ],
        "pages": [{"value": p["value"], "count": int(p["count"])} for p in pages],
    }
