"""GET /metrics: the aggregate of a project over a date range."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import ApiError, InvalidRequest
from svc.http.common import error_response, json_response, principal_of, runtime_of
from svc.meta.store import Project
from svc.queries.dates import parse_range, parse_zone
from svc.queries.metrics import query_metrics


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


async def get_metrics(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        principal = await principal_of(request)
        project = await project_for_read(request, principal)
        params = request.query_params
        tz = parse_zone(params["tz"]) if params.get("tz") else project.timezone
        rng = parse_range(params.get("from"), params.get("to"), tz)
        metrics = await asyncio.to_thread(query_metrics, runtime.store, project.id, rng)
    except ApiError as exc:
        return error_response(exc)
    body = metrics.to_json()
    body["from"], body["to"], body["timezone"] = rng.first.isoformat(), rng.last.isoformat(), tz
    body["projectId"] = project.id
    return json_response(body)
