"""GET /overview and /overview/timeseries over real HTTP: two teams, three projects in
different time zones (one with a half-hour offset), a viewer who is also a guest of the other
team's project, an outsider, the admin token and the project keys. Every row must equal its
project's own GET /metrics (compare=previous_period) and every series its project's
GET /metrics/timeseries; the totals and the summed series are checked against those."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import CHEAP_HASHES, Person, call, invite_and_accept
from tests.support import Server, is_error
from tests.test_openapi import _checker

UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/13{}.0 Safari"
ZONES = {"kiwi": "Pacific/Auckland", "coast": "America/Los_Angeles", "mumbai": "Asia/Kolkata"}
TODAY = datetime.now(UTC).date()
FROM, TO = (TODAY - timedelta(days=3)).isoformat(), (TODAY - timedelta(days=1)).isoformat()
FIGURES = ("visitors", "visits", "pageviews", "bounceRate", "visitDuration")
AS_METRICS = {"visits": "sessions", "visitDuration": "avgSessionDuration"}


def _events(seed: int) -> list[dict[str, Any]]:
    """Page views over the last six and a half days: visitors of one to three pages a
    session (so some bounce), a few sessions an hour apart, differing per project."""
    now = datetime.now(UTC) - timedelta(minutes=5)
    out = []
    for hours_ago in range(2, 6 * 24 + 12, 5 + seed):
        start = now - timedelta(hours=hours_ago)
        visitor = hours_ago % (4 + seed)
        pages = 1 + (hours_ago + seed) % 3
        for i in range(pages):
            out.append(
                {
                    "event": "page_view",
                    "url": f"https://site{seed}.test/p{i}",
                    "ts": int((start + timedelta(minutes=3 * i)).timestamp() * 1000),
                    "ip": f"10.{seed}.0.{visitor}",
                    "userAgent": UA.format(visitor),
                }
            )
    return out


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("overview") / "data", env=CHEAP_HASHES).start()
    yield server
    server.stop()


def _team(srv: Server, name: str) -> tuple[str, Person]:
    r = call(srv, "POST", "/teams", srv.admin_token, json={"name": name})
    assert r.status_code == 201, r.text
    team = r.json()["id"]
    return team, invite_and_accept(srv, srv.admin_token, team, "owner")


@pytest.fixture(scope="module")
def world(srv: Server) -> dict[str, Any]:
    team_a, owner_a = _team(srv, "alpha")
    team_b, owner_b = _team(srv, "beta")
    viewer = invite_and_accept(srv, owner_a.token, team_a, "viewer")
    _, outsider = _team(srv, "gamma")
    projects: dict[str, dict[str, Any]] = {}
    for seed, (name, zone) in enumerate(ZONES.items()):
        team = team_b if name == "mumbai" else team_a
        p = srv.create_project(f"{name}-{uuid.uuid4().hex[:6]}", timezone=zone, teamId=team)
        r = srv.send(p["keys"]["secret"], _events(seed))
        assert r.status_code == 200, r.text
        projects[name] = p
    mumbai = projects["mumbai"]["id"]
    r = call(srv, "POST", f"/projects/{mumbai}/guests", owner_b.token, json={"email": viewer.email})
    assert r.status_code == 201, r.text
    token = r.json()["link"].split("#invite=", 1)[1]  # accepted signed in (an account)
    r = call(srv, "POST", f"/invitations/{token}/accept", viewer.token, json={})
    assert r.status_code == 200, r.text
    kiwi = projects["kiwi"]["id"]
    r = call(srv, "POST", f"/projects/{kiwi}/keys", srv.admin_token, json={"kind": "share"})
    assert r.status_code == 201, r.text
    srv.wait_loaded()
    return {
        "projects": projects,
        "share": r.json()["key"],
        "people": {"owner A": owner_a, "owner B": owner_b, "viewer": viewer, "outsider": outsider},
    }


def _get(srv: Server, path: str, token: str, **params: Any) -> httpx.Response:
    return httpx.get(
        srv.url + path, params=params, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )


def _overview(srv: Server, token: str, **params: Any) -> dict[str, Any]:
    r = _get(srv, "/overview", token, **{"from": FROM, "to": TO, **params})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _as_row(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[AS_METRICS.get(k, k)] for k in FIGURES}


def test_each_row_is_its_projects_metrics(srv: Server, world: dict[str, Any]) -> None:
    body = _overview(srv, srv.admin_token)
    rows = {r["id"]: r for r in body["projects"]}
    assert set(rows) == {p["id"] for p in world["projects"].values()}
    for name, p in world["projects"].items():
        row = rows[p["id"]]
        m = _get(
            srv, "/metrics", srv.admin_token,
            projectId=p["id"], compare="previous_period", **{"from": FROM, "to": TO},
        ).json()  # fmt: skip
        assert row["timezone"] == ZONES[name] == m["timezone"]
        assert (row["from"], row["to"], row["name"]) == (FROM, TO, p["name"])
        assert {k: row[k] for k in FIGURES} == _as_row(m), name
        assert row["previous"] == _as_row(m["compare"]), name
        assert row["visits"] > 0 and row["previous"]["visits"] > 0, "the world reads nothing"
        now, then = row, row["previous"]
        for k in ("visitors", "visits", "pageviews"):
            want = None if then[k] == 0 else round(100 * (now[k] - then[k]) / then[k], 1)
            assert row["change"][k] == want, (name, k)
        points = float(now["bounceRate"][:-1]) - float(then["bounceRate"][:-1])
        assert row["change"]["bounceRate"] == round(points, 1) + 0.0


def test_totals_add_the_rows_up(srv: Server, world: dict[str, Any]) -> None:
    body = _overview(srv, srv.admin_token)
    rows, totals = body["projects"], body["totals"]
    for key in ("visitors", "visits", "pageviews"):  # visitors too: different sites
        assert totals[key] == sum(r[key] for r in rows)
        assert totals["previous"][key] == sum(r["previous"][key] for r in rows)
    bounces = sum(float(r["bounceRate"][:-1]) * r["visits"] for r in rows)  # every visit has
    assert abs(float(totals["bounceRate"][:-1]) - bounces / totals["visits"]) < 0.1  # a page
    seconds = sum(r["visitDuration"] * r["visits"] for r in rows) / totals["visits"]
    assert abs(totals["visitDuration"] - seconds) < 0.1
    then = totals["previous"]["visitors"]
    assert totals["change"]["visitors"] == round(100 * (totals["visitors"] - then) / then, 1)


@pytest.mark.parametrize(
    "sort",
    ["visitors", "-visitors", "visits", "-pageviews", "bounceRate", "-visitDuration", "name"],
)
def test_sorting(srv: Server, world: dict[str, Any], sort: str) -> None:
    body = _overview(srv, srv.admin_token, sort=sort)
    assert body["sort"] == sort
    key = sort.lstrip("-")

    def value(r: dict[str, Any]) -> Any:
        return float(r[key][:-1]) if key == "bounceRate" else r[key]

    values = [value(r) for r in body["projects"]]
    assert values == sorted(values, reverse=sort.startswith("-"))


def test_default_sort_is_most_visitors_first(srv: Server, world: dict[str, Any]) -> None:
    body = _overview(srv, srv.admin_token)
    assert body["sort"] == "-visitors"
    visitors = [r["visitors"] for r in body["projects"]]
    assert visitors == sorted(visitors, reverse=True)


def test_who_sees_which_projects(srv: Server, world: dict[str, Any]) -> None:
    ids = {name: p["id"] for name, p in world["projects"].items()}
    people = world["people"]
    seen = {
        who: {r["id"] for r in _overview(srv, person.token)["projects"]}
        for who, person in people.items()
    }
    assert seen == {
        "owner A": {ids["kiwi"], ids["coast"]},
        "owner B": {ids["mumbai"]},
        "viewer": {ids["kiwi"], ids["coast"], ids["mumbai"]},  # a guest of mumbai too
        "outsider": set(),
    }
    nothing = _overview(srv, people["outsider"].token)
    assert nothing["totals"]["visitors"] == 0 and nothing["totals"]["bounceRate"] == "0.0%"
    kiwi = world["projects"]["kiwi"]
    for key in (kiwi["keys"]["secret"], world["share"]):  # a key that reads: its own project
        assert [r["id"] for r in _overview(srv, key)["projects"]] == [ids["kiwi"]]
    is_error(_get(srv, "/overview", kiwi["keys"]["public"], **{"from": FROM}), 403)
    is_error(_get(srv, "/overview/timeseries", kiwi["keys"]["public"], **{"from": FROM}), 403)
    assert _get(srv, "/overview", "garbage", **{"from": FROM}).status_code == 401
    # a viewer's row equals the admin's (the same read, whoever asks)
    admin_rows = {r["id"]: r for r in _overview(srv, srv.admin_token)["projects"]}
    for row in _overview(srv, people["viewer"].token)["projects"]:
        assert row == admin_rows[row["id"]]


def test_each_series_is_its_projects_timeseries(srv: Server, world: dict[str, Any]) -> None:
    r = _get(
        srv, "/overview/timeseries", srv.admin_token, interval="day", **{"from": FROM, "to": TO}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["interval"] == "day"
    series = {s["id"]: s for s in body["projects"]}
    labels = [p["time"] for p in body["points"]]
    assert labels == [(TODAY - timedelta(days=d)).isoformat() for d in (3, 2, 1)]
    for name, p in world["projects"].items():
        mine = series[p["id"]]
        ts = _get(
            srv, "/metrics/timeseries", srv.admin_token,
            projectId=p["id"], interval="day", **{"from": FROM, "to": TO},
        ).json()  # fmt: skip
        assert mine["timezone"] == ZONES[name]
        assert mine["points"] == [{"time": q["time"], **_as_row(q)} for q in ts["points"]], name
    for i, point in enumerate(body["points"]):
        for key in ("visitors", "visits", "pageviews"):
            assert point[key] == sum(s["points"][i][key] for s in series.values())
        visits = point["visits"]
        seconds = sum(
            s["points"][i]["visitDuration"] * s["points"][i]["visits"] for s in series.values()
        )
        assert abs(point["visitDuration"] - (seconds / visits if visits else 0)) < 0.1
    # the summed series over the range adds up to the totals' visits and page views
    totals = _overview(srv, srv.admin_token)["totals"]
    assert sum(p["pageviews"] for p in body["points"]) == totals["pageviews"]


def test_series_of_nobodys_projects_is_zero_filled(srv: Server, world: dict[str, Any]) -> None:
    r = _get(
        srv, "/overview/timeseries", world["people"]["outsider"].token, **{"from": FROM, "to": TO}
    )
    assert r.status_code == 200, r.text
    assert r.json()["projects"] == []
    assert [p["visits"] for p in r.json()["points"]] == [0, 0, 0]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/overview", {}, "from"),
        ("/overview", {"from": "2026-13-01"}, "from"),
        ("/overview", {"from": FROM, "to": "2020-01-01"}, "to"),
        ("/overview", {"from": "1990-01-01", "to": "1990-01-02"}, "from"),  # no previous period
        ("/overview", {"from": FROM, "sort": "revenue"}, "sort"),
        ("/overview", {"from": FROM, "sort": "--visitors"}, "sort"),
        ("/overview", {"from": FROM, "tz": "UTC"}, "tz"),
        ("/overview", {"from": FROM, "filter": "page:is:/"}, "filter"),
        ("/overview/timeseries", {"from": FROM, "interval": "minute"}, "interval"),
        (
            "/overview/timeseries",
            {"from": "2000-01-01", "to": "2099-01-01", "interval": "hour"},
            "interval",
        ),
        ("/overview/timeseries", {"to": TO}, "from"),
    ],
)
def test_bad_parameters_are_400s_naming_them(
    srv: Server, world: dict[str, Any], path: str, params: dict[str, str], field: str
) -> None:
    is_error(_get(srv, path, srv.admin_token, **params), 400, field)


def test_answers_fit_the_openapi_document(srv: Server, world: dict[str, Any]) -> None:
    check = _checker(httpx.get(srv.url + "/openapi.json").json())
    token = world["people"]["viewer"].token
    check("/overview", "get", _get(srv, "/overview", token, **{"from": FROM, "to": TO}))
    check("/overview", "get", _get(srv, "/overview", token, sort="x", **{"from": FROM}))
    series = _get(srv, "/overview/timeseries", token, **{"from": FROM, "to": TO})
    check("/overview/timeseries", "get", series)
    assert series.status_code == 200


def test_slots_are_given_back(srv: Server, world: dict[str, Any]) -> None:
    """Each project's read holds a slot of the scheduler until it is done: none is left."""
    before = srv.health()["reads"]
    _overview(srv, srv.admin_token)
    after = srv.health()["reads"]
    assert after["running"] == 0 and after["refusedTotal"] == before["refusedTotal"]
