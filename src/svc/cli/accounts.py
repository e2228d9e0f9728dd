"""``svcm users``, ``svcm teams`` and ``svcm invite``: people and teams, for operators.

They call the HTTP API with the admin token (or a data directory, in process): ``POST
/accounts`` (the first owner: ``svcm users create --owner``), ``GET /accounts``, ``PATCH
/accounts/{id}``, ``GET|POST /teams``, ``GET /teams/{id}`` and the invitation routes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from svc.cli.common import Context, command, connection_options, group, output_options
from svc.cli.errors import CliError, UsageError
from svc.settings import Settings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    _, users = group(
        sub,
        "users",
        summary="create, list, disable and enable accounts, and set passwords",
        description="Accounts are people who sign in to the dashboard with an email and "
        "a password; their team\nroles decide what they may do. These commands need the "
        "admin token. USER is an account id\n(acc_...) or an email.",
        examples=[
            "svcm users create --email ada@example.com --owner",
            "svcm users list",
            "svcm users password ada@example.com",
        ],
    )
    p = command(
        users,
        "create",
        summary="create an account (with --owner: and a team it owns)",
        description="Create an account. The password is asked for on a terminal, or read "
        "from stdin. With --owner,\na new team is made (named by --team, else after the "
        "email) and the account is its owner:\nthe first owner of a new service.",
        examples=[
            "svcm users create --email ada@example.com --owner",
            'echo "$PASSWORD" | svcm users create --email ada@example.com --owner --team Acme',
        ],
        handler=run_users_create,
        parents=parents,
    )
    p.add_argument("--email", required=True, metavar="EMAIL", help="the account's email")
    p.add_argument("--name", metavar="NAME", help="the person's name")
    p.add_argument("--owner", action="store_true", help="also make a team the account owns")
    p.add_argument("--team", metavar="NAME", help="the new team's name (with --owner)")
    command(
        users,
        "list",
        summary="list the accounts and their teams",
        description="Every account, whether it is disabled, and its roles.",
        examples=["svcm users list", "svcm users list --json | jq -r '.accounts[].email'"],
        handler=run_users_list,
        parents=parents,
        aliases=["ls"],
    )
    p = command(
        users,
        "password",
        summary="set an account's password (it is signed out everywhere)",
        description="Set a new password for an account, for a person who cannot reset it by "
        "mail. The password\nis asked for on a terminal (twice), or read from the first line "
        "of stdin; it is never an\nargument (arguments show in the process list and the "
        "shell's history) and never printed.\nEvery session of the account ends.",
        examples=[
            "svcm users password ada@example.com",
            'printf "%s\\n" "$NEW_PASSWORD" | svcm users password ada@example.com',
        ],
        handler=run_users_password,
        parents=parents,
    )
    p.add_argument("user", metavar="USER", help="account id or email")
    # a password typed as an argument is refused without being repeated back
    p.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    for name, verb in (("disable", "disable"), ("enable", "enable")):
        p = command(
            users,
            name,
            summary=f"{verb} an account"
            + (" (it is signed out everywhere)" if name == "disable" else ""),
            description=f"{verb.title()} an account: "
            + (
                "it can no longer sign in, and its sessions end."
                if name == "disable"
                else "it may sign in again."
            ),
            examples=[f"svcm users {name} ada@example.com"],
            handler=run_users_disable if name == "disable" else run_users_enable,
            parents=parents,
        )
        p.add_argument("user", metavar="USER", help="account id or email")

    _, teams = group(
        sub,
        "teams",
        summary="list and create teams, and show their members",
        description="Teams own projects; their members have a role: owner, admin, editor "
        "or viewer.\nTEAM is a team id (team_...) or name.",
        examples=["svcm teams list", "svcm teams members Acme"],
    )
    command(
        teams,
        "list",
        summary="list the teams",
        description="Every team (admin token), or the signed-in account's.",
        examples=["svcm teams list"],
        handler=run_teams_list,
        parents=parents,
        aliases=["ls"],
    )
    p = command(
        teams,
        "create",
        summary="create a team (with no members: invite its owner)",
        description="Create a team. Made with the admin token it has no members yet: "
        "invite its owner\n(svcm invite EMAIL --team TEAM --role owner).",
        examples=["svcm teams create Acme"],
        handler=run_teams_create,
        parents=parents,
    )
    p.add_argument("name", metavar="NAME", help="the team's name")
    p = command(
        teams,
        "members",
        summary="show a team's members, their roles, and its projects",
        description="The members of a team with their roles, and the team's projects.",
        examples=["svcm teams members Acme"],
        handler=run_teams_members,
        parents=parents,
    )
    p.add_argument("team", metavar="TEAM", help="team id or name")

    p = command(
        sub,
        "invite",
        summary="invite someone to a team, or as a guest of one project",
        description="Invite an email to a team with a role, or (--project) as a guest who "
        "may read one project.\nThe invitation is mailed when mail is on (SVC_SMTP_URL); "
        "otherwise its link is printed:\npass it on. It works once, for "
        "SVC_INVITATION_HOURS.",
        examples=[
            "svcm invite bob@example.com --team Acme --role editor",
            "svcm invite client@example.org --project acme",
        ],
        handler=run_invite,
        parents=parents,
    )
    p.add_argument("email", metavar="EMAIL", help="whom to invite")
    p.add_argument("--team", metavar="TEAM", help="team id or name")
    p.add_argument(
        "--role",
        choices=["owner", "admin", "editor", "viewer"],
        default="viewer",
        help="the role in the team (default viewer)",
    )
    p.add_argument("--project", metavar="PROJECT", help="invite a guest of this project instead")


def create_first_owner(ctx: Context, settings: Settings, email: str) -> dict[str, Any]:
    """``svcm init --owner EMAIL``: an account and a team it owns, written to the data
    directory's metadata store (no service runs on it)."""
    from svc.accounts.service import AccountService
    from svc.errors import ApiError
    from svc.meta.store import MetaStore

    meta = MetaStore(settings.effective_meta_url)
    try:
        service = AccountService(meta, settings)
        return service.create_account(
            email, _password(ctx), team_name=email.split("@", 1)[0] or "team"
        )
    except ApiError as exc:
        raise CliError(exc.message) from exc
    finally:
        meta.close()


