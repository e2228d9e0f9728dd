"""GET /metrics and /metrics/*: aggregates, time series, breakdowns and reports.

Every handler: resolve the reader and the project, parse the scope (range, time zone,
filters), call one query function in a worker thread, answer its JSON.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import ApiError, InvalidRequest
from svc.http.common import error_response, json_response, principal_of, runtime_of
from svc.meta.store import Project
from svc.queries import breakdown, commerce, conversions, properties, realtime, timeseries
from svc.queries.dates import DateRange, parse_range, parse_zone
from svc.queries.dimensions import dimension
from svc.queries.filters import parse_filters
from svc.queries.metrics import query_metrics
from svc.queries.scope import QueryScope
from svc.storage.events import EventStore

Endpoint = Callable[[Request], Awaitable[Response]]


async def project_for_read(request: Request, principal: Principal) -> Project:
    """The project a read request is about: the key's own, or ``projectId`` for the admin.
    A ``projectId`` other than the key's own is 403."""
    requested = request.query_params.get("projectId")
    if principal.is_admin:
        if not requested:
            raise InvalidRequest(
                "with the admin token, name the project: `projectId`", field="projectId"
            )
        project = await asyncio.to_thread(runtime_of(request).meta.get_project, requested)
    else:
        assert principal.project is not None
        project = principal.project
    principal.require("read", requested or project.id)
    return project


def parse_scope(request: Request, project: Project, rng: DateRange | None = None) -> QueryScope:
    params = request.query_params
    if rng is None:
        tz = parse_zone(params["tz"]) if params.get("tz") else project.timezone
        rng = parse_range(params.get("from"), params.get("to"), tz)
    return QueryScope(project.id, rng, parse_filters(params.getlist("filter")))


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise InvalidRequest(f"`{name}` must be a whole number", field=name) from None
    if not low <= value <= high:
        raise InvalidRequest(f"`{name}` must be between {low} and {high}", field=name)
    return value


async def _read(
    request: Request,
    query: Callable[[EventStore, Project, Request], dict[str, Any]],
) -> Response:
    runtime = runtime_of(request)
    try:
        principal = await principal_of(request)
        project = await project_for_read(request, principal)
        started = time.monotonic()
        body = await asyncio.to_thread(query, runtime.store, project, request)
        runtime.store.release_memory_after_read(time.monotonic() - started)
    except ApiError as exc:
        return error_response(exc)
    body.setdefault("projectId", project.id)
    return json_response(body, headers={"Access-Control-Allow-Origin": "*"})


def _metrics(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    scope = parse_scope(request, project)
    body = query_metrics(store, scope).to_json()
    body["from"], body["to"] = scope.rng.first.isoformat(), scope.rng.last.isoformat()
    body["timezone"] = scope.rng.tz
    compare = request.query_params.get("compare")
    if compare:
        if compare == "previous_period":
            other = scope.rng.previous_period()
        elif compare == "previous_year":
            other = scope.rng.previous_year()
        else:
            raise InvalidRequest(
                "`compare` must be previous_period or previous_year", field="compare"
            )
        before = query_metrics(store, parse_scope(request, project, other)).to_json()
        before["from"], before["to"] = other.first.isoformat(), other.last.isoformat()
        body["compare"] = before
    return body


def _timeseries(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    scope = parse_scope(request, project)
    interval = timeseries.parse_interval(request.query_params.get("interval"), scope.rng.days)
    return timeseries.query_timeseries(store, scope, interval)


def _breakdown(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    params = request.query_params
    scope = parse_scope(request, project)
    by = params.get("by")
    if not by:
        raise InvalidRequest("`by` is required: the dimension to break down by", field="by")
    dim, dim_params = dimension(by, "by_key")
    scope.params.update(dim_params)
    page = breakdown.parse_page(params.get("limit"), params.get("offset"), params.get("order"))
    return breakdown.query_breakdown(store, scope, dim, page)


def _realtime(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    return realtime.query_realtime(store, project.id, _int_param(request, "limit", 10, 1, 100))


def _goals(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    return conversions.query_goals(
        store, parse_scope(request, project), request.query_params.getlist("goal")
    )


def _funnel(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    window = _int_param(request, "window", 1800, 1, 30 * 86400)
    return conversions.query_funnel(
        store, parse_scope(request, project), request.query_params.getlist("step"), window
    )


def _revenue(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    limit = _int_param(request, "limit", 10, 1, 1000)
    return commerce.query_revenue(store, parse_scope(request, project), limit)


def _errors(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    limit = _int_param(request, "limit", 10, 1, 1000)
    return commerce.query_errors(store, parse_scope(request, project), limit)


def _properties(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    scope = parse_scope(request, project)
    limit = _int_param(request, "limit", 100, 1, 1000)
    key = request.query_params.get("key")
    if key:
        return properties.query_property_values(store, scope, key, limit)
    return properties.query_property_keys(store, scope, limit)


def _endpoint(query: Callable[[EventStore, Project, Request], dict[str, Any]]) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        return await _read(request, query)

    return endpoint


get_metrics = _endpoint(_metrics)
get_timeseries = _endpoint(_timeseries)
get_breakdown = _endpoint(_breakdown)
get_realtime = _endpoint(_realtime)
get_goals = _endpoint(_goals)
get_funnel = _endpoint(_funnel)
get_revenue = _endpoint(_revenue)
get_errors = _endpoint(_errors)
get_properties = _endpoint(_properties)
