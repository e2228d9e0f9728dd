"""Saved goals, funnels, segments and annotations over real HTTP: CRUD, bounds and 400s,
who may do what (docs/api.md, "Saved goals, funnels, segments and annotations"), and the
answers' types as the OpenAPI document gives them."""

from __future__ import annotations

from typing import Any

import httpx

from tests.accounts.conftest import call
from tests.saved.conftest import Team, make_team
from tests.support import Server, is_error
from tests.test_openapi import _checker


def url(team: Team, kind: str, item: str | None = None) -> str:
    base = f"/projects/{team.project}/{kind}"
    return base if item is None else f"{base}/{item}"


def test_goals_crud_and_400s(srv: Server, team: Team) -> None:
    editor = team.people["editor"].token
    r = call(
        srv,
        "POST",
        url(team, "goals"),
        editor,
        json={
            "name": "Signups",
            "kind": "event",
            "event": "signup",
            "property": {"key": "plan", "value": "pro|team"},
        },
    )
    assert r.status_code == 201, r.text
    goal = r.json()
    assert goal["goal"] == "event:signup" and goal["id"].startswith("goal_")
    assert goal["property"] == {"key": "plan", "value": "pro|team"} and "page" not in goal
    r = call(
        srv,
        "POST",
        url(team, "goals"),
        editor,
        json={"name": "  Blog  ", "kind": "page", "page": "/blog/*"},
    )
    assert (
        r.status_code == 201 and r.json()["name"] == "Blog" and r.json()["goal"] == "page:/blog/*"
    )
    page_id = r.json()["id"]
    listed = call(srv, "GET", url(team, "goals"), editor).json()["goals"]
    assert [g["id"] for g in listed] == [goal["id"], page_id]

    # PATCH: some fields; a new kind takes its own target; null removes the property
    r = call(srv, "PATCH", url(team, "goals", goal["id"]), editor, json={"property": None})
    assert r.status_code == 200 and "property" not in r.json() and r.json()["name"] == "Signups"
    r = call(
        srv,
        "PATCH",
        url(team, "goals", goal["id"]),
        editor,
        json={"kind": "page", "page": "/welcome"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["goal"] == "page:/welcome" and "event" not in r.json()
    is_error(
        call(srv, "PATCH", url(team, "goals", goal["id"]), editor, json={"kind": "event"}),
        400,
        "event",
    )
    is_error(call(srv, "PATCH", url(team, "goals", "goal_nope"), editor, json={}), 404)

    bad: list[tuple[dict[str, Any], str]] = [
        ({"name": "x", "kind": "event", "event": "a", "colour": "red"}, "colour"),
        ({"kind": "event", "event": "a"}, "name"),
        ({"name": "x" * 101, "kind": "event", "event": "a"}, "name"),
        ({"name": "x", "kind": "click", "event": "a"}, "kind"),
        ({"name": "x", "kind": "event"}, "event"),
        ({"name": "x", "kind": "event", "event": "a" * 201}, "event"),
        ({"name": "x", "kind": "page", "page": "blog"}, "page"),
        ({"name": "x", "kind": "page", "page": "/a", "event": "a"}, "event"),
        ({"name": "x", "kind": "page", "page": "/a", "property": {"key": "k", "value": "v"}},
         "property"),
        ({"name": "x", "kind": "event", "event": "a", "property": {"key": "k"}}, "property"),
        ({"name": "x", "kind": "event", "event": "a", "property": {"key": "k", "value": ""}},
         "property"),
    ]  # fmt: skip
    for body, field in bad:
        is_error(call(srv, "POST", url(team, "goals"), editor, json=body), 400, field)

    r = call(srv, "DELETE", url(team, "goals", page_id), editor)
    assert r.status_code == 200 and r.json()["id"] == page_id
    is_error(call(srv, "DELETE", url(team, "goals", page_id), editor), 404)
    is_error(call(srv, "GET", "/projects/svc_proj_nope/goals", srv.admin_token), 404)


def test_at_most_100_of_each_per_project(srv: Server) -> None:
    t = make_team(srv, "saved-bounds")
    secret = t.secret
    for i in range(100):
        r = call(
            srv,
            "POST",
            url(t, "annotations"),
            secret,
            json={"date": "2026-01-01", "text": f"note {i}"},
        )
        assert r.status_code == 201, r.text
    is_error(
        call(
            srv,
            "POST",
            url(t, "annotations"),
            secret,
            json={"date": "2026-01-01", "text": "one too many"},
        ),
        409,
    )
    assert len(call(srv, "GET", url(t, "annotations"), secret).json()["annotations"]) == 100


def test_funnels_crud_and_400s(srv: Server, team: Team) -> None:
    admin = team.people["admin"].token
    steps = ["page:/", "page:/pricing|page:/plans", "event:signup"]
    r = call(srv, "POST", url(team, "funnels"), admin, json={"name": "Buy", "steps": steps})
    assert r.status_code == 201, r.text
    funnel = r.json()
    assert funnel["steps"] == steps and "window" not in funnel
    r = call(srv, "PATCH", url(team, "funnels", funnel["id"]), admin, json={"window": 600})
    assert r.status_code == 200 and r.json()["window"] == 600 and r.json()["steps"] == steps
    r = call(srv, "PATCH", url(team, "funnels", funnel["id"]), admin, json={"window": None})
    assert r.status_code == 200 and "window" not in r.json()
    for body, field in [
        ({"name": "x", "steps": ["page:/"]}, "steps"),
        ({"name": "x", "steps": ["page:/"] * 9}, "steps"),
        ({"name": "x", "steps": ["page:/", "/b"]}, "steps"),
        ({"name": "x", "steps": ["page:/", "page:/a|"]}, "steps"),
        ({"name": "x", "steps": ["page:/", 3]}, "steps"),
        ({"name": "x", "steps": ["page:/", "page:/a"], "window": 0}, "window"),
        ({"name": "x", "steps": ["page:/", "page:/a"], "window": True}, "window"),
        ({"name": "x", "steps": ["page:/", "page:/a"], "order": "strict"}, "order"),
    ]:
        is_error(call(srv, "POST", url(team, "funnels"), admin, json=body), 400, field)
    listed = call(srv, "GET", url(team, "funnels"), team.people["guest"].token).json()
    assert [f["id"] for f in listed["funnels"]] == [funnel["id"]]
    assert call(srv, "DELETE", url(team, "funnels", funnel["id"]), admin).status_code == 200


def test_who_may_read_and_write(srv: Server) -> None:
    t = make_team(srv, "saved-roles")
    goal = {"name": "Signups", "kind": "event", "event": "signup"}
    note = {"date": "2026-03-01", "text": "launched v2"}
    funnel = {"name": "F", "steps": ["page:/", "event:signup"]}
    for who in ("owner", "admin", "editor"):
        r = call(srv, "POST", url(t, "goals"), t.people[who].token, json=goal)
        assert r.status_code == 201, (who, r.text)
    made = r.json()["id"]
    r = call(srv, "POST", url(t, "annotations"), t.people["editor"].token, json=note)
    assert r.status_code == 201 and r.json()["createdBy"] == t.people["editor"].account_id
    note_id = r.json()["id"]
    r = call(srv, "POST", url(t, "funnels"), t.secret, json=funnel)  # a secret key: manage
    assert r.status_code == 201, r.text
    r = call(srv, "POST", url(t, "annotations"), t.secret, json=note)
    assert r.status_code == 201 and r.json()["createdBy"].startswith("key_")
    r = call(srv, "POST", url(t, "annotations"), srv.admin_token, json=note)
    assert r.status_code == 201 and r.json()["createdBy"] == "admin"

    # readers (viewer, guest, share link) list; they write nothing
    for who in ("viewer", "guest", "share"):
        token = t.share if who == "share" else t.people[who].token
        for kind in ("goals", "funnels", "annotations", "segments"):
            r = call(srv, "GET", url(t, kind), token)
            assert r.status_code == 200, (who, kind, r.text)
        assert len(call(srv, "GET", url(t, "goals"), token).json()["goals"]) == 3
        is_error(call(srv, "POST", url(t, "goals"), token, json=goal), 403)
        is_error(call(srv, "POST", url(t, "funnels"), token, json=funnel), 403)
        is_error(call(srv, "POST", url(t, "annotations"), token, json=note), 403)
        is_error(call(srv, "PATCH", url(t, "goals", made), token, json={"name": "x"}), 403)
        is_error(call(srv, "DELETE", url(t, "annotations", note_id), token), 403)
    # someone of another team reads nothing, and learns nothing of what exists
    outsider = t.people["outsider"].token
    is_error(call(srv, "GET", url(t, "goals"), outsider), 403)
    is_error(call(srv, "DELETE", url(t, "goals", made), outsider), 403)
    other = make_team(srv, "saved-roles-b")
    is_error(call(srv, "GET", url(t, "goals"), other.secret), 403)  # another project's key
    is_error(call(srv, "GET", url(t, "goals"), other.share), 403)
    # an id of another project is no item of this one
    is_error(call(srv, "DELETE", url(other, "goals", made), srv.admin_token), 404)


def test_segments_personal_and_shared(srv: Server) -> None:
    t = make_team(srv, "saved-segments")
    viewer, editor, guest = (t.people[r].token for r in ("viewer", "editor", "guest"))
    mine = {"name": "Mobile", "filters": ["device:is:Mobile", "page:contains:/blog"]}
    r = call(srv, "POST", url(t, "segments"), viewer, json=mine)  # personal by default
    assert r.status_code == 201, r.text
    personal = r.json()
    assert personal["shared"] is False and personal["ownerId"] == t.people["viewer"].account_id
    assert personal["filters"] == mine["filters"]  # as written
    is_error(call(srv, "POST", url(t, "segments"), viewer, json={**mine, "shared": True}), 403)
    r = call(
        srv, "POST", url(t, "segments"), editor, json={**mine, "name": "All mobile", "shared": True}
    )
    assert r.status_code == 201, r.text
    shared = r.json()
    r = call(
        srv,
        "POST",
        url(t, "segments"),
        t.secret,
        json={"name": "Key's", "filters": ["country:is:FR"]},
    )
    assert r.status_code == 201 and r.json()["shared"] is True and r.json()["ownerId"] is None
    keys = r.json()

    def seen(token: str) -> list[str]:
        r = call(srv, "GET", url(t, "segments"), token)
        assert r.status_code == 200, r.text
        return [s["id"] for s in r.json()["segments"]]

    assert seen(viewer) == [personal["id"], shared["id"], keys["id"]]
    for token in (editor, guest, t.share, t.secret, srv.admin_token, t.people["owner"].token):
        assert seen(token) == [shared["id"], keys["id"]]

    # its owner changes and deletes a personal segment with `read`; nobody else sees it
    r = call(srv, "PATCH", url(t, "segments", personal["id"]), viewer, json={"name": "Phones"})
    assert r.status_code == 200 and r.json()["name"] == "Phones" and r.json()["shared"] is False
    is_error(
        call(srv, "PATCH", url(t, "segments", personal["id"]), viewer, json={"shared": True}), 403
    )
    for token in (editor, t.people["owner"].token, srv.admin_token, t.secret):
        is_error(call(srv, "PATCH", url(t, "segments", personal["id"]), token, json={}), 404)
        is_error(call(srv, "DELETE", url(t, "segments", personal["id"]), token), 404)
    is_error(call(srv, "DELETE", url(t, "segments", personal["id"]), guest), 403)
    # a shared segment: edit
    is_error(call(srv, "PATCH", url(t, "segments", shared["id"]), viewer, json={"name": "x"}), 403)
    is_error(call(srv, "DELETE", url(t, "segments", shared["id"]), viewer), 403)
    r = call(srv, "PATCH", url(t, "segments", shared["id"]), editor, json={"shared": False})
    assert r.status_code == 200 and r.json()["ownerId"] == t.people["editor"].account_id
    assert shared["id"] not in seen(viewer)
    is_error(
        call(srv, "PATCH", url(t, "segments", keys["id"]), t.secret, json={"shared": False}),
        400,
        "shared",
    )
    # keys and the admin token make shared segments only
    is_error(
        call(srv, "POST", url(t, "segments"), t.secret, json={**mine, "shared": False}),
        400,
        "shared",
    )
    is_error(call(srv, "POST", url(t, "segments"), t.share, json=mine), 403)
    # the filters are checked as the reads check them
    for filters in (["device:was:mobile"], [], ["page:matches:(a+)+"], ["x"] * 21, "page:is:/"):
        is_error(
            call(srv, "POST", url(t, "segments"), viewer, json={"name": "bad", "filters": filters}),
            400,
            "filters",
        )
    is_error(
        call(srv, "POST", url(t, "segments"), viewer, json={**mine, "shared": "yes"}), 400, "shared"
    )
    r = call(srv, "DELETE", url(t, "segments", personal["id"]), viewer)
    assert r.status_code == 200 and personal["id"] not in seen(viewer)


def test_annotations_by_range_in_the_projects_zone(srv: Server) -> None:
    t = make_team(srv, "saved-notes", timezone="America/New_York")
    editor = t.people["editor"].token
    written = [
        ("2026-03-01", "launched v2"),
        ("2026-03-02T03:30:00Z", "late at night in New York: 1 March there"),
        ("2026-03-02T12:00:00+01:00", "2 March"),
        ("2026-03-05", "outside"),
    ]
    ids = []
    for when, text in written:
        r = call(srv, "POST", url(t, "annotations"), editor, json={"date": when, "text": text})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    r = call(
        srv,
        "GET",
        url(t, "annotations"),
        t.people["guest"].token,
        params={"from": "2026-03-01", "to": "2026-03-02"},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["timezone"] == "America/New_York"
    got = [(a["date"], a["day"], a["text"]) for a in body["annotations"]]
    assert got == [
        ("2026-03-01", "2026-03-01", "launched v2"),
        ("2026-03-02T03:30:00Z", "2026-03-01", "late at night in New York: 1 March there"),
        ("2026-03-02T11:00:00Z", "2026-03-02", "2 March"),
    ]
    only = call(srv, "GET", url(t, "annotations"), t.share, params={"from": "2026-03-03"})
    assert [a["id"] for a in only.json()["annotations"]] == [ids[3]]
    assert len(call(srv, "GET", url(t, "annotations"), editor).json()["annotations"]) == 4
    is_error(call(srv, "GET", url(t, "annotations"), editor, params={"from": "March"}), 400, "from")
    is_error(call(srv, "GET", url(t, "annotations"), editor, params={"to": "2026-3-1"}), 400, "to")
    r = call(
        srv,
        "PATCH",
        url(t, "annotations", ids[3]),
        editor,
        json={"text": "moved", "date": "2026-03-02"},
    )
    assert r.status_code == 200 and (r.json()["date"], r.json()["text"]) == ("2026-03-02", "moved")
    for body, field in [
        ({"date": "2026-02-30", "text": "x"}, "date"),
        ({"date": "yesterday", "text": "x"}, "date"),
        ({"date": "1900-01-01", "text": "x"}, "date"),
        ({"date": "2026-03-01", "text": ""}, "text"),
        ({"date": "2026-03-01", "text": "x" * 501}, "text"),
        ({"date": "2026-03-01", "text": "x", "colour": "red"}, "colour"),
    ]:
        is_error(call(srv, "POST", url(t, "annotations"), editor, json=body), 400, field)
    assert (
        call(
            srv,
            "POST",
            url(t, "annotations"),
            editor,
            json={"date": "2026-03-01", "text": "x" * 500},
        ).status_code
        == 201
    )
    assert call(srv, "DELETE", url(t, "annotations", ids[0]), editor).status_code == 200


def test_answers_fit_the_documented_types(srv: Server) -> None:
    check = _checker(httpx.get(srv.url + "/openapi.json").json())
    t = make_team(srv, "saved-types")
    viewer = t.people["viewer"].token
    bodies = {
        "goals": {"name": "G", "kind": "event", "event": "e", "property": {"key": "k",
                  "value": "v"}},
        "funnels": {"name": "F", "steps": ["page:/", "event:e"], "window": 60},
        "segments": {"name": "S", "filters": ["page:is:/"], "shared": True},
        "annotations": {"date": "2026-01-01T10:00:00Z", "text": "T"},
    }  # fmt: skip
    for kind, body in bodies.items():
        base = f"/projects/{{project_id}}/{kind}"
        one = f"{base}/{{{kind[:-1]}_id}}"
        r = call(srv, "POST", url(t, kind), t.secret, json=body)
        check(base, "post", r)
        item = r.json()["id"]
        check(base, "get", call(srv, "GET", url(t, kind), t.secret))
        check(one, "patch", call(srv, "PATCH", url(t, kind, item), t.secret, json={}))
        check(one, "patch", call(srv, "PATCH", url(t, kind, item), t.secret, json={"x": 1}))
        check(one, "patch", call(srv, "PATCH", url(t, kind, item), viewer, json={}))
        check(one, "delete", call(srv, "DELETE", url(t, kind, item), t.secret))
        check(one, "delete", call(srv, "DELETE", url(t, kind, item), t.secret))
    check(
        "/projects/{project_id}/goals/{goal_id}",
        "patch",
        call(srv, "PATCH", url(t, "goals", "x"), None, json={}),
    )
