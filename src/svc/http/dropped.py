"""GET /projects/{project_id}/dropped: what the ingestion pipeline dropped for a project.

The counts per UTC day and reason (:mod:`svc.ingestion.dropped`, recorded by
:mod:`svc.meta.dropped` every ``SVC_HOUSEKEEPING_INTERVAL_SECONDS``), the requests refused
whole before the pipeline per UTC day (a rate limit, the monthly quota), and the samples of
the dropped requests still kept (3 days).

Right: ``manage`` (an owner or admin of the project's team, the admin token, the project's
secret key), as the project's settings (``options``) are. The samples hold no address, but
they show the excluded paths and, for the excluded addresses, when and where the people
behind them (the owner's own staff, typically) browsed and with which user agent: what the
settings' managers decide, not what a viewer, a guest or a share link reads.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from typing import Final

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.errors import InvalidRequest
from svc.http.common import json_response, principal_of, runtime_of
from svc.ingestion.dropped import REASONS, REFUSALS
from svc.meta import dropped
from svc.queries.dates import parse_day

__all__ = ["DEFAULT_DAYS", "MAX_DAYS", "ROUTES", "get_dropped", "utc_days"]

#: Days answered without ``from`` (ending with ``to``), and the most a range may name.
DEFAULT_DAYS: Final = 30
MAX_DAYS: Final = 400


def utc_days(params: QueryParams, today: date) -> tuple[date, date]:
    """``from`` and ``to`` (UTC days, both included): ``to`` defaults to ``today``, ``from``
    to :data:`DEFAULT_DAYS` days ending with ``to``. 400 naming the field: not a date, ``to``
    before ``from``, more than :data:`MAX_DAYS` days."""
    last = parse_day(params["to"], "to") if params.get("to") else today
    if params.get("from"):
        first = parse_day(params["from"], "from")
    else:
        first = last - timedelta(days=DEFAULT_DAYS - 1)
    if last < first:
        raise InvalidRequest("`to` is before `from`", field="to")
    if (last - first).days + 1 > MAX_DAYS:
        raise InvalidRequest(f"a range is at most {MAX_DAYS} days", field="from")
    return first, last


async def get_dropped(request: Request) -> Response:
    project_id: str = request.path_params["project_id"]
    principal = await principal_of(request)
    principal.require("manage", project_id)
    first, last = utc_days(request.query_params, datetime.now(UTC).date())
    meta = runtime_of(request).meta
    await asyncio.to_thread(meta.get_project, project_id)  # 404 for a project that is not
    report = await asyncio.to_thread(dropped.read, meta, project_id, first, last, REASONS, REFUSALS)
    return json_response(report.to_json())


ROUTES: list[Route] = [
    Route("/projects/{project_id}/dropped", get_dropped, methods=["GET"]),
]
