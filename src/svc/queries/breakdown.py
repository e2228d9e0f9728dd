"""Breakdowns: the session metrics of each value of a dimension, ordered and paged.

For a session dimension each session counts once, under its value. For an event dimension
(page, event, hostname, prop:<key>) a session counts under every value it has an event with,
and page views and events are those with the value; bounce rate and duration are those of the
sessions in the row. A page breakdown counts page views only; a property breakdown only the
events that carry the property.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from svc.errors import InvalidRequest
from svc.queries.dimensions import Dimension
from svc.queries.plan import Facts, Needs, Plan, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import session_metrics
from svc.queries.sql import breakdowns as breakdown_sql
from svc.queries.sql import sessions as session_sql
from svc.queries.sql.statement import Statement
from svc.storage.events import EventStore

#: The orders a breakdown may ask for (``-`` for descending): svc.queries.sql.breakdowns sorts
#: by each.
ORDERS = tuple(breakdown_sql.ORDER_COLUMNS)


@dataclass(frozen=True, slots=True)
class Page:
    limit: int = 100
    offset: int = 0
    order: str = "-visitors"

    def check(self) -> None:
        if self.order.lstrip("-+") not in ORDERS:
            raise InvalidRequest(
                f"`order` must be one of {', '.join(ORDERS)} (prefix - for descending)",
                field="order",
            )


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
    page.check()
    return page


def rows_kind(p: Plan, dim: Dimension) -> str:
    """Where the rows of a breakdown by ``dim`` come from (svc.queries.sql.breakdowns.
    breakdown_rows): ``session``, ``page``, ``event_name`` or ``events``."""
    if dim.level == "session":
        return "session"
    if dim.name == "page" and p.pages_only and not p.reported_events_only(dim):
        return "page"
    if dim.name == "event" and p.pages_only:
        return "event_name"
    return "events"


def needs(p: Plan, dim: Dimension) -> Needs:
    """What a breakdown by ``dim`` reads first: the sessions that cross an end of the range
    and their events outside it for the session rows (per page for the page rows; the other
    rows count the events in the range themselves); the rolled-up days, from the sessions of
    ``rolled_sessions`` (a session dimension or the page, with filters on the page and
    session dimensions) or from the rollups, which hold the session dimensions, the page, the event
    name, the hostname and the custom properties (each day but those with too many values of
    the key), without filters."""
    kind = rows_kind(p, dim)
    key = dim.name.removeprefix("prop:") if dim.name.startswith("prop:") else None
    return Needs(
        edges=kind in ("session", "event_name"),
        page_edges=kind == "page",
        rolled_sessions=kind in ("session", "page"),
        rollups=kind != "events" or dim.name == "hostname" or key is not None,
        property_key=key,
    )


def query_breakdown(
    store: EventStore,
    query: Query,
    dim: Dimension,
    page: Page,
    dim_params: dict[str, str] | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The breakdown by ``dim``: its rows ordered and paged by ``page``; with ``only``, the
    rows of those values alone, whatever ``page`` says (what a comparison asks the other
    range about: svc.queries.compare)."""
    if only is not None:
        if not only:
            return _result([], dim, page)
        page = Page(len(only), 0, page.order)
    p = plan(query).bound(dim_params or {})
    runner = Runner(store)
    kind = rows_kind(p, dim)
    facts = runner.facts(p, needs(p, dim))
    if kind == "page" and p.event_conditions and facts.matching_hashes is None:
        facts = replace(facts, rolled=(), section=None)  # a collision: no hashes to test
    if not facts.rolled:
        stmt = breakdown_sql.breakdown(
            p, facts, dim, kind, page.order, page.limit, page.offset, only
        )
        return _result(runner.named(stmt), dim, page)
    if facts.page_by is not None:  # the rolled days' pages of one value, from the rollups
        rolled = session_sql.page_by_sums(p, facts)
        return _with_rolled_days(runner, p, facts, dim, kind, page, rolled, only)
    if p.filters and kind == "page":  # the rolled days' pages, from rolled_sessions
        return _pages_with_rolled_days(runner, p, facts, dim, page, only)
    if facts.section is not None:  # the rolled days from the rollups' section rows
        rolled = session_sql.section_sums(p, facts, dim.name)
    elif p.filters:  # the rolled days' sessions, from rolled_sessions
        rolled = breakdown_sql.rolled_by_value(p, facts, dim)
    else:  # the rolled days from the daily rollups
        rolled = session_sql.rollup_sums(p, facts, [dim.name])
    return _with_rolled_days(runner, p, facts, dim, kind, page, rolled, only)


def blank_row() -> dict[str, Any]:
    """The figures of a value with no session: what a comparison gives a value the other
    range does not have."""
    return session_metrics(dict.fromkeys((*_SUMMED, "visitors"), 0))


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


def _with_rolled_days(
    runner: Runner,
    p: Plan,
    facts: Facts,
    dim: Dimension,
    kind: str,
    page: Page,
    rolled: Statement,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The breakdown of the days not rolled up, from the rows of its kind, and of the rolled
    days, from ``rolled`` (per value, the figures of the session aggregates), run side by
    side and added up by value (every figure adds up over days, visitors too: a visitor is
    a person on one day); then ordered and paged (with ``only``, those values alone)."""
    rest = breakdown_sql.by_value(p, facts, dim, kind, only)
    rest_rows, rolled_rows = runner.together(rest, rolled)
    rows = [*rolled_rows, *rest_rows]
    if only is not None:
        wanted = set(only)
        rows = [r for r in rows if r["value"] in wanted]
    return _added_up(rows, dim, page)


def _pages_with_rolled_days(
    runner: Runner,
    p: Plan,
    facts: Facts,
    dim: Dimension,
    page: Page,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The page breakdown under filters: the days not rolled up from the page rows, the
    rolled days from the sessions of ``rolled_sessions`` (svc.queries.sql.sessions.
    rolled_pages), added up by page; but when a page of the rolled days' sessions has a hash
    that is not one path's of its day (a collision), every day from the page rows."""
    rest = breakdown_sql.by_value(p, facts, dim, "page", only)
    rest_rows, rolled_rows = runner.together(rest, session_sql.rolled_pages(p, facts))
    if any(int(r["clash"]) for r in rolled_rows):
        whole = replace(facts, rolled=(), matching_hashes=None)
        stmt = breakdown_sql.breakdown(
            p, whole, dim, "page", page.order, page.limit, page.offset, only
        )
        return _result(runner.named(stmt), dim, page)
    rows = [*rolled_rows, *rest_rows]
    if only is not None:
        wanted = set(only)
        rows = [r for r in rows if r["value"] in wanted]
    return _added_up(rows, dim, page)


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
