"""The "Single sign-on" part of the OpenAPI document (:mod:`svc.http.openapi`): the types of
the answers and bodies of :mod:`svc.http.sso`, and its paths. ``POST /auth/oidc/finish``
answers the ``Session`` of ``POST /auth/signin`` (:mod:`svc.http.accounts_doc`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from msgspec import Meta, Struct

from svc.accounts.sso import LOGIN_MINUTES


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


class _Doc(Struct, rename=_camel, kw_only=True):
    """camelCase names."""


class SsoMethod(_Doc):
    label: Annotated[str, Meta(description='The button says "Sign in with <label>".')]


class AuthMethods(_Doc):
    password: Annotated[
        bool, Meta(description="Whether POST /auth/signin is on (SVC_PASSWORD_SIGNIN).")
    ]
    sso: Annotated[SsoMethod | None, Meta(description="Single sign-on, or null when it is off.")]


class SsoStart(_Doc):
    authorization_url: Annotated[
        str, Meta(description="Where to send the browser: the provider's sign-in.")
    ]
    binding: Annotated[
        str,
        Meta(
            description="Kept by the browser that begun (the dashboard: sessionStorage) and "
            "sent to POST /auth/oidc/finish: only it can finish this sign-in."
        ),
    ]
    expires_at: Annotated[
        datetime,
        Meta(tz=True, description=f"The sign-in must finish within {LOGIN_MINUTES} minutes."),
    ]


class SsoFinishInput(_Doc):
    code: Annotated[str, Meta(description="The provider's code (from the callback).")]
    state: Annotated[str, Meta(description="The state the provider sent back with it.")]
    binding: Annotated[str, Meta(description="The binding POST /auth/oidc/start answered.")]


SSO_TYPES: dict[str, type[Struct]] = {
    t.__name__: t for t in (SsoMethod, AuthMethods, SsoStart, SsoFinishInput)
}


def sso_paths(
    settings: Any,
    helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]],
) -> dict[str, Any]:
    """The paths of single sign-on (all public); ``helpers`` are :mod:`svc.http.openapi`'s
    ``_errors``, ``_json``, ``_param`` and ``_ref``."""
    _errors, _json, _param, _ref = helpers

    def error(text: str) -> dict[str, Any]:
        found: dict[str, Any] = _json("Error", text)
        return found

    off = {"404": error("Single sign-on is off: SVC_OIDC_ISSUER is not set (`not_found`).")}
    provider = {
        "502": error("The provider cannot be reached or answers outside the protocol "
                     "(`sso_unavailable`).")
    }  # fmt: skip
    return {
        "/auth/methods": {
            "get": {
                "summary": "How people sign in here: password sign-in on or off, single "
                "sign-on's label (null: off)",
                "responses": {"200": _json("AuthMethods", "The sign-in methods.")},
            }
        },
        "/auth/oidc/start": {
            "post": {
                "summary": "Begin a single sign-on: the provider's authorization URL (code "
                "flow, PKCE S256, state, nonce) and the binding the browser keeps",
                "responses": {
                    "200": _json("SsoStart", "Send the browser to authorizationUrl."),
                    **_errors(settings, 400, 429),
                    **off,
                    **provider,
                },
            }
        },
        "/auth/oidc/callback": {
            "get": {
                "summary": "The redirect URI registered at the provider: 303 to "
                "/dashboard#sso=<code, state (or error, error_description), URL-encoded>",
                "parameters": [
                    _param("code", "query", "The provider's code."),
                    _param("state", "query", "The state of the sign-in."),
                    _param("error", "query", "The provider's error, instead of a code."),
                    _param("error_description", "query", "The provider's words on it."),
                ],
                "responses": {
                    "303": {"description": "On to the dashboard, which finishes the sign-in."},
                    **_errors(settings, 400),
                    **off,
                },
            }
        },
        "/auth/oidc/finish": {
            "post": {
                "summary": "Finish a single sign-on {code, state, binding}: the code exchanged, "
                "the ID token verified, the account found by (issuer, subject) or verified "
                "email, linked, or made in SVC_OIDC_TEAM; the session of POST /auth/signin",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("SsoFinishInput")}},
                },
                "responses": {
                    "200": _json("Session", "The session."),
                    **_errors(settings, 400),
                    "403": error(
                        "`email_unverified`: the provider has not verified the email; "
                        "`sso_refused`: no account and none made (SVC_OIDC_TEAM empty), a "
                        "disabled account, or an ID token that fails a check."
                    ),
                    **off,
                    **_errors(settings, 409),
                    **provider,
                },
            }
        },
    }
