"""Teams over HTTP: invitations (single use, sign-up or sign-in), roles, the last owner,
transfers, guests, and projects made with the admin token."""

from __future__ import annotations

from typing import Any

from tests.accounts.conftest import (
    PASSWORD,
    Person,
    call,
    invite_and_accept,
    invite_token,
    new_team,
    sign_in,
    unique_email,
)
from tests.support import Server, is_error


def _project(srv: Server, token: str, name: str, **body: Any) -> str:
    r = call(srv, "POST", "/projects", token, json={"name": name, **body})
    assert r.status_code == 201, r.text
    project_id: str = r.json()["id"]
    return project_id


def _reads(srv: Server, token: str, project_id: str) -> int:
    params = {"projectId": project_id, "from": "2026-01-01"}
    return call(srv, "GET", "/metrics", token, params=params).status_code


def test_invitation_is_single_use_and_accepted_by_sign_up(srv: Server) -> None:
    team_id, owner = new_team(srv)
    email = unique_email("new")
    r = call(
        srv,
        "POST",
        f"/teams/{team_id}/invitations",
        owner.token,
        json={"email": email, "role": "editor"},
    )
    assert r.status_code == 201 and r.json()["mailed"] is False  # mail is off: the link
    token = invite_token(r.json()["link"])
    pending = call(srv, "GET", f"/teams/{team_id}/invitations", owner.token).json()["invitations"]
    assert [i["email"] for i in pending] == [email]
    preview = call(srv, "GET", f"/invitations/{token}").json()
    assert preview["email"] == email and preview["role"] == "editor"
    assert preview["accountExists"] is False and preview["teamId"] == team_id
    is_error(
        call(srv, "POST", f"/invitations/{token}/accept", json={"password": "short"}),
        400,
        "password",
    )
    r = call(
        srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD, "name": "Eve"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["joined"] == {"teamId": team_id, "role": "editor"}
    assert call(srv, "GET", "/account", r.json()["token"]).json()["name"] == "Eve"
    # once only
    is_error(call(srv, "GET", f"/invitations/{token}"), 404)
    is_error(call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD}), 404)
    assert sign_in(srv, email).status_code == 200
    team = call(srv, "GET", f"/teams/{team_id}", owner.token).json()
    assert {m["email"]: m["role"] for m in team["members"]}[email] == "editor"


def test_invitation_accepted_by_signing_in(srv: Server) -> None:
    team_a, owner_a = new_team(srv)
    team_b, owner_b = new_team(srv)
    r = call(
        srv,
        "POST",
        f"/teams/{team_b}/invitations",
        owner_b.token,
        json={"email": owner_a.email, "role": "viewer"},
    )
    token = invite_token(r.json()["link"])
    assert call(srv, "GET", f"/invitations/{token}").json()["accountExists"] is True
    # signing up with an email that has an account: sign in instead
    is_error(call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD}), 409)
    r = call(srv, "POST", f"/invitations/{token}/accept", owner_a.token)
    assert r.status_code == 200 and r.json()["joined"] == {"teamId": team_b, "role": "viewer"}
    roles = {
        t["id"]: t["role"] for t in call(srv, "GET", "/account", owner_a.token).json()["teams"]
    }
    assert roles == {team_a: "owner", team_b: "viewer"}


def test_withdrawn_invitation_cannot_be_used(srv: Server) -> None:
    team_id, owner = new_team(srv)
    r = call(
        srv,
        "POST",
        f"/teams/{team_id}/invitations",
        owner.token,
        json={"email": unique_email(), "role": "viewer"},
    )
    inv_id, token = r.json()["invitation"]["id"], invite_token(r.json()["link"])
    assert (
        call(srv, "DELETE", f"/teams/{team_id}/invitations/{inv_id}", owner.token).status_code
        == 200
    )
    is_error(call(srv, "GET", f"/invitations/{token}"), 404)


