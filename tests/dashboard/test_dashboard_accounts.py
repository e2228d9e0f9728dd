"""The dashboard's account screens, in real headless Chromium against the real server (mail off):
an owner signs in with a password, turns on two-factor, signs out and back in with a code,
cannot leave as the last owner (the API's 409 message is shown), invites a colleague (the link
to pass on) and withdraws another invitation (the button asks first, from the keyboard too;
the link then answers 404), and the colleague signs up through the link and sees the project
as a viewer, without the actions a viewer may not take. Every screen passes axe (no serious
or critical violation)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import Authenticator
from tests.dashboard.conftest import DESKTOP, PHONE
from tests.dashboard.test_dashboard_browser import AXE, eventually
from tests.support import Server

pytestmark = pytest.mark.browser

STORE_KEY = "svc.dashboard.key"
STATS = "[data-testid=stat-visitors]:not([data-value=''])"


def axe_serious(page: Any, where: str = "document") -> list[Any]:
    """The serious and critical axe violations of ``where`` (a selector or the document)."""
    if not AXE.exists():
        return []
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    target = "document" if where == "document" else repr(where)
    found: list[Any] = page.evaluate(
        f"""async () => (await axe.run({target})).violations.map((v) =>
            [v.id, v.impact, v.nodes.slice(0, 3).map((n) => n.target.join(' '))])"""
    )
    return [v for v in found if v[1] in ("serious", "critical")]


def new_page(chromium: Any, errors: list[str]) -> tuple[Any, Any]:
    # axe is injected as an inline script, which the page's CSP refuses: bypass it here only.
    ctx = chromium.new_context(viewport=DESKTOP, locale="en-US", bypass_csp=True)
    page = ctx.new_page()
    page.set_default_timeout(15_000)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page


def focused(page: Any) -> str:
    """The element that has the focus, by its accessible name: its aria-label, else its text."""
    name: str = page.evaluate(
        """() => { const e = document.activeElement;
            return e?.getAttribute('aria-label') || e?.textContent?.trim() || ''; }"""
    )
    return name


def test_owner_two_factor_invitation_and_viewer(
    chromium: Any, dashboard_url: str, server: Server
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner_email, password = f"owner-{suffix}@acme.test", "correct horse battery"
    r = httpx.post(
        server.url + "/accounts",
        json={"email": owner_email, "password": password, "teamName": f"Acme {suffix}"},
        headers=server.admin(),
    )
    assert r.status_code == 201, r.text
    owner_id, team_id = r.json()["account"]["id"], r.json()["team"]["id"]
    r = httpx.post(
        server.url + "/auth/signin", json={"email": owner_email, "password": password}, timeout=30
    )
    assert r.status_code == 200, r.text
    setup = {"Authorization": f"Bearer {r.json()['token']}"}
    r = httpx.post(server.url + "/projects", json={"name": f"site-{suffix}"}, headers=setup)
    assert r.status_code == 201, r.text
    project_id = r.json()["id"]
    httpx.post(server.url + "/auth/signout", headers=setup)

    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/")
    assert axe_serious(page) == []
    page.get_by_label("Email").fill(owner_email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector(STATS)
    assert page.get_by_test_id("project-role").inner_text() == "Owner"
    assert page.get_by_role("button", name="Share").is_visible()
    token = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    assert token.startswith("svc_sess_")

    # two-factor: the secret shown once, a code from it, the recovery codes shown once
    page.get_by_role("button", name="Account").click()
    dialog = page.get_by_test_id("account-dialog")
    assert dialog.get_by_test_id("account-email").inner_text() == owner_email
    dialog.get_by_role("button", name="Set up two-factor").click()
    secret = dialog.get_by_test_id("totp-secret").inner_text()
    assert dialog.get_by_test_id("totp-uri").inner_text().startswith("otpauth://totp/")
    assert axe_serious(page, "dialog") == []
    app = Authenticator(secret)
    dialog.get_by_label("Code from the app").fill(app.code())
    dialog.get_by_label("Your password").fill(password)  # a session alone cannot turn it on
    dialog.get_by_role("button", name="Turn on").click()
    eventually(lambda: dialog.get_by_test_id("recovery-codes").locator("li").count(), 10)
    # the codes come with the confirmation, the state with the account read after it
    eventually(lambda: dialog.get_by_test_id("totp-state").inner_text().startswith("On"), True)
    assert axe_serious(page, "dialog") == []

    # sign out: the session ends on the server and leaves the tab
    dialog.get_by_role("button", name="Sign out", exact=True).click()
    page.get_by_label("Email").wait_for()
    assert page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')") is None
    auth = {"Authorization": f"Bearer {token}"}
    eventually(lambda: httpx.get(server.url + "/account", headers=auth).status_code, 401)

    # back in with the authenticator's code
    page.get_by_label("Email").fill(owner_email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Continue").click()
    page.get_by_label("Authentication code").fill("000000")
    page.get_by_role("button", name="Verify").click()
    eventually(lambda: page.get_by_role("alert").inner_text(), "This code is not valid.")
    assert axe_serious(page) == []
    page.get_by_label("Authentication code").fill(app.code())
    page.get_by_role("button", name="Verify").click()
    page.wait_for_selector(STATS)
    token = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    auth = {"Authorization": f"Bearer {token}"}

    # the team: the last owner cannot leave (the API's 409 message), then an invitation
    page.get_by_role("button", name="Team").click()
    team = page.get_by_test_id("team-dialog")
    team.locator(f"[data-member='{owner_email}']").wait_for()
    assert axe_serious(page, "dialog") == []
    team.get_by_role("button", name=f"Leave Acme {suffix}").click()
    refused = httpx.delete(f"{server.url}/teams/{team_id}/members/{owner_id}", headers=auth)
    assert refused.status_code == 409, refused.text
    eventually(lambda: team.get_by_role("alert").inner_text(), refused.json()["error"]["message"])
    colleague = f"colleague-{suffix}@acme.test"
    team.get_by_label("Email to invite").fill(colleague)
    assert team.get_by_label("Role", exact=True).input_value() == "viewer"
    team.get_by_role("button", name="Invite", exact=True).click()
    link = team.get_by_test_id("invite-link").input_value()
    assert "/dashboard#invite=svc_invite_" in link
    pending = team.get_by_label("Pending invitations")
    eventually(lambda: pending.locator("li").count(), 1)
    assert axe_serious(page, "dialog") == []

    # another invitation, withdrawn: its button asks first ("Keep" and Escape keep it and give
    # the focus back; Enter asks, the confirming button takes the focus, Enter withdraws)
    other = f"other-{suffix}@acme.test"
    team.get_by_label("Email to invite").fill(other)
    team.get_by_role("button", name="Invite", exact=True).click()
    eventually(lambda: team.get_by_test_id("invite-link").input_value() != link, True)
    eventually(lambda: pending.locator("li").count(), 2)
    other_link = team.get_by_test_id("invite-link").input_value()
    preview = f"{server.url}/invitations/{other_link.split('#invite=', 1)[1]}"
    assert httpx.get(preview).status_code == 200
    name = f"Withdraw the invitation of {other}"
    team.get_by_role("button", name=name).click()
    question = team.get_by_role("group", name=f"{name}?", exact=False)
    question.wait_for()
    eventually(lambda: focused(page), "Withdraw invitation")
    assert axe_serious(page, "dialog") == []
    question.get_by_role("button", name="Keep").click()
    eventually(lambda: question.count(), 0)
    eventually(lambda: focused(page), name)
    page.keyboard.press("Enter")  # asks again
    eventually(lambda: focused(page), "Withdraw invitation")
    page.keyboard.press("Escape")  # keeps it: the question goes, the dialog stays
    eventually(lambda: question.count(), 0)
    assert team.is_visible()
    eventually(lambda: focused(page), name)
    assert httpx.get(preview).status_code == 200
    assert pending.locator("li").count() == 2
    page.keyboard.press("Enter")
    eventually(lambda: focused(page), "Withdraw invitation")
    page.keyboard.press("Enter")  # withdraws
    eventually(lambda: pending.locator("li").count(), 1)
    status = team.get_by_test_id("team-status").inner_text()
    assert f"The invitation of {other} is withdrawn" in status
    assert httpx.get(preview).status_code == 404
    assert colleague in pending.inner_text() and other not in pending.inner_text()
    owner_ctx, owner_page = ctx, page

    # the colleague opens the link (another browser: its own session storage) and signs up
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/dashboard#invite=" + link.split("#invite=", 1)[1])
    invite = page.get_by_test_id("invite-page")
    eventually(lambda: "as viewer" in invite.locator(".lead").inner_text(), True)
    assert colleague in invite.inner_text()
    assert axe_serious(page) == []
    page.get_by_label("Your name").fill("Colleague")
    page.get_by_label("Choose a password").fill("another long secret")
    page.get_by_role("button", name="Create the account").click()
    page.wait_for_selector(STATS)
    assert "#invite" not in page.url
    assert page.get_by_test_id("project-role").inner_text() == "Viewer"
    assert page.get_by_role("button", name="Share").count() == 0
    assert axe_serious(page) == []
    # the server is the authority: the viewer reads, but may not make a share link
    viewer = {
        "Authorization": f"Bearer {page.evaluate(f'() => sessionStorage.getItem({STORE_KEY!r})')}"
    }
    params = {"projectId": project_id, "from": "2026-01-01"}
    assert httpx.get(f"{server.url}/metrics", params=params, headers=viewer).status_code == 200
    keys = f"{server.url}/projects/{project_id}/keys"
    assert httpx.post(keys, json={"kind": "share"}, headers=viewer).status_code == 403

    # a viewer sees the members and may leave, but has no manage actions
    page.get_by_role("button", name="Team").click()
    team = page.get_by_test_id("team-dialog")
    team.locator(f"[data-member='{colleague}']").wait_for()
    assert team.get_by_test_id("my-role").inner_text() == "you: Viewer"
    assert team.locator("select").count() == 0
    assert team.get_by_label("Email to invite").count() == 0
    assert team.get_by_role("button", name="Remove").count() == 0
    assert team.get_by_role("button", name=f"Leave Acme {suffix}").is_visible()
    assert axe_serious(page, "dialog") == []
    page.set_viewport_size(PHONE)  # the header's extra buttons and the dialog fit a phone
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    ctx.close()

    # the owner makes the colleague an editor, then removes them
    owner_page.keyboard.press("Escape")
    owner_page.get_by_role("button", name="Team").click()
    team = owner_page.get_by_test_id("team-dialog")
    team.get_by_label(f"Role of {colleague}").select_option("editor")

    def roles() -> dict[str, str]:
        got = httpx.get(f"{server.url}/teams/{team_id}", headers=auth).json()
        return {m["email"]: m["role"] for m in got["members"]}

    eventually(roles, {owner_email: "owner", colleague: "editor"})
    team.get_by_role("button", name=f"Remove {colleague}").click()
    eventually(roles, {owner_email: "owner"})

    # invited again, the colleague has an account now: the link asks to sign in to accept
    team.get_by_label("Email to invite").fill(colleague)
    team.get_by_role("button", name="Invite", exact=True).click()
    eventually(lambda: team.get_by_test_id("invite-link").input_value() != link, True)
    link = team.get_by_test_id("invite-link").input_value()
    owner_ctx.close()
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/dashboard#invite=" + link.split("#invite=", 1)[1])
    page.get_by_role("heading", name="Sign in to accept").wait_for()
    assert page.get_by_label("Email").input_value() == colleague
    page.get_by_label("Password", exact=True).fill("another long secret")
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector(STATS)
    assert page.get_by_test_id("project-role").inner_text() == "Viewer"
    eventually(roles, {owner_email: "owner", colleague: "viewer"})
    ctx.close()
    assert not errors, errors


def test_password_reset_screens(chromium: Any, dashboard_url: str) -> None:
    """Asking for a reset link says the same whatever the email; a used or unknown link says
    so. (Following a mailed link needs SMTP: tests/accounts covers the API end to end.)"""
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/")
    page.get_by_role("button", name="Forgot your password?").click()
    page.get_by_label("Email of your account").fill("nobody@acme.test")
    page.get_by_role("button", name="Send a reset link").click()
    assert "a link to choose a new password" in page.get_by_role("status").inner_text()
    assert axe_serious(page) == []

    page.goto(dashboard_url + "/dashboard#reset=svc_reset_" + "x" * 40)
    page.get_by_label("New password").fill("a new long password")
    page.get_by_role("button", name="Set the password").click()
    assert "not valid any more" in page.get_by_role("alert").inner_text()
    assert axe_serious(page) == []
    ctx.close()
    assert not errors, errors
