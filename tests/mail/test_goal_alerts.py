"""Goal alerts end to end: each saved goal watched hour by hour with the visitors' rule, real
events in past hours (POST /analytics with past ``ts``), the real server's scheduler, mail read
back from a real SMTP server (aiosmtpd)."""

from __future__ import annotations

import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from sqlalchemy import insert, inspect, text

from svc.mail import goal_alerts
from svc.meta import tables
from svc.meta.store import MetaStore
from tests.mail.test_outbox import meta_of
from tests.mail.test_reports_alerts import TZ, auth, ev
from tests.mail_server import MailServer
from tests.support import Server


def _project(svc: Server, prefix: str, goals: list[dict[str, Any]]) -> dict[str, Any]:
    """A project in :data:`TZ` comparing with 3 days, with ``goals`` saved."""
    p = svc.create_project(prefix + uuid.uuid4().hex[:6], timezone=TZ, domains=["acme.test"])
    secret = p["keys"]["secret"]
    r = httpx.patch(
        f"{svc.url}/projects/{p['id']}",
        json={"options": {"alerts": {"baselineDays": 3}}},
        headers=auth(secret),
    )
    assert r.status_code == 200, r.text
    for goal in goals:
        r = httpx.post(f"{svc.url}/projects/{p['id']}/goals", json=goal, headers=auth(secret))
        assert r.status_code == 201, r.text
    return p


def _last_hour() -> tuple[datetime, list[datetime]]:
    """The last complete local hour of :data:`TZ`, and the same hour of the 3 days before."""
    zone = ZoneInfo(TZ)
    local = datetime.now(zone).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    before = []
    for k in (1, 2, 3):
        day = (local - timedelta(days=k)).date()
        before.append(datetime(day.year, day.month, day.day, local.hour, tzinfo=zone))
    return local, before


