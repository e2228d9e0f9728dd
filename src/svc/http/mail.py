"""Email reports' and alerts' subscriptions, the unsubscribe link, and the outbox's state.

- ``GET|POST /projects/{project_id}/subscriptions``, ``DELETE .../subscriptions/{id}``: the
  project's subscriptions (right ``edit``: the admin token, the project's secret key, a
  team's owner, admin or editor); a member who may only read the project (a viewer, a guest)
  lists, adds and removes the subscriptions of its own address;
- ``GET /unsubscribe/{token}``: a small page with a button (JSON with ``Accept:
  application/json``); ``POST /unsubscribe/{token}``: unsubscribes (no credential: the token
  is one; single use). GET changes nothing, so that a mail scanner following links does not
  unsubscribe anyone;
- ``GET /internal/mail``: whether mail is on, and the outbox's counts (admin token).
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from svc.auth import Principal
from svc.errors import Forbidden, InvalidRequest, NotFound
from svc.http.common import json_body, json_response, principal_of, runtime_of
from svc.mail import mail_enabled, outbox, subscriptions
from svc.mail.subscriptions import Subscription
from svc.meta.store import MetaStore


def _own_email(principal: Principal, project_id: str) -> str | None:
    """The address of an account that may read the project but not edit it (a viewer, a
    guest): such a member manages its own subscriptions only. None for everyone else."""
    access = principal.access
    if access is None or "edit" in access.on_project(project_id):
        return None
    return access.email.lower()


async def list_subscriptions(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    principal = await principal_of(request)
    own = _own_email(principal, project_id)
    # keys and the admin token: edit; an account: read, and a reader sees its own only
    principal.require("edit" if principal.access is None else "read", project_id)
    meta = runtime_of(request).meta
    await asyncio.to_thread(meta.get_project, project_id)
    subs = await asyncio.to_thread(subscriptions.list_subscriptions, meta, project_id)
    if own is not None:
        subs = [s for s in subs if s.email == own]
    return json_response(
        {
            "subscriptions": [s.to_json() for s in subs],
            "mailEnabled": mail_enabled(runtime_of(request).settings),
        }
    )


async def create_subscription(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    principal = await principal_of(request)
    body = await json_body(request)
    own = _own_email(principal, project_id)
    asked = body.get("email")
    mine = own is not None and isinstance(asked, str) and asked.strip().lower() == own
    principal.require("read" if mine else "edit", project_id)  # members choose their own
    unknown = sorted(set(body) - {"email", "kind"})
    if unknown:
        raise InvalidRequest(f"unknown field {unknown[0]!r}", field=unknown[0])
    email = subscriptions.check_email(body.get("email"))
    kind = subscriptions.check_kind(body.get("kind"))
    runtime = runtime_of(request)
    sub, created = await asyncio.to_thread(
        subscriptions.subscribe, runtime.meta, project_id, email, kind
    )
    if created:
        runtime.mail.reschedule()
    return json_response(sub.to_json(), 201 if created else 200)


async def delete_subscription(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    subscription_id = request.path_params["subscription_id"]
    principal = await principal_of(request)
    meta = runtime_of(request).meta
    own = _own_email(principal, project_id)
    mine = False
    if own is not None:  # a reader may remove its own subscription
        found = await asyncio.to_thread(subscriptions.find, meta, project_id, subscription_id)
        mine = found is not None and found.email == own
    principal.require("read" if mine else "edit", project_id)
    sub = await asyncio.to_thread(subscriptions.remove, meta, project_id, subscription_id)
    return json_response(sub.to_json())


_KINDS = {
    "daily": "the daily report",
    "weekly": "the weekly report",
    "monthly": "the monthly report",
    "alerts": "traffic alerts",
}


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _page(title: str, inner: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title></head>"
        '<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto">'
        f"<main><h1>{html.escape(title)}</h1>{inner}</main></body></html>",
        status_code=status,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _what(sub: Subscription, project_name: str) -> str:
    return f"{_KINDS.get(sub.kind, sub.kind)} of {project_name} to {sub.email}"


async def _link_subscription(
    request: Request, lookup: Callable[[MetaStore, str], Subscription | None]
) -> tuple[Subscription, str]:
    """The subscription of the link's token (found by ``lookup``) and its project's name; 404
    (JSON, by the app's error handler, as every error) when the token is used or unknown."""
    meta = runtime_of(request).meta
    sub = await asyncio.to_thread(lookup, meta, request.path_params["token"])
    if sub is None:
        raise NotFound("this unsubscribe link was used already, or is unknown")
    project = await asyncio.to_thread(meta.find_project, sub.project_id)
    return sub, project.name if project else sub.project_id


async def unsubscribe_page(request: Request) -> Response:
    sub, name = await _link_subscription(request, subscriptions.by_token)
    if _wants_json(request):
        return json_response({"subscription": {**sub.to_json(), "project": name}})
    what = html.escape(_what(sub, name))
    token = html.escape(request.path_params["token"])
    return _page(
        "Unsubscribe",
        f"<p>Stop sending {what}?</p>"
        f'<form method="post" action="/unsubscribe/{token}">'
        '<button type="submit">Unsubscribe</button></form>',
    )


async def unsubscribe(request: Request) -> Response:
    sub, name = await _link_subscription(request, subscriptions.unsubscribe)
    if _wants_json(request):
        return json_response({"unsubscribed": {**sub.to_json(), "project": name}})
    return _page("Unsubscribed", f"<p>You will no longer get {html.escape(_what(sub, name))}.</p>")


async def mail_state(request: Request) -> Response:
    principal = await principal_of(request)
    if not principal.is_admin:
        raise Forbidden("only the admin token may do this")
    runtime = runtime_of(request)
    counts = await asyncio.to_thread(outbox.counts, runtime.meta.engine)
    worker = runtime.mail.worker
    return json_response(
        {
            "enabled": mail_enabled(runtime.settings),
            "outbox": counts,
            "lastError": worker.last_error if worker else None,
        }
    )


ROUTES = [
    Route("/projects/{project_id}/subscriptions", list_subscriptions, methods=["GET"]),
    Route("/projects/{project_id}/subscriptions", create_subscription, methods=["POST"]),
    Route(
        "/projects/{project_id}/subscriptions/{subscription_id}",
        delete_subscription,
        methods=["DELETE"],
    ),
    Route("/unsubscribe/{token}", unsubscribe_page, methods=["GET"]),
    Route("/unsubscribe/{token}", unsubscribe, methods=["POST"]),
    Route("/internal/mail", mail_state, methods=["GET"]),
]


def openapi_paths(
    settings: Any, secured: list[dict[str, list[str]]], errors: Any, param: Any
) -> dict[str, Any]:
    """The OpenAPI paths of these routes (svc.http.openapi calls it with its helpers
    ``_errors(settings, *statuses)`` and ``_param(name, where, description, required)``)."""
    project = param("project_id", "path", "Project id, `svc_proj_<name>`.", True)
    token = param("token", "path", "The unsubscribe token of a mail's link.", True)
    sub_id = param("subscription_id", "path", "Subscription id, `sub_...`.", True)
    body = {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["email", "kind"],
                    "properties": {
                        "email": {"type": "string", "maxLength": 320},
                        "kind": {"type": "string", "enum": list(subscriptions.KINDS)},
                    },
                    "additionalProperties": False,
                }
            }
        },
    }
    page = {"description": "HTML, or JSON with Accept: application/json."}
    return {
        "/projects/{project_id}/subscriptions": {
            "parameters": [project],
            "get": {
                "summary": "List the project's email report and alert subscriptions",
                "security": secured,
                "responses": {
                    "200": {"description": "`subscriptions` and `mailEnabled`."},
                    **errors(settings, 401, 403, 404),
                },
            },
            "post": {
                "summary": "Subscribe an address to daily, weekly, monthly reports or alerts",
                "security": secured,
                "requestBody": body,
                "responses": {
                    "201": {"description": "The new subscription."},
                    "200": {"description": "The address was subscribed already."},
                    **errors(settings, 400, 401, 403, 404),
                },
            },
        },
        "/projects/{project_id}/subscriptions/{subscription_id}": {
            "parameters": [project, sub_id],
            "delete": {
                "summary": "Remove a subscription",
                "security": secured,
                "responses": {
                    "200": {"description": "The removed subscription."},
                    **errors(settings, 401, 403, 404),
                },
            },
        },
        "/unsubscribe/{token}": {
            "parameters": [token],
            "get": {
                "summary": "What the link unsubscribes from, with a button (no credential)",
                "responses": {"200": page, "404": page},
            },
            "post": {
                "summary": "Unsubscribe (no credential; the token is single use)",
                "responses": {"200": page, "404": page},
            },
        },
        "/internal/mail": {
            "get": {
                "summary": "Whether mail is on, and the outbox's counts (admin token)",
                "security": secured,
                "responses": {
                    "200": {"description": "`enabled`, `outbox` {queued, sent, failed}."},
                    **errors(settings, 401, 403),
                },
            }
        },
    }
