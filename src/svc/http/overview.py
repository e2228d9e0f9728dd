"""GET /overview and /overview/timeseries: every project the caller may read, side by side.

Which projects (rule ``any`` in svc.http.rules): an account's session, each project its roles
let it ``read`` (its teams' and those it is a guest of); the admin token, every project; a
key that may read (a secret key, a share link), its own project alone; a public key, 403.

Each project's read is one read of GET /metrics* (:func:`svc.http.metrics.admitted_read`):
admitted by the fair scheduler as that project's tenant, on a store handle of its own, bounded
by the query time limit, stopped when the client goes away. They run side by side, at most
as many at once as the scheduler has slots; the first that fails (503 busy, 504) fails the
answer and stops the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import Forbidden, InvalidRequest
from svc.http.common import json_response, principal_of, runtime_of
from svc.http.metrics import admitted_read, watch_client
from svc.meta.store import Project
from svc.queries import overview, timeseries
from svc.queries.dates import DateRange
from svc.queries.plan import Query
from svc.reads.scheduler import tenant_of
from svc.storage.events import ReadCancelled

T = TypeVar("T")

#: What the overview does not take: each project is read in its own zone, without filters.
_REFUSED = {
    "tz": "`tz` is not taken: each project is read in its own time zone",
    "filter": "`filter` is not taken by the overview: read one project with GET /metrics",
}
_CORS = {"Access-Control-Allow-Origin": "*"}


async def readable_projects(request: Request, principal: Principal) -> list[Project]:
    """The projects ``principal`` may read, by name (see the module's description)."""
    if principal.is_account or principal.is_admin:
        every = await asyncio.to_thread(runtime_of(request).meta.list_projects)
        if principal.access is None:
            return every
        access = principal.access
        return [p for p in every if "read" in access.on_project(p.id)]
    if principal.project is None:
        raise Forbidden("this credential reads no project")
    principal.require("read", principal.project.id)
    return [principal.project]


async def _read_each(
    request: Request,
    principal: Principal,
    reads: Sequence[tuple[Project, Callable[..., T], tuple[Any, ...]]],
) -> list[T]:
    """``fn(*args)`` of each ``(project, fn, args)``, each one read of its project's tenant,
    side by side (at most the scheduler's slots at once); the answers in order. The first
    failure cancels the others (their queries stopped) and is raised."""
    runtime = runtime_of(request)
    gate = asyncio.Semaphore(runtime.reads.slots)
    gone = watch_client(request)

    async def one(project: Project, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        async with gate:
            tenant = tenant_of(project.id, principal.kind, principal.key_id)
            return await admitted_read(request, tenant, fn, *args, gone=gone)

    tasks = [asyncio.ensure_future(one(p, fn, args)) for p, fn, args in reads]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        gone.cancel()


def _params(request: Request, previous: bool) -> tuple[str | None, str | None, DateRange]:
    """``from`` and ``to``, checked (400 naming the parameter; with ``previous``, their
    previous period too), and their days in UTC; ``tz`` and ``filter`` refused."""
    params = request.query_params
    for name, why in _REFUSED.items():
        if name in params:
            raise InvalidRequest(why, field=name)
    first, last = params.get("from"), params.get("to")
    return first, last, overview.check_days(first, last, previous)


def _queries(
    request: Request, projects: list[Project], first: str | None, last: str | None
) -> list[tuple[Project, Query]]:
    retention = runtime_of(request).retention
    return [
        (p, Query(p.id, overview.range_of(p, first, last), (), retention.raw_from(p)))
        for p in projects
    ]


async def get_overview(request: Request) -> Response:
    """GET /overview: a row per readable project, sorted, with totals (docs/api.md)."""
    principal = await principal_of(request)
    first, last, _ = _params(request, previous=True)
    sort = overview.parse_sort(request.query_params.get("sort"))
    projects = await readable_projects(request, principal)
    store = runtime_of(request).store
    reads = [
        (p, overview.read_project, (store, p, q))
        for p, q in _queries(request, projects, first, last)
    ]
    try:
        read = await _read_each(request, principal, reads)
    except ReadCancelled:  # the client went away (499, as nginx logs it)
        return Response(status_code=499)
    return json_response(overview.table(read, sort), headers=_CORS)


async def get_overview_timeseries(request: Request) -> Response:
    """GET /overview/timeseries: each readable project's series and their sum (docs/api.md)."""
    principal = await principal_of(request)
    first, last, rng = _params(request, previous=False)  # rng: the labels of the sum
    store = runtime_of(request).store
    interval = timeseries.parse_interval(
        request.query_params.get("interval"), rng, store.settings.max_series_points
    )
    projects = await readable_projects(request, principal)
    queries = _queries(request, projects, first, last)
    reads = [(p, overview.read_series, (store, q, interval)) for p, q in queries]
    try:
        answers = await _read_each(request, principal, reads)
    except ReadCancelled:
        return Response(status_code=499)
    paired = [(p, a) for (p, _), a in zip(queries, answers, strict=True)]
    return json_response(overview.series(paired, rng, interval), headers=_CORS)
