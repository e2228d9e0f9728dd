"""The world the route matrix (``test_route_matrix.py``) runs in, built over HTTP on one real
server the way people and operators build it, and the fresh objects its destructive rows
consume.

Two teams, A and B, each with an owner, an admin, an editor and a viewer (invited, signed up),
and one project (made with the admin token in the team) with its public, secret and share keys
and a guest. Beside them, the dead credentials of team A's project and people: a revoked secret
key, a secret key rotated away, a signed-out session of A's owner and the session of an admin
of A whose account was then disabled.
"""

from __future__ import annotations

import itertools
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    Person,
    call,
    invite_and_accept,
    invite_token,
    sign_in,
    unique_email,
)
from tests.support import Server

_serial = itertools.count(1)
#: The token of GET /internal/metrics (a credential of its own, none of the matrix's kinds).
METRICS_TOKEN = secrets.token_hex(24)

#: The server's settings beyond its defaults: cheap password hashes (tests/accounts), and no
#: limits at all, so that a thousand refused credentials from one address are answered 401
#: (not 429 by the failed-authentication gate) and every row sees the auth check alone.
SERVER_ENV = {
    **CHEAP_HASHES,
    "SVC_SIGNIN_LIMIT_PER_ADDRESS": "0",
    "SVC_SIGNIN_LIMIT_PER_ACCOUNT": "0",
    "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP": "0",
    "SVC_RATE_LIMIT_READ_PER_KEY": "0",
    "SVC_RATE_LIMIT_MANAGE_PER_CREDENTIAL": "0",
    "SVC_RATE_LIMIT_INGEST_PER_IP": "0",
    "SVC_RATE_LIMIT_INGEST_PER_PROJECT": "0",
    # on, so that the matrix sees it refuse every other credential
    "SVC_INTERNAL_METRICS_TOKEN": METRICS_TOKEN,
}


def start_server(data_dir: Path) -> Server:
    """A started server with :data:`SERVER_ENV` (the caller stops it)."""
    return Server(data_dir, env=dict(SERVER_ENV)).start()


def ok(r: httpx.Response, status: int = 200) -> dict[str, object]:
    """The JSON body of a setup request, which must have answered ``status``."""
    assert r.status_code == status, f"{r.request.method} {r.request.url}: {r.text}"
    body: dict[str, object] = r.json()
    return body


@dataclass(frozen=True)
class ProjectWorld:
    """A project of a team and its credentials: clear keys and a guest (read on it alone)."""

    id: str
    public: str
    secret: str
    share: str
    guest: Person


@dataclass(frozen=True)
class TeamWorld:
    """A team, its members by role (owner, admin, editor, viewer) and its project."""

    id: str
    members: dict[str, Person]
    project: ProjectWorld


@dataclass
class World:
    """Everything the matrix names; :attr:`secrets` is every credential in it, in clear (a
    refused request's answer must name none of them)."""

    srv: Server
    a: TeamWorld
    b: TeamWorld
    revoked: str  # a secret key of A's project, revoked
    rotated: str  # a secret key of A's project, rotated away (its successor is live)
    signed_out: str  # a session of A's owner, signed out
    disabled: str  # the session of an admin of team A, whose account was then disabled
    asset: str  # the path of a real dashboard asset, under /dashboard/assets/
    secrets: set[str] = field(default_factory=set)

    # fresh objects, for the rows that destroy what they name -------------------------------

    def new_project(self) -> ProjectWorld:
        """A new project in team A, with its keys and a guest of its own."""
        project = new_project(self.srv, self.a.id, f"fresh-{next(_serial)}")
        self.secrets.update((project.public, project.secret, project.share, project.guest.token))
        return project

    def new_key(self, project_id: str) -> str:
        """The id of a new public key of the project."""
        r = call(
            self.srv,
            "POST",
            f"/projects/{project_id}/keys",
            self.srv.admin_token,
            json={"kind": "public"},
        )
        body = ok(r, 201)
        self.secrets.add(str(body["key"]))
        return str(body["id"])

    def new_edge_secret(self, project_id: str) -> str:
        """The id of a new edge secret of the project."""
        r = call(self.srv, "POST", f"/projects/{project_id}/edge-secrets", self.srv.admin_token)
        body = ok(r, 201)
        self.secrets.add(str(body["secret"]))
        return str(body["id"])

    def new_subscription(self, project_id: str) -> str:
        """The id of a new alerts subscription of the project, to an address nobody signs in
        with (so no viewer may remove it as its own)."""
        r = call(
            self.srv,
            "POST",
            f"/projects/{project_id}/subscriptions",
            self.srv.admin_token,
            json={"email": unique_email("subscriber"), "kind": "alerts"},
        )
        return str(ok(r, 201)["id"])

    def new_saved(self, project_id: str, kind: str) -> str:
        """The id of a new saved goal, funnel, segment (shared: no reader may change it as
        its own) or annotation of the project, made with the admin token."""
        bodies: dict[str, dict[str, object]] = {
            "goals": {"name": "Signups", "kind": "event", "event": "signup"},
            "funnels": {"name": "Buy", "steps": ["page:/", "event:signup"]},
            "segments": {"name": "Mobile", "filters": ["device:is:mobile"], "shared": True},
            "annotations": {"date": "2026-01-01", "text": "launched"},
        }
        r = call(
            self.srv,
            "POST",
            f"/projects/{project_id}/{kind}",
            self.srv.admin_token,
            json=bodies[kind],
        )
        return str(ok(r, 201)["id"])

    def new_member(self, team_id: str) -> str:
        """The account id of a new viewer of the team."""
        person = invite_and_accept(self.srv, self.srv.admin_token, team_id, "viewer")
        self.secrets.add(person.token)
        return person.account_id

    def new_guest(self, project_id: str) -> str:
        """The account id of a new guest of the project."""
        person = new_guest(self.srv, project_id)
        self.secrets.add(person.token)
        return person.account_id

    def new_guest_invitation(self, project_id: str) -> str:
        """The id of a new pending guest invitation to the project."""
        r = call(
            self.srv,
            "POST",
            f"/projects/{project_id}/guests",
            self.srv.admin_token,
            json={"email": unique_email("invited-guest")},
        )
        invitation = ok(r, 201)["invitation"]
        assert isinstance(invitation, dict)
        return str(invitation["id"])

    def new_invitation(self, team_id: str) -> str:
        """The id of a new pending invitation to the team."""
        r = call(
            self.srv,
            "POST",
            f"/teams/{team_id}/invitations",
            self.srv.admin_token,
            json={"email": unique_email("invited"), "role": "viewer"},
        )
        invitation = ok(r, 201)["invitation"]
        assert isinstance(invitation, dict)
        return str(invitation["id"])


