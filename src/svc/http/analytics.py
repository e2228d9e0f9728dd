"""POST /analytics: ingest one event or a batch.

The hot path of the service, with one handler: :func:`handle` works on the raw ASGI scope
(headers as bytes, the query string, ``receive``): it reads the credential, the body and the
client, calls the ingestion service's one domain function
(:meth:`~svc.ingestion.service.IngestService.ingest`) and maps the result (or the
:class:`~svc.errors.ApiError`) to the status, headers and body. Each way in is a thin
adapter that calls it:

* :class:`AnalyticsFastPath` wraps the Starlette application (``svcm serve`` does this) and
  answers ``POST /analytics`` before Starlette's middleware stack, router and ``Request``
  objects, which cost more than the ingestion itself (see docs/benchmarks.md). The HTTP
  server's fast path (:mod:`svc.http.server.fast_path`) skips uvicorn's ASGI request cycle
  too, and calls the same application, so it ends here as well;
* :func:`post_analytics` is the Starlette route, for in-process use of ``create_app`` and for
  the case where the fast path steps aside (the application has middleware, or the route no
  longer points here).

All give the same answers (``tests/test_analytics_entry_points.py``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.auth import Principal
from svc.errors import ApiError, Forbidden, InvalidRequest, PayloadTooLarge
from svc.http.common import (
    CORS_HEADERS,
    resolve_token,
    runtime_of_app,
    to_thread,
)
from svc.ingestion.enrich.geo import geo_from_headers
from svc.ingestion.pipeline import RequestContext
from svc.ingestion.wire import decode_body
from svc.meta.store import Project
from svc.runtime import Runtime
from svc.timeutil import now_ms

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
RawHeaders = list[tuple[bytes, bytes]]

_encoder = msgspec.json.Encoder()
_JSON = (b"content-type", b"application/json")
_CORS: RawHeaders = [(k.lower().encode(), v.encode()) for k, v in CORS_HEADERS.items()]
_INTERNAL = ApiError(
    "an internal error occurred; it has been logged",
    status=500,
    code="internal_error",
    headers={"Connection": "close"},  # the connection's state is not to be trusted: closed
)


class ClientGone(Exception):
    """The client disconnected before its body arrived: nothing to answer."""


async def handle(app: Any, scope: Scope, receive: Receive) -> tuple[int, RawHeaders, bytes]:
    """Status, headers (without content-length) and body of a POST /analytics: the one
    handler of every way in (see the module's documentation)."""
    state = app.state
    runtime = runtime_of_app(app)
    auth_header = user_agent = forwarded = declared = None
    # The first of a repeated header counts, as with Starlette's ``Headers.get``.
    for name, value in scope["headers"]:
        if name == b"authorization":
            if auth_header is None:
                auth_header = value.decode("latin-1")
        elif name == b"user-agent":
            if user_agent is None:
                user_agent = value.decode("latin-1")
        elif name == b"content-length":
            if declared is None:
                declared = value
        elif name == b"x-forwarded-for" and forwarded is None:
            forwarded = value.decode("latin-1")
    query = scope.get("query_string") or b""
    # The last of a repeated parameter counts, as with Starlette's ``QueryParams.get``.
    params = dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True)) if query else {}
    try:
        principal = await _ingest_principal(runtime, auth_header, params.get("key"))
        principal.require("ingest")
        body = await _read_body(receive, declared, runtime.settings.max_body_bytes)
        project = principal.project or await _admin_project(runtime, params, body)
        client = scope.get("client")
        peer = client[0] if client else ""
        proxies = state.proxies
        address = proxies.client_address(peer, forwarded) if forwarded else peer
        edge_geo = scope.get("svc.edge_geo")  # signed by an edge: svc.http.edge_auth
        if edge_geo is None and proxies.networks and proxies.trusts(peer):
            edge_geo = geo_from_headers(Headers(scope=scope))
        ctx = RequestContext(
            project=project,
            key_kind="public" if principal.kind == "public" else "secret",
            address=address,
            user_agent=user_agent or "",
            edge_geo=edge_geo,
            received_ms=now_ms(),
        )
        result = await runtime.ingest.ingest(ctx, body)
    except ApiError as exc:
        return _error(exc)
    if result.dropped and not result.is_batch:
        return (
            200,
            [_JSON, *_CORS, (b"x-svc-dropped", result.dropped[0].value.encode())],
            (_encoder.encode(result.body())),
        )
    if not result.is_batch:
        return 200, [_JSON, *_CORS], b'{"ok":true,"ts":%d}' % result.received_ms
    return 200, [_JSON, *_CORS], _encoder.encode(result.body())


