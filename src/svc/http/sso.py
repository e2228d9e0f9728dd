"""Single sign-on over HTTP (docs/api.md, "Single sign-on"): how people sign in here, begin a
sign-in at the OpenID Connect provider, the provider's way back, and finishing it. Each
handler calls one :class:`~svc.accounts.sso.SsoService` method (or function).

- ``GET /auth/methods``: ``{password, sso: {label} | null}``, public (the sign-in screen).
- ``POST /auth/oidc/start``: ``{authorizationUrl, binding, expiresAt}``; the browser goes to
  the URL and keeps ``binding``.
- ``GET /auth/oidc/callback``: the redirect URI; 303 to ``/dashboard#sso=<the provider's
  parameters>`` (in the fragment, which a browser sends to no server).
- ``POST /auth/oidc/finish`` ``{code, state, binding}``: the session, as ``POST /auth/signin``
  answers it.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from svc.accounts import sso
from svc.accounts.sso import SsoService, check_settings
from svc.http.accounts import _run, _unknown, client_address, service_of
from svc.http.common import json_body

__all__ = ["ROUTES", "check_settings", "sso_of"]


def sso_of(request: Request) -> SsoService:
    """The app's :class:`SsoService` (made on first use)."""
    state = request.app.state
    found: SsoService | None = getattr(state, "sso", None)
    if found is None:
        found = SsoService(service_of(request))
        state.sso = found
    return found


@_run()
async def auth_methods(request: Request) -> Any:
    return sso.methods(request.app.state.settings)


@_run()
async def start(request: Request) -> Any:
    body = await json_body(request)
    _unknown(body, set())
    return await sso_of(request).start(client_address(request))


async def callback(request: Request) -> Response:
    """The provider sends the browser here; it goes on to the dashboard, which finishes."""
    sso.require_sso(request.app.state.settings)
    fragment = sso.callback_fragment(dict(request.query_params))
    return RedirectResponse(f"/dashboard#{fragment}", status_code=303)


@_run()
async def finish(request: Request) -> Any:
    body = await json_body(request)
    _unknown(body, {"code", "state", "binding"})
    return await sso_of(request).finish(body.get("code"), body.get("state"), body.get("binding"))


ROUTES = [
    Route("/auth/methods", auth_methods, methods=["GET"]),
    Route("/auth/oidc/start", start, methods=["POST"]),
    Route(sso.CALLBACK_PATH, callback, methods=["GET"]),
    Route("/auth/oidc/finish", finish, methods=["POST"]),
]