def test_roles_the_last_owner_and_owners_only_by_owners(srv: Server) -> None:
    team_id, owner = new_team(srv)
    admin = invite_and_accept(srv, owner.token, team_id, "admin")
    # an admin may invite and manage members, but not make owners
    is_error(
        call(
            srv,
            "POST",
            f"/teams/{team_id}/invitations",
            admin.token,
            json={"email": unique_email(), "role": "owner"},
        ),
        403,
    )
    viewer = invite_and_accept(srv, admin.token, team_id, "viewer")
    path = f"/teams/{team_id}/members/{viewer.account_id}"
    assert call(srv, "PATCH", path, admin.token, json={"role": "editor"}).status_code == 200
    is_error(call(srv, "PATCH", path, admin.token, json={"role": "owner"}), 403)
    is_error(call(srv, "PATCH", path, admin.token, json={"role": "boss"}), 400, "role")
    # the last owner can neither leave nor be demoted
    own = f"/teams/{team_id}/members/{owner.account_id}"
    assert is_error(call(srv, "DELETE", own, owner.token), 409)["error"]["code"] == "conflict"
    is_error(call(srv, "PATCH", own, owner.token, json={"role": "admin"}), 409)
    is_error(call(srv, "DELETE", own, admin.token), 403)  # an admin may not remove an owner
    # with a second owner, the first may step down, then leave
    assert call(srv, "PATCH", path, owner.token, json={"role": "owner"}).status_code == 200
    assert call(srv, "PATCH", own, owner.token, json={"role": "viewer"}).status_code == 200
    assert call(srv, "DELETE", own, owner.token).status_code == 200  # leaving
    is_error(call(srv, "GET", f"/teams/{team_id}", owner.token), 403)
    # the new last owner is protected in turn
    is_error(call(srv, "DELETE", path, viewer.token), 409)


def test_projects_belong_to_teams_and_move_between_them(srv: Server) -> None:
    team_a, owner = new_team(srv)
    viewer = invite_and_accept(srv, owner.token, team_a, "viewer")
    project = _project(srv, owner.token, "moving-a")
    listed = call(srv, "GET", "/projects", viewer.token).json()["projects"]
    assert [(p["id"], p["role"]) for p in listed] == [(project, "viewer")]
    assert _reads(srv, viewer.token, project) == 200
    # a team of the same owner receives it; the old team's viewer loses it
    team_b = call(srv, "POST", "/teams", owner.token, json={"name": "b"}).json()["id"]
    r = call(srv, "POST", f"/projects/{project}/transfer", owner.token, json={"teamId": team_b})
    assert r.status_code == 200, r.text
    assert _reads(srv, viewer.token, project) == 403
    assert project in call(srv, "GET", f"/teams/{team_b}", owner.token).json()["projects"]
    # an owner of the project's team only may not move it into a team it does not own
    team_c, _other = new_team(srv)
    is_error(
        call(srv, "POST", f"/projects/{project}/transfer", owner.token, json={"teamId": team_c}),
        403,
    )
    is_error(
        call(srv, "POST", f"/projects/{project}/transfer", owner.token, json={}), 400, "teamId"
    )


def test_admin_token_projects_have_no_team_until_transferred(srv: Server) -> None:
    team_id, owner = new_team(srv)
    project = srv.create_project("no-team-yet")["id"]
    assert _reads(srv, owner.token, project) == 403
    assert project not in [
        p["id"] for p in call(srv, "GET", "/projects", owner.token).json()["projects"]
    ]
    r = call(
        srv, "POST", f"/projects/{project}/transfer", srv.admin_token, json={"teamId": team_id}
    )
    assert r.status_code == 200
    assert _reads(srv, owner.token, project) == 200
    # owners delete; the admin token still may
    assert call(srv, "DELETE", f"/projects/{project}", owner.token).status_code == 200


def test_guests_read_one_project_only(srv: Server) -> None:
    team_id, owner = new_team(srv)
    shared, private = (
        _project(srv, owner.token, "guest-shared"),
        _project(srv, owner.token, "guest-private"),
    )
    email = unique_email("guest")
    r = call(srv, "POST", f"/projects/{shared}/guests", owner.token, json={"email": email})
    assert r.status_code == 201
    body = call(
        srv,
        "POST",
        f"/invitations/{invite_token(r.json()['link'])}/accept",
        json={"password": PASSWORD},
    ).json()
    assert body["joined"] == {"projectId": shared, "role": "guest"}
    guest = Person(email, body["token"], body["account"]["id"])
    assert _reads(srv, guest.token, shared) == 200
    assert _reads(srv, guest.token, private) == 403
    is_error(call(srv, "GET", f"/projects/{shared}", guest.token), 403)  # settings: admin
    is_error(call(srv, "GET", f"/teams/{team_id}", guest.token), 403)  # not a member
    listed = call(srv, "GET", "/projects", guest.token).json()["projects"]
    assert [(p["id"], p["role"]) for p in listed] == [(shared, "guest")]
    guests = call(srv, "GET", f"/projects/{shared}/guests", owner.token).json()["guests"]
    assert [g["email"] for g in guests] == [email]
    assert (
        call(
            srv, "DELETE", f"/projects/{shared}/guests/{guest.account_id}", owner.token
        ).status_code
        == 200
    )
    assert _reads(srv, guest.token, shared) == 403
