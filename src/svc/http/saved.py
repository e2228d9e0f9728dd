"""The routes of a project's saved goals, funnels, segments and annotations (issue 41).

``GET|POST /projects/{project_id}/<kind>``, ``PATCH|DELETE /projects/{project_id}/<kind>/{id}``
for ``goals``, ``funnels``, ``segments`` and ``annotations``; their domain (tables,
validation) is :mod:`svc.saved`. The rights (docs/api.md, "Saved goals, funnels, segments
and annotations"; one line each in :data:`svc.http.rules.RULES`):

- listing needs ``read`` (a viewer, a guest, a share link of the project);
- writing goals, funnels and annotations needs ``edit`` (owner, admin, editor, the admin
  token, the project's secret key: its ``manage`` covers ``edit``);
- segments: a reader sees the shared ones and its own personal ones; making a personal one
  needs ``read`` (an account only), a shared one ``edit``; changing or deleting one's own
  personal segment needs ``read`` (``edit`` to make it shared), any other visible one
  ``edit``; another's personal segment does not exist for the caller (404).

Every handler checks the project's right before it reads anything of the project, so a
caller without it learns nothing of what exists (403).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.auth import Principal
from svc.errors import NotFound
from svc.http.common import json_body, json_response, principal_of, runtime_of
from svc.meta.store import MetaStore
from svc.saved import annotations as notes
from svc.saved import funnels, goals, segments


async def _caller(request: Request, right: str) -> tuple[Principal, str, MetaStore]:
    """The caller, checked for ``right`` on the route's project, the project's id, the store."""
    project_id = request.path_params["project_id"]
    principal = await principal_of(request)
    principal.require(right, project_id)
    return principal, project_id, runtime_of(request).meta


def _account_id(principal: Principal) -> str | None:
    return principal.access.account_id if principal.access is not None else None


def _author(principal: Principal) -> str:
    """Who writes: an account's id, a key's id, or ``admin``."""
    account = _account_id(principal)
    if account is not None:
        return account
    return principal.key_id or "admin"


# goals, funnels: read to list, edit to write ------------------------------------------------


def _crud(
    plural: str,
    listing: Callable[[MetaStore, str], list[Any]],
    create: Callable[[MetaStore, str, dict[str, Any]], Any],
    change: Callable[[MetaStore, str, str, dict[str, Any]], Any],
    remove: Callable[[MetaStore, str, str], Any],
    id_param: str,
) -> list[Route]:
    async def list_items(request: Request) -> Response:
        _, project_id, meta = await _caller(request, "read")
        await asyncio.to_thread(meta.get_project, project_id)
        items = await asyncio.to_thread(listing, meta, project_id)
        return json_response({plural: [i.to_json() for i in items]})

    async def create_item(request: Request) -> Response:
        _, project_id, meta = await _caller(request, "edit")
        body = await json_body(request)
        item = await asyncio.to_thread(create, meta, project_id, body)
        return json_response(item.to_json(), 201)

    async def change_item(request: Request) -> Response:
        _, project_id, meta = await _caller(request, "edit")
        body = await json_body(request)
        item_id = request.path_params[id_param]
        item = await asyncio.to_thread(change, meta, project_id, item_id, body)
        return json_response(item.to_json())

    async def delete_item(request: Request) -> Response:
        _, project_id, meta = await _caller(request, "edit")
        item = await asyncio.to_thread(remove, meta, project_id, request.path_params[id_param])
        return json_response(item.to_json())

    base = f"/projects/{{project_id}}/{plural}"
    one = f"{base}/{{{id_param}}}"
    return [
        Route(base, list_items, methods=["GET"]),
        Route(base, create_item, methods=["POST"]),
        Route(one, change_item, methods=["PATCH"]),
        Route(one, delete_item, methods=["DELETE"]),
    ]


# segments: personal ones are their owner's ----------------------------------------------------


async def list_segments(request: Request) -> Response:
    principal, project_id, meta = await _caller(request, "read")
    await asyncio.to_thread(meta.get_project, project_id)
    found = await asyncio.to_thread(segments.list_visible, meta, project_id, _account_id(principal))
    return json_response({"segments": [s.to_json() for s in found]})


async def create_segment(request: Request) -> Response:
    principal, project_id, meta = await _caller(request, "read")
    body = await json_body(request)
    account = _account_id(principal)
    principal.require("edit" if segments.wants_shared(body, account) else "read", project_id)
    segment = await asyncio.to_thread(segments.create, meta, project_id, body, account)
    return json_response(segment.to_json(), 201)


async def _segment_right(
    request: Request, body: dict[str, Any]
) -> tuple[Principal, str, MetaStore, str]:
    """Check the right to change or delete the route's segment: ``read`` for one's own
    personal segment (that stays personal), else ``edit`` (a segment the caller does not
    see: ``edit``, then 404)."""
    principal, project_id, meta = await _caller(request, "read")
    segment_id = request.path_params["segment_id"]
    account = _account_id(principal)
    found = await asyncio.to_thread(segments.find_visible, meta, project_id, segment_id, account)
    own = found is not None and not found.shared and found.owned_by(account)
    stays_personal = body.get("shared") is not True
    principal.require("read" if own and stays_personal else "edit", project_id)
    if found is None:
        raise NotFound(f"no segment {segment_id!r} in this project")
    return principal, project_id, meta, segment_id


async def change_segment(request: Request) -> Response:
    body = await json_body(request)
    principal, project_id, meta, segment_id = await _segment_right(request, body)
    segment = await asyncio.to_thread(
        segments.change, meta, project_id, segment_id, body, _account_id(principal)
    )
    return json_response(segment.to_json())


async def delete_segment(request: Request) -> Response:
    principal, project_id, meta, segment_id = await _segment_right(request, {})
    segment = await asyncio.to_thread(
        segments.remove, meta, project_id, segment_id, _account_id(principal)
    )
    return json_response(segment.to_json())


# annotations: by range, each with its author -----------------------------------------------


async def list_annotations(request: Request) -> Response:
    _, project_id, meta = await _caller(request, "read")
    first = notes.parse_day(request.query_params.get("from"), "from")
    last = notes.parse_day(request.query_params.get("to"), "to")
    project = await asyncio.to_thread(meta.get_project, project_id)
    found = await asyncio.to_thread(
        notes.list_annotations, meta, project_id, project.timezone, first, last
    )
    return json_response(
        {
            "timezone": project.timezone,
            "annotations": [a.to_json(project.timezone) for a in found],
        }
    )


async def create_annotation(request: Request) -> Response:
    principal, project_id, meta = await _caller(request, "edit")
    body = await json_body(request)
    made = await asyncio.to_thread(notes.create, meta, project_id, body, _author(principal))
    project = await asyncio.to_thread(meta.get_project, project_id)
    return json_response(made.to_json(project.timezone), 201)


async def change_annotation(request: Request) -> Response:
    _, project_id, meta = await _caller(request, "edit")
    body = await json_body(request)
    annotation_id = request.path_params["annotation_id"]
    changed = await asyncio.to_thread(notes.change, meta, project_id, annotation_id, body)
    project = await asyncio.to_thread(meta.get_project, project_id)
    return json_response(changed.to_json(project.timezone))


async def delete_annotation(request: Request) -> Response:
    _, project_id, meta = await _caller(request, "edit")
    annotation_id = request.path_params["annotation_id"]
    removed = await asyncio.to_thread(notes.remove, meta, project_id, annotation_id)
    project = await asyncio.to_thread(meta.get_project, project_id)
    return json_response(removed.to_json(project.timezone))


ROUTES: list[Route] = [
    *_crud("goals", goals.list_goals, goals.create, goals.change, goals.remove, "goal_id"),
    *_crud(
        "funnels",
        funnels.list_funnels,
        funnels.create,
        funnels.change,
        funnels.remove,
        "funnel_id",
    ),
    Route("/projects/{project_id}/segments", list_segments, methods=["GET"]),
    Route("/projects/{project_id}/segments", create_segment, methods=["POST"]),
    Route("/projects/{project_id}/segments/{segment_id}", change_segment, methods=["PATCH"]),
    Route("/projects/{project_id}/segments/{segment_id}", delete_segment, methods=["DELETE"]),
    Route("/projects/{project_id}/annotations", list_annotations, methods=["GET"]),
    Route("/projects/{project_id}/annotations", create_annotation, methods=["POST"]),
    Route(
        "/projects/{project_id}/annotations/{annotation_id}",
        change_annotation,
        methods=["PATCH"],
    ),
    Route(
        "/projects/{project_id}/annotations/{annotation_id}",
        delete_annotation,
        methods=["DELETE"],
    ),
]
