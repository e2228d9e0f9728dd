"""Security issue 38, item 9: guests and viewers read settings they may not manage.

``GET /projects/{id}`` refuses those without the ``manage`` right, but ``GET /projects``
gave them the whole record, the owner's excluded address ranges (``options``) included. Each
role now sees what its rights allow (docs/api.md, "/projects"): owners, admins, the admin
token and the secret key the whole record; editors, viewers and guests ``id``, ``name``,
``timezone`` and their ``role``. No other route answers them a project's settings either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc.http.rules import RULES
from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    Person,
    call,
    invite_and_accept,
    invite_token,
    new_team,
)
from tests.support import Server

OWN_RANGE = "203.0.113.0/24"  # the owner's own addresses: a secret of the managers
OWN_PATH = "/internal-preview/*"
PUBLIC_VIEW = {"id", "name", "timezone", "role"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("views") / "data", env=CHEAP_HASHES).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def world(srv: Server) -> dict[str, Any]:
    team_id, owner = new_team(srv, "views")
    people: dict[str, Person] = {"owner": owner}
    for role in ("admin", "editor", "viewer"):
        people[role] = invite_and_accept(srv, owner.token, team_id, role)
    r = call(srv, "POST", "/projects", owner.token, json={"name": "views-site"})
    assert r.status_code == 201, r.text
    project_id = r.json()["id"]
    options = {"excludeAddresses": [OWN_RANGE], "excludePaths": [OWN_PATH]}
    r = call(srv, "PATCH", f"/projects/{project_id}", owner.token, json={"options": options})
    assert r.status_code == 200, r.text
    r = call(srv, "POST", f"/projects/{project_id}/guests", owner.token, json={"email": "g@v.io"})
    assert r.status_code == 201, r.text
    token = invite_token(r.json()["link"])
    r = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    assert r.status_code == 200, r.text
    people["guest"] = Person("g@v.io", r.json()["token"], r.json()["account"]["id"])
    return {"team": team_id, "project": project_id, "people": people}


def _listed(srv: Server, token: str, project_id: str) -> dict[str, Any]:
    r = call(srv, "GET", "/projects", token)
    assert r.status_code == 200, r.text
    (found,) = [p for p in r.json()["projects"] if p["id"] == project_id]
    assert isinstance(found, dict)
    return found


@pytest.mark.parametrize("role", ["editor", "viewer", "guest"])
def test_a_reader_lists_the_public_view_only(srv: Server, world: dict[str, Any], role: str) -> None:
    person = world["people"][role]
    listed = _listed(srv, person.token, world["project"])
    assert set(listed) == PUBLIC_VIEW, listed
    assert listed == {"id": world["project"], "name": "views-site", "timezone": "UTC", "role": role}
    r = call(srv, "GET", "/projects", person.token)
    assert OWN_RANGE not in r.text and OWN_PATH not in r.text


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_a_manager_lists_the_whole_record(srv: Server, world: dict[str, Any], role: str) -> None:
    listed = _listed(srv, world["people"][role].token, world["project"])
    assert listed["options"] == {"excludeAddresses": [OWN_RANGE], "excludePaths": [OWN_PATH]}
    assert listed["role"] == role
    assert {"domains", "plan", "createdAt", "updatedAt"} <= set(listed)


def test_the_admin_token_and_the_secret_key_see_the_whole_record(
    srv: Server, world: dict[str, Any]
) -> None:
    listed = _listed(srv, srv.admin_token, world["project"])
    assert listed["options"]["excludeAddresses"] == [OWN_RANGE]
    made = call(srv, "POST", "/projects", srv.admin_token, json={"name": "views-keyed"}).json()
    secret = made["keys"]["secret"]
    r = call(
        srv,
        "PATCH",
        f"/projects/{made['id']}",
        secret,
        json={"options": {"excludeAddresses": [OWN_RANGE]}},
    )
    assert r.json()["options"]["excludeAddresses"] == [OWN_RANGE]
    (own,) = call(srv, "GET", "/projects", secret).json()["projects"]
    assert own["options"]["excludeAddresses"] == [OWN_RANGE]


@pytest.mark.parametrize("role", ["editor", "viewer", "guest"])
def test_no_route_shows_a_reader_the_settings(
    srv: Server, world: dict[str, Any], role: str, tmp_path: Path
) -> None:
    """Every GET route a reader may call, with the project and team filled in: none answers
    the excluded ranges or paths (the record's ``options``)."""
    person = world["people"][role]
    values = {
        "project_id": world["project"],
        "team_id": world["team"],
        "account_id": person.account_id,
    }
    seen = 0
    for route in RULES:
        method, path = route.split(" ", 1)
        names = re.findall(r"\{(\w+)(?::\w+)?\}", path)
        if method != "GET" or any(n not in values for n in names) or path == "/openapi.json":
            continue  # (the API's description names `options`: no project's)
        url = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: values[m.group(1)], path)
        params = {"projectId": world["project"], "from": "2026-01-01"}
        r = call(srv, "GET", url, person.token, params=params)
        if r.status_code == 200:
            seen += 1
        assert OWN_RANGE not in r.text and OWN_PATH not in r.text, (route, r.text[:300])
        assert '"options"' not in r.text, (route, r.text[:300])
    assert seen >= 5  # /projects, /account, /teams, the metrics... were read
