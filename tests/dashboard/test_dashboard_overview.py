"""The dashboard's "All projects" view in Debian's Chromium: a team owner with three projects
in three time zones opens it from the project picker; the table shows GET /overview's
numbers and totals, sorts by each column (by mouse and by keyboard alone), links each row to
that project's dashboard, and passes axe."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import invite_and_accept
from tests.dashboard.test_dashboard_accounts import axe_serious, focused, new_page
from tests.dashboard.test_dashboard_browser import eventually
from tests.support import Server

pytestmark = pytest.mark.browser

ZONES = ("Pacific/Auckland", "America/New_York", "Asia/Kolkata")
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12{}.0 Safari"
ROWS = "[data-testid=overview-row]"


def _events(seed: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC) - timedelta(minutes=5)
    out = []
    for hours_ago in range(3, 5 * 24, 4 + 3 * seed):
        for i in range(1 + (hours_ago + seed) % 3):
            out.append(
                {
                    "event": "page_view",
                    "url": f"https://o{seed}.test/p{i}",
                    "ts": int(
                        (now - timedelta(hours=hours_ago) + timedelta(minutes=2 * i)).timestamp()
                        * 1e3
                    ),
                    "ip": f"10.9.{seed}.{hours_ago % (3 + 2 * seed)}",
                    "userAgent": UA.format(hours_ago % 7),
                }
            )
    return out


@pytest.fixture(scope="module")
def team(server: Server) -> dict[str, Any]:
    """A team, its owner (a session token) and three projects of it with traffic."""
    r = httpx.post(server.url + "/teams", json={"name": "overview"}, headers=server.admin())
    assert r.status_code == 201, r.text
    team_id = r.json()["id"]
    owner = invite_and_accept(server, server.admin_token, team_id, "owner")
    names = []
    for seed, zone in enumerate(ZONES):
        name = f"ov{seed}-{uuid.uuid4().hex[:6]}"
        p = server.create_project(name, timezone=zone, teamId=team_id)
        assert server.send(p["keys"]["secret"], _events(seed)).status_code == 200
        names.append(name)
    server.wait_loaded()
    return {"token": owner.token, "names": names}


def _api(server: Server, token: str, page: Any, **params: str) -> dict[str, Any]:
    """GET /overview over the range the page shows."""
    rng = page.locator("[data-testid=range]")
    days = {"from": rng.get_attribute("data-from"), "to": rng.get_attribute("data-to")}
    r = httpx.get(
        server.url + "/overview",
        params={**days, **params},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _shown(page: Any) -> list[dict[str, str]]:
    """The table's rows as shown: the project's name and each cell's value."""
    rows: list[dict[str, str]] = page.evaluate(
        """() => [...document.querySelectorAll(
            '[data-testid=overview-row], [data-testid=overview-totals]')].map((tr) => {
            const row = {name: tr.querySelector('th').textContent.trim()};
            for (const td of tr.querySelectorAll('td')) {
                row[td.dataset.testid.slice(5)] = td.dataset.value;
                row['change-' + td.dataset.testid.slice(5)] =
                    td.querySelector('[data-testid=change]').dataset.change;
            }
            return row; })"""
    )
    return rows


