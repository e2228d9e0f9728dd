"""The statements of the reports on custom events: GET /metrics/revenue (purchases),
/metrics/errors (exceptions) and /metrics/properties, each with the same WHERE as over
the events (pure functions; the runner runs them, svc.queries.commerce and
svc.queries.properties shape their rows)."""

from __future__ import annotations

from svc.queries.plan import Facts, Plan
from svc.queries.sql.sessions import events_where
from svc.queries.sql.statement import Statement, statement

# GET /metrics/revenue and /metrics/errors: with the same WHERE as over the events ---------------


def revenue_currencies(plan: Plan, facts: Facts) -> Statement:
    """Revenue and orders per currency, from the purchases' typed columns
    (storage/migrations/024)."""
    return statement(
        "SELECT currency, sum(order_value) AS revenue, count() AS orders "
        f"FROM purchases WHERE {events_where(plan, facts)} "
        "GROUP BY currency ORDER BY revenue DESC",
        plan,
        facts,
    )


def revenue_items(plan: Plan, facts: Facts, limit: int) -> Statement:
    """The ``limit`` (item, currency) pairs of most revenue (price times quantity), from the
    purchases' typed items."""
    return statement(
        "SELECT item_id, currency, sum(item_quantity) AS quantity, "
        "sum(item_price * item_quantity) AS revenue FROM purchases "
        "ARRAY JOIN item_ids AS item_id, item_quantities AS item_quantity, "
        "item_prices AS item_price "
        f"WHERE {events_where(plan, facts)} "
        "GROUP BY item_id, currency ORDER BY revenue DESC, item_id "
        "LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def revenue_item_names(plan: Plan, facts: Facts, ids: list[str]) -> Statement:
    """The name (``item_name``) each of the items ``ids`` was last sent with, for the items
    that have one. Only the purchases holding one of them are read for their properties (the
    typed ``item_ids`` pick them first), not every purchase of the range."""
    return statement(
        "SELECT item_id, argMax(sent_name, ts) AS item_name FROM purchases "
        "ARRAY JOIN item_ids AS item_id, "
        "arrayMap(i -> JSONExtractString(i, 'item_name'), "
        "JSONExtractArrayRaw(properties['items'])) AS sent_name "
        f"WHERE {events_where(plan, facts)} AND hasAny(item_ids, {{ids:Array(String)}}) "
        "AND item_id IN {ids:Array(String)} AND sent_name != '' GROUP BY item_id",
        plan,
        facts,
        ids=ids,
    )


def _errors_where(plan: Plan, facts: Facts) -> str:
    return f"{events_where(plan, facts)} AND name = 'exception'"


def errors_total(plan: Plan, facts: Facts) -> Statement:
    return statement(
        "SELECT count() AS errors, countIf(properties['fatal'] = 'true') AS fatal "
        f"FROM report_events WHERE {_errors_where(plan, facts)}",
        plan,
        facts,
    )


def errors_top(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        "SELECT properties['description'] AS description, count() AS count, "
        "countIf(properties['fatal'] = 'true') AS fatal, uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {_errors_where(plan, facts)} "
        "GROUP BY description ORDER BY count DESC, description LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def errors_pages(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        f"SELECT path AS value, count() AS count FROM report_events "
        f"WHERE {_errors_where(plan, facts)} "
        "GROUP BY value ORDER BY count DESC, value LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


# GET /metrics/properties ----------------------------------------------------------------------


def property_keys(plan: Plan, facts: Facts, limit: int) -> Statement:
    return statement(
        "SELECT arrayJoin(mapKeys(properties)) AS key, count() AS events "
        f"FROM report_events WHERE {events_where(plan, facts)} GROUP BY key "
        "ORDER BY events DESC, key LIMIT {limit:UInt32}",
        plan,
        facts,
        limit=limit,
    )


def property_values(plan: Plan, facts: Facts, key: str, limit: int) -> Statement:
    return statement(
        "SELECT properties[{prop_key:String}] AS value, count() AS events, "
        "uniqExact(visitor_id) AS visitors "
        f"FROM report_events WHERE {events_where(plan, facts)} "
        "AND mapContains(properties, {prop_key:String}) "
        "GROUP BY value ORDER BY events DESC, value LIMIT {limit:UInt32}",
        plan,
        facts,
        prop_key=key,
        limit=limit,
    )
