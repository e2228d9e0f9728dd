"""Accounts and teams over HTTP (docs/api.md, "Accounts and teams"): sign-in and out, the
account's own settings and two-factor, teams and members, invitations, password resets,
guests and transfers. Each handler checks its route's rule (:mod:`svc.http.rules`) and calls
one :class:`~svc.accounts.service.AccountService` method.

The session token is sent as every credential is: ``Authorization: Bearer svc_sess_...``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.accounts.access import Access
from svc.accounts.service import AccountService
from svc.accounts.sso import require_password_signin
from svc.auth import Principal
from svc.errors import Forbidden, InvalidRequest
from svc.http.common import json_body, json_response, principal_of, runtime_of


def service_of(request: Request) -> AccountService:
    """The app's :class:`AccountService` (made on first use)."""
    state = request.app.state
    found: AccountService | None = getattr(state, "accounts", None)
    if found is None:
        limits = getattr(state, "limits", None)  # sign-in limits share the rate limits' Redis
        shared = limits.remote if limits is not None else None
        found = AccountService(runtime_of(request).meta, state.settings, shared)
        state.accounts = found
    return found


def actor_of(principal: Principal) -> Access | None:
    """The account behind a credential, or None for the admin token; keys: 403."""
    if principal.is_admin:
        return None
    if principal.access is None:
        raise Forbidden("this needs an account's session (sign in) or the admin token")
    return principal.access


def account_of(principal: Principal) -> Access:
    if principal.access is None:
        raise Forbidden("this needs an account's session: sign in (POST /auth/signin)")
    return principal.access


def answer_base(request: Request) -> str:
    """Where a link shown in an answer (never in a mail: :mod:`svc.mail.links`) points:
    ``SVC_BASE_URL``, else the origin this signed-in request was sent to."""
    configured: str = request.app.state.settings.base_url
    return configured or str(request.base_url)


def client_address(request: Request) -> str:
    peer = request.client.host if request.client else ""
    address: str = request.app.state.proxies.client_address(
        peer, request.headers.get("x-forwarded-for")
    )
    return address


