"""Every route against every kind of credential (security issue 38), over real HTTP.

The routes are the app's own (``create_app(...).routes``, every method, HEAD included): a
route without a rule in :data:`svc.http.rules.RULES` fails the suite. Each is sent with each
credential of :data:`KINDS`: none, malformed ones, dead ones (revoked, rotated away, signed
out, of a disabled account), the keys and share link of the route's project and of another
team's, every role of the project's team and of another team, guests, and the admin token.

What each answer must be follows from two tables: the route's rule (``RULES``) and what the
credential grants (:data:`KINDS`), combined by :func:`expected`. A refused request is 401 when
the credential is missing or invalid and 403 when it is valid but not enough, and its body is
the JSON error of docs/api.md and nothing more (no credential of the world in it); an allowed
one is neither 401 nor 403 (200, or 400/404/409: the request is empty or names nothing real,
but the right was granted). No answer at all is a 5xx or sets a cookie. Every mismatch is
collected, and one assertion lists them all.

The route's project is team A's project (``{project_id}``, ``projectId``, the event's
``projectId`` of ``POST /analytics``), its team is team A (``{team_id}``, the ``teamId`` of
``POST /projects``); the cross-tenant rows are the credentials of team B and its project.
Rows that destroy what they name get fresh objects of their own (:data:`MAKERS`), and the
routes that end the session they are sent with go last, each with a session signed in for it.
The server has no limits (a thousand 401s from one address are answered, not 429) and its
``GET /internal/metrics`` on (tests/security/world.py).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from svc.accounts.roles import GUEST, NO_RIGHTS, TEAM_ROLES, rights_of
from svc.app import create_app
from svc.http.rules import ACCOUNT, ADMIN, ANY, PUBLIC, rule_of
from svc.settings import Settings
from tests.accounts.conftest import Person, sign_in
from tests.security import world as worlds
from tests.security.world import ProjectWorld, World

# what holds a credential ----------------------------------------------------------------
NOBODY = "nobody"  # no Authorization header: 401 missing_api_key
INVALID = "invalid"  # a header that names no live credential: 401 invalid_api_key
KEY = "key"  # a project's public, secret or share key
SESSION = "session"  # an account's session token
ADMIN_TOKEN = "admin token"

SECRET_SCOPES = frozenset({"ingest", "read", "manage", "edit"})  # `manage` covers `edit`


@dataclass(frozen=True)
class Row:
    """One request of the matrix as its credential sees it: the world, the route's project
    (team A's, or a fresh one of team A for a route that deletes it) and whether the route ends
    the session it is sent with (then each session is a new one, signed in for this row)."""

    world: World
    project: ProjectWorld
    fresh_sessions: bool = False

    def session(self, person: Person) -> str:
        """``Bearer`` and the person's session token (a new session when it is to end)."""
        token = person.token
        if self.fresh_sessions:
            r = sign_in(self.world.srv, person.email)
            assert r.status_code == 200, r.text
            token = r.json()["token"]
            self.world.secrets.add(token)
        return f"Bearer {token}"


@dataclass(frozen=True)
class Kind:
    """A kind of credential, and what it grants.

    ``holder`` is who holds it (:data:`NOBODY`, :data:`INVALID`, :data:`KEY`, :data:`SESSION`,
    :data:`ADMIN_TOKEN`); ``header`` the Authorization header it sends (None: none).
    ``project`` is its rights on the route's project (team A's), ``team`` its rights on the
    route's team (team A), ``own`` a key's scopes on its own project (what ``GET /projects``
    lists), and ``refused`` the routes it may not use whatever its rights (docs/api.md).
    """

    name: str
    holder: str
    header: Callable[[Row], str | bytes | None]
    project: frozenset[str] = NO_RIGHTS
    team: frozenset[str] = NO_RIGHTS
    own: frozenset[str] = NO_RIGHTS
    refused: frozenset[str] = frozenset()


def _bearer(token: str) -> str:
    return f"Bearer {token}"


def _member(team: str, role: str) -> Callable[[Row], str]:
    def header(row: Row) -> str:
        return row.session((row.world.a if team == "A" else row.world.b).members[role])

    return header


#: THE table of credential kinds, and what each grants (the other half of the expectation,
#: beside ``RULES``). Keys have their scopes on their own project and nothing on teams or on
#: other projects; a share link reads metrics but not ``/export``. Sessions have their role's
#: rights (``ROLE_RIGHTS``): team A's roles on team A and its project, a guest of the project
#: on the project alone, team B's roles and B's guest nothing here. Dead and malformed
#: credentials grant nothing, whatever they once were; the admin token grants everything
#: except what only an account has (its own settings).
KINDS: tuple[Kind, ...] = (
    Kind("no credential", NOBODY, lambda row: None),
    Kind("Bearer garbage", INVALID, lambda row: "Bearer garbage"),
    Kind("svc_live_ of a wrong length", INVALID, lambda row: "Bearer svc_live_" + "a" * 31),
    Kind(
        "the secret key as Basic",
        INVALID,
        lambda row: "Basic " + base64.b64encode(f"x:{row.project.secret}".encode()).decode(),
    ),
    Kind(
        "two tokens in one header",
        INVALID,
        lambda row: f"Bearer {row.project.secret} {row.world.srv.admin_token}",
    ),
    Kind("non-ASCII", INVALID, lambda row: ("Bearer svc_live_" + "é" * 32).encode()),
    Kind("revoked secret key", INVALID, lambda row: _bearer(row.world.revoked)),
    Kind("rotated-away secret key", INVALID, lambda row: _bearer(row.world.rotated)),
    Kind("signed-out session", INVALID, lambda row: _bearer(row.world.signed_out)),
    Kind("disabled account's session", INVALID, lambda row: _bearer(row.world.disabled)),
    Kind(
        "public key",
        KEY,
        lambda row: _bearer(row.project.public),
        project=frozenset({"ingest"}),
        own=frozenset({"ingest"}),
    ),
    Kind(
        "secret key",
        KEY,
        lambda row: _bearer(row.project.secret),
        project=SECRET_SCOPES,
        own=SECRET_SCOPES,
    ),
    Kind(
        "secret key of B's project",
        KEY,
        lambda row: _bearer(row.world.b.project.secret),
        own=SECRET_SCOPES,
    ),
    Kind(
        "share link",
        KEY,
        lambda row: _bearer(row.project.share),
        project=frozenset({"read"}),
        own=frozenset({"read"}),
        refused=frozenset({"GET /export"}),
    ),
    Kind(
        "share link of B's project",
        KEY,
        lambda row: _bearer(row.world.b.project.share),
        own=frozenset({"read"}),
        refused=frozenset({"GET /export"}),
    ),
    *(
        Kind(
            f"{role} of team A",
            SESSION,
            _member("A", role),
            project=rights_of(role),
            team=rights_of(role),
        )
        for role in TEAM_ROLES
    ),
    *(Kind(f"{role} of team B", SESSION, _member("B", role)) for role in TEAM_ROLES),
    Kind(
        "guest of the project",
        SESSION,
        lambda row: row.session(row.project.guest),
        project=rights_of(GUEST),
    ),
    Kind("guest of B's project", SESSION, lambda row: row.session(row.world.b.project.guest)),
    Kind("admin token", ADMIN_TOKEN, lambda row: _bearer(row.world.srv.admin_token)),
)

#: What a key needs on a route where that is not the route's rule (docs/api.md): on an
#: ``any`` route, the scope it needs on its own project (a route missing here refuses keys:
#: teams are the accounts'); elsewhere, the right it needs on the route's project.
KEY_RULES: dict[str, str] = {
    "GET /projects": "manage",  # a secret key lists its own project
    "GET /overview": "read",  # a key that reads (secret, share): its own project alone
    "GET /overview/timeseries": "read",
    "GET /projects/{project_id}/subscriptions": "edit",  # a reader's own list is an account's
    "POST /projects/{project_id}/segments": "edit",  # a key makes shared segments only
}

#: Public routes that read a credential when one is sent (and refuse an invalid one, 401).
READS_OPTIONAL_CREDENTIAL = frozenset({"POST /invitations/{token}/accept"})
#: Public routes whose credential is a token of their own, which no kind here is (the server
#: of the matrix sets it): every kind is refused, 401. ``GET /internal/metrics``: the token of
#: ``SVC_INTERNAL_METRICS_TOKEN``; the admin token is not it.
OWN_TOKEN = frozenset({"GET /internal/metrics"})


def expected(route: str, rule: str, kind: Kind) -> int | None:
    """The answer a route of ``rule`` owes ``kind``: None when allowed, else the status of the
    refusal (401 without a valid credential, 403 with one that is not enough). ``route`` is
    ``"METHOD /path"`` (HEAD as GET)."""
    if rule == PUBLIC:
        reads = kind.holder == INVALID and route in READS_OPTIONAL_CREDENTIAL
        return 401 if reads or route in OWN_TOKEN else None
    if kind.holder in (NOBODY, INVALID):
        return 401
    if kind.holder == ADMIN_TOKEN:
        return 403 if rule == ACCOUNT else None
    if route in kind.refused or rule == ADMIN:
        return 403
    if rule == ACCOUNT:
        allowed = kind.holder == SESSION
    elif rule == ANY:
        allowed = kind.holder == SESSION or (route in KEY_RULES and KEY_RULES[route] in kind.own)
    else:
        right = KEY_RULES.get(route, rule) if kind.holder == KEY else rule
        on_team = "{team_id}" in route or route == "POST /projects"
        allowed = right in (kind.team if on_team else kind.project)
    return None if allowed else 403


# the routes -------------------------------------------------------------------------------


def app_routes(tmp: Path) -> list[tuple[str, str]]:
    """Every (method, path template) the app answers, HEAD included."""
    app = create_app(Settings(data_dir=tmp / "data"))
    out: list[tuple[str, str]] = []
    for route in app.routes:
        assert isinstance(route, Route)
        out.extend((method, route.path) for method in sorted(route.methods or ()))
    return out


def saved_maker(kind: str) -> Callable[[World, str, str], str]:
    """The maker of a saved goal, funnel, segment or annotation (``kind``, plural)."""
    return lambda w, path, p: w.new_saved(p, kind)


#: How a row gets a new object (made with the admin token) for the parameter a destructive
#: route destroys, its last one: ``maker(world, path, project_id)`` gives its id. A route is
#: destructive when it is a DELETE or a rotation; ``project_id`` is special: the row gets a
#: whole new project of team A (:meth:`World.new_project`), and its keys and guest are then
#: that project's.
MAKERS: dict[str, Callable[[World, str, str], str]] = {
    "key_id": lambda w, path, p: w.new_key(p),
    "secret_id": lambda w, path, p: w.new_edge_secret(p),
    "subscription_id": lambda w, path, p: w.new_subscription(p),
    # a node without a watermark row: the admin's DELETE is 404, the others' 401/403
    "node": lambda w, path, p: "node_removed",
    **{
        f"{kind[:-1]}_id": saved_maker(kind)
        for kind in ("goals", "funnels", "segments", "annotations")
    },
    "account_id": lambda w, path, p: (
        w.new_guest(p) if path.startswith("/projects/") else w.new_member(w.a.id)
    ),
    "invitation_id": lambda w, path, p: (
        w.new_guest_invitation(p) if path.startswith("/projects/") else w.new_invitation(w.a.id)
    ),
}
#: The routes that end the session they are sent with: last, the latter ends every session.
ENDS_SESSIONS = ("POST /auth/signout", "POST /auth/signout-everywhere")

#: Bodies of the routes whose project or team is named in the body (else ``{}``).
BODIES: dict[str, Callable[[World, ProjectWorld], dict[str, Any]]] = {
    "POST /analytics": lambda w, p: {"event": "page_view", "url": "/matrix", "projectId": p.id},
    "POST /projects": lambda w, p: {"teamId": w.a.id},
}


def request_of(
    world: World, method: str, path: str, route: str
) -> tuple[ProjectWorld, str, dict[str, Any]]:
    """The row's project, URL and httpx keywords (but the credential) of a route."""
    names = re.findall(r"\{(\w+)", path)
    destroyed = names[-1] if names and (method == "DELETE" or path.endswith("/rotate")) else None
    project = world.new_project() if destroyed == "project_id" else world.a.project
    values = {
        "project_id": project.id,
        "team_id": world.a.id,
        "account_id": world.a.members["viewer"].account_id,  # PATCH with {}: changes nothing
        "token": project.share if path == "/share/{token}" else "svc_invite_" + "0" * 40,
        "extensions": "engagement",
        "path": world.asset,
        **{f"{kind}_id": f"{kind}_nonexistent" for kind in ("goal", "funnel", "segment")},
        "annotation_id": "ann_nonexistent",  # PATCH: 404 once the right is granted
    }
    if destroyed is not None and destroyed != "project_id":
        assert destroyed in MAKERS, f"{route}: add a maker of {{{destroyed}}} to MAKERS"
        values[destroyed] = MAKERS[destroyed](world, path, project.id)
    unknown = set(names) - set(values)
    assert not unknown, f"{route}: the matrix has no value for {unknown}: add it to request_of"
    url = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: values[m.group(1)], path)
    since = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    kw: dict[str, Any] = {"params": {"projectId": project.id, "from": since}}
    if method in ("POST", "PATCH", "DELETE"):
        kw["json"] = BODIES[route](world, project) if route in BODIES else {}
    return project, url, kw


