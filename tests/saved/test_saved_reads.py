"""The saved goals and funnels used by the reads: GET /metrics/goals without ``goal`` gives
the saved goals' figures, equal to GET /metrics/goals with their goal strings (a goal with a
property: its string under the property's filter); GET /metrics/funnel with ``funnel=<id>``
equals the same ``step`` list and window."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import call
from tests.saved.conftest import Team, make_team
from tests.support import Server, is_error

UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12{}.0 Safari"


def ev(visitor: int, at_ms: int, path: str = "/", **extra: Any) -> dict[str, Any]:
    return {
        "event": extra.pop("name", "page_view"),
        "url": f"https://acme.test{path}",
        "ts": at_ms,
        "ip": f"10.2.0.{visitor}",
        "userAgent": UA.format(visitor),
        **extra,
    }


@pytest.fixture(scope="module")
def shop(srv: Server) -> tuple[Team, str]:
    """A project with a few visitors of today (UTC), and that day."""
    t = make_team(srv, "saved-reads")
    now = int(time.time() * 1000) - 120_000
    day = datetime.fromtimestamp(now / 1000, UTC).date().isoformat()
    events = [
        ev(1, now), ev(1, now + 1000, "/pricing"),
        ev(1, now + 2000, name="signup", properties={"plan": "pro"}),
        ev(2, now), ev(2, now + 1000, "/plans"),
        ev(2, now + 2000, name="signup", properties={"plan": "free"}),
        ev(3, now, "/blog/a"), ev(3, now + 1000, "/blog/b"),
        ev(4, now),
        ev(5, now, "/pricing"),
    ]  # fmt: skip
    r = srv.send(t.secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    srv.wait_loaded()
    return t, day


def get(srv: Server, token: str, path: str, **params: Any) -> dict[str, Any]:
    r = httpx.get(srv.url + path, params=params, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_saved_goals_equal_the_goal_strings(srv: Server, shop: tuple[Team, str]) -> None:
    t, day = shop
    editor = t.people["editor"].token
    none = get(srv, t.secret, "/metrics/goals", **{"from": day})
    assert none["goals"] == [] and none["saved"] is True
    assert none["visitors"] == get(srv, t.secret, "/metrics", **{"from": day})["visitors"] == 5
    saved: list[dict[str, Any]] = [
        {"name": "Signups", "kind": "event", "event": "signup"},
        {"name": "Pro signups", "kind": "event", "event": "signup",
         "property": {"key": "plan", "value": "pro"}},
        {"name": "Blog", "kind": "page", "page": "/blog/*"},
        {"name": "Pricing", "kind": "page", "page": "/pricing"},
    ]  # fmt: skip
    ids = []
    for body in saved:
        r = call(srv, "POST", f"/projects/{t.project}/goals", editor, json=body)
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])

    for token in (t.secret, t.share):
        got = get(srv, token, "/metrics/goals", **{"from": day})
        assert [g["id"] for g in got["goals"]] == ids
        assert [g["name"] for g in got["goals"]] == [g["name"] for g in saved]
        strings = ["event:signup", "page:/blog/*", "page:/pricing"]
        asked = get(srv, token, "/metrics/goals", **{"from": day, "goal": strings})
        assert got["visitors"] == asked["visitors"] == 5
        plain = [g for g in got["goals"] if "property" not in g]
        for mine, theirs in zip(plain, asked["goals"], strict=True):
            assert mine["goal"] == theirs["goal"]
            figures = ("visitors", "events", "conversionRate")
            assert {k: mine[k] for k in figures} == {k: theirs[k] for k in figures}
        (pro,) = [g for g in got["goals"] if "property" in g]
        filtered = get(
            srv,
            token,
            "/metrics/goals",
            **{"from": day, "goal": "event:signup", "filter": "prop:plan:is:pro"},
        )
        assert (pro["visitors"], pro["events"]) == (1, 1)
        assert (pro["visitors"], pro["events"]) == (
            filtered["goals"][0]["visitors"],
            filtered["goals"][0]["events"],
        )
        assert pro["conversionRate"] == "20.0%"  # over every visitor in scope
        assert [g["visitors"] for g in got["goals"]] == [2, 1, 1, 2]
    # with filters, as GET /metrics/goals reads its strings under them
    scoped = get(srv, t.secret, "/metrics/goals", **{"from": day, "filter": "page:is:/|/pricing"})
    asked = get(
        srv,
        t.secret,
        "/metrics/goals",
        **{"from": day, "filter": "page:is:/|/pricing", "goal": "page:/pricing"},
    )
    assert scoped["visitors"] == asked["visitors"]
    assert scoped["goals"][3]["visitors"] == asked["goals"][0]["visitors"]
    # a session names the project
    viewer = t.people["viewer"].token
    seen = get(srv, viewer, "/metrics/goals", **{"from": day, "projectId": t.project})
    assert [g["id"] for g in seen["goals"]] == ids


def test_a_saved_funnel_equals_its_steps(srv: Server, shop: tuple[Team, str]) -> None:
    t, day = shop
    steps = ["page:/", "page:/pricing|page:/plans", "event:signup"]
    r = call(
        srv,
        "POST",
        f"/projects/{t.project}/funnels",
        t.secret,
        json={"name": "Buy", "steps": steps, "window": 600},
    )
    assert r.status_code == 201, r.text
    funnel = r.json()["id"]
    for token in (t.secret, t.share):
        saved = get(srv, token, "/metrics/funnel", **{"from": day, "funnel": funnel})
        asked = get(srv, token, "/metrics/funnel", **{"from": day, "step": steps, "window": 600})
        assert saved.pop("funnel") == {"id": funnel, "name": "Buy"}
        assert saved == asked
        assert [s["visitors"] for s in saved["steps"]] == [3, 2, 2]
    other = get(srv, t.secret, "/metrics/funnel", **{"from": day, "funnel": funnel, "window": 1})
    assert other["windowSeconds"] == 1
    assert other["steps"][2]["visitors"] < 2
    headers = {"Authorization": f"Bearer {t.secret}"}
    r = httpx.get(
        srv.url + "/metrics/funnel",
        headers=headers,
        params={"from": day, "funnel": funnel, "step": steps},
    )
    is_error(r, 400, "funnel")
    r = httpx.get(
        srv.url + "/metrics/funnel", headers=headers, params={"from": day, "funnel": "funnel_nope"}
    )
    is_error(r, 404, "funnel")
    b = make_team(srv, "saved-reads-b")  # another project's funnel is none of this one's
    r = httpx.get(
        srv.url + "/metrics/funnel",
        params={"from": day, "funnel": funnel},
        headers={"Authorization": f"Bearer {b.secret}"},
    )
    is_error(r, 404, "funnel")