def _password(ctx: Context) -> str:
    if sys.stdin.isatty():
        first = ctx.out.ask("Password (10 characters or more)", password=True)
        if ctx.out.ask("The same password again", password=True) != first:
            raise UsageError("the two passwords differ")
        return first
    return sys.stdin.readline().rstrip("\n")


def _account_id(ctx: Context, user: str) -> str:
    if user.startswith("acc_"):
        return user
    for account in ctx.api().get("/accounts").get("accounts", []):
        if account["email"] == user.strip().lower():
            return str(account["id"])
    raise UsageError(f"no account with the email {user!r}")


def _team_id(ctx: Context, team: str) -> str:
    if team.startswith("team_"):
        return team
    found = [t for t in ctx.api().get("/teams").get("teams", []) if t["name"] == team]
    if len(found) != 1:
        raise UsageError(
            f"no team named {team!r}" if not found else f"several teams are named {team!r}"
        )
    return str(found[0]["id"])


def _teams_text(teams: list[dict[str, Any]]) -> str:
    return ", ".join(f"{t['name']} ({t['role']})" for t in teams) or "-"


def run_users_create(ctx: Context) -> int:
    email = str(ctx.opt("email"))
    body: dict[str, Any] = {"email": email, "password": _password(ctx)}
    if ctx.opt("name"):
        body["name"] = ctx.opt("name")
    if ctx.opt("owner"):
        body["teamName"] = ctx.opt("team") or email.split("@", 1)[0]
    elif ctx.opt("team"):
        raise UsageError("--team names the team of --owner")
    record = ctx.api().request("POST", "/accounts", body=body)
    if ctx.json:
        ctx.out.json(record)
        return 0
    ctx.out.done(f"Created account {record['account']['id']} ({record['account']['email']})")
    if "team" in record:
        ctx.out.note(f"It owns the new team {record['team']['name']} ({record['team']['id']}).")
    return 0


