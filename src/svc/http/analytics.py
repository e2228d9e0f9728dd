"""POST /analytics: ingest one event or a batch."""

from __future__ import annotations

import asyncio

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import ApiError, Forbidden, InvalidRequest
from svc.http.common import (
    CORS_HEADERS,
    error_response,
    json_response,
    principal_of,
    read_body,
    resolve_token,
    runtime_of,
)
from svc.ingestion.enrich.geo import country_from_headers
from svc.ingestion.pipeline import RequestContext
from svc.meta.store import Project
from svc.timeutil import now_ms


async def post_analytics(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        principal = await _ingest_principal(request)
        principal.require("ingest")
        body = await read_body(request, runtime.settings.max_body_bytes)
        project = principal.project or await _admin_project(request, body)
        peer = request.client.host if request.client else ""
        proxies = request.app.state.proxies
        address = proxies.client_address(peer, request.headers.get("x-forwarded-for"))
        trusted_edge = proxies.trusts(peer)
        ctx = RequestContext(
            project=project,
            key_kind="public" if principal.kind == "public" else "secret",
            address=address,
            user_agent=request.headers.get("user-agent", ""),
            edge_country=country_from_headers(request.headers) if trusted_edge else "",
            received_ms=now_ms(),
        )
        result = await runtime.ingest.ingest(ctx, body)
    except ApiError as exc:
        return error_response(exc)
    headers = dict(CORS_HEADERS)
    if result.dropped and not result.is_batch:
        headers["X-Svc-Dropped"] = result.dropped[0].value
    return json_response(result.body(), 200, headers)


async def _ingest_principal(request: Request) -> Principal:
    """A Bearer header, or (for browsers, which cannot send one without a preflight) a public
    key in the ``key`` query parameter. A secret key in the URL is refused."""
    key = request.query_params.get("key")
    if not key or request.headers.get("authorization"):
        return await principal_of(request)
    principal = await resolve_token(runtime_of(request), key)
    if principal.kind != "public":
        raise Forbidden(
            "only a public key may be sent in the URL; send secret keys and tokens in the "
            "Authorization header (and rotate this one: it has been exposed)"
        )
    return principal


async def _admin_project(request: Request, body: bytes) -> Project:
    """With the admin token, the project is the ``projectId`` of the (first) event."""
    project_id = request.query_params.get("projectId")
    if not project_id:
        try:
            doc = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):  # too deep: ingest answers 400
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("events"), list):
            doc = doc["events"]
        first = doc[0] if isinstance(doc, list) and doc else doc
        if isinstance(first, dict) and isinstance(first.get("projectId"), str):
            project_id = first["projectId"]
    if not project_id:
        raise InvalidRequest(
            "with the admin token, name the project: `projectId` in the events", field="projectId"
        )
    project = await asyncio.to_thread(runtime_of(request).meta.find_project, project_id)
    if project is None:
        raise Forbidden(f"no project {project_id!r}")
    return project


async def preflight(request: Request) -> Response:
    """CORS preflight: counted (see /health), cached by browsers for a day."""
    request.app.state.preflights += 1
    return Response(status_code=204, headers=CORS_HEADERS)
