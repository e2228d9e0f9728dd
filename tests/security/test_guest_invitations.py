"""Security issue 38, item 11: guest invitations could not be withdrawn.

Both DELETE routes answered 404 for a guest invitation, so its link stayed valid for 7 days.
``DELETE /projects/{project_id}/guests/invitations/{invitation_id}`` (the ``members`` right on
the project, as inviting a guest) withdraws it: from then on its link answers 404 on preview
and on accept. The team route withdraws team invitations the same way. Neither route
withdraws an invitation of another project or team, nor one of the other kind.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    call,
    invite_and_accept,
    invite_token,
    new_team,
    unique_email,
)
from tests.support import Server, is_error


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("withdraw") / "data", env=CHEAP_HASHES).start()
    yield server
    server.stop()


def _project(srv: Server, owner_token: str, name: str) -> str:
    r = call(srv, "POST", "/projects", owner_token, json={"name": name})
    assert r.status_code == 201, r.text
    project_id: str = r.json()["id"]
    return project_id


def _link_is_dead(srv: Server, token: str) -> None:
    is_error(call(srv, "GET", f"/invitations/{token}"), 404)
    accepted = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    is_error(accepted, 404)


def test_a_guest_invitation_is_withdrawn_and_its_link_dies(srv: Server) -> None:
    team_id, owner = new_team(srv, "withdraw")
    project_id = _project(srv, owner.token, "withdraw-site")
    guests = f"/projects/{project_id}/guests"
    r = call(srv, "POST", guests, owner.token, json={"email": unique_email("guest")})
    assert r.status_code == 201, r.text
    inv_id, token = r.json()["invitation"]["id"], invite_token(r.json()["link"])
    assert call(srv, "GET", f"/invitations/{token}").status_code == 200
    assert [i["id"] for i in call(srv, "GET", guests, owner.token).json()["invitations"]] == [
        inv_id
    ]

    # those without the members right on the project may not withdraw it
    viewer = invite_and_accept(srv, owner.token, team_id, "viewer")
    route = f"{guests}/invitations/{inv_id}"
    is_error(call(srv, "DELETE", route, viewer.token), 403)
    # the team route does not reach a guest invitation (it is the project's)
    is_error(call(srv, "DELETE", f"/teams/{team_id}/invitations/{inv_id}", owner.token), 404)
    # an admin of another team, on its own project, cannot withdraw this project's invitation
    _, stranger = new_team(srv, "elsewhere")
    theirs = _project(srv, stranger.token, "withdraw-theirs")
    elsewhere = f"/projects/{theirs}/guests/invitations/{inv_id}"
    is_error(call(srv, "DELETE", elsewhere, stranger.token), 404)
    is_error(call(srv, "DELETE", route, stranger.token), 403)
    assert call(srv, "GET", f"/invitations/{token}").status_code == 200  # still pending

    r = call(srv, "DELETE", route, owner.token)
    assert r.status_code == 200, r.text
    assert r.json() == {"ok": True}
    _link_is_dead(srv, token)
    assert call(srv, "GET", guests, owner.token).json()["invitations"] == []
    is_error(call(srv, "DELETE", route, owner.token), 404)  # withdrawn already
    # the admin token may too (a fresh invitation)
    r = call(srv, "POST", guests, owner.token, json={"email": unique_email("guest")})
    again = r.json()["invitation"]["id"]
    r2 = call(srv, "DELETE", f"{guests}/invitations/{again}", srv.admin_token)
    assert r2.status_code == 200, r2.text
    _link_is_dead(srv, invite_token(r.json()["link"]))


def test_an_accepted_guest_invitation_is_not_withdrawn(srv: Server) -> None:
    _, owner = new_team(srv, "accepted")
    project_id = _project(srv, owner.token, "accepted-site")
    guests = f"/projects/{project_id}/guests"
    r = call(srv, "POST", guests, owner.token, json={"email": unique_email("guest")})
    inv_id, token = r.json()["invitation"]["id"], invite_token(r.json()["link"])
    joined = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    assert joined.status_code == 200, joined.text
    is_error(call(srv, "DELETE", f"{guests}/invitations/{inv_id}", owner.token), 404)
    # the guest is removed with the guest route, as before
    guest_id = joined.json()["account"]["id"]
    assert call(srv, "DELETE", f"{guests}/{guest_id}", owner.token).status_code == 200


def test_a_team_invitation_is_withdrawn_and_its_link_dies(srv: Server) -> None:
    team_id, owner = new_team(srv, "team-withdraw")
    project_id = _project(srv, owner.token, "team-withdraw-site")
    body = {"email": unique_email("member"), "role": "editor"}
    r = call(srv, "POST", f"/teams/{team_id}/invitations", owner.token, json=body)
    assert r.status_code == 201, r.text
    inv_id, token = r.json()["invitation"]["id"], invite_token(r.json()["link"])
    # not through the guest route, nor by another team's owner
    guest_route = f"/projects/{project_id}/guests/invitations/{inv_id}"
    is_error(call(srv, "DELETE", guest_route, owner.token), 404)
    other_team, stranger = new_team(srv, "team-elsewhere")
    is_error(call(srv, "DELETE", f"/teams/{other_team}/invitations/{inv_id}", stranger.token), 404)
    assert call(srv, "GET", f"/invitations/{token}").status_code == 200

    route = f"/teams/{team_id}/invitations/{inv_id}"
    assert call(srv, "DELETE", route, owner.token).status_code == 200
    _link_is_dead(srv, token)
    assert call(srv, "GET", f"/teams/{team_id}/invitations", owner.token).json() == {
        "invitations": []
    }
    is_error(call(srv, "DELETE", route, owner.token), 404)  # withdrawn already
