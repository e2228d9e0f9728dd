"""The project screens of issues 41 and 42 in real headless Chromium against the real server:
the journeys view and the dropped events panel show the API's numbers; the project settings
(time zone, domains, exclusions, keys, share links, deletion) change the project as the API
then says, for an owner; a viewer or an editor sees neither settings nor dropped events (and
the API refuses them); a team admin or a secret key manages the project but may not delete
it. Also what issue 41 found wrong: revenue items by name with their currency, labelled Web
Vitals shares, the engagement panel's Details and what "not measured" means, link URLs told
apart, share-link dates in the dashboard's format, the Pages tabs at 375 px. Every screen
passes axe (no serious or critical violation).

One project of a team with an owner and a viewer, made once for the module; a page per role.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.accounts.conftest import PASSWORD, invite_and_accept
from tests.dashboard.conftest import SCREENSHOTS
from tests.dashboard.test_dashboard_accounts import axe_serious, focused, new_page
from tests.dashboard.test_dashboard_accounts_mail import api_sign_in
from tests.dashboard.test_dashboard_browser import api, eventually, last_7_days, shoot
from tests.support import BROWSER_UA, Server
from tests.test_page_measurements import at, engaged, ev, vitals

pytestmark = pytest.mark.browser

STORE_KEY = "svc.dashboard.key"
STATS = "[data-testid=stat-visitors]:not([data-value=''])"
LONG = "https://github.com/acme/a-rather-long-repository-name/blob/main/docs/guide/"
#: (visitor, pages in order): the sessions the journeys are read from (DAY, 10:00 UTC on)
WALKS: list[tuple[int, list[str]]] = [
    (1, ["/", "/pricing", "/signup"]),
    (2, ["/", "/pricing", "/signup", "/welcome"]),
    (3, ["/", "/pricing"]),
    (4, ["/", "/docs", "/pricing"]),
    (5, ["/blog", "/pricing", "/signup"]),
    (6, ["/", "/", "/pricing"]),  # a reload is no step
    (7, ["/docs"]),
    (8, ["/", "/pricing", "/signup"]),
    (9, ["/blog", "/docs"]),
]
#: (user agent, path, reason): what the public key sends that is dropped
DROPS = [
    ("Googlebot/2.1 (+http://www.google.com/bot.html)", "/", "bot"),
    ("Googlebot/2.1 (+http://www.google.com/bot.html)", "/pricing", "bot"),
    ("curl/8.5.0", "/", "http_library"),
    (BROWSER_UA, "/private/report", "excluded_path"),
]


@dataclass
class World:
    team_id: str
    project_id: str
    name: str
    secret: str
    public: str
    doomed_id: str
    doomed_name: str
    owner: str  # session tokens
    viewer: str


def events() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for visitor, pages in WALKS:
        for i, path in enumerate(pages):
            out.append(ev(visitor, at(10 + visitor % 5, 2 * i, visitor), path=path))
    t = at(16, 0)
    items = [{"item_id": "sku-1", "item_name": "Blue mug", "price": 12, "quantity": 2}]
    out += [
        ev(1, t, "purchase", "/", properties={"value": 24, "currency": "EUR", "items": items}),
        ev(2, t, "purchase", "/", properties={"value": 12, "currency": "USD", "items": items}),
        engaged(1, t + 1, "/", 5_000, 80),
        engaged(2, t + 1, "/", 9_000, 100),
        vitals(1, t + 2, "/", lcp=1_200, inp=120, cls=0.05, fcp=900, ttfb=300),
        vitals(2, t + 2, "/", lcp=4_500, inp=600, cls=0.3, fcp=3_500, ttfb=2_000),
        ev(1, t + 3, "outbound", "/", properties={"url": LONG + "section-one.md"}),
        ev(2, t + 3, "outbound", "/", properties={"url": LONG + "section-two.md"}),
    ]  # fmt: skip
    return out


def call(server: Server, method: str, path: str, token: str, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.request(method, server.url + path, headers=headers, timeout=30, **kw)


@pytest.fixture(scope="module")
def world(server: Server) -> World:
    suffix = uuid.uuid4().hex[:8]
    email = f"owner-{suffix}@acme.test"
    r = httpx.post(
        server.url + "/accounts",
        json={"email": email, "password": PASSWORD, "teamName": f"Acme {suffix}"},
        headers=server.admin(),
    )
    assert r.status_code == 201, r.text
    team_id = r.json()["team"]["id"]
    owner = api_sign_in(server, email)
    made = []
    for name in (f"site-{suffix}", f"doomed-{suffix}"):
        r = call(server, "POST", "/projects", owner, json={"name": name, "domains": ["acme.test"]})
        assert r.status_code == 201, r.text
        made.append(r.json())
    main, doomed = made
    r = call(
        server,
        "PATCH",
        f"/projects/{main['id']}",
        owner,
        json={"options": {"excludePaths": ["/private/*"]}},
    )
    assert r.status_code == 200, r.text
    r = server.send(main["keys"]["secret"], events())
    assert r.status_code == 200 and r.json()["accepted"] == len(events()), r.text
    for ua, path, reason in DROPS:
        r = server.send(
            main["keys"]["public"],
            {"event": "page_view", "url": f"https://acme.test{path}"},
            headers={"User-Agent": ua},
        )
        assert r.headers.get("x-svc-dropped") == reason, r.headers
    server.wait_loaded()
    # the counts reach the metadata store with the housekeeping (every 10 s)
    deadline = time.monotonic() + 40
    while call(server, "GET", f"/projects/{main['id']}/dropped", owner).json()["total"] < len(
        DROPS
    ):
        assert time.monotonic() < deadline, "the dropped events were not counted"
        time.sleep(0.5)
    viewer = invite_and_accept(server, owner, team_id, "viewer")
    return World(
        team_id,
        main["id"],
        main["name"],
        main["keys"]["secret"],
        main["keys"]["public"],
        doomed["id"],
        doomed["name"],
        owner,
        viewer.token,
    )


@pytest.fixture
def opened(chromium: Any) -> Iterator[Any]:
    """Opens the dashboard signed in with a credential (kept in the tab, as "Keep me signed
    in" does); uncaught page errors fail the test."""
    errors: list[str] = []
    contexts: list[Any] = []

    def open_with(url: str, token: str, query: str = "") -> Any:
        ctx, page = new_page(chromium, errors)
        contexts.append(ctx)
        ctx.add_init_script(f"sessionStorage.setItem({json.dumps(STORE_KEY)}, {json.dumps(token)})")
        page.goto(f"{url}/{query}")
        page.wait_for_selector(STATS, timeout=45_000)
        return page

    yield open_with
    for ctx in contexts:
        ctx.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def week() -> list[tuple[str, str]]:
    frm, to = last_7_days("UTC")
    return [("from", frm), ("to", to)]


def shown_paths(page: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = page.evaluate(
        """() => [...document.querySelectorAll('[data-panel=journeys] li.journey')].map((li) => ({
            visitors: Number(li.querySelector('[data-testid=path-visitors]').firstChild
                .textContent.replace(/[^0-9]/g, '')),
            steps: [...li.querySelectorAll('li.journey-step')].map((s) => [s.dataset.page,
                Number(s.querySelector('[data-testid=step-visitors]').textContent),
                Number(s.querySelector('[data-testid=step-drop]').textContent)])}))"""
    )
    return out


def expected_paths(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "visitors": p["visitors"],
            "steps": [[s["page"], s["visitors"], s["dropOff"]] for s in p["steps"]],
        }
        for p in body["paths"]
    ]


def test_journeys_dropped_and_what_read_wrong(
    opened: Any, dashboard_url: str, server: Server, world: World
) -> None:
    page = opened(dashboard_url, world.owner, f"?project={world.project_id}&period=7d")
    panel = page.locator("[data-panel=journeys]")

    # journeys: from the entry, 2 steps (the view's default), then after /pricing, then before
    def journeys(**params: str) -> dict[str, Any]:
        query = [*week(), ("depth", "2"), ("limit", "10"), *params.items()]
        body: dict[str, Any] = api(server, world.secret, "/metrics/journeys", query)
        return body

    body = journeys(direction="next")
    assert body["paths"], body
    eventually(lambda: shown_paths(page), expected_paths(body))
    summary = panel.get_by_test_id("journeys-summary").inner_text()
    assert f"{body['visitors']} visitors entered the site" in summary
    assert f"{body['dropOff']} ({body['dropOffRate']})" in summary
    assert axe_serious(page, "[data-panel=journeys]") == []
    panel.get_by_label("Page", exact=True).select_option("/pricing")
    body = journeys(direction="next", page="/pricing")
    eventually(lambda: shown_paths(page), expected_paths(body))
    # a page typed by hand (any path, not only the top pages): here one nobody went on from
    panel.get_by_label("Page", exact=True).select_option(label="another page…")
    panel.get_by_label("Path, as stored").fill("/welcome")
    panel.get_by_role("button", name="Show").click()
    body = journeys(direction="next", page="/welcome")
    assert (body["visitors"], body["dropOff"], body["paths"]) == (1, 1, [])
    said = panel.get_by_test_id("journeys-summary")
    eventually(lambda: said.inner_text().startswith("1 visitor viewed /welcome; 1 (100.0%)"), True)
    assert "every one left there" in panel.inner_text()
    panel.get_by_label("Page", exact=True).select_option("/pricing")
    panel.get_by_label("Pages", exact=True).select_option("previous")
    panel.get_by_label("Steps").select_option("3")
    body = journeys(direction="previous", page="/pricing", depth="3")
    eventually(lambda: shown_paths(page), expected_paths(body))
    assert all(p["pages"][-1] == "/pricing" for p in body["paths"])
    # the same figures as a table
    panel.get_by_role("tab", name="Table").click()
    table = panel.get_by_test_id("journeys-table")
    cells = table.locator("tbody tr")
    eventually(lambda: cells.count(), len(body["paths"]))
    for p, row in zip(body["paths"], cells.all(), strict=True):
        text = row.inner_text()
        assert " → ".join(p["pages"]) in text and str(p["visitors"]) in text
    assert axe_serious(page, "[data-panel=journeys]") == []

    # dropped events: by reason, by day, the samples and why
    report = call(
        server,
        "GET",
        f"/projects/{world.project_id}/dropped",
        world.owner,
        params=dict(week()),
    ).json()
    assert report["total"] == len(DROPS)
    box = page.locator("[data-panel=dropped]")
    box.get_by_test_id("dropped-samples").wait_for()
    reasons = {
        li.get_attribute("data-reason"): int(li.get_by_test_id("reason-count").inner_text())
        for li in box.locator("li[data-reason]").all()
    }
    assert reasons == {r: n for r, n in report["totals"].items() if n}
    days = {
        tr.get_attribute("data-day"): int(tr.get_by_test_id("day-total").inner_text())
        for tr in box.locator("tr[data-day]").all()
    }
    assert days == {
        d["date"]: sum(d["reasons"].values())
        for d in report["days"]
        if any(d["reasons"].values()) or any(d["refused"].values())
    }
    # the requests refused with 429 (none here), counted apart
    refused = box.get_by_test_id("refused-total").inner_text()
    assert report["refusedTotal"] == 0 and "No request was refused" in refused, refused
    samples = box.get_by_test_id("dropped-samples").locator("tbody tr")
    assert [s.get_attribute("data-reason") for s in samples.all()] == [
        s["reason"] for s in report["samples"]
    ]
    private = box.locator("tr[data-reason=excluded_path]").first.inner_text()
    assert "Excluded path" in private and "/private/report" in private
    assert axe_serious(page, "[data-panel=dropped]") == []
    shoot(page, "project-screens-desktop")
    panel.get_by_role("tab", name="Paths").click()
    panel.screenshot(path=str(SCREENSHOTS / "journeys.png"))

    # revenue: the item's name, one row per currency, the currency a column
    items = page.locator("[data-panel=revenue] button.row")
    eventually(lambda: items.count(), 2)
    texts = sorted(t.replace("\n", " ") for t in items.all_inner_texts())
    assert all(t.startswith("Blue mug") for t in texts), texts
    assert sorted(re.findall(r"\b(EUR|USD)\b", " ".join(texts))) == ["EUR", "USD"], texts

    # Web Vitals: each share is labelled
    lcp = page.locator("[data-panel=vitals] [data-vital=lcp] span.num.vital-good")
    assert re.fullmatch(r"\d+\.\d% good", lcp.inner_text()), lcp.inner_text()

    # engagement: pages without engaged time say so, and a Details view lists every figure
    eng = page.locator("[data-panel=engagement]")
    eventually(lambda: eng.locator("button.row[data-value='/docs']").count(), 1)
    assert "not measured" in eng.locator("button.row[data-value='/docs']").inner_text()
    assert "not 0 s" in eng.get_by_test_id("engagement-none").inner_text()
    eng.get_by_role("button", name="Details: engagement of every page").click()
    details = page.get_by_test_id("engagement-details")
    rows = api(
        server,
        world.secret,
        "/metrics/breakdown",
        [*week(), ("by", "engagement"), ("limit", "50"), ("offset", "0"), ("order", "-visitors")],
    )["rows"]
    eventually(
        lambda: [tr.get_attribute("data-value") for tr in details.locator("tbody tr").all()],
        [r["value"] for r in rows],
    )
    home = next(r for r in rows if r["value"] == "/")
    assert home["scrollDepth"]["75"] in details.locator("tr[data-value='/']").inner_text()
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")

    # outbound links: the ends that tell them apart are shown, the whole URL in the title
    links = page.locator("[data-panel=links] [data-report=outbound] .label")
    eventually(lambda: links.count(), 2)
    shown = sorted(links.all_inner_texts())
    assert shown[0].endswith("section-one.md") and shown[1].endswith("section-two.md")
    assert sorted(x.get_attribute("title") for x in links.all()) == [
        LONG + "section-one.md",
        LONG + "section-two.md",
    ]

    # the mail panel's body is padded as the others' rows
    mail = page.locator("[data-panel=subscriptions] .panel-body")
    assert mail.evaluate("(b) => parseFloat(getComputedStyle(b).paddingLeft)") >= 12

    # at 375 px every tab of the Pages panel is inside its card
    page.set_viewport_size({"width": 375, "height": 800})
    pages_panel = page.locator("[data-panel=pages]")
    pages_panel.scroll_into_view_if_needed()
    card = pages_panel.bounding_box()
    for tab in pages_panel.get_by_role("tab").all():
        box_ = tab.bounding_box()
        assert box_["x"] >= card["x"] and box_["x"] + box_["width"] <= card["x"] + card["width"]
    # ... and each long link's end (what tells them apart) is inside its row, the start cut
    ends = page.evaluate(
        """() => [...document.querySelectorAll('[data-panel=links] [data-report=outbound] .label')]
            .map((l) => {
                const t = l.querySelector('.label-tail'), h = l.querySelector('.label-head');
                const lb = l.getBoundingClientRect(), tb = t.getBoundingClientRect();
                return [t.textContent, tb.left >= lb.left && tb.right <= lb.right + 0.5,
                    h.scrollWidth > h.clientWidth]; })"""
    )
    assert sorted(ends) == [["/section-one.md", True, True], ["/section-two.md", True, True]]
    bare = LONG.removeprefix("https://") + "section-one.md"
    # read out whole, once: the shortened copy is hidden from screen readers
    named = page.locator("[data-panel=links]").get_by_role("button", name=f"{bare} 1 visitors")
    assert named.count() == 1
    shoot(page, "project-screens-phone")


def test_a_viewer_sees_no_settings_a_secret_key_may_not_delete_the_admin_sets_retention(
    opened: Any, dashboard_url: str, server: Server, world: World
) -> None:
    page = opened(dashboard_url, world.viewer, f"?project={world.project_id}&period=7d")
    page.locator("[data-panel=journeys] li.journey").first.wait_for()
    assert page.get_by_test_id("project-role").inner_text() == "Viewer"
    assert page.get_by_role("button", name="Settings").count() == 0
    assert page.locator("[data-panel=dropped]").count() == 0
    # the API refuses them too
    where = f"/projects/{world.project_id}"
    assert call(server, "GET", f"{where}/dropped", world.viewer).status_code == 403
    assert call(server, "GET", f"{where}/keys", world.viewer).status_code == 403
    r = call(server, "PATCH", where, world.viewer, json={"timezone": "Asia/Tokyo"})
    assert r.status_code == 403

    # an editor changes goals and notes, not the settings; a team admin the settings, but
    # deleting is an owner's
    editor = invite_and_accept(server, world.owner, world.team_id, "editor")
    page = opened(dashboard_url, editor.token, f"?project={world.project_id}&period=7d")
    assert page.get_by_test_id("project-role").inner_text() == "Editor"
    assert page.get_by_role("button", name="Settings").count() == 0
    assert page.locator("[data-panel=dropped]").count() == 0
    admin = invite_and_accept(server, world.owner, world.team_id, "admin")
    page = opened(dashboard_url, admin.token, f"?project={world.project_id}&period=7d")
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_test_id("settings")
    assert "Only the operator" in dialog.get_by_test_id("retention").inner_text()
    dialog.get_by_role("tab", name="Delete").click()
    assert "Only an owner" in dialog.get_by_test_id("delete-refused").inner_text()
    dialog.get_by_role("tab", name="Keys").click()
    dialog.get_by_test_id("keys").locator("tr").first.wait_for()
    assert dialog.get_by_role("button", name="Create a key").is_enabled()

    # the project's secret key manages it, but deleting is an owner's
    page = opened(dashboard_url, world.secret, "?period=7d")
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_test_id("settings")
    dialog.get_by_role("tab", name="Delete").click()
    assert "Only an owner" in dialog.get_by_test_id("delete-refused").inner_text()
    dialog.get_by_role("tab", name="Keys").click()
    own = dialog.get_by_test_id("keys").locator("tr", has_text="this page's key")
    eventually(lambda: own.count(), 1)
    assert axe_serious(page, "dialog") == []

    # the admin token sets the retention (and clears it back to the service's default)
    page = opened(dashboard_url, server.admin_token, f"?project={world.project_id}&period=7d")
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_test_id("settings")

    def retention() -> tuple[Any, Any]:
        r = call(server, "GET", f"/projects/{world.project_id}", server.admin_token)
        options = r.json()["options"]
        return options.get("retentionMonths"), options.get("rollupRetentionMonths")

    for raw, rolled, want in (("3", "6", (3, 6)), ("", "", (None, None))):
        dialog.get_by_label("Raw events (months)").fill(raw)
        dialog.get_by_label("Daily rollups (months)").fill(rolled)
        dialog.get_by_role("button", name="Save retention").click()
        eventually(retention, want)
    assert axe_serious(page, "dialog") == []
    dialog.get_by_role("tab", name="Delete").click()
    assert dialog.get_by_role("button", name="Delete this project").is_disabled()


def test_an_owner_changes_the_settings(
    opened: Any, dashboard_url: str, server: Server, world: World
) -> None:
    page = opened(dashboard_url, world.owner, f"?project={world.project_id}&period=7d")
    assert page.get_by_test_id("project-role").inner_text() == "Owner"
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_test_id("settings")
    where = f"/projects/{world.project_id}"

    def record() -> dict[str, Any]:
        body: dict[str, Any] = call(server, "GET", where, world.owner).json()
        return body

    # general: time zone and domains; retention is the operator's
    dialog.get_by_label("Time zone").select_option("Europe/Berlin")
    dialog.get_by_label("Domains").fill("acme.test\nshop.acme.test")
    dialog.get_by_role("button", name="Save", exact=True).click()
    eventually(
        lambda: (record()["timezone"], record()["domains"]),
        ("Europe/Berlin", ["acme.test", "shop.acme.test"]),
    )
    eventually(lambda: page.get_by_test_id("range").get_attribute("data-tz"), "Europe/Berlin")
    assert "Only the operator" in dialog.get_by_test_id("retention").inner_text()
    assert axe_serious(page, "dialog") == []
    # a bad domain: the API's message, naming it
    dialog.get_by_label("Domains").fill("not a host")
    dialog.get_by_role("button", name="Save", exact=True).click()
    assert "domains" in dialog.get_by_role("alert").inner_text()

    # exclusions
    dialog.get_by_role("tab", name="Exclusions").click()
    assert dialog.get_by_label("Excluded paths").input_value() == "/private/*"
    dialog.get_by_label("Excluded addresses").fill("192.0.2.0/24\n2001:db8::/32")
    dialog.get_by_label("Excluded paths").fill("/private/*\n/admin/*")
    dialog.get_by_label("Only the project's own domains").check()
    dialog.get_by_label("Keep events from data-centre addresses").check()
    dialog.get_by_role("button", name="Save exclusions").click()
    want = {
        "excludeAddresses": ["192.0.2.0/24", "2001:db8::/32"],
        "excludePaths": ["/private/*", "/admin/*"],
        "onlyOwnDomains": True,
        "keepDataCentres": True,
    }
    eventually(lambda: {k: record()["options"].get(k) for k in want}, want)
    assert axe_serious(page, "dialog") == []

    # keys: a new public key shown once, which sends; rotated (the old one stops), revoked
    dialog.get_by_role("tab", name="Keys").click()
    dialog.get_by_label("Kind").select_option("public")
    dialog.get_by_role("button", name="Create a key").click()
    key = dialog.get_by_test_id("new-key").input_value()
    assert key.startswith("svc_live_")
    assert server.send(key, {"event": "page_view", "url": "https://acme.test/"}).status_code == 200
    hint = f"{key[: key.index('_', 4) + 1]}...{key[-4:]}"
    row = dialog.get_by_test_id("keys").locator("tr", has_text=hint)
    eventually(lambda: row.count(), 1)
    assert axe_serious(page, "dialog") == []
    shoot(page, "settings-keys", full_page=False)
    # at 375 px the dialog does not scroll sideways (the keys' table scrolls in its own box)
    page.set_viewport_size({"width": 375, "height": 800})
    body = page.locator("dialog .modal-body")
    assert body.evaluate("(b) => b.scrollWidth - b.clientWidth") <= 1
    shoot(page, "settings-keys-phone", full_page=False)
    page.set_viewport_size({"width": 1280, "height": 800})
    row.get_by_role("button", name=f"Rotate key {hint}").click()
    row.get_by_role("button", name="Yes, rotate").click()
    eventually(lambda: dialog.get_by_test_id("new-key").input_value() != key, True)
    rotated = dialog.get_by_test_id("new-key").input_value()
    eventually(lambda: server.send(key, {"event": "page_view"}).status_code, 401)
    new_hint = f"{rotated[: rotated.index('_', 4) + 1]}...{rotated[-4:]}"
    row = dialog.get_by_test_id("keys").locator("tr", has_text=new_hint)
    row.get_by_role("button", name=f"Revoke key {new_hint}").click()
    row.get_by_role("button", name="Yes, revoke").click()
    eventually(lambda: row.count(), 0)
    eventually(lambda: server.send(rotated, {"event": "page_view"}).status_code, 401)
    # the clear key is shown once: settings opened again list hints only
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    page.get_by_role("button", name="Settings").click()
    dialog.get_by_role("tab", name="Keys").click()
    dialog.get_by_test_id("keys").locator("tr").first.wait_for()
    assert dialog.get_by_test_id("new-key").count() == 0
    assert rotated not in dialog.inner_text() and key not in dialog.inner_text()

    # share links: made (shown once), listed with the dashboard's dates, revoked
    dialog.get_by_role("tab", name="Share links").click()
    dialog.get_by_role("button", name="Create a share link").click()
    link = dialog.get_by_test_id("new-share-link").input_value()
    token = link.rsplit("/share/", 1)[1]
    assert call(server, "GET", "/metrics", token, params=dict(week())).status_code == 200
    listed = dialog.get_by_test_id("share-links").locator("li")
    eventually(lambda: listed.count(), 1)
    made = listed.first.inner_text()
    assert re.search(r"made [A-Z][a-z]{2} \d{1,2}, \d{4}, \d{2}:\d{2}, last used", made), made
    assert axe_serious(page, "dialog") == []
    # from the keyboard: the question takes the focus
    listed.first.get_by_role("button", name=re.compile("^Revoke share link")).focus()
    page.keyboard.press("Enter")
    eventually(lambda: focused(page), "Yes, revoke")
    page.keyboard.press("Enter")
    eventually(lambda: listed.count(), 0)
    eventually(lambda: call(server, "GET", "/metrics", token, params=dict(week())).status_code, 401)
    page.keyboard.press("Escape")

    # deletion: the name typed to confirm; the project is gone, the other one shown
    page.goto(f"{dashboard_url}/?project={world.doomed_id}")
    page.wait_for_selector(STATS, timeout=45_000)
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_test_id("settings")
    dialog.get_by_role("tab", name="Delete").click()
    button = dialog.get_by_role("button", name="Delete this project")
    dialog.get_by_label(re.compile("Type the project's name")).fill("wrong")
    assert button.is_disabled()
    assert axe_serious(page, "dialog") == []
    dialog.get_by_label(re.compile("Type the project's name")).fill(world.doomed_name)
    button.click()
    eventually(
        lambda: call(server, "GET", f"/projects/{world.doomed_id}", server.admin_token).status_code,
        404,
    )
    page.wait_for_selector(STATS, timeout=45_000)
    eventually(lambda: page.locator("h1").first.inner_text(), world.name)
