"""Single sign-on in real headless Chromium against a real OpenID Connect provider (tests/
accounts/oidc_provider.py: Authlib's server in a process of its own, with a sign-in form the
browser fills in): a new person signs in with the button and lands in the dashboard as a
viewer of the configured team's project; an existing password account is linked by its
verified email and keeps its projects; an unverified email is refused on the sign-in screen
and nothing is made; a replayed state is refused; with password sign-in off the screen offers
the button alone and the password routes answer 403. Every screen passes axe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.accounts.sso import CALLBACK_PATH
from tests.accounts.oidc_provider import Provider, User, svc_with_provider
from tests.dashboard.test_dashboard_accounts import STATS, STORE_KEY, axe_serious, new_page
from tests.dashboard.test_dashboard_browser import eventually
from tests.support import Server

pytestmark = pytest.mark.browser

NEW = User("ada", "ada@sso.test", name="Ada")
EXISTING = User("grace", "grace@sso.test", name="Grace")
UNVERIFIED = User("eve", "eve@sso.test", email_verified=False)
BUTTON = "Sign in with Test ID"

World = tuple[Server, Provider, str]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """svc with the provider; the team new people join (as viewers) has a project."""
    with svc_with_provider(tmp_path_factory.mktemp("sso-dash"), [NEW, EXISTING, UNVERIFIED]) as (
        srv,
        provider,
        team_id,
    ):
        project_with_a_visit(srv, srv.admin(), team_id, "everyone-site")
        yield srv, provider, team_id


def project_with_a_visit(srv: Server, auth: dict[str, str], team_id: str, name: str) -> str:
    """A project of the team, with one page view stored: its id."""
    r = httpx.post(srv.url + "/projects", json={"name": name, "teamId": team_id}, headers=auth)
    assert r.status_code == 201, r.text
    project_id: str = r.json()["id"]
    r = srv.send(r.json()["keys"]["secret"], {"event": "page_view", "url": "/", "sessionId": "s"})
    assert r.status_code == 200, r.text
    srv.wait_loaded()
    return project_id


def sign_in_at_provider(page: Any, user: User) -> None:
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(user.password)
    page.get_by_role("button", name="Sign in").click()


def accounts(srv: Server) -> dict[str, str]:
    r = httpx.get(srv.url + "/accounts", headers=srv.admin())
    return {a["email"]: a["id"] for a in r.json()["accounts"]}


def test_a_new_person_lands_in_the_team_as_a_viewer(chromium: Any, world: World) -> None:
    srv, _, team_id = world
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(srv.url + "/dashboard")
    page.get_by_role("button", name=BUTTON).wait_for()
    assert page.get_by_label("Email").is_visible()  # password sign-in is on too
    assert axe_serious(page) == []
    page.get_by_role("button", name=BUTTON).click()
    page.get_by_label("Username").wait_for()
    sign_in_at_provider(page, NEW)
    page.wait_for_selector(STATS)
    assert page.get_by_test_id("project-role").inner_text() == "Viewer"
    assert page.evaluate("() => location.hash") == ""  # the code is gone from the address
    token = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    me = httpx.get(srv.url + "/account", headers={"Authorization": f"Bearer {token}"}).json()
    assert me["email"] == NEW.email and me["name"] == "Ada"
    assert [(t["id"], t["role"]) for t in me["teams"]] == [(team_id, "viewer")]
    assert axe_serious(page) == []
    assert errors == []
    ctx.close()


def test_an_existing_account_is_linked_and_keeps_its_projects(chromium: Any, world: World) -> None:
    srv, _, team_id = world
    r = httpx.post(
        srv.url + "/accounts",
        json={"email": EXISTING.email, "password": "correct horse battery", "teamName": "Own"},
        headers=srv.admin(),
    )
    assert r.status_code == 201, r.text
    account_id, own_team = r.json()["account"]["id"], r.json()["team"]["id"]
    project_with_a_visit(srv, srv.admin(), own_team, "grace-site")

    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(srv.url + "/dashboard")
    page.get_by_role("button", name=BUTTON).click()
    sign_in_at_provider(page, EXISTING)
    page.wait_for_selector(STATS)
    assert page.get_by_test_id("project-role").inner_text() == "Owner"
    token = page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')")
    me = httpx.get(srv.url + "/account", headers={"Authorization": f"Bearer {token}"}).json()
    assert me["id"] == account_id
    assert {t["id"]: t["role"] for t in me["teams"]} == {own_team: "owner"}
    assert team_id not in {t["id"] for t in me["teams"]}
    r = httpx.post(
        srv.url + "/auth/signin",
        json={"email": EXISTING.email, "password": "correct horse battery"},
    )
    assert r.status_code == 200, r.text  # the password still signs in
    assert errors == []
    ctx.close()


def test_an_unverified_email_is_refused(chromium: Any, world: World) -> None:
    srv, _, _ = world
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(srv.url + "/dashboard")
    page.get_by_role("button", name=BUTTON).click()
    sign_in_at_provider(page, UNVERIFIED)
    alert = page.get_by_test_id("sso-signin").get_by_role("alert")
    eventually(lambda: "has not verified the email eve@sso.test" in alert.inner_text(), True)
    assert page.get_by_role("button", name=BUTTON).is_enabled()
    assert axe_serious(page) == []
    assert UNVERIFIED.email not in accounts(srv)
    ctx.close()


def test_a_replayed_state_is_refused(chromium: Any, world: World) -> None:
    srv, _, _ = world
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    callbacks: list[str] = []
    finishes: list[Any] = []
    page.on("request", lambda r: callbacks.append(r.url) if CALLBACK_PATH in r.url else None)
    page.on(
        "request",
        lambda r: (
            finishes.append(r.post_data_json) if r.url.endswith("/auth/oidc/finish") else None
        ),
    )
    page.goto(srv.url + "/dashboard")
    page.get_by_role("button", name=BUTTON).click()
    sign_in_at_provider(page, NEW)
    page.wait_for_selector(STATS)
    (callback,), (body,) = callbacks, finishes
    # the same answer of the provider once more, with this tab's binding put back
    page.evaluate(f"() => sessionStorage.removeItem('{STORE_KEY}')")
    page.evaluate(f"() => sessionStorage.setItem('svc.dashboard.sso', {body['binding']!r})")
    page.goto(callback)
    alert = page.get_by_test_id("sso-signin").get_by_role("alert")
    eventually(lambda: "unknown, used or expired" in alert.inner_text(), True)
    assert page.evaluate(f"() => sessionStorage.getItem('{STORE_KEY}')") is None
    ctx.close()


def test_password_sign_in_off_shows_the_button_alone(chromium: Any, tmp_path: Path) -> None:
    with svc_with_provider(tmp_path, [NEW], SVC_PASSWORD_SIGNIN="false") as (srv, _, team_id):
        project_with_a_visit(srv, srv.admin(), team_id, "only-sso")
        r = httpx.post(
            srv.url + "/auth/signin", json={"email": NEW.email, "password": "whatever pass"}
        )
        assert r.status_code == 403, r.text
        assert r.json()["error"]["code"] == "password_signin_off"
        assert "SVC_PASSWORD_SIGNIN" in r.json()["error"]["message"]
        errors: list[str] = []
        ctx, page = new_page(chromium, errors)
        page.goto(srv.url + "/dashboard")
        page.get_by_role("button", name=BUTTON).wait_for()
        assert page.get_by_test_id("password-signin").count() == 0
        assert page.get_by_role("button", name="Forgot your password?").count() == 0
        assert axe_serious(page) == []
        page.get_by_role("button", name=BUTTON).click()
        sign_in_at_provider(page, NEW)
        page.wait_for_selector(STATS)
        assert errors == []
        ctx.close()
