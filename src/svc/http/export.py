"""GET /export: a project's raw events for a range as NDJSON, CSV or Parquet."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from svc.errors import ApiError, Forbidden
from svc.http.common import error_response, principal_of, runtime_of
from svc.http.metrics import project_for_read
from svc.queries.dates import parse_range, parse_zone
from svc.queries.export import export_chunks, export_format


async def get_export(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        principal = await principal_of(request)
        if principal.kind == "share":
            raise Forbidden("a share token reads metrics only; raw events need a secret key")
        project = await project_for_read(request, principal)
        params = request.query_params
        fmt = params.get("format", "ndjson")
        media_type = export_format(fmt)[1]
        tz = parse_zone(params["tz"]) if params.get("tz") else project.timezone
        rng = parse_range(params.get("from"), params.get("to"), tz)
    except ApiError as exc:
        return error_response(exc)

    async def body() -> AsyncIterator[bytes]:
        chunks = export_chunks(
            runtime.store, project.id, rng, fmt, runtime.settings.export_piece_events
        )
        try:
            while True:
                chunk = await asyncio.to_thread(next, chunks, None)
                if chunk is None:
                    return
                yield chunk
        finally:  # also when the client went away: a Parquet export's file is deleted
            chunks.close()

    filename = f"{project.name}-{rng.first}-{rng.last}.{fmt}"
    return StreamingResponse(
        body(),
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
