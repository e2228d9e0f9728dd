"""Every role against every route: the table of svc.http.rules, checked over real HTTP.

The routes are those of the app itself (``create_app``): a route without a rule fails the
test (add its line to ``RULES`` in src/svc/http/rules.py). Each route is sent by an owner,
an admin, an editor and a viewer of the project's team, a guest of the project, an outsider
(a viewer of another team) and the admin token; the answer must be 403 where the table says
no, and neither 401 nor 403 where it says yes (then 200, 400 or 404: the request itself is
empty or names nothing real, but the right was granted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route

from svc.accounts.roles import ROLE_RIGHTS
from svc.app import create_app
from svc.http.rules import ACCOUNT, ADMIN, ANY, PUBLIC, rule_of
from svc.settings import Settings
from tests.accounts.conftest import PASSWORD, Person, call, invite_and_accept, new_team, sign_in
from tests.support import Server

ROLES = ("owner", "admin", "editor", "viewer", "guest", "outsider", "admin token")


def app_routes(tmp: Path) -> list[tuple[str, str]]:
    app = create_app(Settings(data_dir=tmp / "data"))
    out = []
    for route in app.routes:
        assert isinstance(route, Route)
        for method in sorted(route.methods or ()):
            if method != "HEAD":  # HEAD is GET's
                out.append((method, route.path))
    return out


def test_every_route_has_a_rule(tmp_path: Path) -> None:
    missing = [f"{m} {p}" for m, p in app_routes(tmp_path) if rule_of(m, p) is None]
    assert not missing, f"routes without a rule in svc.http.rules.RULES: {missing}"


@pytest.fixture(scope="module")
def world(srv: Server) -> dict[str, Any]:
    team_id, owner = new_team(srv, "roles")
    people: dict[str, Person] = {"owner": owner}
    for role in ("admin", "editor", "viewer"):
        people[role] = invite_and_accept(srv, owner.token, team_id, role)
    r = call(srv, "POST", "/projects", owner.token, json={"name": "roles-table"})
    assert r.status_code == 201, r.text
    project_id = r.json()["id"]
    assert r.json()["teamId"] == team_id
    r = call(srv, "POST", f"/projects/{project_id}/guests", owner.token, json={"email": "g@x.io"})
    assert r.status_code == 201, r.text
    token = r.json()["link"].split("#invite=", 1)[1]
    r = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    people["guest"] = Person("g@x.io", r.json()["token"], r.json()["account"]["id"])
    other_team, _ = new_team(srv, "elsewhere")
    people["outsider"] = invite_and_accept(srv, srv.admin_token, other_team, "viewer")
    return {"team": team_id, "project": project_id, "people": people, "owner": owner}


def _expected(rule: str, role: str, path: str) -> bool:
    """Whether ``role`` may use a route of ``rule`` (the project's team is the roles team)."""
    if role == "admin token":
        return rule != ACCOUNT
    if rule in (PUBLIC, ANY, ACCOUNT):
        return True
    if rule == ADMIN:
        return False
    if path == "/projects":  # created in the caller's own team
        role_there = "viewer" if role == "outsider" else None if role == "guest" else role
    elif "{team_id}" in path:
        role_there = None if role in ("guest", "outsider") else role
    else:
        role_there = None if role == "outsider" else role
    return rule in ROLE_RIGHTS.get(role_there or "", frozenset())


PARAMS = {
    "team_id": None,
    "project_id": None,
    "key_id": "key_nonexistent0000000",
    "account_id": "acc_nonexistent00000",
    "invitation_id": "inv_nonexistent00000",
    "secret_id": "nonexistent",
    "subscription_id": "sub_nonexistent",
    "goal_id": "goal_nonexistent",
    "funnel_id": "funnel_nonexistent",
    "segment_id": "seg_nonexistent",
    "annotation_id": "ann_nonexistent",
    "token": "svc_invite_" + "0" * 40,
    "extensions": "nonexistent",
    "path": "nonexistent.js",
    "node": "node_removed",
}


def test_every_role_against_every_route(srv: Server, world: dict[str, Any], tmp_path: Path) -> None:
    routes = app_routes(tmp_path)
    # the session-ending routes go last, with sessions of their own
    routes.sort(key=lambda mp: mp[1].startswith("/auth/signout"))
    wrong: list[str] = []
    for method, path in routes:
        rule = rule_of(method, path)
        assert rule is not None, f"{method} {path} has no rule"
        if rule == ADMIN:
            roles: tuple[str, ...] = ROLES[:-1]  # nothing to learn from running it as admin
        else:
            roles = ROLES
        for role in roles:
            if role == "admin token":
                token = srv.admin_token
            elif path.startswith("/auth/signout"):
                token = sign_in(srv, world["people"][role].email).json()["token"]
            else:
                token = world["people"][role].token
            project = world["project"]
            if method == "DELETE" and path == "/projects/{project_id}":
                r = call(
                    srv,
                    "POST",
                    "/projects",
                    world["owner"].token,
                    json={"name": f"gone-{len(wrong)}-{role.replace(' ', '-')}"},
                )
                assert r.status_code == 201, r.text
                project = r.json()["id"]
            values = {**PARAMS, "team_id": world["team"], "project_id": project}
            url = re.sub(r"\{(\w+)(:\w+)?\}", lambda m, v=values: str(v[m.group(1)]), path)
            params = {"projectId": project, "from": "2026-01-01"}
            kw: dict[str, Any] = {"params": params}
            if method in ("POST", "PATCH", "DELETE"):
                kw["json"] = {}
            r = call(srv, method, url, token, **kw)
            allowed = _expected(rule, role, path)
            if allowed and r.status_code in (401, 403):
                wrong.append(
                    f"{role}: {method} {path} ({rule}) got {r.status_code}: {r.text[:200]}"
                )
            if not allowed and r.status_code != 403:
                wrong.append(f"{role}: {method} {path} ({rule}) got {r.status_code}, not 403")
    assert not wrong, "\n".join(wrong)
