"""/projects: tenant workspaces and their keys.

The admin token may do everything; a project's secret key may read and change its own
project (but not its plan) and manage its own keys. An account's session may what its role on
the project's team allows (:mod:`svc.http.rules`): a project it creates belongs to its team.
Clear keys are shown once, when made.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from svc.accounts import teams as account_teams
from svc.accounts.roles import MANAGE
from svc.auth import Principal
from svc.errors import Forbidden, InvalidRequest
from svc.http.common import json_body, json_response, principal_of
from svc.ingestion.exclusions import (
    MAX_EXCLUDED_PATHS,
    MAX_GLOB_WILDCARDS,
    MAX_PATH_GLOB_LENGTH,
    glob_wildcards,
)
from svc.ingestion.pipeline import KEEP_DATA_CENTRES
from svc.limits.plans import QUOTA_OPTION, check_quota_option, guard_quota_option
from svc.mail.alerts import OPTION as ALERTS_OPTION
from svc.mail.alerts import check_option as check_alerts_option
from svc.projects import ProjectService, project_view
from svc.queries.dates import parse_zone

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9-]{1,63}$")
KEY_KINDS = ("public", "secret", "share")
# Bounds of a project's options: every event of the project is checked against them on the
# event loop all tenants share (svc.ingestion.pipeline compiles them once per project
# version and says what the bounds of the path globs buy), so one tenant's options must not
# cost every tenant's events.
MAX_DOMAINS = 100
MAX_EXCLUDED_ADDRESSES = 1000  # one set lookup per distinct prefix length, whatever the count
MAX_ADDRESS_LENGTH = 64  # an IPv6 CIDR is at most 43 characters


def _service(request: Request) -> ProjectService:
    service: ProjectService = request.app.state.projects
    return service


async def _manager(request: Request, project_id: str | None = None) -> Principal:
    principal = await principal_of(request)
    if project_id is None:
        if not principal.is_admin:
            raise Forbidden("only the admin token may do this")
    else:
        principal.require("manage", project_id)
    return principal


async def create_project(request: Request) -> Response:
    principal = await principal_of(request)
    if not principal.is_account:
        await _manager(request)  # the admin token only
    body = await json_body(request)
    team_id = _team_for_new_project(principal, body.get("teamId"))
    if team_id is not None:
        await asyncio.to_thread(account_teams.get_team, _service(request).meta, team_id)
    name = body.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise InvalidRequest(
            "`name` is required: 1-40 characters of a-z, 0-9 and -, starting with a letter "
            "or digit",
            field="name",
        )
    timezone = _timezone(body.get("timezone", "UTC"))
    domains = _domains(body.get("domains", []))
    _reject_unknown(body, {"name", "timezone", "domains", "teamId"})
    record = await asyncio.to_thread(_service(request).create, name, timezone, domains)
    if team_id is not None:
        meta = _service(request).meta
        await asyncio.to_thread(account_teams.assign_project, meta, record["id"], team_id)
        record["teamId"] = team_id
    return json_response(record, 201, {"Location": f"/projects/{record['id']}"})


async def list_projects(request: Request) -> Response:
    principal = await principal_of(request)
    if principal.is_admin:
        projects = await asyncio.to_thread(_service(request).list_all)
    elif principal.access is not None:  # an account: the projects its roles reach
        access = principal.access
        projects = [  # each as the account's role shows it: settings to managers only
            {**project_view(p, MANAGE in access.on_project(p["id"])), "role": role}
            for p in await asyncio.to_thread(_service(request).list_all)
            if (role := access.project_roles.get(p["id"])) is not None
        ]
    else:
        if principal.project is None:
            raise Forbidden("this credential may not list projects")
        principal.require("manage", principal.project.id)
        projects = [await asyncio.to_thread(_service(request).summary, principal.project.id)]
    return json_response({"projects": projects})


async def get_project(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    await _manager(request, project_id)
    record = await asyncio.to_thread(_service(request).detail, project_id)
    return json_response(record)


async def update_project(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    principal = await _manager(request, project_id)
    body = await json_body(request)
    _reject_unknown(body, {"timezone", "domains", "options", "plan"})
    changes: dict[str, Any] = {}
    if "timezone" in body:
        changes["timezone"] = _timezone(body["timezone"])
    if "domains" in body:
        changes["domains"] = _domains(body["domains"])
    if "options" in body:
        changes["options"] = _options(body["options"])
        current = principal.project
        if principal.is_account:
            current = await asyncio.to_thread(_service(request).meta.get_project, project_id)
        guard_quota_option(principal.is_admin, current, changes["options"])
    if "plan" in body:
        if not principal.is_admin:
            raise Forbidden("only the admin token may change a project's plan")
        changes["plan"] = request.app.state.limits.plans.check_name(body["plan"])
    if "options" in changes:  # a project's retention is the admin's (svc.retention)
        from svc.retention.policy import guard_options

        guard_options(principal.is_admin, current, changes["options"])
    if not changes:
        raise InvalidRequest(
            "nothing to change: send timezone, domains, options or plan", field="body"
        )
    record = await asyncio.to_thread(_service(request).update, project_id, changes)
    return json_response(record)


async def delete_project(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    principal = await principal_of(request)
    if principal.is_account:
        principal.require("owner", project_id)  # an owner of the project's team
    else:
        await _manager(request)
    await _service(request).delete(project_id)
    return json_response({"ok": True, "deleted": project_id})


async def list_keys(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    await _manager(request, project_id)
    keys = await asyncio.to_thread(_service(request).keys, project_id)
    return json_response({"keys": keys})


async def create_key(request: Request) -> Response:
    project_id = request.path_params["project_id"]
    await _manager(request, project_id)
    body = await json_body(request)
    _reject_unknown(body, {"kind"})
    kind = body.get("kind", "public")
    if kind not in KEY_KINDS:
        raise InvalidRequest("`kind` must be public, secret or share", field="kind")
    record = await asyncio.to_thread(_service(request).create_key, project_id, kind)
    return json_response(record, 201)


async def revoke_key(request: Request) -> Response:
    project_id, key_id = request.path_params["project_id"], request.path_params["key_id"]
    await _manager(request, project_id)
    record = await asyncio.to_thread(_service(request).revoke_key, project_id, key_id)
    return json_response(record)


async def rotate_key(request: Request) -> Response:
    project_id, key_id = request.path_params["project_id"], request.path_params["key_id"]
    await _manager(request, project_id)
    record = await asyncio.to_thread(_service(request).rotate_key, project_id, key_id)
    return json_response(record, 201)


def _team_for_new_project(principal: Principal, team_id: Any) -> str | None:
    """The team a new project belongs to: None for the admin token (no team until it is
    transferred); for an account, ``teamId`` or its one team where it may ``manage``."""
    if principal.is_admin and team_id is None:
        return None
    if principal.is_admin:
        if not isinstance(team_id, str):
            raise InvalidRequest("`teamId` must be a team's id", field="teamId")
        return team_id
    if principal.access is None:
        raise Forbidden("only the admin token may do this")
    if team_id is None:
        allowed = principal.access.teams_with("manage")
        if len(allowed) == 1:
            return allowed[0]
        if not allowed:
            raise Forbidden(
                "you are not an owner or admin of any team: you may not create projects"
            )
        raise InvalidRequest(
            "you are an owner or admin of several teams: name the team, `teamId`", field="teamId"
        )
    if not isinstance(team_id, str):
        raise InvalidRequest("`teamId` must be a team's id", field="teamId")
    principal.require_team("manage", team_id)
    return team_id


def _timezone(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidRequest("`timezone` must be an IANA time zone name", field="timezone")
    return parse_zone(value, "timezone")


def _domains(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_DOMAINS:
        raise InvalidRequest(
            f"`domains` must be an array of at most {MAX_DOMAINS} host names", field="domains"
        )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise InvalidRequest("`domains` must hold host names", field="domains")
        host = item.strip().lower().removeprefix("www.")
        if len(host) > 253 or not DOMAIN.match(host):
            raise InvalidRequest(
                f"`domains`: {_shown(item)} is not a host name (at most 253 characters)",
                field="domains",
            )
        if host not in out:
            out.append(host)
    return out


def _options(value: Any) -> dict[str, Any]:
    """Per-project ingestion options: excluded address ranges and paths, own domains only."""
    from svc.retention.policy import split_options  # its retention (admin only)

    own_retention, value = split_options(value)
    import ipaddress

    if not isinstance(value, dict):
        raise InvalidRequest("`options` must be an object", field="options")
    allowed = {"excludeAddresses", "excludePaths", "onlyOwnDomains", KEEP_DATA_CENTRES}
    allowed.add(QUOTA_OPTION)
    allowed.add(ALERTS_OPTION)  # the thresholds of traffic alerts (svc.mail.alerts)
    _reject_unknown(value, allowed, "options.")
    out: dict[str, Any] = {}
    if ALERTS_OPTION in value:
        out[ALERTS_OPTION] = check_alerts_option(value[ALERTS_OPTION])
    if QUOTA_OPTION in value:  # the project's own monthly quota (admin only; svc.limits.plans)
        out[QUOTA_OPTION] = check_quota_option(value[QUOTA_OPTION])
    if "excludeAddresses" in value:
        ranges = value["excludeAddresses"]
        where = "options.excludeAddresses"
        if not isinstance(ranges, list) or len(ranges) > MAX_EXCLUDED_ADDRESSES:
            raise InvalidRequest(
                f"`{where}` must be a list of at most {MAX_EXCLUDED_ADDRESSES} CIDRs", field=where
            )
        for r in ranges:
            if not isinstance(r, str) or not 0 < len(r) <= MAX_ADDRESS_LENGTH:
                raise InvalidRequest(
                    f"`{where}`: {_shown(r)} is not a CIDR (a string like 10.0.0.0/8)",
                    field=where,
                )
            try:
                ipaddress.ip_network(r, strict=False)
            except ValueError as exc:
                raise InvalidRequest(f"`{where}`: {r!r} is not a CIDR", field=where) from exc
        out["excludeAddresses"] = list(ranges)
    if "excludePaths" in value:
        paths = value["excludePaths"]
        where = "options.excludePaths"
        if (
            not isinstance(paths, list)
            or len(paths) > MAX_EXCLUDED_PATHS
            or not all(
                isinstance(p, str)
                and p.startswith("/")
                and len(p) <= MAX_PATH_GLOB_LENGTH
                and glob_wildcards(p) <= MAX_GLOB_WILDCARDS
                for p in paths
            )
        ):
            raise InvalidRequest(
                f"`{where}` must be a list of at most {MAX_EXCLUDED_PATHS} path globs like "
                f"/admin/*, each at most {MAX_PATH_GLOB_LENGTH} characters with at most "
                f"{MAX_GLOB_WILDCARDS} wildcards (*, ? or [...])",
                field=where,
            )
        out["excludePaths"] = paths
    if "onlyOwnDomains" in value:
        if not isinstance(value["onlyOwnDomains"], bool):
            raise InvalidRequest(
                "`options.onlyOwnDomains` must be true or false", field="options.onlyOwnDomains"
            )
        out["onlyOwnDomains"] = value["onlyOwnDomains"]
    if KEEP_DATA_CENTRES in value:  # store data-centre traffic (SVC_DATACENTRE_RANGES)
        where = f"options.{KEEP_DATA_CENTRES}"
        if not isinstance(value[KEEP_DATA_CENTRES], bool):
            raise InvalidRequest(f"`{where}` must be true or false", field=where)
        out[KEEP_DATA_CENTRES] = value[KEEP_DATA_CENTRES]
    return {**out, **own_retention}


def _shown(value: Any) -> str:
    """A value as an error message quotes it: its start only."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _reject_unknown(body: dict[str, Any], allowed: set[str], prefix: str = "") -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRequest(
            f"unknown field `{prefix}{unknown[0]}`; allowed: {', '.join(sorted(allowed))}",
            field=prefix + unknown[0],
        )
