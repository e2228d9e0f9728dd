"""Saved goals and funnels give one set of numbers wherever they are used (issue 41): for one
day, the goals panel and the funnel view in real headless Chromium, the daily email report read
back from a real SMTP server (aiosmtpd) and GET /metrics/goals and GET /metrics/funnel?funnel=
all say the same visitors, completions and conversion rates. One svc with mail on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.dashboard.test_dashboard_accounts import axe_serious, new_page
from tests.dashboard.test_dashboard_browser import eventually, sign_in
from tests.dashboard.test_dashboard_saved import goal_rows, shown_goals
from tests.mail_server import MailServer, mail_server
from tests.support import Server

__all__ = ["mail_server"]

pytestmark = pytest.mark.browser

TZ = "America/New_York"
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12{}.0 Safari"


@pytest.fixture(scope="module")
def mailing(tmp_path_factory: pytest.TempPathFactory, mail_server: MailServer) -> Iterator[Server]:
    server = mail_server.svc(tmp_path_factory.mktemp("dash-saved-mail") / "data")
    yield server
    server.stop()


def ev(visitor: int, at: datetime, path: str = "/", **extra: Any) -> dict[str, Any]:
    return {
        "event": extra.pop("name", "page_view"),
        "url": f"https://acme.test{path}",
        "ts": int(at.timestamp() * 1000),
        "ip": f"10.4.0.{visitor}",
        "userAgent": UA.format(visitor),
        **extra,
    }


def api(server: Server, key: str, path: str, **params: Any) -> dict[str, Any]:
    r = httpx.get(
        server.url + path, params=params, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def listed(text: str, title: str) -> list[str]:
    """The lines of a list of the report's plain text, without their indent."""
    return [line.strip() for line in text.split(f"\n{title}\n", 1)[1].split("\n\n")[0].split("\n")]


def test_goals_panel_email_report_and_api_agree(
    chromium: Any, mailing: Server, mail_server: MailServer
) -> None:
    p = mailing.create_project("saved-mail-" + uuid.uuid4().hex[:6], timezone=TZ)
    key = p["keys"]["secret"]
    day = datetime.now(ZoneInfo(TZ)).date() - timedelta(days=1)
    at = datetime(day.year, day.month, day.day, 10, tzinfo=ZoneInfo(TZ))
    minute = timedelta(minutes=1)
    events = [
        ev(1, at), ev(1, at + minute, "/pricing"),
        ev(1, at + 2 * minute, name="signup", properties={"plan": "pro"}),
        ev(2, at), ev(2, at + minute, "/pricing"),
        ev(2, at + 2 * minute, name="signup", properties={"plan": "free"}),
        ev(2, at + 3 * minute, name="signup", properties={"plan": "free"}),
        ev(3, at), ev(3, at + minute, "/pricing"),
        ev(4, at), ev(4, at + minute, name="signup", properties={"plan": "pro"}),
        ev(5, at, "/blog"), ev(6, at), ev(7, at, "/pricing"),
    ]  # fmt: skip
    r = mailing.send(key, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    mailing.wait_loaded()
    auth = {"Authorization": f"Bearer {key}"}
    for goal in (
        {"name": "Signups", "kind": "event", "event": "signup"},
        {"name": "Pro signups", "kind": "event", "event": "signup",
         "property": {"key": "plan", "value": "pro"}},
        {"name": "Pricing", "kind": "page", "page": "/pricing"},
    ):  # fmt: skip
        r = httpx.post(f"{mailing.url}/projects/{p['id']}/goals", json=goal, headers=auth)
        assert r.status_code == 201, r.text
    r = httpx.post(
        f"{mailing.url}/projects/{p['id']}/funnels",
        json={"name": "Buy", "steps": ["page:/", "page:/pricing", "event:signup"]},
        headers=auth,
    )
    assert r.status_code == 201, r.text
    funnel_id = r.json()["id"]

    # the API, for the day
    d = day.isoformat()
    goals = api(mailing, key, "/metrics/goals", **{"from": d, "to": d})
    assert [(g["name"], g["visitors"], g["events"]) for g in goals["goals"]] == [
        ("Signups", 3, 4),
        ("Pro signups", 2, 2),
        ("Pricing", 4, 4),
    ]
    funnel = api(mailing, key, "/metrics/funnel", **{"from": d, "to": d, "funnel": funnel_id})
    assert [s["visitors"] for s in funnel["steps"]] == [5, 3, 2]

    # the daily report of that day
    to = f"team-{p['id'][-6:]}@example.com"
    r = httpx.post(
        f"{mailing.url}/projects/{p['id']}/subscriptions",
        json={"email": to, "kind": "daily"},
        headers=auth,
    )
    assert r.status_code == 201, r.text
    (msg,) = mail_server.wait_for(1, timeout=60, match=lambda m: m["To"] == to)
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert d in text
    by_visitors = sorted(goals["goals"], key=lambda g: -g["visitors"])
    assert listed(text, "Goals") == [
        f"{g['name']}: {g['visitors']} visitors ({g['conversionRate']})" for g in by_visitors
    ]
    steps = " → ".join(str(s["visitors"]) for s in funnel["steps"])
    assert listed(text, "Funnels") == [
        f"Buy: {steps} visitors ({funnel['steps'][-1]['conversionRate']})"
    ]

    # the dashboard at that day: the goals panel, and the funnel view on the saved funnel
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    try:
        sign_in(page, mailing.url, key, f"?period=custom&from={d}&to={d}&funnel={funnel_id}")
        eventually(lambda: goal_rows(page), shown_goals(goals))
        view = page.locator("[data-panel=funnel]")
        shown = view.locator(".funnel li")
        eventually(lambda: shown.count(), 3)
        for s, li in zip(funnel["steps"], shown.all(), strict=True):
            assert f"{s['visitors']:,} visitors" in li.inner_text()
            assert s["conversionRate"] in li.inner_text()
        assert axe_serious(page, "[data-panel=goals]") == []
    finally:
        ctx.close()
    assert not errors, errors