def new_guest(srv: Server, project_id: str) -> Person:
    """A guest of the project: invited with the admin token, signed up by accepting."""
    email = unique_email("guest")
    r = call(srv, "POST", f"/projects/{project_id}/guests", srv.admin_token, json={"email": email})
    token = invite_token(str(ok(r, 201)["link"]))
    body = ok(call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD}))
    account = body["account"]
    assert isinstance(account, dict)
    return Person(email, str(body["token"]), str(account["id"]))


def new_project(srv: Server, team_id: str, name: str) -> ProjectWorld:
    """A project made with the admin token in the team, a share key of it and a guest."""
    r = call(srv, "POST", "/projects", srv.admin_token, json={"name": name, "teamId": team_id})
    body = ok(r, 201)
    keys = body["keys"]
    assert isinstance(keys, dict) and body["teamId"] == team_id, body
    project_id = str(body["id"])
    r = call(srv, "POST", f"/projects/{project_id}/keys", srv.admin_token, json={"kind": "share"})
    share = str(ok(r, 201)["key"])
    return ProjectWorld(
        project_id, str(keys["public"]), str(keys["secret"]), share, new_guest(srv, project_id)
    )


def new_team(srv: Server, name: str) -> TeamWorld:
    """A team made with the admin token, one member of each role, and its project."""
    body = ok(call(srv, "POST", "/teams", srv.admin_token, json={"name": name}), 201)
    team_id = str(body["id"])
    members = {
        role: invite_and_accept(srv, srv.admin_token, team_id, role)
        for role in ("owner", "admin", "editor", "viewer")
    }
    return TeamWorld(team_id, members, new_project(srv, team_id, f"{name}-site"))


def build(srv: Server) -> World:
    """The world of the matrix on ``srv`` (a few seconds: about 60 requests)."""
    a, b = new_team(srv, "team-a"), new_team(srv, "team-b")
    admin = srv.admin_token
    project = a.project.id
    # each dead credential is used while it lives, so that what the server caches of it (the
    # key cache, the failed-authentication gate's vouching) must be forgotten when it dies
    r = call(srv, "POST", f"/projects/{project}/keys", admin, json={"kind": "secret"})
    revoked = ok(r, 201)
    ok(call(srv, "GET", f"/projects/{project}/keys", str(revoked["key"])))
    ok(call(srv, "DELETE", f"/projects/{project}/keys/{revoked['id']}", admin))
    r = call(srv, "POST", f"/projects/{project}/keys", admin, json={"kind": "secret"})
    rotated = ok(r, 201)
    ok(call(srv, "GET", f"/projects/{project}/keys", str(rotated["key"])))
    r = call(srv, "POST", f"/projects/{project}/keys/{rotated['id']}/rotate", admin)
    successor = ok(r, 201)
    signed_out = str(ok(sign_in(srv, a.members["owner"].email))["token"])
    ok(call(srv, "GET", "/account", signed_out))
    ok(call(srv, "POST", "/auth/signout", signed_out))
    disabled = invite_and_accept(srv, admin, a.id, "admin")
    ok(call(srv, "GET", "/account", disabled.token))
    ok(call(srv, "PATCH", f"/accounts/{disabled.account_id}", admin, json={"disabled": True}))
    metrics = call(srv, "GET", "/internal/metrics", METRICS_TOKEN)
    assert metrics.status_code == 200, metrics.text  # on: the matrix's 401s there are real
    page = call(srv, "GET", "/dashboard")
    found = re.search(r"/dashboard/assets/([\w.-]+)", page.text)
    assert page.status_code == 200 and found, page.text[:500]
    world = World(
        srv,
        a,
        b,
        str(revoked["key"]),
        str(rotated["key"]),
        signed_out,
        disabled.token,
        found.group(1),
    )
    world.secrets.update((admin, world.revoked, world.rotated, signed_out, disabled.token))
    world.secrets.add(METRICS_TOKEN)
    world.secrets.add(str(successor["key"]))
    for team in (a, b):
        world.secrets.update(p.token for p in team.members.values())
        p = team.project
        world.secrets.update((p.public, p.secret, p.share, p.guest.token))
    return world
