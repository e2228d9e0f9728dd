"""GET /metrics and /metrics/*: aggregates, time series, breakdowns and reports.

Every handler: resolve the reader and the project, parse the scope (range, time zone,
filters), call one query function in a worker thread, answer its JSON.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from clickhouse_connect.driver.client import Client
from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import InvalidRequest
from svc.http.common import json_response, principal_of, runtime_of
from svc.meta.store import Project
from svc.queries import (
    breakdown,
    commerce,
    compare,
    conversions,
    journeys,
    measurements,
    properties,
    realtime,
    suggestions,
    timeseries,
)
from svc.queries.dates import FIRST_DAY, LAST_DAY, DateRange, is_known_zone, parse_range, parse_zone
from svc.queries.dimensions import dimension
from svc.queries.filters import parse_filters
from svc.queries.metrics import query_metrics
from svc.queries.plan import Query
from svc.reads.scheduler import LIGHT_PRIORITY, OTHER_PRIORITY, Ticket, tenant_of
from svc.retention import notice
from svc.saved import funnels as saved_funnels
from svc.saved import goals as saved_goals
from svc.storage.events import EventStore, QueryTimeout, Read, ReadCancelled, timeout_error
from svc.storage.read_handles import ReadHandles

log = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


async def project_for_read(request: Request, principal: Principal) -> Project:
    """The project a read request is about: the key's own, or ``projectId`` for the admin.
    A ``projectId`` other than the key's own is 403."""
    requested = request.query_params.get("projectId")
    if principal.is_account:  # an account's session: its role on the project named
        if not requested:
            raise InvalidRequest(
                "with an account's session, name the project: `projectId`", field="projectId"
            )
        principal.require("read", requested)
        project = await asyncio.to_thread(runtime_of(request).meta.get_project, requested)
    elif principal.is_admin:
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


def parse_scope(request: Request, project: Project, rng: DateRange | None = None) -> Query:
    params = request.query_params
    return Query(
        project.id,
        rng or range_of(request, project),
        tuple(parse_filters(params.getlist("filter"))),
        # where the project's raw events begin (svc.retention), set by _read
        raw_from=getattr(request.state, "raw_from", None),
    )


def range_of(request: Request, project: Project) -> DateRange:
    """The range of a read: ``from``, ``to`` (default today), in ``tz`` or the project's time
    zone. A project saved with a zone the store does not know (before zones were checked:
    ``right/UTC``) reads in ``tz`` only."""
    params = request.query_params
    if params.get("tz"):
        tz = parse_zone(params["tz"])
    elif is_known_zone(project.timezone):
        tz = project.timezone
    else:
        raise InvalidRequest(
            f"the project's time zone {project.timezone!r} is not an IANA time zone the store "
            "knows: name one with `tz` (and correct the project's `timezone`)",
            field="tz",
        )
    return parse_range(params.get("from"), params.get("to"), tz)