def refusal_problem(r: httpx.Response, code: str, secrets: set[str]) -> str | None:
    """What is wrong with the body of a refusal, if anything: it must be the JSON error of
    docs/api.md with ``code`` (and at most a field and the request's id), naming no
    credential of the world."""
    if not r.headers.get("content-type", "").startswith("application/json"):
        return f"not JSON: {r.headers.get('content-type')}"
    try:
        body = r.json()
    except ValueError:
        return f"not JSON: {r.text[:200]}"
    error = body.get("error") if isinstance(body, dict) else None
    if set(body) != {"ok", "error"} or body["ok"] is not False or not isinstance(error, dict):
        return f"not the error shape: {r.text[:300]}"
    if not set(error) <= {"code", "message", "field", "requestId"} or not error.get("message"):
        return f"not the error shape: {r.text[:300]}"
    if error.get("code") != code:
        return f"code {error.get('code')!r}, not {code!r}"
    leaked = [s for s in secrets if s in r.text]
    if leaked:
        return f"names a credential: {r.text[:300]}"
    return None


def mismatch(route: str, kind: Kind, want: int | None, r: httpx.Response, world: World) -> str:
    """Why this answer is wrong, or "" when it is right."""
    status = r.status_code
    if status >= 500:
        return f"{status}: {r.text[:200]}"
    if "set-cookie" in r.headers:  # docs/api.md: no response sets a cookie
        return f"{status} sets a cookie: {r.headers['set-cookie'][:100]}"
    if want is None:
        return f"refused {status}: {r.text[:200]}" if status in (401, 403) else ""
    if status != want:
        return f"{status}, not {want}: {r.text[:200]}"
    if route.startswith("HEAD "):
        return ""  # no body to check
    code = {401: "invalid_api_key", 403: "forbidden"}[want]
    if kind.holder == NOBODY:
        code = "missing_api_key"
    return refusal_problem(r, code, world.secrets) or ""


