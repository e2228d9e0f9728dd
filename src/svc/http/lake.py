"""/internal/lake: write days to the raw-event lake now, for the admin token only
(``svcm lake export``; what the lake holds: :mod:`svc.lake`).

- ``POST /internal/lake`` ``{"day": "YYYY-MM-DD", "project": "svc_proj_..."?}``: write that
  UTC day (of one project, or of every project with events that day) now, whether or not the
  schedule would have; 200 with the manifests written. The day must be over (before today,
  UTC); ``409 lake_not_configured`` without ``SVC_LAKE_URL``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.errors import ApiError, Forbidden, InvalidRequest
from svc.http.common import json_body, json_response, principal_of, runtime_of
from svc.lake.places import PlaceError
from svc.lake.schedule import Lake

PATH = "/internal/lake"


class LakeNotConfigured(ApiError):
    status, code = 409, "lake_not_configured"


def _day(value: Any) -> date:
    if not isinstance(value, str):
        raise InvalidRequest("`day` is required: a UTC day, YYYY-MM-DD", field="day")
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(f"`day`: {value!r} is not a day (YYYY-MM-DD)", field="day") from None
    if day >= datetime.now(UTC).date():
        raise InvalidRequest(
            "`day` must be over: a UTC day before today (a day is written once it ends)",
            field="day",
        )
    return day


async def post_lake(request: Request) -> Response:
    if not (await principal_of(request)).is_admin:
        raise Forbidden("only the admin token may write the lake")
    body = await json_body(request)
    unknown = sorted(set(body) - {"day", "project"})
    if unknown:
        raise InvalidRequest(f"unknown field `{unknown[0]}`", field=unknown[0])
    day = _day(body.get("day"))
    project = body.get("project")
    if project is not None and (not isinstance(project, str) or not project):
        raise InvalidRequest("`project` must be a project's id", field="project")
    lake: Lake | None = request.app.state.operations.lake
    if lake is None:
        raise LakeNotConfigured("the lake is off: set SVC_LAKE_URL (docs/operations.md)")
    runtime = runtime_of(request)
    if project is not None:
        meta_project = await asyncio.to_thread(runtime.meta.find_project, project)
        if meta_project is None:
            raise InvalidRequest(f"`project`: no project {project}", field="project")
    through = runtime.loaded_through_ms()  # on the event loop, where it changes
    try:
        written = await asyncio.to_thread(lake.write_days, day, project, through)
    except PlaceError as exc:
        raise ApiError(
            f"the lake refused the write: {exc}", status=503, code="lake_unavailable"
        ) from exc
    return json_response({"day": day.isoformat(), "url": lake.place.url, "written": written})


ROUTES = [Route(PATH, post_lake, methods=["POST"])]
