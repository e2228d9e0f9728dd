"""Email reports and traffic alerts end to end: real events (POST /analytics with past ``ts``),
the real server's scheduler, mail read back from a real SMTP server (aiosmtpd)."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from svc.mail.report import change, shown
from tests.mail_server import MailServer
from tests.support import Server, is_error

TZ = "America/New_York"
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12{}.0 Safari"


def ev(visitor: int, at: datetime, path: str = "/", **extra: Any) -> dict[str, Any]:
    return {
        "event": extra.pop("name", "page_view"),
        "url": f"https://acme.test{path}",
        "ts": int(at.timestamp() * 1000),
        "ip": f"10.1.{visitor // 250}.{visitor % 250 + 1}",
        "userAgent": UA.format(visitor % 10),
        **extra,
    }


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_daily_report_equals_the_api_and_unsubscribes(svc: Server, mail_server: MailServer) -> None:
    p = svc.create_project("rep-" + uuid.uuid4().hex[:6], timezone=TZ, domains=["acme.test"])
    secret = p["keys"]["secret"]
    today = datetime.now(ZoneInfo(TZ)).date()
    yesterday, before = today - timedelta(days=1), today - timedelta(days=2)

    def local(day: Any, hour: int, minute: int = 0) -> datetime:
        return datetime(day.year, day.month, day.day, hour, minute, tzinfo=ZoneInfo(TZ))

    events = [
        ev(1, local(yesterday, 9), referrer="https://www.google.com/"),
        ev(1, local(yesterday, 9, 4), path="/pricing"),
        ev(2, local(yesterday, 11), path="/pricing", referrer="https://news.ycombinator.com/"),
        ev(2, local(yesterday, 11, 2), name="signup"),
        ev(3, local(yesterday, 15), path="/blog"),
        ev(4, local(yesterday, 23, 30)),
        ev(5, local(before, 10)),
        ev(6, local(before, 12), path="/blog"),
        ev(7, local(today - timedelta(days=3), 12)),  # outside both periods
    ]
    r = svc.send(secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    svc.wait_loaded()

    to = f"boss-{p['id'][-6:]}@example.com"
    url = f"{svc.url}/projects/{p['id']}/subscriptions"
    r = httpx.post(url, json={"email": to.upper(), "kind": "daily"}, headers=auth(secret))
    assert r.status_code == 201, r.text
    assert r.json()["email"] == to and "token" not in r.json()
    assert (
        httpx.post(url, json={"email": to, "kind": "daily"}, headers=auth(secret)).status_code
        == 200
    )
    is_error(
        httpx.post(url, json={"email": "x", "kind": "daily"}, headers=auth(secret)), 400, "email"
    )
    is_error(
        httpx.post(url, json={"email": to, "kind": "hourly"}, headers=auth(secret)), 400, "kind"
    )
    is_error(
        httpx.post(url, json={"email": to, "kind": "daily"}, headers=auth(p["keys"]["public"])), 403
    )

    (msg,) = mail_server.wait_for(1, match=lambda m: m["To"] == to)
    day = yesterday.isoformat()
    assert msg["Subject"].startswith(f"Daily report for {p['name']}")
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    html = msg.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "Funnels" not in text  # no saved funnels: no empty list of them

    # the same numbers as the API's for that period, with the change against the day before
    r = httpx.get(
        f"{svc.url}/metrics",
        params={"from": day, "to": day, "compare": "previous_period"},
        headers=auth(secret),
    )
    assert r.status_code == 200, r.text
    m = r.json()
    assert (m["visitors"], m["sessions"], m["pageviews"]) == (4, 4, 5)
    for label, key, how in (
        ("Visitors", "visitors", "int"),
        ("Visits", "sessions", "int"),
        ("Page views", "pageviews", "int"),
        ("Bounce rate", "bounceRate", "percent"),
        ("Visit duration", "avgSessionDuration", "seconds"),
    ):
        line = next(line for line in text.splitlines() if line.startswith(label))
        value, delta = shown(m[key], how), change(m[key], m["compare"][key], how)
        assert re.search(rf"{re.escape(value)}\s+{re.escape(delta)}", line), (line, value, delta)
    pages = httpx.get(
        f"{svc.url}/metrics/breakdown",
        params={"from": day, "to": day, "by": "page", "limit": "5"},
        headers=auth(secret),
    ).json()["rows"]
    assert {row["value"] for row in pages} == {"/", "/pricing", "/blog"}
    for row in pages:
        assert f"{row['value']}: {row['visitors']} visitors" in text
    assert "news.ycombinator.com: 1 visitors" in text and "google: 1 visitors" in text
    assert "signup: 1 visitors (25.0%)" in text  # GET /metrics/goals?goal=event:signup
    assert f"from={day}&to={day}" in text and "https://stats.example.org/dashboard?" in text

    # HTML with the chart as an inline image
    assert 'src="cid:chart@svc"' in html and "/pricing" in html
    (png,) = [part for part in msg.walk() if part.get_content_type() == "image/png"]
    assert png["Content-ID"] == "<chart@svc>"
    assert png.get_content().startswith(b"\x89PNG\r\n\x1a\n")

    # unsubscribe without signing in: GET shows a page and changes nothing, POST unsubscribes
    link = re.search(r"Unsubscribe: (\S+)", text)
    assert link and link.group(1).startswith("https://stats.example.org/unsubscribe/")
    assert msg["List-Unsubscribe"].strip() == f"<{link.group(1)}>"  # RFC 8058 one-click
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    path = link.group(1).removeprefix("https://stats.example.org")
    page = httpx.get(svc.url + path)
    assert page.status_code == 200 and "<form" in page.text and to in page.text
    assert (
        httpx.get(svc.url + path, headers={"Accept": "application/json"}).json()["subscription"][
            "email"
        ]
        == to
    )
    one_click = httpx.post(svc.url + path, data={"List-Unsubscribe": "One-Click"})
    assert one_click.status_code == 200 and "no longer get" in one_click.text
    listed = httpx.get(url, headers=auth(secret)).json()
    assert listed["subscriptions"] == [] and listed["mailEnabled"] is True
    is_error(httpx.post(svc.url + path, headers={"Accept": "application/json"}), 404)
    assert httpx.get(svc.url + path).status_code == 404  # single use

    # subscribing again (a new token) does not mail the same period twice (the dedupe key)
    r = httpx.post(url, json={"email": to, "kind": "daily"}, headers=auth(secret))
    assert r.status_code == 201
    state = httpx.get(f"{svc.url}/internal/mail", headers=svc.admin()).json()
    assert state["enabled"] is True and state["outbox"]["failed"] == 0
    assert len(mail_server.to(to)) == 1


def test_a_report_lists_the_saved_goals_and_funnels(svc: Server, mail_server: MailServer) -> None:
    """With saved goals, a report's goals are theirs, by name, with the figures of GET
    /metrics/goals without `goal` (the saved goals) for the period; with saved funnels, each
    funnel's visitors per step and conversion as GET /metrics/funnel?funnel=<id> gives them."""
    p = svc.create_project("rep-goals-" + uuid.uuid4().hex[:6], timezone=TZ)
    secret = p["keys"]["secret"]
    yesterday = datetime.now(ZoneInfo(TZ)).date() - timedelta(days=1)
    at = datetime(yesterday.year, yesterday.month, yesterday.day, 10, tzinfo=ZoneInfo(TZ))
    events = [
        ev(1, at), ev(1, at + timedelta(minutes=1), path="/pricing"),
        ev(1, at + timedelta(minutes=2), name="signup", properties={"plan": "pro"}),
        ev(2, at), ev(2, at + timedelta(minutes=1), name="signup", properties={"plan": "free"}),
        ev(3, at, path="/blog/a"), ev(4, at), ev(5, at, name="newsletter"),
    ]  # fmt: skip
    r = svc.send(secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    svc.wait_loaded()
    goals = [
        {"name": "Pricing page", "kind": "page", "page": "/pricing"},
        {"name": "Signups", "kind": "event", "event": "signup"},
        {"name": "Pro signups", "kind": "event", "event": "signup",
         "property": {"key": "plan", "value": "pro"}},
        {"name": "Blog", "kind": "page", "page": "/blog/*"},
    ]  # fmt: skip
    for goal in goals:
        r = httpx.post(f"{svc.url}/projects/{p['id']}/goals", json=goal, headers=auth(secret))
        assert r.status_code == 201, r.text

    funnels = [
        {"name": "Buy", "steps": ["page:/", "page:/pricing", "event:signup"]},
        {"name": "Blog", "steps": ["page:/blog/*", "event:signup"], "window": 86400},
    ]
    made = []
    for funnel in funnels:
        r = httpx.post(f"{svc.url}/projects/{p['id']}/funnels", json=funnel, headers=auth(secret))
        assert r.status_code == 201, r.text
        made.append(r.json()["id"])

    to = f"goals-{p['id'][-6:]}@example.com"
    r = httpx.post(
        f"{svc.url}/projects/{p['id']}/subscriptions",
        json={"email": to, "kind": "daily"},
        headers=auth(secret),
    )
    assert r.status_code == 201, r.text
    (msg,) = mail_server.wait_for(1, match=lambda m: m["To"] == to)
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    html = msg.get_body(("html",)).get_content()  # type: ignore[union-attr]

    day = yesterday.isoformat()
    r = httpx.get(f"{svc.url}/metrics/goals", params={"from": day, "to": day}, headers=auth(secret))
    assert r.status_code == 200, r.text
    api = r.json()["goals"]
    assert [g["visitors"] for g in api] == [1, 2, 1, 1]
    listed = text.split("\nGoals\n", 1)[1].split("\n\n", 1)[0].splitlines()
    # most converting first; ties in the order they were saved
    want = sorted(api, key=lambda g: -g["visitors"])
    assert listed == [
        f"  {g['name']}: {g['visitors']} visitors ({g['conversionRate']})" for g in want
    ]
    assert listed[0] == "  Signups: 2 visitors (40.0%)"
    assert "newsletter" not in text.split("\nGoals\n", 1)[1]  # the saved goals, not the top events
    assert "Pro signups: 1 visitors (20.0%)" in html

    # the saved funnels, in the order saved: each step's visitors, the last step's conversion
    answers = []
    for funnel_id in made:
        r = httpx.get(
            f"{svc.url}/metrics/funnel",
            params={"from": day, "to": day, "funnel": funnel_id},
            headers=auth(secret),
        )
        assert r.status_code == 200, r.text
        answers.append(r.json())
    assert [s["visitors"] for s in answers[0]["steps"]] == [3, 1, 1]
    listed = text.split("\nFunnels\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed == [
        f"  {a['funnel']['name']}: "
        + " → ".join(str(s["visitors"]) for s in a["steps"])
        + f" visitors ({a['steps'][-1]['conversionRate']})"
        for a in answers
    ]
    assert listed[0] == "  Buy: 3 → 1 → 1 visitors (33.3%)"
    assert "Buy: 3 → 1 → 1 visitors (33.3%)" in html


def test_alert_fires_on_a_spike_and_names_its_source(svc: Server, mail_server: MailServer) -> None:
    p = svc.create_project("alert-" + uuid.uuid4().hex[:6], domains=["acme.test"])
    secret = p["keys"]["secret"]
    r = httpx.patch(
        f"{svc.url}/projects/{p['id']}",
        json={"options": {"alerts": {"baselineDays": 3, "spikeFactor": 3}}},
        headers=auth(secret),
    )
    assert r.status_code == 200, r.text
    bad = httpx.patch(
        f"{svc.url}/projects/{p['id']}",
        json={"options": {"alerts": {"spikeFactor": "high"}}},
        headers=auth(secret),
    )
    is_error(bad, 400, "options.alerts.spikeFactor")
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    events = []
    for k in (1, 2, 3):  # the usual: 2 visitors from Google in that hour of the days before
        for v in (1, 2):
            events.append(ev(100 * k + v, hour - timedelta(days=k) + timedelta(minutes=10 + v)))
    for v in range(2):  # the hour itself: the usual two, and 20 from Hacker News on /launch
        events.append(ev(900 + v, hour + timedelta(minutes=5), referrer="https://www.google.com/"))
    for v in range(20):
        events.append(
            ev(
                1000 + v,
                hour + timedelta(minutes=20, seconds=v),
                path="/launch",
                referrer="https://news.ycombinator.com/item?id=1",
            )
        )
    r = svc.send(secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    svc.wait_loaded()

    to = f"oncall-{p['id'][-6:]}@example.com"
    url = f"{svc.url}/projects/{p['id']}/subscriptions"
    assert (
        httpx.post(url, json={"email": to, "kind": "alerts"}, headers=auth(secret)).status_code
        == 201
    )
    (msg,) = mail_server.wait_for(1, match=lambda m: m["To"] == to)
    assert msg["Subject"].startswith(f"Traffic spike on {p['name']}: 22 visitors")
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    sources = text.split("\nSources\n")[1].split("\n\n")[0].splitlines()
    assert sources[0].strip().startswith("news.ycombinator.com: 20 vs 0.0 (+20.0)"), text
    pages = text.split("\nPages\n")[1].split("\n\n")[0].splitlines()
    assert pages[0].strip().startswith("/launch: 20"), text
    assert "against 2.0 on average in the same hour of the 3 days before" in text
    assert msg.get_body(("html",)) is not None

    # at most one alert an hour per project: a subscriber added now gets none for this hour
    late = f"late-{p['id'][-6:]}@example.com"
    r = httpx.post(url, json={"email": late, "kind": "alerts"}, headers=auth(secret))
    assert r.status_code == 201
    time.sleep(1.5)  # the scheduler ran at once (the subscription woke it), and mailed no one
    assert mail_server.to(late) == [] and len(mail_server.to(to)) == 1


def test_alert_fires_on_a_drop_in_local_hours_and_names_what_fell(
    svc: Server, mail_server: MailServer
) -> None:
    p = svc.create_project("drop-" + uuid.uuid4().hex[:6], timezone=TZ, domains=["acme.test"])
    secret = p["keys"]["secret"]
    r = httpx.patch(
        f"{svc.url}/projects/{p['id']}",
        json={"options": {"alerts": {"baselineDays": 3}}},
        headers=auth(secret),
    )
    assert r.status_code == 200, r.text
    zone = ZoneInfo(TZ)
    local = datetime.now(zone).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    events = []
    for k in (1, 2, 3):  # the usual, the same local hour of the days before: 12 visitors
        day = (local - timedelta(days=k)).date()
        start = datetime(day.year, day.month, day.day, local.hour, tzinfo=zone)
        for v in range(10):
            at = start + timedelta(minutes=10, seconds=v)
            events.append(ev(100 * k + v, at, path="/docs", referrer="https://www.google.com/"))
        events += [ev(100 * k + 50 + v, start + timedelta(minutes=30)) for v in range(2)]
    # the hour itself: only the two direct visitors; Google and /docs fell away
    events += [ev(900 + v, local + timedelta(minutes=15)) for v in range(2)]
    r = svc.send(secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    svc.wait_loaded()

    to = f"drop-{p['id'][-6:]}@example.com"
    url = f"{svc.url}/projects/{p['id']}/subscriptions"
    assert (
        httpx.post(url, json={"email": to, "kind": "alerts"}, headers=auth(secret)).status_code
        == 201
    )
    (msg,) = mail_server.wait_for(1, match=lambda m: m["To"] == to)
    end = local + timedelta(hours=1)
    when = f"{local:%Y-%m-%d %H:%M}–{end:%H:%M} {local:%Z}"  # in the project's zone
    assert msg["Subject"] == f"Traffic drop on {p['name']}: 2 visitors {when} (0.2× usual)"
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "against 12.0 on average in the same hour of the 3 days before" in text
    assert "at most 0.3× that" in text
    sources = text.split("\nSources\n")[1].split("\n\n")[0].splitlines()
    assert sources[0].strip() == "google: 0 vs 10.0 (-10.0)", text
    pages = text.split("\nPages\n")[1].split("\n\n")[0].splitlines()
    assert pages[0].strip() == "/docs: 0 vs 10.0 (-10.0)", text
    assert f"from={local.date().isoformat()}" in text


def test_members_choose_their_own_subscriptions(svc: Server, mail_server: MailServer) -> None:
    from tests.accounts.conftest import call, invite_and_accept, new_team

    team_id, owner = new_team(svc, "mail-team", mail=mail_server)
    r = call(svc, "POST", "/projects", owner.token, json={"name": "team-" + uuid.uuid4().hex[:6]})
    assert r.status_code == 201, r.text
    url = f"/projects/{r.json()['id']}/subscriptions"
    viewer = invite_and_accept(svc, owner.token, team_id, "viewer", mail=mail_server)
    boss = call(svc, "POST", url, owner.token, json={"email": "boss@acme.test", "kind": "weekly"})
    assert boss.status_code == 201, boss.text

    # a viewer subscribes and removes its own address, and sees only its own
    mine = call(svc, "POST", url, viewer.token, json={"email": viewer.email, "kind": "monthly"})
    assert mine.status_code == 201, mine.text
    other = call(svc, "POST", url, viewer.token, json={"email": "x@acme.test", "kind": "weekly"})
    is_error(other, 403)
    seen = call(svc, "GET", url, viewer.token).json()["subscriptions"]
    assert [s["email"] for s in seen] == [viewer.email]
    assert len(call(svc, "GET", url, owner.token).json()["subscriptions"]) == 2
    is_error(call(svc, "DELETE", f"{url}/{boss.json()['id']}", viewer.token), 403)
    assert call(svc, "DELETE", f"{url}/{mine.json()['id']}", viewer.token).status_code == 200
