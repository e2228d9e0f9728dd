"""Each request's id, and the per-request figures of /internal/metrics.

:class:`RequestObserver` is the outermost ASGI middleware of ``svcm serve`` (ahead of signed
edge headers, the limits and the POST /analytics fast path, which all run inside it, so the
HTTP server's fast path goes through it too). For each request it:

* takes the id: a sane incoming ``X-Request-Id`` (1-128 of ``A-Z a-z 0-9 . _ : + / = @ -``),
  else a new one (16 hex digits, random: ids say nothing of how many requests there are);
  sets it as :data:`svc.errors.request_id` while the request runs (error bodies and log
  lines read it there) and answers it in ``x-request-id``;
* counts the answer by method, route template and status (:class:`RequestStats`), and times
  POST /analytics and the reads: a few dictionary operations and two clock reads, no lock
  (everything runs on the event loop), no label from the client beyond the route template and
  a known method. Everything else /internal/metrics shows is read from the service's own
  counters when it is scraped (:mod:`svc.http.internal_metrics`);
* logs the request at debug level (an access log, route template only: no address, no query
  string), and at warning level when it answered 500.

The cost per request is measured by ``tests/test_internal_metrics.py``
(``test_the_observer_costs_little_per_request``) and written down in docs/operations.md.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterable
from random import getrandbits
from time import perf_counter
from typing import Any

from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc.errors import request_id

log = logging.getLogger("svc.requests")

HEADER = b"x-request-id"
_SANE_ID = re.compile(rb"[A-Za-z0-9._:+/=@-]{1,128}")
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
UNMATCHED = "unmatched"  # the route of a path no route has (a 404)

#: The reads timed by kind: route template -> kind.
READ_KINDS = {
    "/metrics": "metrics",
    "/metrics/timeseries": "timeseries",
    "/metrics/breakdown": "breakdown",
    "/metrics/realtime": "realtime",
    "/metrics/goals": "goals",
    "/metrics/funnel": "funnel",
    "/metrics/revenue": "revenue",
    "/metrics/errors": "errors",
    "/metrics/properties": "properties",
    "/export": "export",
}

#: Upper bounds (s) of the buckets of the ingestion latency (POST /analytics answered 200:
#: the events on disk, one group commit) and of the reads' durations.
INGEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
READ_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    """Counts per bucket (each value in the first bucket whose bound is >= it; the last
    bucket is +Inf) and their sum: what a Prometheus histogram exposes, without its lock."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, int]]:
        """``[(le, count of values <= le)]`` ending with ``+Inf``, as Prometheus wants it."""
        out, total = [], 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += count
            out.append(("+Inf" if bound == float("inf") else repr(bound), total))
        return out


class RequestStats:
    """The per-request figures: answers by (method, route, status); the latency of POST
    /analytics answered 200; the duration of reads by kind (answers that are not 4xx)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, int], int] = {}
        self.ingest = Histogram(INGEST_BUCKETS)
        self.reads = {kind: Histogram(READ_BUCKETS) for kind in READ_KINDS.values()}
        self._read_of = {route: self.reads[kind] for route, kind in READ_KINDS.items()}

    def record(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        if route == "/analytics":
            if status == 200:
                ingest = self.ingest
                ingest.counts[bisect.bisect_left(ingest.bounds, seconds)] += 1
                ingest.sum += seconds
        elif not 400 <= status < 500:
            read = self._read_of.get(route)
            if read is not None:
                read.observe(seconds)


class RouteTemplates:
    """A request's path -> the template of the route it goes to (``/projects/{project_id}``),
    ``unmatched`` for none: a bounded set of label values whatever the paths."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self.exact: dict[str, str] = {}
        self.patterns: list[tuple[re.Pattern[str], str]] = []
        for route in routes:
            if not isinstance(route, Route):
                continue
            if route.param_convertors:
                self.patterns.append((route.path_regex, route.path))
            else:
                self.exact.setdefault(route.path, route.path)

    def __call__(self, path: str) -> str:
        template = self.exact.get(path)
        if template is not None:
            return template
        for regex, name in self.patterns:
            if regex.match(path):
                return name
        return UNMATCHED


class RequestObserver:
    """The middleware (see the module's documentation)."""

    def __init__(self, app: ASGIApp, stats: RequestStats, routes: Iterable[Any]) -> None:
        self.app = app
        self.stats = stats
        self.route_of = RouteTemplates(routes)
        self.exact = self.route_of.exact

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = perf_counter()
        rid: str | None = None
        for name, value in scope["headers"]:
            if name == HEADER:
                if _SANE_ID.fullmatch(value):
                    rid = value.decode("ascii")
                break
        if rid is None:
            rid = getrandbits(64).to_bytes(8).hex()  # 16 hex digits
        id_header = (HEADER, rid.encode())
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), id_header]
            await send(message)

        token = request_id.set(rid)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if not status:
                status = 500  # the server answers it
            raise
        finally:
            request_id.reset(token)
            seconds = perf_counter() - started
            method = scope["method"]
            if method not in METHODS:
                method = "other"
            path = scope["path"]
            route = self.exact.get(path) or self.route_of(path)
            self.stats.record(method, route, status, seconds)
            if status == 500 or log.isEnabledFor(logging.DEBUG):
                _log_request(rid, method, route, status, seconds)


def _log_request(rid: str, method: str, route: str, status: int, seconds: float) -> None:
    ms = round(seconds * 1000, 2)
    shown = status or "(no answer: the client went away)"
    log.log(
        logging.WARNING if status == 500 else logging.DEBUG,
        "%s %s %s in %s ms",
        method,
        route,
        shown,
        ms,
        extra={
            "requestId": rid,
            "method": method,
            "route": route,
            "status": status,
            "durationMs": ms,
        },
    )


def observe(app: ASGIApp, starlette_app: Any) -> RequestObserver:
    """``app`` (``svcm serve``'s stack, whose innermost application is ``starlette_app``, the
    one of :func:`svc.app.create_app`) behind :class:`RequestObserver`, counting into that
    application's ``state.requests``."""
    return RequestObserver(app, starlette_app.state.requests, starlette_app.routes)