def _error(exc: ApiError) -> tuple[int, RawHeaders, bytes]:
    merged = {**exc.headers, **CORS_HEADERS}
    headers = [_JSON, *((k.lower().encode(), v.encode()) for k, v in merged.items())]
    return exc.status, headers, _encoder.encode(exc.body())


async def _ingest_principal(runtime: Runtime, header: str | None, key: str | None) -> Principal:
    """A Bearer header, or (for browsers, which cannot send one without a preflight) a public
    key in the ``key`` query parameter. A secret key in the URL is refused."""
    if not key or header:
        return await resolve_token(runtime, runtime.authenticator.bearer(header))
    principal = await resolve_token(runtime, key)
    if principal.kind != "public":
        raise Forbidden(
            "only a public key may be sent in the URL; send secret keys and tokens in the "
            "Authorization header (and rotate this one: it has been exposed)"
        )
    return principal


async def _read_body(receive: Receive, declared: bytes | None, limit: int) -> bytes:
    """The body, read with a hard cap: 413 as soon as it passes ``limit`` bytes."""
    if declared is not None:
        try:
            too_large = int(declared) > limit
        except ValueError as exc:
            raise InvalidRequest("bad Content-Length header", field="Content-Length") from exc
        if too_large:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes")
    message = await receive()
    if message["type"] != "http.request":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes")
        return body
    chunks = [body]
    size = len(body)
    while True:
        if size > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes")
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            break
    if size > limit:
        raise PayloadTooLarge(f"the body is larger than {limit} bytes")
    return b"".join(chunks)


async def _admin_project(runtime: Runtime, params: dict[str, str], body: bytes) -> Project:
    """With the admin token, the project is the ``projectId`` of the (first) event."""
    project_id = params.get("projectId")
    if not project_id:
        try:  # event by event, as ingestion reads it (an undecodable event is no dict)
            events = decode_body(body, sys.maxsize).events
        except ApiError:  # ingestion answers it
            events = []
        first = events[0] if events else None
        if isinstance(first, dict) and isinstance(first.get("projectId"), str):
            project_id = first["projectId"]
    if not project_id:
        raise InvalidRequest(
            "with the admin token, name the project: `projectId` in the events", field="projectId"
        )
    project: Project | None = await to_thread(runtime.meta.find_project, project_id)
    if project is None:
        raise Forbidden(f"no project {project_id!r}")
    return project


# the Starlette route ---------------------------------------------------------------------


async def post_analytics(request: Request) -> Response:
    try:
        status, headers, body = await handle(request.app, request.scope, request.receive)
    except ClientGone:
        return Response(status_code=400)
    response = Response(body, status_code=status)
    response.raw_headers = [(b"content-length", b"%d" % len(body)), *headers]
    return response


async def preflight(request: Request) -> Response:
    """CORS preflight: counted (see /health), cached by browsers for a day."""
    request.app.state.preflights += 1
    return Response(status_code=204, headers=CORS_HEADERS)


# the fast path ---------------------------------------------------------------------------


class AnalyticsFastPath:
    """ASGI application answering ``POST /analytics`` itself and passing everything else
    (other routes, other methods, lifespan) to ``app``.

    It steps aside, and Starlette serves the route as before, when the application has
    middleware of its own (which the fast path would skip) or when ``POST /analytics`` no
    longer routes to :func:`post_analytics`.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.active = _routes_here(app)
        if not self.active:
            log.warning(
                "POST /analytics fast path off: the application has middleware or "
                "another /analytics route"
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.active
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/analytics"
        ):
            await self._serve(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            status, headers, body = await handle(self.app, scope, receive)
        except ClientGone:
            return
        except Exception:
            log.exception("unhandled error on POST /analytics")
            status, headers, body = _error(_INTERNAL)
        headers.append((b"content-length", b"%d" % len(body)))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _routes_here(app: Any) -> bool:
    if getattr(app, "user_middleware", None):
        return False
    for route in getattr(app, "routes", ()):
        if (
            isinstance(route, Route)
            and route.path == "/analytics"
            and route.methods
            and "POST" in route.methods
        ):
            return route.endpoint is post_analytics
    return False


def with_fast_path(app: Any) -> Any:
    """``app`` behind :class:`AnalyticsFastPath` (``app`` itself when it cannot be used)."""
    fast = AnalyticsFastPath(app)
    return fast if fast.active else app
