"""The account screens against a server with mail on, in real headless Chromium: an invitation
and a password reset are mailed to a real SMTP server (aiosmtpd, tests/mail_server.py), their
links taken out of the received mail and followed in the browser; then the account's settings:
a new password (the other sessions end), two-factor turned off with a current code or the
password, sign-out everywhere; and the team's settings: a new name, a project moved to another
team. One svc (mail on, argon2id at a cheap cost) for the module."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import CHEAP_HASHES, PASSWORD, turn_on_totp
from tests.dashboard.test_dashboard_accounts import STATS, STORE_KEY, axe_serious, new_page
from tests.dashboard.test_dashboard_browser import eventually
from tests.mail_server import MailServer, mail_server
from tests.support import Server

__all__ = ["mail_server"]

pytestmark = pytest.mark.browser

ENDED = "Your session has ended"


@pytest.fixture(scope="module")
def mailing(tmp_path_factory: pytest.TempPathFactory, mail_server: MailServer) -> Iterator[Server]:
    server = mail_server.svc(
        tmp_path_factory.mktemp("dash-accounts-mail") / "data",
        **CHEAP_HASHES,
        SVC_SIGNIN_LIMIT_PER_ADDRESS="1000",
        SVC_SIGNIN_LIMIT_PER_ACCOUNT="1000",
    )
    yield server
    server.stop()


@dataclass
class Owner:
    email: str
    team_id: str
    team_name: str
    project_id: str
    project_name: str


def new_owner(srv: Server) -> Owner:
    """An owner (made with the admin token) of a new team that has a project."""
    suffix = uuid.uuid4().hex[:8]
    email, team_name = f"owner-{suffix}@acme.test", f"Acme {suffix}"
    r = httpx.post(
        srv.url + "/accounts",
        json={"email": email, "password": PASSWORD, "teamName": team_name},
        headers=srv.admin(),
    )
    assert r.status_code == 201, r.text
    team_id = r.json()["team"]["id"]
    auth = {"Authorization": f"Bearer {api_sign_in(srv, email)}"}
    r = httpx.post(srv.url + "/projects", json={"name": f"site-{suffix}"}, headers=auth)
    assert r.status_code == 201, r.text
    httpx.post(srv.url + "/auth/signout", headers=auth)
    return Owner(email, team_id, team_name, r.json()["id"], r.json()["name"])


def api_sign_in(srv: Server, email: str, password: str = PASSWORD, **extra: str) -> str:
    r = httpx.post(
        srv.url + "/auth/signin",
        json={"email": email, "password": password, **extra},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    token: str = r.json()["token"]
    return token


def account_status(srv: Server, token: str) -> int:
    return httpx.get(srv.url + "/account", headers={"Authorization": f"Bearer {token}"}).status_code


def link_in(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None
    found = re.search(r"https?://\S+", body.get_content())
    assert found is not None, body.get_content()
    return found.group(0)


def browser_sign_in(page: Any, srv: Server, email: str, password: str = PASSWORD) -> str:
    """Sign in on the dashboard's first screen; the session token it keeps, once every panel
    has its answer (the panels' reads wait their turn behind the top figures: one still
    waiting would meet a session a test ends next, and sign the page out before its click)."""
    page.goto(srv.url + "/")
    fill_sign_in(page, email, password)
    page.wait_for_selector(STATS)
    page.wait_for_function("() => !document.querySelector('.skeleton, .loading')")
    token: str = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    assert token.startswith("svc_sess_")
    return token


def fill_sign_in(page: Any, email: str, password: str) -> None:
    page.get_by_label("Email", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Continue").click()


def test_mailed_invitation_followed_to_the_project(
    chromium: Any, mailing: Server, mail_server: MailServer
) -> None:
    owner = new_owner(mailing)
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    browser_sign_in(page, mailing, owner.email)
    page.get_by_role("button", name="Team").click()
    team = page.get_by_test_id("team-dialog")
    newcomer = f"newcomer-{uuid.uuid4().hex[:8]}@acme.test"
    team.get_by_label("Email to invite").fill(newcomer)
    team.get_by_label("Role", exact=True).select_option("editor")
    team.get_by_role("button", name="Invite", exact=True).click()
    eventually(lambda: team.get_by_role("status").inner_text(), f"Invitation mailed to {newcomer}.")
    assert team.get_by_test_id("invite-link").count() == 0  # mail is on: no link to copy
    ctx.close()

    (msg,) = mail_server.wait_for(match=lambda m: newcomer in str(m["To"]))
    assert owner.team_name in msg["Subject"]
    link = link_in(msg)
    assert link.startswith(mailing.url + "/dashboard#invite=svc_invite_"), link
    ctx, page = new_page(chromium, errors)
    page.goto(link)
    invite = page.get_by_test_id("invite-page")
    eventually(lambda: "as editor" in invite.locator(".lead").inner_text(), True)
    assert newcomer in invite.inner_text()
    page.get_by_label("Your name").fill("Newcomer")
    page.get_by_label("Choose a password").fill("the newcomer's password")
    page.get_by_role("button", name="Create the account").click()
    page.wait_for_selector(STATS)
    assert "#invite" not in page.url
    assert page.get_by_test_id("project-role").inner_text() == "Editor"
    eventually(lambda: page.title(), f"{owner.project_name} · svc")
    token = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    r = httpx.get(mailing.url + "/account", headers={"Authorization": f"Bearer {token}"})
    assert r.json()["projects"] == [{"id": owner.project_id, "role": "editor"}]
    # the link worked once
    page.goto(link)
    eventually(lambda: "not valid any more" in page.get_by_role("alert").inner_text(), True)
    ctx.close()
    assert not errors, errors


def test_mailed_password_reset_followed(
    chromium: Any, mailing: Server, mail_server: MailServer
) -> None:
    owner = new_owner(mailing)
    elsewhere = api_sign_in(mailing, owner.email)
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(mailing.url + "/")
    page.get_by_role("button", name="Forgot your password?").click()
    page.get_by_label("Email of your account").fill(owner.email)
    page.get_by_role("button", name="Send a reset link").click()
    assert "a link to choose a new password" in page.get_by_role("status").inner_text()
    ctx.close()

    (msg,) = mail_server.wait_for(
        match=lambda m: owner.email in str(m["To"]) and "reset" in m["Subject"].lower()
    )
    link = link_in(msg)
    assert link.startswith(mailing.url + "/dashboard#reset=svc_reset_"), link
    ctx, page = new_page(chromium, errors)
    page.goto(link)
    page.get_by_test_id("reset-page").wait_for()
    new = "a new password from the mail"
    page.get_by_label("New password").fill(new)
    page.get_by_role("button", name="Set the password").click()
    eventually(
        lambda: page.get_by_role("status").inner_text(),
        "Your password is changed. Sign in with it.",
    )
    assert account_status(mailing, elsewhere) == 401  # every session ended
    page.get_by_role("button", name="Go to sign-in").click()
    assert "#reset" not in page.url
    fill_sign_in(page, owner.email, PASSWORD)  # the old one no longer works
    eventually(
        lambda: page.get_by_role("alert").inner_text(), "The email or the password is wrong."
    )
    page.get_by_label("Password", exact=True).fill(new)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector(STATS)
    assert page.get_by_test_id("project-role").inner_text() == "Owner"
    ctx.close()
    assert not errors, errors


def test_new_password_signs_out_the_other_sessions(chromium: Any, mailing: Server) -> None:
    owner = new_owner(mailing)
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    here = browser_sign_in(page, mailing, owner.email)
    other_ctx, other = new_page(chromium, errors)
    there = browser_sign_in(other, mailing, owner.email)

    page.get_by_role("button", name="Account").click()
    dialog = page.get_by_test_id("account-dialog")
    new = "a changed password 42"
    dialog.get_by_label("Current password").fill("not the password")
    dialog.get_by_label("New password").fill(new)
    dialog.get_by_role("button", name="Change password").click()
    eventually(lambda: dialog.get_by_role("alert").inner_text(), "`currentPassword` is wrong")
    dialog.get_by_label("Current password").fill(PASSWORD)
    dialog.get_by_role("button", name="Change password").click()
    eventually(
        lambda: dialog.get_by_role("status").inner_text(),
        "Your password is changed; your other sessions are signed out.",
    )
    assert axe_serious(page, "dialog") == []
    assert account_status(mailing, here) == 200  # this session goes on
    assert account_status(mailing, there) == 401

    # the other browser finds its session ended at its next request, and signs in again
    other.get_by_role("button", name="Account").click()
    eventually(lambda: ENDED in other.get_by_role("alert").inner_text(), True)
    assert other.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')") is None
    fill_sign_in(other, owner.email, new)
    other.wait_for_selector(STATS)
    ctx.close()
    other_ctx.close()
    assert not errors, errors


def test_two_factor_off_with_a_code_or_the_password(chromium: Any, mailing: Server) -> None:
    owner = new_owner(mailing)
    auth = {"Authorization": f"Bearer {api_sign_in(mailing, owner.email)}"}

    token = auth["Authorization"].removeprefix("Bearer ")
    app, _ = turn_on_totp(mailing, token)
    totp = app.totp
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(mailing.url + "/")
    fill_sign_in(page, owner.email, PASSWORD)
    page.get_by_label("Authentication code").fill(app.code())
    page.get_by_role("button", name="Verify").click()
    page.wait_for_selector(STATS)

    page.get_by_role("button", name="Account").click()
    dialog = page.get_by_test_id("account-dialog")
    eventually(lambda: dialog.get_by_test_id("totp-state").inner_text().startswith("On"), True)
    proof = dialog.get_by_label("Password or current code")
    off = dialog.get_by_role("button", name="Turn off two-factor")
    wrong = f"{(int(totp.now()) + 500_000) % 1_000_000:06d}"
    proof.fill(wrong)
    off.click()
    eventually(lambda: dialog.get_by_role("alert").inner_text(), "`code` is wrong")
    proof.fill("not the password")
    off.click()
    eventually(lambda: dialog.get_by_role("alert").inner_text(), "`password` is wrong")
    assert dialog.get_by_test_id("totp-state").inner_text().startswith("On")
    assert axe_serious(page, "dialog") == []
    proof.fill(app.code())
    off.click()
    eventually(
        lambda: dialog.get_by_role("status").inner_text(), "Two-factor authentication is off."
    )
    eventually(lambda: dialog.get_by_test_id("totp-state").inner_text().startswith("Off"), True)
    api_sign_in(mailing, owner.email)  # the password alone signs in again

    # on again (elsewhere), then off with the password
    page.keyboard.press("Escape")
    turn_on_totp(mailing, token)
    page.get_by_role("button", name="Account").click()
    eventually(lambda: dialog.get_by_test_id("totp-state").inner_text().startswith("On"), True)
    dialog.get_by_label("Password or current code").fill(PASSWORD)
    dialog.get_by_role("button", name="Turn off two-factor").click()
    eventually(lambda: dialog.get_by_test_id("totp-state").inner_text().startswith("Off"), True)
    api_sign_in(mailing, owner.email)
    ctx.close()
    assert not errors, errors


def test_sign_out_everywhere(chromium: Any, mailing: Server) -> None:
    owner = new_owner(mailing)
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    here = browser_sign_in(page, mailing, owner.email)
    other_ctx, other = new_page(chromium, errors)
    there = browser_sign_in(other, mailing, owner.email)
    script = api_sign_in(mailing, owner.email)

    page.get_by_role("button", name="Account").click()
    page.get_by_test_id("account-dialog").get_by_role("button", name="Sign out everywhere").click()
    page.get_by_label("Email", exact=True).wait_for()
    assert page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')") is None
    assert [account_status(mailing, t) for t in (here, there, script)] == [401, 401, 401]
    other.get_by_role("button", name="Team").click()
    eventually(lambda: ENDED in other.get_by_role("alert").inner_text(), True)
    ctx.close()
    other_ctx.close()
    assert not errors, errors


def test_rename_the_team_and_move_a_project(chromium: Any, mailing: Server) -> None:
    owner = new_owner(mailing)
    auth = {"Authorization": f"Bearer {api_sign_in(mailing, owner.email)}"}
    second_name = f"Second {uuid.uuid4().hex[:8]}"
    r = httpx.post(mailing.url + "/teams", json={"name": second_name}, headers=auth)
    assert r.status_code == 201, r.text
    second = r.json()["id"]

    def team(team_id: str) -> dict[str, Any]:
        got: dict[str, Any] = httpx.get(f"{mailing.url}/teams/{team_id}", headers=auth).json()
        return got

    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    browser_sign_in(page, mailing, owner.email)
    page.get_by_role("button", name="Team").click()
    dialog = page.get_by_test_id("team-dialog")
    dialog.get_by_label("Team", exact=True).select_option(owner.team_id)
    dialog.get_by_role("heading", name=f"Settings of {owner.team_name}").wait_for()
    renamed = owner.team_name + " renamed"
    dialog.get_by_label("Team name").fill(renamed)
    dialog.get_by_role("button", name="Rename").click()
    eventually(
        lambda: dialog.get_by_test_id("team-status").inner_text(),
        f"The team is now named {renamed}.",
    )
    assert team(owner.team_id)["name"] == renamed
    eventually(lambda: renamed in dialog.get_by_label("Team", exact=True).inner_text(), True)
    assert axe_serious(page, "dialog") == []

    dialog.get_by_label("Move to the team").select_option(second)
    dialog.get_by_role("button", name=f"Move {owner.project_name}").click()
    eventually(
        lambda: dialog.get_by_test_id("team-status").inner_text(),
        f"{owner.project_name} now belongs to the team {second_name}.",
    )
    assert team(second)["projects"] == [owner.project_id]
    assert team(owner.team_id)["projects"] == []
    eventually(lambda: dialog.get_by_label("Move to the team").count(), 0)
    # the team that holds it now offers to move it back
    dialog.get_by_label("Team", exact=True).select_option(second)
    eventually(lambda: dialog.get_by_role("button", name=f"Move {owner.project_name}").count(), 1)
    assert page.get_by_test_id("project-role").inner_text() == "Owner"
    ctx.close()
    assert not errors, errors
