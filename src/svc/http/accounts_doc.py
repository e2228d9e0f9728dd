"""The "Accounts and teams" part of the OpenAPI document (:mod:`svc.http.openapi`): the
types of the answers and bodies of :mod:`svc.http.accounts` (its paths:
:mod:`svc.http.accounts_paths_doc`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

Timestamp = Annotated[datetime, Meta(tz=True)]
Role = Literal["owner", "admin", "editor", "viewer"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


class _Doc(Struct, rename=_camel, kw_only=True):
    """camelCase names, absent optional fields."""


class Account(_Doc):
    id: str
    email: str
    name: str
    totp_enabled: bool
    disabled_at: Timestamp | None = None
    created_at: Timestamp | None = None
    teams: list[TeamOfAccount] | UnsetType = UNSET
    projects: list[ProjectRole] | UnsetType = UNSET
    recovery_codes_left: int | UnsetType = UNSET


class TeamOfAccount(_Doc):
    id: str
    name: str
    created_at: Timestamp | None = None
    role: Role | None = None


class ProjectRole(_Doc):
    id: str
    role: Literal["owner", "admin", "editor", "viewer", "guest"]


class SignInInput(_Doc):
    email: str
    password: str
    code: (
        Annotated[
            str, Meta(description="Two-factor: the authenticator's code, or a recovery code.")
        ]
        | UnsetType
    ) = UNSET


class Session(_Doc):
    token: Annotated[str, Meta(description="Send as `Authorization: Bearer svc_sess_...`.")]
    expires_at: Timestamp
    account: Account


class Accounts(_Doc):
    accounts: list[Account]


class NewAccount(_Doc):
    email: str
    password: Annotated[str, Meta(min_length=10, max_length=256)]
    name: str | UnsetType = UNSET
    team_name: (
        Annotated[str, Meta(description="Also a new team of this name, which it owns.")] | UnsetType
    ) = UNSET


class AccountMade(_Doc):
    account: Account
    team: TeamOfAccount | UnsetType = UNSET


class AccountInput(_Doc):
    name: str | UnsetType = UNSET
    password: Annotated[str, Meta(min_length=10, max_length=256)] | UnsetType = UNSET
    current_password: str | UnsetType = UNSET


class TotpOffInput(_Doc):
    """One of the two: the password, or the authenticator's current code."""

    password: str | UnsetType = UNSET
    code: Annotated[str, Meta(description="The authenticator's current code.")] | UnsetType = UNSET


class TotpEnrollment(_Doc):
    secret: str
    uri: Annotated[str, Meta(description="otpauth:// URI, for a QR code.")]


class TotpConfirmation(_Doc):
    totp_enabled: bool
    recovery_codes: Annotated[list[str], Meta(description="Shown this once.")]


class Member(_Doc):
    id: str
    email: str
    name: str
    role: Role
    disabled: bool
    since: Timestamp


class Team(_Doc):
    id: str
    name: str
    created_at: Timestamp
    role: Role | None = None
    members: list[Member] | UnsetType = UNSET
    projects: list[str] | UnsetType = UNSET


class Teams(_Doc):
    teams: list[Team]


class Invitation(_Doc):
    id: str
    email: str
    team_id: str | None
    project_id: str | None
    role: Literal["owner", "admin", "editor", "viewer", "guest"]
    created_at: Timestamp
    expires_at: Timestamp
    accepted_at: Timestamp | None = None
    team_name: str | UnsetType | None = UNSET
    account_exists: bool | UnsetType = UNSET


class InvitationInput(_Doc):
    email: str
    role: Role = "viewer"


class InvitationMade(_Doc):
    invitation: Invitation
    mailed: Annotated[bool, Meta(description="Whether mail is on (SVC_SMTP_URL).")]
    link: Annotated[str, Meta(description="Only when mail is off: pass it on.")] | UnsetType = UNSET


class Invitations(_Doc):
    invitations: list[Invitation]


class AcceptInput(_Doc):
    password: Annotated[str, Meta(description="Signing up (without a session).")] | UnsetType = (
        UNSET
    )
    name: str | UnsetType = UNSET


class Accepted(_Doc):
    joined: dict[str, str]
    token: str | UnsetType = UNSET
    expires_at: Timestamp | UnsetType = UNSET
    account: Account | UnsetType = UNSET


class AccountAdminInput(_Doc):
    disabled: bool | UnsetType = UNSET
    password: (
        Annotated[
            str,
            Meta(
                min_length=10,
                max_length=256,
                description="A new password (svcm users password); every session ends.",
            ),
        ]
        | UnsetType
    ) = UNSET


class Guests(_Doc):
    guests: list[dict[str, Any]]
    invitations: list[Invitation]


ACCOUNT_TYPES: dict[str, type[Struct]] = {
    t.__name__: t
    for t in (
        Account,
        Accounts,
        NewAccount,
        AccountMade,
        SignInInput,
        Session,
        AccountInput,
        TotpOffInput,
        TotpEnrollment,
        TotpConfirmation,
        Team,
        Teams,
        Invitation,
        InvitationInput,
        InvitationMade,
        Invitations,
        AcceptInput,
        Accepted,
        Guests,
        AccountAdminInput,
    )
}
