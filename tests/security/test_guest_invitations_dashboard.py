"""Security issue 38, item 11, in the dashboard: the team dialog lists a project's pending
guest invitations, each with a "Withdraw" button that asks first. All of it from the
keyboard, in real headless Chromium against the real server: Enter asks (the confirming
button takes the focus), Escape keeps the invitation (and the dialog open, the focus back on
the button), Enter twice withdraws it, and the link then answers 404."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.dashboard.conftest import chromium, dashboard_url  # noqa: F401 (fixtures)
from tests.dashboard.test_dashboard_accounts import STATS, axe_serious, focused, new_page
from tests.dashboard.test_dashboard_browser import eventually
from tests.support import Server

pytestmark = pytest.mark.browser


def test_withdraw_a_guest_invitation_from_the_keyboard(
    chromium: Any,  # noqa: F811
    dashboard_url: str,  # noqa: F811
    server: Server,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    email, password = f"owner-{suffix}@acme.test", "correct horse battery"
    r = httpx.post(
        server.url + "/accounts",
        json={"email": email, "password": password, "teamName": f"Guests {suffix}"},
        headers=server.admin(),
    )
    assert r.status_code == 201, r.text
    r = httpx.post(server.url + "/auth/signin", json={"email": email, "password": password})
    auth = {"Authorization": f"Bearer {r.json()['token']}"}
    r = httpx.post(server.url + "/projects", json={"name": f"guests-{suffix}"}, headers=auth)
    assert r.status_code == 201, r.text
    guests = f"{server.url}/projects/{r.json()['id']}/guests"
    guest = f"guest-{suffix}@acme.test"
    r = httpx.post(guests, json={"email": guest}, headers=auth)
    assert r.status_code == 201, r.text
    link_token = r.json()["link"].split("#invite=", 1)[1]
    preview = f"{server.url}/invitations/{link_token}"
    assert httpx.get(preview).status_code == 200

    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector(STATS)
    page.get_by_role("button", name="Team").click()
    team = page.get_by_test_id("team-dialog")
    pending = team.get_by_label("Pending guest invitations")
    eventually(lambda: pending.locator("li").count(), 1)
    assert guest in pending.inner_text()

    name = f"Withdraw the guest invitation of {guest}"
    withdraw = team.get_by_role("button", name=name)
    withdraw.focus()
    page.keyboard.press("Enter")  # asks first
    question = team.get_by_role("group", name=f"Withdraw the invitation of {guest}?", exact=False)
    question.wait_for()
    eventually(lambda: focused(page), "Withdraw invitation")
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")  # keeps it: the question goes, the dialog stays
    eventually(lambda: question.count(), 0)
    assert team.is_visible()
    eventually(lambda: focused(page), name)
    assert httpx.get(preview).status_code == 200

    page.keyboard.press("Enter")
    eventually(lambda: focused(page), "Withdraw invitation")
    page.keyboard.press("Enter")  # withdraws
    eventually(lambda: pending.count(), 0)
    status = team.get_by_test_id("team-status").inner_text()
    assert f"The invitation of {guest} is withdrawn" in status
    assert httpx.get(preview).status_code == 404
    accepted = httpx.post(preview + "/accept", json={"password": "another long secret"})
    assert accepted.status_code == 404
    assert httpx.get(guests, headers=auth).json()["invitations"] == []
    assert axe_serious(page, "dialog") == []
    ctx.close()
    assert not errors, errors