def _send_and_subscribe(svc: Server, p: dict[str, Any], events: list[dict[str, Any]]) -> str:
    secret = p["keys"]["secret"]
    r = svc.send(secret, events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    svc.wait_loaded()
    to = f"goals-{p['id'][-6:]}@example.com"
    r = httpx.post(
        f"{svc.url}/projects/{p['id']}/subscriptions",
        json={"email": to, "kind": "alerts"},
        headers=auth(secret),
    )
    assert r.status_code == 201, r.text
    return to


def test_a_goal_that_drops_or_spikes_gets_one_mail_a_steady_one_none(
    svc: Server, mail_server: MailServer
) -> None:
    p = _project(
        svc,
        "goal-alert-",
        [
            {"name": "Signups", "kind": "event", "event": "signup"},
            {"name": "Pricing", "kind": "page", "page": "/pricing"},
            {
                "name": "Pro trials",
                "kind": "event",
                "event": "trial",
                "property": {"key": "plan", "value": "pro"},
            },
            {"name": "Blog", "kind": "page", "page": "/blog/*"},
        ],
    )
    local, before = _last_hour()
    events = []
    for k, start in enumerate(before, 1):  # the usual: 12 signups, 12 on /pricing, 1 pro trial
        at = start + timedelta(minutes=10)
        events += [ev(1000 * k + v, at, name="signup") for v in range(12)]
        events += [ev(1000 * k + 100 + v, at, path="/pricing") for v in range(12)]
        events += [ev(1000 * k + 200, at, name="trial", properties={"plan": "pro"})]
        events += [ev(1000 * k + 300 + v, at, path=f"/blog/{v}") for v in range(11)]
    at = local + timedelta(minutes=15)  # the hour: no signup, 15 pro trials, the rest steady
    events += [ev(100 + v, at, path="/pricing") for v in range(12)]
    events += [ev(200 + v, at, name="trial", properties={"plan": "pro"}) for v in range(15)]
    events += [ev(300 + v, at, name="trial", properties={"plan": "free"}) for v in range(5)]
    events += [ev(400 + v, at, path=f"/blog/{v % 3}") for v in range(11)]
    to = _send_and_subscribe(svc, p, events)

    mails = mail_server.wait_for(2, match=lambda m: m["To"] == to)
    end = local + timedelta(hours=1)
    hours = f"{local:%H:%M}–{end:%H:%M} {local:%Z}"
    subjects = sorted(m["Subject"] for m in mails)
    assert subjects == [
        f"Pro trials spiked: 15 in {hours}, usually 1 ({p['name']})",
        f"Signups dropped: 0 in {hours}, usually 12 ({p['name']})",
    ], subjects  # no traffic alert (43 visitors against 36), none for the steady goals
    drop = next(m for m in mails if m["Subject"].startswith("Signups"))
    text = drop.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "0 visitors converted on the goal Signups (event:signup)" in text
    assert "against 12.0 on average in the same hour of the 3 days before" in text
    assert "at most 0.3× that, with a usual of at least 10." in text
    assert drop["List-Unsubscribe"] and drop.get_body(("html",)) is not None

    # the counts in the mails are GET /metrics/goals' over the hour (its day has no other)
    day = local.date().isoformat()
    r = httpx.get(
        f"{svc.url}/metrics/goals",
        params={"from": day, "to": day},
        headers=auth(p["keys"]["secret"]),
    )
    assert r.status_code == 200, r.text
    api = {g["name"]: g["visitors"] for g in r.json()["goals"]}
    assert api == {"Signups": 0, "Pricing": 12, "Pro trials": 15, "Blog": 11}
    for m in mails:
        found = re.match(r"(.+) (?:spiked|dropped): (\d+) in ", m["Subject"])
        assert found and api[found.group(1)] == int(found.group(2)), m["Subject"]

    # checking the same hour again sends nothing more: a subscriber added now (which wakes the
    # scheduler) gets none, and the hour's goals are claimed for every node
    late = f"late-{p['id'][-6:]}@example.com"
    r = httpx.post(
        f"{svc.url}/projects/{p['id']}/subscriptions",
        json={"email": late, "kind": "alerts"},
        headers=auth(p["keys"]["secret"]),
    )
    assert r.status_code == 201, r.text
    time.sleep(1.5)
    assert mail_server.to(late) == [] and len(mail_server.to(to)) == 2
    meta = meta_of(svc)
    hour_ms = int(local.astimezone(UTC).timestamp() * 1000)
    assert goal_alerts.claim_hour(meta, p["id"], hour_ms) is False
    assert goal_alerts.claim_hour(meta, p["id"], hour_ms - 3600_000) is False
    assert goal_alerts.claim_hour(meta, p["id"], hour_ms + 3600_000) is True  # the next hour
    assert goal_alerts.claim_hour(meta, p["id"], hour_ms + 3600_000) is False  # once


def test_a_traffic_alert_lists_the_goals_that_moved(svc: Server, mail_server: MailServer) -> None:
    p = _project(
        svc,
        "goal-causes-",
        [
            {"name": "Signups", "kind": "event", "event": "signup"},
            {"name": "Launch page", "kind": "page", "page": "/launch"},
        ],
    )
    local, before = _last_hour()
    events = []
    for k, start in enumerate(before, 1):  # the usual: 2 visitors, one signs up
        events += [ev(100 * k + v, start + timedelta(minutes=10)) for v in range(2)]
        events.append(ev(100 * k, start + timedelta(minutes=11), name="signup"))
    at = local + timedelta(minutes=20)  # the hour: the usual and 20 more on /launch
    events += [ev(900 + v, at) for v in range(2)]
    events.append(ev(900, at + timedelta(minutes=1), name="signup"))
    events += [ev(1000 + v, at, path="/launch") for v in range(20)]
    to = _send_and_subscribe(svc, p, events)

    mails = mail_server.wait_for(2, match=lambda m: m["To"] == to)
    traffic = next(m for m in mails if m["Subject"].startswith("Traffic spike"))
    assert any(m["Subject"].startswith("Launch page spiked: 20 in ") for m in mails)
    text = traffic.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    listed = text.split("\nGoals (conversions: this hour vs usual)\n")[1].split("\n\n")[0]
    assert listed.splitlines() == [
        "  Launch page: 20 vs 0.0 (+20.0)",
        "  Signups: 1 vs 1.0 (+0.0)",
    ], text
    html = traffic.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert "Launch page: 20 vs 0.0 (+20.0)" in html


def test_the_goals_of_an_hour_are_claimed_once_by_two_nodes_and_migration_64(
    tmp_path: Path,
) -> None:
    """A store made before migration 64 gets the column; two processes on one store claiming
    the same hour at once: one gets it."""
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    first = MetaStore(url)
    first.migrate()
    with first.engine.begin() as conn:  # as the store was at 63
        conn.execute(text("ALTER TABLE mail_alert_state DROP COLUMN goals_checked_hour"))
        conn.execute(text("DELETE FROM schema_migrations WHERE version = 64"))
    assert first.migrate() == [64]
    columns = {c["name"] for c in inspect(first.engine).get_columns("mail_alert_state")}
    assert "goals_checked_hour" in columns
    project, _ = first.create_project("claims")
    with first.engine.begin() as conn:  # the visitors' claim made the row
        conn.execute(insert(tables.mail_alert_state).values(project_id=project.id, checked_hour=0))
    second = MetaStore(url)
    hour_ms = 1_800_000_000 // 3600 * 3600 * 1000
    for hour in (hour_ms, hour_ms + 3600_000):
        with ThreadPoolExecutor(4) as pool:
            stores = [first, second, first, second]
            taken = list(pool.map(goal_alerts.claim_hour, stores, [project.id] * 4, [hour] * 4))
        assert sorted(taken) == [False, False, False, True], taken
    assert goal_alerts.claim_hour(second, project.id, hour_ms) is False  # an earlier hour
    first.close()
    second.close()