def run_users_list(ctx: Context) -> int:
    doc = ctx.api().get("/accounts")
    if ctx.json:
        ctx.out.json(doc)
        return 0
    rows = [
        [
            a["id"],
            a["email"],
            a["name"],
            "disabled" if a["disabledAt"] else "",
            _teams_text(a["teams"]),
        ]
        for a in doc.get("accounts", [])
    ]
    ctx.out.table(["ID", "EMAIL", "NAME", "STATE", "TEAMS"], rows, empty="no accounts yet")
    return 0


def _set_disabled(ctx: Context, disabled: bool) -> int:
    account_id = _account_id(ctx, str(ctx.opt("user")))
    record = ctx.api().request("PATCH", f"/accounts/{account_id}", body={"disabled": disabled})
    if ctx.json:
        ctx.out.json(record)
    else:
        ctx.out.done(f"{'Disabled' if disabled else 'Enabled'} {record['email']}")
    return 0


def run_users_password(ctx: Context) -> int:
    if ctx.opt("stray"):
        raise UsageError(
            "the password is not an argument (the process list and the shell's history keep "
            "arguments): type it when asked, or send it on stdin"
        )
    account_id = _account_id(ctx, str(ctx.opt("user")))
    body = {"password": _password(ctx)}
    record = ctx.api().request("PATCH", f"/accounts/{account_id}", body=body)
    if ctx.json:
        ctx.out.json(record)
    else:
        ctx.out.done(f"Set a new password for {record['email']}; its sessions have ended")
    return 0


def run_users_disable(ctx: Context) -> int:
    return _set_disabled(ctx, True)


def run_users_enable(ctx: Context) -> int:
    return _set_disabled(ctx, False)


def run_teams_list(ctx: Context) -> int:
    doc = ctx.api().get("/teams")
    if ctx.json:
        ctx.out.json(doc)
        return 0
    rows = [[t["id"], t["name"], t.get("role") or ""] for t in doc.get("teams", [])]
    ctx.out.table(["ID", "NAME", "ROLE"], rows, empty="no teams yet")
    return 0


def run_teams_create(ctx: Context) -> int:
    record = ctx.api().request("POST", "/teams", body={"name": ctx.opt("name")})
    if ctx.json:
        ctx.out.json(record)
    else:
        ctx.out.done(f"Created team {record['name']} ({record['id']})")
    return 0


def run_teams_members(ctx: Context) -> int:
    team_id = _team_id(ctx, str(ctx.opt("team")))
    doc = ctx.api().get(f"/teams/{team_id}")
    if ctx.json:
        ctx.out.json(doc)
        return 0
    rows = [[m["id"], m["email"], m["name"], m["role"]] for m in doc.get("members", [])]
    ctx.out.table(["ID", "EMAIL", "NAME", "ROLE"], rows, empty="no members yet")
    if doc.get("projects") and not ctx.out.quiet:
        ctx.out.note("Projects: " + ", ".join(doc["projects"]))
    return 0


def run_invite(ctx: Context) -> int:
    email = str(ctx.opt("email"))
    api = ctx.api()
    if ctx.opt("project"):
        project = str(ctx.opt("project"))
        project = project if project.startswith("svc_proj_") else "svc_proj_" + project
        record = api.request("POST", f"/projects/{project}/guests", body={"email": email})
    else:
        if not ctx.opt("team"):
            raise UsageError("name the team (--team) or the project of a guest (--project)")
        team_id = _team_id(ctx, str(ctx.opt("team")))
        body = {"email": email, "role": ctx.opt("role")}
        record = api.request("POST", f"/teams/{team_id}/invitations", body=body)
    if ctx.json:
        ctx.out.json(record)
        return 0
    invitation = record["invitation"]
    if record.get("mailed"):
        ctx.out.done(f"Invited {email} as {invitation['role']}: the link is mailed")
    else:
        ctx.out.done(f"Invited {email} as {invitation['role']}; mail is off, pass on this link:")
        ctx.out.line(record["link"])
    ctx.out.note(f"It works once, until {invitation['expiresAt']}.")
    return 0