async def _client_gone(request: Request) -> None:
    """Return once the client has closed the connection (an ASGI ``http.disconnect``; a GET
    has no body to read before it)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def watch_client(request: Request) -> asyncio.Future[None]:
    """A future done once the client has closed the connection (cancel it when done)."""
    return asyncio.ensure_future(_client_gone(request))


#: How long past a read's time limit its answer waits for the store's own timeout error
#: before it answers 504 by itself (the store stops a query between blocks of rows only).
ANSWER_GRACE_S = 0.5


async def run_read(
    request: Request,
    read: Read,
    fn: Callable[..., T],
    *args: Any,
    when_done: Callable[[bool], None] | None = None,
    gone: asyncio.Future[None] | None = None,
) -> T:
    """``fn(*args)`` in a worker thread as ``read`` (its queries tagged and bounded, see
    :class:`Read`). When the client goes away first, its queries are stopped and it raises
    ReadCancelled, instead of running on for nobody. When the read's time is up (and a bit:
    the store stops a query between blocks of rows, and a block can be slow), its queries are
    stopped and it raises QueryTimeout (504) at once, whatever the store is still doing.
    ``when_done(failed)`` is called on the event loop once the worker thread has returned
    (not when this returns: a stopped read may still be ending), ``failed`` when it raised.
    ``gone``: the request's :func:`watch_client`, when several reads of one request run side
    by side (a request's ``receive`` has one waiter at a time); the caller cancels it."""
    threads = runtime_of(request).read_threads  # one per read slot (svc.runtime)
    call: Callable[[], T] = functools.partial(contextvars.copy_context().run, read.run, fn, *args)
    work: asyncio.Future[T] = asyncio.get_running_loop().run_in_executor(threads, call)
    if when_done is not None:
        work.add_done_callback(lambda done: when_done(done.cancelled() or bool(done.exception())))
    watcher = watch_client(request) if gone is None else gone
    limit = None if read.timeout_s is None else read.timeout_s + ANSWER_GRACE_S
    try:
        waited: set[asyncio.Future[Any]] = {work, watcher}
        await asyncio.wait(waited, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        client_left = watcher.done()
    finally:
        if gone is None:
            watcher.cancel()
    if work.done():
        return work.result()
    why = "the client went away" if client_left else f"past its {read.timeout_s:g} s"
    log.info("stopping read %s of %s: %s", read.id, request.url.path, why)
    runtime_of(request).store.stop_read_soon(read)
    work.add_done_callback(lambda done: _log_end(read, why, done))
    if client_left:
        raise ReadCancelled(read.id)
    raise timeout_error(read)


def _log_end(read: Read, why: str, done: asyncio.Future[Any]) -> None:
    """How a read that was answered for (or abandoned) ended, once its thread is done."""
    error = None if done.cancelled() else done.exception()
    if isinstance(error, ReadCancelled | QueryTimeout):
        log.info("read %s was stopped (%s)", read.id, why)
    else:
        log.info("read %s ran to its end (%s): %r", read.id, why, error)


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise InvalidRequest(f"`{name}` must be a whole number", field=name) from None
    if not low <= value <= high:
        raise InvalidRequest(f"`{name}` must be between {low} and {high}", field=name)
    return value


#: Filter operators that run over every value of the range (a substring, a pattern), so a
#: read under one of them is never light.
_SCANNING_OPERATORS = frozenset({"contains", "not_contains", "matches", "not_matches"})


def is_light(request: Request) -> bool:
    """Whether a read of the top figures or realtime is light: no filter scans the values
    (``contains``, ``matches``), so the rolled-up days answer it. A filter that does not
    parse is not light (the read answers its 400 anyway)."""
    try:
        parsed = parse_filters(request.query_params.getlist("filter"))
    except InvalidRequest:
        return False
    return not any(f.op in _SCANNING_OPERATORS for f in parsed)


def lane_of(request: Request, light: bool) -> tuple[int, int]:
    """The store's ``priority`` and nice value (:class:`Read`) of a light read, or of any
    other (below the light ones, and niced by ``SVC_READ_NICE``)."""
    if light:
        return LIGHT_PRIORITY, 0
    return OTHER_PRIORITY, runtime_of(request).settings.effective_read_nice


async def admit_with_handle(
    request: Request, tenant: str, light: bool = False
) -> tuple[Ticket, ReadHandles, Client]:
    """A slot of ``tenant``'s share (the fair scheduler, in the light reads' lane when
    ``light``: :class:`Busy` when it cannot start in time) and a store handle of its own lent
    from the read handles; the slot is given back at once when no handle can be lent. The
    caller gives both back when its read is over."""
    runtime = runtime_of(request)
    ticket = await runtime.reads.admit(tenant, light)
    handles = runtime.store.read_handles
    try:
        return ticket, handles, handles.lend()
    except BaseException:
        ticket.release()
        raise


async def admitted_read(
    request: Request,
    tenant: str,
    fn: Callable[..., T],
    *args: Any,
    gone: asyncio.Future[None] | None = None,
    light: bool = False,
) -> T:
    """``fn(*args)`` as one read of ``tenant`` (:func:`svc.reads.scheduler.tenant_of`): admitted
    by the fair scheduler (:class:`Busy` when it cannot start in time; ``light``: in the
    light reads' lane, see :func:`is_light`), on a store handle of its own, in
    :func:`run_read` (``gone`` as there). Its slot and handle are given back once its worker
    thread is done. Cancelled (a read beside it failed), its queries are stopped."""
    runtime = runtime_of(request)
    ticket, handles, handle = await admit_with_handle(request, tenant, light)

    def done(failed: bool) -> None:
        if failed:  # stopped, timed out or refused: its query may have left rows unread
            handles.discard(handle)
        else:
            handles.give_back(handle)
        ticket.release()

    started = time.monotonic()
    timeout = runtime.settings.query_timeout_seconds
    priority, nice = lane_of(request, light)
    limit = timeout if timeout > 0 else None
    memory = runtime.reads.read_memory_mb(runtime.settings.read_memory_limit_mb)
    read = Read(timeout_s=limit, handle=handle, priority=priority, nice=nice, memory_mb=memory)
    try:
        return await run_read(request, read, fn, *args, when_done=done, gone=gone)
    except asyncio.CancelledError:
        runtime.store.stop_read_soon(read)
        raise
    finally:
        runtime.store.release_memory_after_read(time.monotonic() - started)


async def _read(
    request: Request,
    query: Callable[[EventStore, Project, Request], dict[str, Any]],
    light: bool = False,
) -> Response:
    """One read of GET /metrics*: ``query`` run as a read of its tenant (``light``: a kind of
    read that is light unless a filter scans the values, :func:`is_light`)."""
    runtime = runtime_of(request)
    headers = {"Access-Control-Allow-Origin": "*"}
    try:
        principal = await principal_of(request)
        project = await project_for_read(request, principal)
        request.state.raw_from = raw_from = runtime.retention.raw_from(project)
        tenant = tenant_of(project.id, principal.kind, principal.key_id)
        light = light and is_light(request)
        args = (runtime.store, project, request)
        body = await admitted_read(request, tenant, query, *args, light=light)
        if raw_from is not None and request.query_params.get("from"):
            # a range that reaches before the raw events says so (docs/api.md, Retention)
            filtered = bool(request.query_params.getlist("filter"))
            rng = range_of(request, project)
            kind = query.__name__.lstrip("_")  # _metrics: metrics
            headers.update(notice.annotate(body, kind, filtered, rng, raw_from))
    except ReadCancelled:  # nobody to answer: the client went away (499, as nginx logs it)
        return Response(status_code=499)
    body.setdefault("projectId", project.id)
    return json_response(body, headers=headers)


def _metrics(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    scope = parse_scope(request, project)
    other = _other_range(request, scope.rng)  # checked before any query runs
    engaged = measurements.parse_duration(request.query_params.get("duration"))
    body = measurements.with_duration(query_metrics(store, scope).to_json(), store, scope, engaged)
    body["from"], body["to"] = scope.rng.first.isoformat(), scope.rng.last.isoformat()
    body["timezone"] = scope.rng.tz
    if other is not None:
        before_scope = parse_scope(request, project, other)
        before = query_metrics(store, before_scope).to_json()
        before = measurements.with_duration(before, store, before_scope, engaged)
        before["from"], before["to"] = other.first.isoformat(), other.last.isoformat()
        body["compare"] = before
    return body


def _values(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    params = request.query_params
    return suggestions.query_values(
        store,
        parse_scope(request, project),
        params.get("dimension"),
        params.get("q"),
        suggestions.parse_limit(params.get("limit")),
    )


def _timeseries(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    scope = parse_scope(request, project)
    interval = timeseries.parse_interval(
        request.query_params.get("interval"), scope.rng, store.settings.max_series_points
    )
    return timeseries.query_timeseries(store, scope, interval)


def _breakdown(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    params = request.query_params
    scope = parse_scope(request, project)
    by = params.get("by")
    if not by:
        raise InvalidRequest("`by` is required: the dimension to break down by", field="by")
    other = _other_range(request, scope.rng)
    before = None if other is None else parse_scope(request, project, other)
    if by in measurements.KINDS:  # the extensions' reports (docs/api.md, Page measurements)
        paging = measurements.parse_paging(
            by, params.get("limit"), params.get("offset"), params.get("order")
        )
        return compare.compared(
            lambda q, only: measurements.query_kind(store, q, by, paging, only),
            scope,
            before,
            measurements.blank_row(by),
        )
    dim, dim_params = dimension(by, "by_key")
    page = breakdown.parse_page(params.get("limit"), params.get("offset"), params.get("order"))
    return compare.compared(
        lambda q, only: breakdown.query_breakdown(store, q, dim, page, dim_params, only),
        scope,
        before,
        breakdown.blank_row(),
    )


def _journeys(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    """GET /metrics/journeys: the most common paths from (or to) a page (svc.queries.journeys)."""
    journey = journeys.parse_journey(request.query_params)
    return journeys.query_journeys(store, parse_scope(request, project), journey)


def _realtime(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    return realtime.query_realtime(store, project.id, _int_param(request, "limit", 10, 1, 100))


def _goals(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    asked = request.query_params.getlist("goal")
    if not asked:  # the project's saved goals (svc.saved.goals)
        saved = saved_goals.list_goals(runtime_of(request).meta, project.id)
        return saved_goals.query_conversions(store, parse_scope(request, project), saved)
    return conversions.query_goals(store, parse_scope(request, project), asked)


def _funnel(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    params = request.query_params
    saved = saved_funnels.chosen(  # funnel=<id>: a saved funnel (svc.saved.funnels)
        runtime_of(request).meta, project.id, params.get("funnel"), params.getlist("step")
    )
    own = saved.window if saved is not None else None
    window = _int_param(request, "window", own or saved_funnels.DEFAULT_WINDOW, 1, 30 * 86400)
    scope = parse_scope(request, project)
    if saved is not None:
        return saved_funnels.query_saved(store, scope, saved, window)
    return conversions.query_funnel(store, scope, params.getlist("step"), window)


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


def _vitals(store: EventStore, project: Project, request: Request) -> dict[str, Any]:
    """GET /metrics/vitals: Web Vitals over the range, with ``interval`` over time too, with
    ``compare`` for the other range too."""
    scope = parse_scope(request, project)
    params = request.query_params
    interval = None
    if params.get("interval"):
        interval = timeseries.parse_interval(
            params["interval"], scope.rng, store.settings.max_series_points
        )
    other = _other_range(request, scope.rng)
    body = measurements.query_vitals(store, scope, interval)
    body["from"], body["to"] = scope.rng.first.isoformat(), scope.rng.last.isoformat()
    body["timezone"] = scope.rng.tz
    if other is not None:
        before = measurements.query_vitals(store, parse_scope(request, project, other), None)
        before["from"], before["to"] = other.first.isoformat(), other.last.isoformat()
        body["compare"] = before
    return body


def _other_range(request: Request, rng: DateRange) -> DateRange | None:
    """The range of ``compare`` (previous_period, previous_year), checked; None without."""
    compare = request.query_params.get("compare")
    if not compare:
        return None
    if compare == "previous_period":
        other = rng.previous_period()
    elif compare == "previous_year":
        other = rng.previous_year()
    else:
        raise InvalidRequest("`compare` must be previous_period or previous_year", field="compare")
    if not other.within_bounds:
        raise InvalidRequest(
            f"`compare`: the {compare.replace('_', ' ')} ({other.first} to {other.last}) "
            f"is not within {FIRST_DAY} to {LAST_DAY}",
            field="compare",
        )
    return other


def _endpoint(
    query: Callable[[EventStore, Project, Request], dict[str, Any]], light: bool = False
) -> Endpoint:
    """The endpoint of one read; ``light``: its kind goes in the light reads' lane unless a
    filter scans the values."""

    async def endpoint(request: Request) -> Response:
        return await _read(request, query, light)

    return endpoint


get_metrics = _endpoint(_metrics, light=True)
get_timeseries = _endpoint(_timeseries)
get_breakdown = _endpoint(_breakdown)
get_realtime = _endpoint(_realtime, light=True)
get_goals = _endpoint(_goals)
get_funnel = _endpoint(_funnel)
get_journeys = _endpoint(_journeys)
get_revenue = _endpoint(_revenue)
get_errors = _endpoint(_errors)
get_properties = _endpoint(_properties)
get_vitals = _endpoint(_vitals)
get_values = _endpoint(_values)
