"""/internal/nodes: the nodes' watermark rows, for the admin token only (``svcm nodes``;
what a watermark is: :mod:`svc.cluster.watermarks`).

- ``GET /internal/nodes``: every node's row (its id, watermark, when it last wrote it), as
  the node answering reads them; one node on its embedded store keeps none.
- ``DELETE /internal/nodes/{node}?force=false``: delete the row of a node removed without
  stopping cleanly; 409 for the answering node's own row and, without ``force=true``, for a
  row written within :func:`silent_seconds` (its node is alive); 404 when there is none.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.cluster.watermarks import NodeRow, node_id_of
from svc.errors import Forbidden, InvalidRequest
from svc.http.common import json_response, principal_of, runtime_of
from svc.runtime import Runtime
from svc.timeutil import now_ms

PATH = "/internal/nodes"


def silent_seconds(runtime: Runtime) -> float:
    """How long a live node may go without writing its row: its lease period, or three
    housekeeping ticks (it writes at each) when that is longer."""
    settings = runtime.settings
    return max(settings.job_lease_seconds, 3 * settings.housekeeping_interval_seconds)


def _row(row: NodeRow, runtime: Runtime, now: int, silent_ms: int) -> dict[str, Any]:
    age_ms = max(now - row.updated_ms, 0)
    return {
        "id": row.node_id,
        "loadedThroughMs": row.loaded_through_ms,
        "behindSeconds": round(max(now - row.loaded_through_ms, 0) / 1000, 1),
        "updatedAtMs": row.updated_ms,
        "ageSeconds": round(age_ms / 1000, 1),
        "answering": row.node_id == runtime.node_id,
        "alive": age_ms < silent_ms,
    }


async def _admin(request: Request) -> Runtime:
    if not (await principal_of(request)).is_admin:
        raise Forbidden("only the admin token may read or delete the nodes' rows")
    return runtime_of(request)


async def get_nodes(request: Request) -> Response:
    runtime = await _admin(request)
    rows = await asyncio.to_thread(runtime.watermarks.rows)
    silent = silent_seconds(runtime)
    now = now_ms()
    return json_response(
        {
            "node": runtime.node_id,
            "silentSeconds": silent,
            "nodes": [_row(r, runtime, now, int(silent * 1000)) for r in rows],
        }
    )


def _force(value: str | None) -> bool:
    if value is None or value in ("false", "0"):
        return False
    if value in ("true", "1"):
        return True
    raise InvalidRequest("`force` must be true or false", field="force")


async def delete_node(request: Request) -> Response:
    runtime = await _admin(request)
    force = _force(request.query_params.get("force"))
    node = node_id_of(request.path_params["node"])  # as SVC_NODE_ID is written in the rows
    silent = silent_seconds(runtime)
    row = await asyncio.to_thread(
        runtime.watermarks.forget, node, silent_ms=int(silent * 1000), force=force
    )
    return json_response({"deleted": _row(row, runtime, now_ms(), int(silent * 1000))})


ROUTES = [
    Route(PATH, get_nodes, methods=["GET"]),
    Route(PATH + "/{node}", delete_node, methods=["DELETE"]),
]
