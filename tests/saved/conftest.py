"""One real server for the tests of saved goals, funnels, segments and annotations, and a
team with a member of each role, a project of the team, a guest of it and a share link."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    Person,
    call,
    invite_and_accept,
    new_team,
    unique_email,
)
from tests.support import Server


@pytest.fixture(scope="package")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("saved") / "data", env=CHEAP_HASHES).start()
    yield server
    server.stop()


@dataclass
class Team:
    project: str
    secret: str
    share: str
    people: dict[str, Person]  # owner, admin, editor, viewer, guest, outsider


def make_team(srv: Server, name: str, timezone: str = "UTC") -> Team:
    """A team, a member of each role, its project (made by its owner), a guest of the
    project, a viewer of another team, the project's secret key and a share link."""
    team_id, owner = new_team(srv, name)
    people = {"owner": owner}
    for role in ("admin", "editor", "viewer"):
        people[role] = invite_and_accept(srv, owner.token, team_id, role)
    r = call(srv, "POST", "/projects", owner.token, json={"name": name, "timezone": timezone})
    assert r.status_code == 201, r.text
    project = r.json()["id"]
    secret = r.json()["keys"]["secret"]
    email = unique_email("guest")
    r = call(srv, "POST", f"/projects/{project}/guests", owner.token, json={"email": email})
    assert r.status_code == 201, r.text
    token = r.json()["link"].split("#invite=", 1)[1]
    r = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    assert r.status_code == 200, r.text
    people["guest"] = Person(email, r.json()["token"], r.json()["account"]["id"])
    other, _ = new_team(srv, name + "-other")
    people["outsider"] = invite_and_accept(srv, srv.admin_token, other, "viewer")
    r = call(srv, "POST", f"/projects/{project}/keys", srv.admin_token, json={"kind": "share"})
    assert r.status_code == 201, r.text
    return Team(project, secret, r.json()["key"], people)


@pytest.fixture(scope="package")
def team(srv: Server) -> Team:
    return make_team(srv, "saved-team")