def _expected(body: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for row in [*body["projects"], {"name": None, **body["totals"]}]:
        shown = {"name": row["name"]}
        for key in ("visitors", "visits", "pageviews", "bounceRate", "visitDuration"):
            shown[key] = str(row[key])
            change = row["change"][key]
            shown["change-" + key] = "" if change is None else str(change)
        out.append(shown)
    return out


def _names(page: Any) -> list[str]:
    return [n.split(" ")[0] for n in page.locator(f"{ROWS} th a").all_inner_texts()]


def _normalized(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Numbers compared as numbers ("12.0" and "12" alike), names without the time zone."""
    out = []
    for row in rows:
        norm = {}
        for k, v in row.items():
            if k == "name":
                norm[k] = None if v is None or v.startswith("Total") else v.split(" ")[0]
            else:
                try:
                    norm[k] = str(float(v)) if v not in ("", None) else ""
                except ValueError:
                    norm[k] = v
        out.append(norm)
    return out


def test_all_projects_view(chromium: Any, dashboard_url: str, server: Server, team: dict) -> None:
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    token = team["token"]
    page.goto(dashboard_url + "/")
    page.get_by_label("Secret key or admin token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("[data-testid=stat-visitors]:not([data-value=''])", timeout=45_000)
    # reachable from the project picker
    page.get_by_label("Project").select_option(label="All projects")
    page.wait_for_selector(ROWS)
    assert "project=all" in page.url
    assert page.locator(ROWS).count() == 3

    # the API's numbers, totals and changes, by default most visitors first
    body = _api(server, token, page)
    assert {r["name"] for r in body["projects"]} == set(team["names"])
    eventually(lambda: _normalized(_shown(page)), _normalized(_expected(body)))
    assert page.locator("[data-testid=overview-series] tbody tr").count() > 1

    # sorting by each column, as the API sorts
    for key in ("pageviews", "bounceRate", "visitDuration", "visits", "name"):
        page.get_by_test_id(f"sort-{key}").click()
        first = "" if key == "name" else "-"
        want = [r["name"] for r in _api(server, token, page, sort=first + key)["projects"]]
        eventually(lambda: _names(page), want)
        header = page.locator("th", has=page.get_by_test_id(f"sort-{key}"))
        assert header.get_attribute("aria-sort") == ("ascending" if key == "name" else "descending")
        page.get_by_test_id(f"sort-{key}").click()  # again: the other way
        other = "-" if key == "name" else ""
        want = [r["name"] for r in _api(server, token, page, sort=other + key)["projects"]]
        eventually(lambda: _names(page), want)

    assert axe_serious(page) == []

    # keyboard alone: Tab to the Visitors column's button, Enter sorts; Tab to a row, Enter
    page.locator("body").focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement?.dataset?.testid") == "sort-visitors":
            break
    else:
        pytest.fail(f"the Visitors column cannot be reached by Tab (last: {focused(page)!r})")
    page.keyboard.press("Enter")
    want = [r["name"] for r in _api(server, token, page, sort="-visitors")["projects"]]
    eventually(lambda: _names(page), want)
    page.keyboard.press("Enter")
    want = [r["name"] for r in _api(server, token, page, sort="visitors")["projects"]]
    eventually(lambda: _names(page), want)
    for _ in range(10):
        page.keyboard.press("Tab")
        if focused(page) == want[0]:
            break
    else:
        pytest.fail(f"the first row's link cannot be reached by Tab (last: {focused(page)!r})")
    page.keyboard.press("Enter")  # that project's dashboard
    page.wait_for_selector("[data-testid=stat-visitors]:not([data-value=''])", timeout=45_000)
    chosen = page.get_by_label("Project").evaluate("(s) => s.selectedOptions[0].textContent")
    assert chosen == want[0]
    page.go_back()  # and back to every project
    page.wait_for_selector(ROWS)
    ctx.close()
    assert not errors, errors


def test_one_project_has_no_all_projects(chromium: Any, dashboard_url: str, server: Server) -> None:
    """A person who reads one project sees no "All projects", even at ?project=all."""
    r = httpx.post(server.url + "/teams", json={"name": "single"}, headers=server.admin())
    team_id = r.json()["id"]
    owner = invite_and_accept(server, server.admin_token, team_id, "owner")
    server.create_project(f"one-{uuid.uuid4().hex[:6]}", teamId=team_id)
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    page.goto(dashboard_url + "/?project=all")
    page.get_by_label("Secret key or admin token").fill(owner.token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("[data-testid=stat-visitors]")
    assert page.locator(ROWS).count() == 0
    assert page.get_by_text("All projects").count() == 0
    ctx.close()
    assert not errors, errors
