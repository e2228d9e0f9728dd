"""Breakdowns: the session metrics of each value of a dimension, ordered and paged.

For a session dimension each session counts once, under its value. For an event dimension
(page, event, hostname, prop:<key>) a session counts under every value it has an event with,
and page views and events are those with the value; bounce rate and duration are those of the
sessions in the row. A page breakdown counts page views only; a property breakdown only the
events that carry the property.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.dimensions import Dimension
from svc.queries.scope import (
    ROLLED_SESSION_AGGREGATES,
    SESSION_AGGREGATES,
    QueryScope,
    session_metrics,
)
from svc.storage.events import EventStore

ORDER_COLUMNS = {
    "visitors": "visitors",
    "sessions": "sessions",
    "pageviews": "pageviews",
    "events": "events",
    "bounceRate": "bounces / greatest(sessions_with_pv, 1)",
    "avgSessionDuration": "duration_ms / greatest(sessions, 1)",
    "value": "value",
}


@dataclass(frozen=True, slots=True)
class Page:
    limit: int = 100
    offset: int = 0
    order: str = "-visitors"

    def order_sql(self) -> str:
        name = self.order.lstrip("-+")
        if name not in ORDER_COLUMNS:
            raise InvalidRequest(
                f"`order` must be one of {', '.join(ORDER_COLUMNS)} (prefix - for descending)",
                field="order",
            )
        direction = "DESC" if self.order.startswith("-") else "ASC"
        return f"{ORDER_COLUMNS[name]} {direction}, value ASC"


MAX_OFFSET = 1_000_000  # bound into SQL as UInt32: a larger one would wrap at 2^32


def parse_page(limit: str | None, offset: str | None, order: str | None) -> Page:
    try:
        n = int(limit) if limit else 100
    except ValueError:
        raise InvalidRequest("`limit` must be a whole number", field="limit") from None
    try:
        skip = int(offset) if offset else 0
    except ValueError:
        raise InvalidRequest("`offset` must be a whole number", field="offset") from None
    if not 1 <= n <= 1000:
        raise InvalidRequest("`limit` must be between 1 and 1000", field="limit")
    if not 0 <= skip <= MAX_OFFSET:
        raise InvalidRequest(f"`offset` must be between 0 and {MAX_OFFSET}", field="offset")
    page = Page(n, skip, order or "-visitors")
    page.order_sql()
    return page


def breakdown_sql(scope: QueryScope, dim: Dimension, page: Page) -> str:
    tail = (
        f"ORDER BY {page.order_sql()} "
        f"LIMIT {{{scope.bind('limit', page.limit)}:UInt32}} "
        f"OFFSET {{{scope.bind('offset', page.offset)}:UInt32}}"
    )
    return (
        f"SELECT value, {SESSION_AGGREGATES}, count() OVER () AS total_rows "
        f"FROM ({_rows(scope, dim)}) GROUP BY value {tail}"
    )


def _rows_kind(scope: QueryScope, dim: Dimension) -> str:
    """Where the rows of a breakdown by ``dim`` come from (see :func:`_rows`): ``session``,
    ``page``, ``event_name`` or ``events``."""
    if dim.level == "session":
        return "session"
    if dim.name == "page" and scope.pages_only and not scope.reported_events_only(dim):
        return "page"
    if dim.name == "event" and scope.pages_only:
        return "event_name"
    return "events"


def _rows(scope: QueryScope, dim: Dimension) -> str:
    """The rows a breakdown by ``dim`` aggregates by value: one per session (a session
    dimension); per session and page (the page with no filter on other event dimensions: the
    session pages); the page views of the sessions and the other events by name (the event
    name, likewise); else per session and value of the events that pass the filters, from
    ``report_events`` when they are all in it (a custom property, filters on event names or
    properties), or from the events."""
    kind = _rows_kind(scope, dim)
    if kind == "session":
        return scope.sessions({"value": dim})
    if kind == "page":
        return scope.page_rows()
    if kind == "event_name":
        return scope.event_name_rows(dim)
    return scope.event_rows(dim)


def query_breakdown(
    store: EventStore, scope: QueryScope, dim: Dimension, page: Page
) -> dict[str, Any]:
    kind = _rows_kind(scope, dim)
    if kind in ("session", "event_name"):
        scope.load_edges(store)
    elif kind == "page":
        scope.load_page_edges(store)
    # (the other rows count the events in the range themselves)
    if kind == "session" and scope.load_rolled_sessions(store):  # with filters only
        return _from_rolled_sessions(store, scope, dim, page)
    # the rollups hold the session dimensions, the page, the event name, the hostname and the
    # custom properties (each day but those with too many values of the key)
    key = dim.name.removeprefix("prop:") if dim.name.startswith("prop:") else None
    rolled_up = kind != "events" or dim.name == "hostname" or key is not None
    if rolled_up and scope.load_rollups(store, property_key=key):  # none with filters
        return _from_rollups(store, scope, dim, page)
    return _result(store.query_named(breakdown_sql(scope, dim, page), scope.params), dim, page)


def _result(rows: list[dict[str, Any]], dim: Dimension, page: Page) -> dict[str, Any]:
    return {
        "by": dim.name,
        "rows": [{"value": r["value"], **session_metrics(r)} for r in rows],
        "totalRows": int(rows[0]["total_rows"]) if rows else 0,
        "limit": page.limit,
        "offset": page.offset,
        "order": page.order,
    }


_SUMMED = ("sessions", "pageviews", "events", "bounces", "sessions_with_pv", "duration_ms")


def _from_rollups(
    store: EventStore, scope: QueryScope, dim: Dimension, page: Page
) -> dict[str, Any]:
    """A breakdown without filters by a rolled-up dimension: the days wholly inside the range
    from the daily rollups, the rest from the session (and session page) rows, added up by
    value (every figure adds up over days, visitors too); then ordered and paged."""
    return _with_rolled_days(store, scope, dim, page, scope.rollup_sql([dim.name]))


def _from_rolled_sessions(
    store: EventStore, scope: QueryScope, dim: Dimension, page: Page
) -> dict[str, Any]:
    """A breakdown by a session dimension with filters on session dimensions and the page:
    the rolled days' sessions from ``rolled_sessions``, the rest from the session rows,
    added up by value (visitors too: a visitor is a person on one day); then ordered and
    paged."""
    rolled = (
        f"SELECT value, {ROLLED_SESSION_AGGREGATES} "
        f"FROM ({scope.rolled_session_rows({'value': dim})}) GROUP BY value"
    )
    return _with_rolled_days(store, scope, dim, page, rolled)


def _with_rolled_days(
    store: EventStore, scope: QueryScope, dim: Dimension, page: Page, rolled: str
) -> dict[str, Any]:
    """The breakdown of the days not rolled up, from the rows of :func:`_rows`, and of the
    rolled days, from ``rolled`` (per value, the figures of :data:`SESSION_AGGREGATES`), run
    side by side and added up."""
    rest = f"SELECT value, {SESSION_AGGREGATES} FROM ({_rows(scope, dim)}) GROUP BY value"
    rest_rows, rolled_rows = store.query_named_together(
        (rest, scope.params), (rolled, scope.params)
    )
    return _added_up([*rolled_rows, *rest_rows], dim, page)


def _added_up(rows: list[dict[str, Any]], dim: Dimension, page: Page) -> dict[str, Any]:
    """The breakdown whose rows are ``rows`` added up by value, ordered and paged."""
    totals: dict[str, dict[str, int]] = {}
    for row in rows:
        t = totals.setdefault(row["value"], dict.fromkeys((*_SUMMED, "visitors"), 0))
        for k in (*_SUMMED, "visitors"):
            t[k] += int(row[k])
    name = page.order.lstrip("-+")
    descending = page.order.startswith("-")

    def key(item: tuple[str, dict[str, int]]) -> Any:
        value, t = item
        if name == "value":
            return value
        if name == "bounceRate":
            figure: float = t["bounces"] / max(t["sessions_with_pv"], 1)
        elif name == "avgSessionDuration":
            figure = t["duration_ms"] / max(t["sessions"], 1)
        else:
            figure = t[name]
        return (-figure if descending else figure, value)

    ordered = sorted(totals.items(), key=key, reverse=name == "value" and descending)
    chosen = ordered[page.offset : page.offset + page.limit]
    return {
        "by": dim.name,
        "rows": [{"value": v, **session_metrics(t)} for v, t in chosen],
        "totalRows": len(totals),
        "limit": page.limit,
        "offset": page.offset,
        "order": page.order,
    }
