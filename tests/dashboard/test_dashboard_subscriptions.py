"""The dashboard's panel of email reports and alerts, in real headless Chromium against the real
server: it lists what the API holds, subscribes and removes, says when mail is off, passes axe,
and does not show for a read-only share link."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.dashboard.conftest import DESKTOP
from tests.dashboard.test_dashboard_browser import AXE, eventually, sign_in
from tests.support import Server

pytestmark = pytest.mark.browser


def test_subscriptions_panel(chromium: Any, dashboard_url: str, server: Server) -> None:
    p = server.create_project("dash-mail-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    secret = p["keys"]["secret"]
    url = f"{server.url}/projects/{p['id']}/subscriptions"
    auth = {"Authorization": f"Bearer {secret}"}
    r = httpx.post(url, json={"email": "ceo@acme.test", "kind": "monthly"}, headers=auth)
    assert r.status_code == 201, r.text

    ctx = chromium.new_context(viewport=DESKTOP, locale="en-US", bypass_csp=True)
    page = ctx.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, dashboard_url, secret, "?period=7d")
    panel = page.locator("[data-panel=subscriptions]")
    eventually(
        lambda: panel.locator("li").all_inner_texts(), ["ceo@acme.test: Monthly report\nRemove"]
    )
    assert panel.get_by_test_id("mail-off").is_visible()  # this server has no SVC_SMTP_URL

    panel.get_by_label("Email address").fill("ops@acme.test")
    panel.get_by_label("What").select_option("alerts")
    panel.get_by_role("button", name="Subscribe").click()
    eventually(lambda: panel.locator("li").count(), 2)
    listed = httpx.get(url, headers=auth).json()["subscriptions"]
    assert {(s["email"], s["kind"]) for s in listed} == {
        ("ceo@acme.test", "monthly"),
        ("ops@acme.test", "alerts"),
    }

    if AXE.exists():
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(
            """async () => (await axe.run('[data-panel=subscriptions]')).violations.map((v) =>
                [v.id, v.impact, v.nodes.slice(0, 3).map((n) => n.target.join(' '))])"""
        )
        assert [v for v in violations if v[1] in ("serious", "critical")] == []

    panel.get_by_role("button", name="Remove Monthly report for ceo@acme.test").click()
    eventually(
        lambda: panel.locator("li").all_inner_texts(),
        ["ops@acme.test: Alerts (traffic and goals)\nRemove"],
    )
    assert [s["email"] for s in httpx.get(url, headers=auth).json()["subscriptions"]] == [
        "ops@acme.test"
    ]

    # a share link is read-only: no panel
    r = httpx.post(f"{server.url}/projects/{p['id']}/keys", json={"kind": "share"}, headers=auth)
    assert r.status_code == 201, r.text
    page.goto(f"{dashboard_url}/share/{r.json()['key']}")
    page.wait_for_selector("[data-testid=stat-visitors]")
    page.wait_for_timeout(300)
    assert page.locator("[data-panel=subscriptions]").count() == 0
    ctx.close()
    assert not errors, errors
