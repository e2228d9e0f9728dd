"""The "Accounts and teams" paths of the OpenAPI document (:mod:`svc.http.openapi`): the
routes of :mod:`svc.http.accounts`, their answers named by the types of
:mod:`svc.http.accounts_doc`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def account_paths(
    settings: Any,
    secured: list[dict[str, list[str]]],
    helpers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]],
) -> dict[str, Any]:
    """The paths of accounts, teams, invitations, guests and transfers; ``helpers`` are
    :mod:`svc.http.openapi`'s ``_errors``, ``_json``, ``_param`` and ``_ref``."""
    _errors, _json, _param, _ref = helpers

    json = "application/json"

    def op(
        summary: str,
        ok: dict[str, Any],
        *errors: int,
        body: str | None = None,
        public: bool = False,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "summary": summary,
            "responses": {**ok, **_errors(settings, *errors)},
        }
        if not public:
            out["security"] = secured
        if body is not None:
            out["requestBody"] = {"required": True, "content": {json: {"schema": _ref(body)}}}
        return out

    done = {"200": {"description": "Done."}}
    team = _param("team_id", "path", "Team id, `team_...`.", True)
    account = _param("account_id", "path", "Account id, `acc_...`.", True)
    project = _param("project_id", "path", "Project id, `svc_proj_<name>`.", True)
    token = _param("token", "path", "The invitation token of the link, `svc_invite_...`.", True)
    return {
        "/auth/signin": {
            "post": op(
                "Sign in: a session token (401 invalid_credentials, the same for an unknown "
                "email; totp_required: send `code`; 429 after repeated failures; 403 "
                "password_signin_off when SVC_PASSWORD_SIGNIN is false)",
                {"200": _json("Session", "The session.")},
                400,
                401,
                403,
                429,
                body="SignInInput",
                public=True,
            )
        },
        "/auth/signout": {"post": op("End this session", done, 401, 403)},
        "/auth/signout-everywhere": {
            "post": op("End every session of the account", done, 401, 403)
        },
        "/auth/reset": {
            "post": op(
                "Mail a password-reset link (202 whether or not the email has an account); "
                "limited per client address and per email",
                {"202": {"description": "Accepted."}},
                400,
                403,
                429,
                public=True,
            )
        },
        "/auth/reset/confirm": {
            "post": op(
                "Set a new password with the reset token {token, password}; signs out everywhere",
                done,
                400,
                403,
                404,
                public=True,
            )
        },
        "/account": {
            "get": op(
                "The signed-in account, its teams and projects",
                {"200": _json("Account", "The account.")},
                401,
                403,
            ),
            "patch": op(
                "Change the name, or the password (with currentPassword, under the sign-in limits)",
                {"200": _json("Account", "The account.")},
                400,
                401,
                403,
                429,
                body="AccountInput",
            ),
        },
        "/account/totp": {
            "post": op(
                "Begin two-factor enrollment: a secret for the authenticator app",
                {"200": _json("TotpEnrollment", "The secret.")},
                401,
                403,
                409,
            ),
            "delete": op(
                "Turn two-factor off {password} or {code} (a wrong one counts as a failed "
                "sign-in: 429 after repeated failures)",
                done,
                400,
                401,
                403,
                429,
                body="TotpOffInput",
            ),
        },
        "/account/totp/confirm": {
            "post": op(
                "Turn two-factor on with a code and the password {code, password}: the "
                "recovery codes, once",
                {"200": _json("TotpConfirmation", "On.")},
                400,
                401,
                403,
                409,
                429,
            )
        },
        "/accounts": {
            "get": op(
                "Every account and its teams (admin token)",
                {"200": _json("Accounts", "The accounts.")},
                401,
                403,
            ),
            "post": op(
                "Create an account; with teamName, a new team it owns (admin token)",
                {"201": _json("AccountMade", "The account.")},
                400,
                401,
                403,
                409,
                body="NewAccount",
            ),
        },
        "/accounts/{account_id}": {
            "parameters": [account],
            "patch": op(
                "Disable (signed out everywhere) or enable an account {disabled}, or set its "
                "password {password} (signed out everywhere) (admin token)",
                {"200": _json("Account", "The account.")},
                400,
                401,
                403,
                404,
                body="AccountAdminInput",
            ),
        },
        "/invitations/{token}": {
            "parameters": [token],
            "get": op(
                "What an invitation offers (no credential: the token is one)",
                {"200": _json("Invitation", "The invitation.")},
                404,
                public=True,
            ),
        },
        "/invitations/{token}/accept": {
            "parameters": [token],
            "post": op(
                "Accept: with a session, that account joins; without, sign up {password, name?} "
                "(and get a session)",
                {"200": _json("Accepted", "Joined.")},
                400,
                403,
                404,
                409,
                body="AcceptInput",
                public=True,
            ),
        },
        "/teams": {
            "get": op(
                "The account's teams (admin token: all)",
                {"200": _json("Teams", "The teams.")},
                401,
                403,
            ),
            "post": op(
                "Create a team {name}; the account creating it is its owner",
                {"201": _json("Team", "The team.")},
                400,
                401,
                403,
            ),
        },
        "/teams/{team_id}": {
            "parameters": [team],
            "get": op(
                "A team, its members and projects (any member)",
                {"200": _json("Team", "The team.")},
                401,
                403,
                404,
            ),
            "patch": op(
                "Rename a team {name} (admin)",
                {"200": _json("Team", "The team.")},
                400,
                401,
                403,
                404,
            ),
        },
        "/teams/{team_id}/members/{account_id}": {
            "parameters": [team, account],
            "patch": op(
                "Change a member's role {role} (admin; owner to make or unmake an owner; 409 for "
                "the last owner)",
                {"200": _json("Team", "The team.")},
                400,
                401,
                403,
                404,
                409,
            ),
            "delete": op(
                "Remove a member, or leave (one's own id); 409 for the last owner",
                done,
                401,
                403,
                404,
                409,
            ),
        },
        "/teams/{team_id}/invitations": {
            "parameters": [team],
            "get": op(
                "Pending invitations (admin)",
                {"200": _json("Invitations", "Pending.")},
                401,
                403,
                404,
            ),
            "post": op(
                "Invite an email with a role (admin; owner to invite an owner): mailed, or the "
                "link in the answer when mail is off",
                {"201": _json("InvitationMade", "The invitation.")},
                400,
                401,
                403,
                404,
                body="InvitationInput",
            ),
        },
        "/teams/{team_id}/invitations/{invitation_id}": {
            "parameters": [
                team,
                _param("invitation_id", "path", "Invitation id, `inv_...`.", True),
            ],
            "delete": op("Withdraw a pending invitation (admin)", done, 401, 403, 404),
        },
        "/projects/{project_id}/guests": {
            "parameters": [project],
            "get": op(
                "The project's guests and pending guest invitations (admin)",
                {"200": _json("Guests", "The guests.")},
                401,
                403,
                404,
            ),
            "post": op(
                "Invite a guest {email}: a viewer of this project only (admin)",
                {"201": _json("InvitationMade", "The invitation.")},
                400,
                401,
                403,
                404,
            ),
        },
        "/projects/{project_id}/guests/{account_id}": {
            "parameters": [project, account],
            "delete": op("Remove a guest (admin)", done, 401, 403, 404),
        },
        "/projects/{project_id}/guests/invitations/{invitation_id}": {
            "parameters": [
                project,
                _param("invitation_id", "path", "Invitation id, `inv_...`.", True),
            ],
            "delete": op(
                "Withdraw a pending guest invitation (admin): its link answers 404 from then on",
                done,
                401,
                403,
                404,
            ),
        },
        "/projects/{project_id}/transfer": {
            "parameters": [project],
            "post": op(
                "Move the project to another team {teamId} (owner of both; admin token: any)",
                done,
                400,
                401,
                403,
                404,
            ),
        },
    }