def send(client: httpx.Client, world: World, method: str, path: str, kind: Kind) -> str:
    """Send one row of the matrix (the route ``method path`` with a credential of ``kind``)
    and say what is wrong with its answer: "" when it is what :func:`expected` says."""
    route = f"{method} {path}"
    rule = rule_of(method, path)
    assert rule is not None, f"{route} has no rule in svc.http.rules.RULES"
    as_get = f"GET {path}" if method == "HEAD" else route
    project, url, kw = request_of(world, method, path, as_get)
    header = kind.header(Row(world, project, route in ENDS_SESSIONS))
    raw = header.encode() if isinstance(header, str) else header
    r = client.request(method, url, headers={} if raw is None else {b"authorization": raw}, **kw)
    problem = mismatch(route, kind, expected(as_get, rule, kind), r, world)
    return f"{route} ({rule}) with {kind.name}: {problem}" if problem else ""


# the tests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    srv = worlds.start_server(tmp_path_factory.mktemp("route-matrix") / "data")
    try:
        yield worlds.build(srv)
    finally:
        srv.stop()


def test_every_route_has_a_rule(tmp_path: Path) -> None:
    routes = {f"{m} {p}" for m, p in app_routes(tmp_path)}
    missing = sorted(r for r in routes if rule_of(*r.split(" ", 1)) is None)
    assert not missing, f"routes without a rule in svc.http.rules.RULES: {missing}"
    named = {*KEY_RULES, *READS_OPTIONAL_CREDENTIAL, *OWN_TOKEN, *BODIES}
    named |= {r for k in KINDS for r in k.refused} | set(ENDS_SESSIONS)
    assert named <= routes, f"the matrix names routes the app lacks: {sorted(named - routes)}"


def test_every_credential_against_every_route(world: World, tmp_path: Path) -> None:
    def last(mp: tuple[str, str]) -> int:  # the session-ending routes last, in their order
        route = f"{mp[0]} {mp[1]}"
        return ENDS_SESSIONS.index(route) if route in ENDS_SESSIONS else -1

    routes = sorted(app_routes(tmp_path), key=last)
    wrong: list[str] = []
    checked = 0
    with httpx.Client(base_url=world.srv.url, timeout=60) as client:
        for method, path in routes:
            for kind in KINDS:
                problem = send(client, world, method, path, kind)
                checked += 1
                if problem:
                    wrong.append(problem)
    assert checked >= 80 * len(KINDS), checked
    assert not wrong, f"{len(wrong)} of {checked} answers are wrong:\n" + "\n".join(wrong)
