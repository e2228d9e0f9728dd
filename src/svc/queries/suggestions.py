"""Suggestions: the values of a dimension that a filter could name (GET /metrics/values): what the
dashboard's filter dialog suggests as one types."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from svc.errors import InvalidRequest
from svc.queries import breakdown
from svc.queries.dimensions import dimension
from svc.queries.filters import MAX_PATTERN, parse_filter
from svc.queries.plan import Query
from svc.storage.events import EventStore

#: Most values one answer lists, and how many when ``limit`` is not given.
MAX_VALUES, DEFAULT_VALUES = 100, 20


def parse_limit(raw: str | None) -> int:
    try:
        n = int(raw) if raw else DEFAULT_VALUES
    except ValueError:
        raise InvalidRequest("`limit` must be a whole number", field="limit") from None
    if not 1 <= n <= MAX_VALUES:
        raise InvalidRequest(f"`limit` must be between 1 and {MAX_VALUES}", field="limit")
    return n


def query_values(
    store: EventStore, query: Query, name: str | None, text: str | None, limit: int
) -> dict[str, Any]:
    """The values of dimension ``name`` in the query's range, under its filters, whose text
    holds ``text`` (any case; every value when empty), the most visitors first, at most
    ``limit``: ``{"dimension", "q", "values": [{"value", "visitors"}]}``. The figures are the
    breakdown's (GET /metrics/breakdown?by=<name>) under one more filter,
    ``<name>:contains:<text>``."""
    if not name:
        raise InvalidRequest(
            "`dimension` is required: the one whose values to list", field="dimension"
        )
    dim, dim_params = dimension(name, "by_key", "dimension")
    text = text or ""
    if len(text) > MAX_PATTERN:
        raise InvalidRequest(f"`q` has more than {MAX_PATTERN} characters", field="q")
    if text:
        extra = parse_filter(f"{name}:contains:{text}", len(query.filters), "q")
        query = replace(query, filters=(*query.filters, extra))
    page = breakdown.Page(limit, 0, "-visitors")
    rows = breakdown.query_breakdown(store, query, dim, page, dim_params)["rows"]
    return {
        "dimension": dim.name,
        "q": text,
        "values": [{"value": r["value"], "visitors": r["visitors"]} for r in rows],
    }
