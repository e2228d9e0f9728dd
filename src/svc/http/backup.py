"""/internal/backup: backups of the running service, for the admin token only
(``svcm backup``; what a backup holds: :mod:`svc.backup`).

- ``POST /internal/backup`` ``{"to": "/abs/dir" | "s3://bucket/prefix", "keep": N?,
  "full": false?}``: take one into a new directory under ``to`` (on the server's machine, or
  in the bucket with the ``SVC_BACKUP_S3_*`` settings); 201 with its manifest.
- ``GET /internal/backup?to=...``: the backups there, oldest first.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.backup import catalog, remote, service
from svc.errors import Forbidden, InvalidRequest
from svc.http.common import json_body, json_response, principal_of, runtime_of
from svc.lake.places import PlaceError, is_s3

PATH = "/internal/backup"
MAX_KEEP = 10_000


async def _admin(request: Request) -> None:
    if not (await principal_of(request)).is_admin:
        raise Forbidden("only the admin token may take or list backups")


def _target(value: Any) -> Path | str:
    """A directory (Path) or an ``s3://bucket/prefix`` URL (str)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(
            "`to` is required: an absolute directory path or s3://bucket/prefix", field="to"
        )
    if "\0" in value:
        raise InvalidRequest("`to` holds a NUL character", field="to")
    if is_s3(value):
        bucket = value[len("s3://") :].partition("/")[0]
        if not bucket:
            raise InvalidRequest("`to`: s3://bucket/prefix names no bucket", field="to")
        return value
    if "://" in value:
        raise InvalidRequest(
            "`to`: a directory on the server's machine or s3://bucket/prefix", field="to"
        )
    return Path(value)


async def post_backup(request: Request) -> Response:
    await _admin(request)
    body = await json_body(request)
    unknown = sorted(set(body) - {"to", "keep", "full"})
    if unknown:
        raise InvalidRequest(f"unknown field `{unknown[0]}`", field=unknown[0])
    to = _target(body.get("to"))
    keep = body.get("keep")
    if keep is not None and (
        not isinstance(keep, int) or isinstance(keep, bool) or not 1 <= keep <= MAX_KEEP
    ):
        raise InvalidRequest(f"`keep` must be an integer from 1 to {MAX_KEEP}", field="keep")
    full = body.get("full", False)
    if not isinstance(full, bool):
        raise InvalidRequest("`full` must be true or false", field="full")
    manifest = await service.backup(runtime_of(request), to, keep=keep, full=full)
    return json_response(manifest, 201)


async def list_backups(request: Request) -> Response:
    await _admin(request)
    to = _target(request.query_params.get("to"))
    if isinstance(to, str):
        place = remote.place_of(to, runtime_of(request).settings)
        try:
            complete, incomplete = await asyncio.to_thread(remote.scan, place)
        except PlaceError as exc:
            raise InvalidRequest(f"`to`: {exc}", field="to") from exc
    elif not to.is_absolute():
        raise InvalidRequest("`to` must be an absolute directory path", field="to")
    else:
        complete, incomplete = await asyncio.to_thread(catalog.scan, to)
    return json_response({"to": str(to), "backups": complete, "incomplete": incomplete})


ROUTES = [
    Route(PATH, post_backup, methods=["POST"]),
    Route(PATH, list_backups, methods=["GET"]),
]