def _unknown(body: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise InvalidRequest(
            f"unknown field `{extra[0]}`; allowed: {', '.join(sorted(allowed))}", field=extra[0]
        )


Handler = Callable[[Request], Awaitable[Any]]
Endpoint = Callable[[Request], Awaitable[Response]]


def _run(status: int = 200) -> Callable[[Handler], Endpoint]:
    """Decorator: answer the handler's result as JSON (an ApiError it raises is answered
    by the app's ``api_error`` handler, as from every route)."""

    def wrap(fn: Handler) -> Endpoint:
        @functools.wraps(fn)
        async def endpoint(request: Request) -> Response:
            return json_response(await fn(request), status)

        return endpoint

    return wrap


# sign-in ----------------------------------------------------------------------------------


@_run()
async def sign_in(request: Request) -> Any:
    """POST /auth/signin {email, password, code?}: a session token."""
    require_password_signin(request.app.state.settings)
    body = await json_body(request)
    _unknown(body, {"email", "password", "code"})
    return await service_of(request).sign_in(
        body.get("email"), body.get("password"), body.get("code"), client_address(request)
    )


@_run()
async def sign_out(request: Request) -> Any:
    access = account_of(await principal_of(request))
    await asyncio.to_thread(service_of(request).sign_out, access)
    return {"ok": True}


@_run()
async def sign_out_everywhere(request: Request) -> Any:
    access = account_of(await principal_of(request))
    ended = await asyncio.to_thread(service_of(request).sign_out_everywhere, access)
    return {"ok": True, "sessionsEnded": ended}


@_run(202)
async def request_reset(request: Request) -> Any:
    """POST /auth/reset {email}: 202 whether or not the email has an account, at once."""
    require_password_signin(request.app.state.settings)
    body = await json_body(request)
    _unknown(body, {"email"})
    await service_of(request).request_reset(body.get("email"), client_address(request))
    return {"ok": True, "message": "if an account has this email, a reset link is on its way"}


@_run()
async def confirm_reset(request: Request) -> Any:
    require_password_signin(request.app.state.settings)
    body = await json_body(request)
    _unknown(body, {"token", "password"})
    await asyncio.to_thread(
        service_of(request).confirm_reset, body.get("token"), body.get("password")
    )
    return {"ok": True}


# the account ------------------------------------------------------------------------------


@_run()
async def get_account(request: Request) -> Any:
    access = account_of(await principal_of(request))
    return await asyncio.to_thread(service_of(request).me, access)


@_run()
async def update_account(request: Request) -> Any:
    access = account_of(await principal_of(request))
    body = await json_body(request)
    _unknown(body, {"name", "password", "currentPassword"})
    if not body:
        raise InvalidRequest("nothing to change: send name, or password", field="body")
    return await service_of(request).update_me(access, body, client_address(request))


@_run()
async def totp_begin(request: Request) -> Any:
    access = account_of(await principal_of(request))
    return await asyncio.to_thread(service_of(request).totp_begin, access)


@_run()
async def totp_confirm(request: Request) -> Any:
    access = account_of(await principal_of(request))
    body = await json_body(request)
    _unknown(body, {"code", "password"})
    return await service_of(request).totp_confirm(
        access, body.get("code"), body.get("password"), client_address(request)
    )


@_run()
async def totp_disable(request: Request) -> Any:
    access = account_of(await principal_of(request))
    body = await json_body(request)
    _unknown(body, {"password", "code"})
    await service_of(request).totp_disable(
        access, body.get("password"), body.get("code"), client_address(request)
    )
    return {"ok": True, "totpEnabled": False}


# invitations ------------------------------------------------------------------------------


@_run()
async def preview_invitation(request: Request) -> Any:
    token = request.path_params["token"]
    return await asyncio.to_thread(service_of(request).preview_invitation, token)


@_run()
async def accept_invitation(request: Request) -> Any:
    """POST /invitations/{token}/accept: signed in, join; else {password, name?}: sign up."""
    token = request.path_params["token"]
    access = None  # signed in: that account accepts; otherwise (or the admin token): sign up
    if request.headers.get("authorization"):
        access = (await principal_of(request)).access
    if access is None:  # a sign-up with a password
        require_password_signin(request.app.state.settings)
    body = await json_body(request)
    _unknown(body, {"password", "name"})
    return await asyncio.to_thread(
        service_of(request).accept_invitation, token, access, body.get("password"), body.get("name")
    )


# accounts, for the admin token (svcm users) ------------------------------------------------


async def _admin(request: Request) -> None:
    if not (await principal_of(request)).is_admin:
        raise Forbidden("only the admin token may manage accounts")


@_run()
async def list_accounts(request: Request) -> Any:
    await _admin(request)
    return {"accounts": await asyncio.to_thread(service_of(request).list_accounts)}


@_run(201)
async def create_account(request: Request) -> Any:
    """POST /accounts {email, password, name?, teamName?}: with teamName, a new team it owns
    (the first owner: ``svcm users create --owner``)."""
    await _admin(request)
    body = await json_body(request)
    _unknown(body, {"email", "password", "name", "teamName"})
    name = body.get("name", "")
    team_name = body.get("teamName")
    if not isinstance(name, str):
        raise InvalidRequest("`name` must be a string", field="name")
    if team_name is not None and not isinstance(team_name, str):
        raise InvalidRequest("`teamName` must be a string", field="teamName")
    return await asyncio.to_thread(
        lambda: service_of(request).create_account(
            body.get("email"),
            body.get("password"),
            name,
            team_name=team_name,
        )
    )


@_run()
async def update_account_admin(request: Request) -> Any:
    """PATCH /accounts/{id} {disabled?, password?}: disable or enable an account, or set its
    password (``svcm users password``); either ends its sessions."""
    await _admin(request)
    body = await json_body(request)
    _unknown(body, {"disabled", "password"})
    if not body:
        raise InvalidRequest("nothing to change: send disabled, or password", field="body")
    if "disabled" in body and not isinstance(body["disabled"], bool):
        raise InvalidRequest("`disabled` must be true or false", field="disabled")
    svc, account_id = service_of(request), request.path_params["account_id"]
    result: dict[str, Any] = {}
    if "password" in body:
        result = await asyncio.to_thread(svc.set_password, account_id, body["password"])
    if "disabled" in body:
        result = await asyncio.to_thread(svc.set_disabled, account_id, body["disabled"])
    return result


# teams ------------------------------------------------------------------------------------


@_run()
async def list_teams(request: Request) -> Any:
    actor = actor_of(await principal_of(request))
    return {"teams": await asyncio.to_thread(service_of(request).list_teams, actor)}


@_run(201)
async def create_team(request: Request) -> Any:
    actor = actor_of(await principal_of(request))
    body = await json_body(request)
    _unknown(body, {"name"})
    return await asyncio.to_thread(service_of(request).create_team, actor, body.get("name"))


async def _team(request: Request, right: str) -> tuple[Access | None, str]:
    principal = await principal_of(request)
    team_id: str = request.path_params["team_id"]
    principal.require_team(right, team_id)
    return actor_of(principal), team_id


@_run()
async def get_team(request: Request) -> Any:
    _, team_id = await _team(request, "read")
    return await asyncio.to_thread(service_of(request).team_detail, team_id)


@_run()
async def update_team(request: Request) -> Any:
    _, team_id = await _team(request, "manage")
    body = await json_body(request)
    _unknown(body, {"name"})
    return await asyncio.to_thread(service_of(request).rename_team, team_id, body.get("name"))


@_run()
async def set_member_role(request: Request) -> Any:
    actor, team_id = await _team(request, "members")
    body = await json_body(request)
    _unknown(body, {"role"})
    return await asyncio.to_thread(
        service_of(request).set_role,
        actor,
        team_id,
        request.path_params["account_id"],
        body.get("role"),
    )


@_run()
async def remove_member(request: Request) -> Any:
    principal = await principal_of(request)
    team_id, account_id = request.path_params["team_id"], request.path_params["account_id"]
    actor = actor_of(principal)
    if actor is None or actor.account_id != account_id:  # leaving needs no right
        principal.require_team("members", team_id)
    elif team_id not in actor.team_roles:
        principal.require_team("read", team_id)
    await asyncio.to_thread(service_of(request).remove_member, actor, team_id, account_id)
    return {"ok": True}


@_run()
async def list_invitations(request: Request) -> Any:
    _, team_id = await _team(request, "members")
    found = await asyncio.to_thread(service_of(request).invitations, team_id=team_id)
    return {"invitations": found}


@_run(201)
async def create_invitation(request: Request) -> Any:
    actor, team_id = await _team(request, "members")
    body = await json_body(request)
    _unknown(body, {"email", "role"})
    return await asyncio.to_thread(
        lambda: service_of(request).invite(
            actor,
            body.get("email"),
            team_id=team_id,
            project_id=None,
            role_value=body.get("role", "viewer"),
            answer_base=answer_base(request),
        )
    )


@_run()
async def revoke_invitation(request: Request) -> Any:
    _, team_id = await _team(request, "members")
    await asyncio.to_thread(
        service_of(request).revoke_invitation, team_id, request.path_params["invitation_id"]
    )
    return {"ok": True}


# a project's guests and team --------------------------------------------------------------


async def _project(request: Request, right: str) -> tuple[Access | None, str]:
    principal = await principal_of(request)
    project_id: str = request.path_params["project_id"]
    principal.require(right, project_id)
    actor = actor_of(principal)
    await asyncio.to_thread(runtime_of(request).meta.get_project, project_id)  # 404 if none
    return actor, project_id


@_run()
async def list_guests(request: Request) -> Any:
    _, project_id = await _project(request, "members")
    svc = service_of(request)
    from svc.accounts import teams

    found = await asyncio.to_thread(teams.guests, svc.meta, project_id)
    pending = await asyncio.to_thread(svc.invitations, project_id=project_id)
    return {"guests": found, "invitations": pending}


@_run(201)
async def invite_guest(request: Request) -> Any:
    actor, project_id = await _project(request, "members")
    body = await json_body(request)
    _unknown(body, {"email"})
    return await asyncio.to_thread(
        lambda: service_of(request).invite(
            actor,
            body.get("email"),
            team_id=None,
            project_id=project_id,
            role_value="guest",
            answer_base=answer_base(request),
        )
    )


@_run()
async def remove_guest(request: Request) -> Any:
    _, project_id = await _project(request, "members")
    from svc.accounts import teams

    await asyncio.to_thread(
        teams.remove_guest, service_of(request).meta, project_id, request.path_params["account_id"]
    )
    return {"ok": True}


@_run()
async def withdraw_guest_invitation(request: Request) -> Any:
    """DELETE /projects/{project_id}/guests/invitations/{invitation_id}: the link stops
    working (404 on preview and accept); 404 unless it is a pending guest invitation of
    this project."""
    _, project_id = await _project(request, "members")
    from svc.accounts import invites

    await asyncio.to_thread(
        invites.revoke_invitation,
        service_of(request).meta,
        request.path_params["invitation_id"],
        project_id=project_id,
    )
    return {"ok": True}


@_run()
async def transfer_project(request: Request) -> Any:
    actor, project_id = await _project(request, "owner")
    body = await json_body(request)
    _unknown(body, {"teamId"})
    team_id = body.get("teamId")
    if not isinstance(team_id, str) or not team_id:
        raise InvalidRequest(
            "`teamId` is required: the team to receive the project", field="teamId"
        )
    return await asyncio.to_thread(service_of(request).transfer, actor, project_id, team_id)


ROUTES = [
    Route("/auth/signin", sign_in, methods=["POST"]),
    Route("/auth/signout", sign_out, methods=["POST"]),
    Route("/auth/signout-everywhere", sign_out_everywhere, methods=["POST"]),
    Route("/auth/reset", request_reset, methods=["POST"]),
    Route("/auth/reset/confirm", confirm_reset, methods=["POST"]),
    Route("/account", get_account, methods=["GET"]),
    Route("/account", update_account, methods=["PATCH"]),
    Route("/account/totp", totp_begin, methods=["POST"]),
    Route("/account/totp/confirm", totp_confirm, methods=["POST"]),
    Route("/account/totp", totp_disable, methods=["DELETE"]),
    Route("/invitations/{token}", preview_invitation, methods=["GET"]),
    Route("/invitations/{token}/accept", accept_invitation, methods=["POST"]),
    Route("/accounts", list_accounts, methods=["GET"]),
    Route("/accounts", create_account, methods=["POST"]),
    Route("/accounts/{account_id}", update_account_admin, methods=["PATCH"]),
    Route("/teams", list_teams, methods=["GET"]),
    Route("/teams", create_team, methods=["POST"]),
    Route("/teams/{team_id}", get_team, methods=["GET"]),
    Route("/teams/{team_id}", update_team, methods=["PATCH"]),
    Route("/teams/{team_id}/members/{account_id}", set_member_role, methods=["PATCH"]),
    Route("/teams/{team_id}/members/{account_id}", remove_member, methods=["DELETE"]),
    Route("/teams/{team_id}/invitations", list_invitations, methods=["GET"]),
    Route("/teams/{team_id}/invitations", create_invitation, methods=["POST"]),
    Route("/teams/{team_id}/invitations/{invitation_id}", revoke_invitation, methods=["DELETE"]),
    Route("/projects/{project_id}/guests", list_guests, methods=["GET"]),
    Route("/projects/{project_id}/guests", invite_guest, methods=["POST"]),
    Route("/projects/{project_id}/guests/{account_id}", remove_guest, methods=["DELETE"]),
    Route(
        "/projects/{project_id}/guests/invitations/{invitation_id}",
        withdraw_guest_invitation,
        methods=["DELETE"],
    ),
    Route("/projects/{project_id}/transfer", transfer_project, methods=["POST"]),
]
