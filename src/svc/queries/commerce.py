"""Revenue from ``purchase`` events (GA4 shape: ``value``, ``currency``, ``transaction_id``,
``items``), and errors from ``exception`` events (``description``, ``fatal``).

Revenue reads ``purchases``, the purchase events with their figures in typed columns
(storage/migrations/024); errors read ``report_events``, the copy of the events other than
plain page views (storage/migrations/006 and 008). Both with the same WHERE as over the
events: the same answers, without reading every event's properties."""

from __future__ import annotations

from typing import Any

from svc.queries.plan import Facts, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import custom_events as event_sql
from svc.storage.events import EventStore


def query_revenue(store: EventStore, query: Query, limit: int = 10) -> dict[str, Any]:
    p, runner = plan(query), Runner(store)  # event-level: no facts needed
    currencies, items = runner.together(
        event_sql.revenue_currencies(p, Facts()), event_sql.revenue_items(p, Facts(), limit)
    )
    ids = sorted({str(i["item_id"]) for i in items})
    names: dict[str, str] = {}
    if ids:  # the names the items were sent with (the last one), for those that have one
        (found,) = runner.together(event_sql.revenue_item_names(p, Facts(), ids))
        names = {str(n["item_id"]): str(n["item_name"]) for n in found}
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
                "itemName": names.get(i["item_id"]),
                "currency": i["currency"],
                "quantity": round(float(i["quantity"]), 3),
                "revenue": round(float(i["revenue"]), 2),
            }
            for i in items
        ],
    }


def query_errors(store: EventStore, query: Query, limit: int = 10) -> dict[str, Any]:
    p, runner = plan(query), Runner(store)  # event-level: no facts needed
    totals, top, pages = runner.together(
        event_sql.errors_total(p, Facts()),
        event_sql.errors_top(p, Facts(), limit),
        event_sql.errors_pages(p, Facts(), limit),
    )
    total = totals[0]
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
