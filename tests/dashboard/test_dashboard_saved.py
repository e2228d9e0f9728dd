"""The dashboard's saved goals, funnels, segments and annotations (issue 41) in real headless
Chromium against the real server: an owner creates, edits and deletes them from their screens;
the goals panel and the funnel view show the API's numbers for them (GET /metrics/goals without
``goal``, GET /metrics/funnel with ``funnel``); a segment is saved from the filter bar and
applied again; notes are added from the chart (by keyboard too) and drawn on every time chart;
a viewer and a share link see them without the controls they may not use. Every screen passes
axe (no serious or critical violation), at 1440 and 375 px, light and dark.

One server (the session's) and one browser for the module; each test loads few pages and makes
several checks on each.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.dashboard.conftest import TIMEZONE
from tests.dashboard.seed import traffic
from tests.dashboard.test_dashboard_accounts import STORE_KEY, axe_serious
from tests.dashboard.test_dashboard_browser import eventually, last_7_days, query_of, shoot
from tests.support import Server
from tests.test_page_measurements import vitals

pytestmark = pytest.mark.browser

WIDE = {"width": 1440, "height": 900}
NARROW = {"width": 375, "height": 812}
STATS = "[data-testid=stat-visitors]:not([data-value=''])"


@dataclass
class Site:
    """A team's project with a week of traffic, a second project of the team, the owner's and
    a viewer's sessions, and a share token of the project."""

    id: str
    other_id: str
    owner: str
    viewer: str
    share: str


def post(url: str, **kw: Any) -> httpx.Response:
    """POST with room for a loaded machine."""
    return httpx.post(url, timeout=60, **kw)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def signed_in(server: Server, email: str, password: str) -> str:
    r = post(server.url + "/auth/signin", json={"email": email, "password": password})
    assert r.status_code == 200, r.text
    token: str = r.json()["token"]
    return token


@pytest.fixture(scope="module")
def site(server: Server) -> Site:
    suffix = uuid.uuid4().hex[:8]
    email, password = f"owner-{suffix}@acme.test", "correct horse battery"
    r = post(
        server.url + "/accounts",
        json={"email": email, "password": password, "teamName": f"Saved {suffix}"},
        headers=server.admin(),
    )
    assert r.status_code == 201, r.text
    team = r.json()["team"]["id"]
    owner = signed_in(server, email, password)
    made = []
    for name in (f"saved-{suffix}", f"saved-other-{suffix}"):
        r = post(
            server.url + "/projects",
            json={"name": name, "timezone": TIMEZONE, "domains": ["acme.test"]},
            headers=bearer(owner),
        )
        assert r.status_code == 201, r.text
        made.append(r.json())
    main, other = made
    day = int((datetime.now() - timedelta(days=1)).timestamp() * 1000)
    events = [*traffic(seed=11, visitors=60, live=0), vitals(1, day, "/", lcp=2100, cls=0.05)]
    r = server.send(main["keys"]["secret"], events, timeout=120)
    assert r.status_code == 200 and "rejected" not in r.json(), r.text
    r = server.send(other["keys"]["secret"], traffic(seed=12, visitors=5, live=0), timeout=120)
    assert r.status_code == 200, r.text
    # a viewer of the team, by invitation
    r = post(
        f"{server.url}/teams/{team}/invitations",
        json={"email": f"viewer-{suffix}@acme.test", "role": "viewer"},
        headers=bearer(owner),
    )
    assert r.status_code == 201, r.text
    invite = r.json()["link"].split("#invite=", 1)[1]
    r = post(f"{server.url}/invitations/{invite}/accept", json={"password": password})
    assert r.status_code == 200, r.text
    viewer = r.json()["token"]
    r = post(
        f"{server.url}/projects/{main['id']}/keys", json={"kind": "share"}, headers=bearer(owner)
    )
    assert r.status_code == 201, r.text
    server.wait_loaded()
    return Site(main["id"], other["id"], owner, viewer, r.json()["key"])


@pytest.fixture
def open_as(chromium: Any, dashboard_url: str) -> Iterator[Any]:
    """Opens the dashboard signed in with a token (kept in the tab's session storage, as
    the sign-in keeps it), or a share link; every context is closed after the test."""
    contexts: list[Any] = []
    errors: list[str] = []

    def open_page(
        token: str, query: str, viewport: dict[str, int] = WIDE, dark: bool = False
    ) -> Any:
        ctx = chromium.new_context(
            viewport=viewport,
            locale="en-US",
            timezone_id="UTC",
            bypass_csp=True,  # axe is injected as an inline script
            color_scheme="dark" if dark else "light",
        )
        contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        if token.startswith("svc_share_"):
            page.goto(f"{dashboard_url}/share/{token}{query}")
        else:
            ctx.add_init_script(f"sessionStorage.setItem('{STORE_KEY}', '{token}')")
            page.goto(f"{dashboard_url}/{query}")
        page.wait_for_selector(STATS, timeout=45_000)
        return page

    yield open_page
    for ctx in contexts:
        ctx.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def api(server: Server, token: str, path: str, params: list[tuple[str, str]]) -> Any:
    r = httpx.get(server.url + path, params=params, headers=bearer(token), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def goal_rows(page: Any) -> list[list[str]]:
    """The goals panel's rows: the label, then each figure as shown."""
    out: list[list[str]] = page.evaluate(
        """() => [...document.querySelectorAll('[data-panel=goals] button.row')].map((b) =>
            [b.querySelector('.label').textContent,
             ...[...b.querySelectorAll('.num')].filter((n) => n.firstChild)
                .map((n) => n.firstChild.textContent)])"""
    )
    return out


def shown_goals(body: dict[str, Any]) -> list[list[str]]:
    """The rows the panel must show for GET /metrics/goals' answer."""
    return [
        [g["name"], f"{g['visitors']:,}", f"{g['events']:,}", g["conversionRate"]]
        for g in body["goals"]
    ]


# --- goals and funnels ------------------------------------------------------------------------


def test_saved_goals_and_funnels_screens_and_panels(
    open_as: Any, server: Server, site: Site
) -> None:
    page = open_as(site.owner, f"?project={site.id}&period=7d")
    frm, to = last_7_days()
    params = [("projectId", site.id), ("from", frm), ("to", to)]
    goals = page.locator("[data-panel=goals]")
    # no saved goals yet: the custom events, and the way to the screen
    goals.get_by_text("Your custom events").wait_for()

    goals.get_by_role("button", name="Saved goals").click()
    screen = page.get_by_test_id("goals-screen")
    screen.get_by_text("No saved goals yet.").wait_for()
    assert axe_serious(page, "dialog") == []
    form = screen.get_by_test_id("goal-form")
    for i, (name, kind, target, prop) in enumerate(
        [
            ("Signups", "event", "signup", None),
            ("Pro signups", "event", "signup", ("plan", "pro")),
            ("Pricing", "page", "/pricing*", None),
        ]
    ):
        form.get_by_label("Goal name").fill(name)
        form.get_by_label("Kind").select_option(kind)
        form.get_by_label("Event name" if kind == "event" else "Page path").fill(target)
        if prop:
            form.get_by_label("Property", exact=True).fill(prop[0])
            form.get_by_label("Value", exact=True).fill(prop[1])
        form.get_by_role("button", name="Add goal").click()
        eventually(lambda: screen.locator("li[data-goal]").count(), i + 1)
        eventually(lambda: form.get_by_label("Goal name").input_value(), "")  # the form is empty
    assert "(plan = pro)" in screen.locator("li", has_text="Pro signups").inner_text()
    # a bad one: the API's message, naming the field
    form.get_by_label("Goal name").fill("Bad")
    form.get_by_label("Kind").select_option("page")
    form.get_by_label("Page path").fill("pricing")
    form.get_by_role("button", name="Add goal").click()
    assert "page" in screen.get_by_role("alert").inner_text()
    # rename one, delete one (the question is answered from the keyboard)
    screen.get_by_role("button", name="Edit goal Pricing").click()
    editing = screen.locator("li.editing")
    editing.get_by_label("Goal name").fill("Pricing pages")
    editing.get_by_role("button", name="Save goal").click()
    screen.get_by_text("Pricing pages").wait_for()
    screen.get_by_role("button", name="Delete goal Signups").click()
    # the question's confirming button takes the focus once drawn; Enter answers it
    screen.get_by_role("group", name="Delete Signups?").wait_for()
    eventually(lambda: page.evaluate("() => document.activeElement?.textContent"), "Delete")
    page.keyboard.press("Enter")
    eventually(lambda: screen.locator("li[data-goal]").count(), 2)
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")

    # the panel shows the saved goals with the API's numbers
    body = api(server, site.owner, "/metrics/goals", params)
    assert body["saved"] is True and [g["name"] for g in body["goals"]] == [
        "Pro signups",
        "Pricing pages",
    ]
    assert body["goals"][1]["visitors"] > 0
    eventually(lambda: goal_rows(page), shown_goals(body))
    # a goal with a property match filters by both; Back undoes it
    page.locator("[data-panel=goals] button.row").first.click()
    eventually(lambda: query_of(page).get("filter"), ["event:is:signup", "prop:plan:is:pro"])
    page.go_back()
    eventually(lambda: query_of(page).get("filter"), None)
    # a filter narrows them as it narrows the API's
    page.locator("[data-panel=goals] button.row").last.click()
    eventually(lambda: query_of(page).get("filter"), ["page:matches:^/pricing.*$"])
    filtered = api(
        server, site.owner, "/metrics/goals", [*params, ("filter", "page:matches:^/pricing.*$")]
    )
    eventually(lambda: goal_rows(page), shown_goals(filtered))

    # funnels: made on their screen, chosen in the funnel view, the API's numbers
    page.goto(page.url.split("?")[0] + f"?project={site.id}&period=7d")
    funnel = page.locator("[data-panel=funnel]")
    funnel.get_by_role("button", name="Saved funnels").click()
    screen = page.get_by_test_id("funnels-screen")
    screen.get_by_text("No saved funnels yet.").wait_for()
    form = screen.get_by_test_id("funnel-form")
    form.get_by_label("Funnel name").fill("Signup path")
    form.get_by_label("Step 1", exact=True).fill("page:/|page:/docs*")
    form.get_by_label("Step 2", exact=True).fill("page:/pricing")
    form.get_by_role("button", name="+ Step").click()
    form.get_by_label("Step 3", exact=True).fill("event:signup")
    form.get_by_label("Within").select_option("86400")
    form.get_by_role("button", name="Add funnel").click()
    made = screen.locator("li[data-funnel]")
    made.wait_for()
    eventually(lambda: form.get_by_label("Funnel name").input_value(), "")
    assert "Visit / or Visit /docs* → Visit /pricing → signup · within 1 day" in made.inner_text()
    # a step the API refuses: its message
    form.get_by_label("Funnel name").fill("Broken")
    form.get_by_label("Step 1", exact=True).fill("page:/a|")
    form.get_by_label("Step 2", exact=True).fill("page:/b")
    form.get_by_role("button", name="Add funnel").click()
    assert "steps" in screen.get_by_role("alert").inner_text()
    assert axe_serious(page, "dialog") == []
    shoot(page, "saved-funnels-1440", full_page=False)
    page.keyboard.press("Escape")
    saved = api(server, site.owner, f"/projects/{site.id}/funnels", [])["funnels"]
    assert [(f["name"], f["window"]) for f in saved] == [("Signup path", 86400)]
    funnel_id = saved[0]["id"]

    funnel.get_by_label("Funnel").select_option(label="Signup path")
    eventually(lambda: query_of(page).get("funnel"), [funnel_id])
    want = api(server, site.owner, "/metrics/funnel", [*params, ("funnel", funnel_id)])
    assert want["funnel"] == {"id": funnel_id, "name": "Signup path"}
    steps = funnel.locator(".funnel li")
    eventually(lambda: steps.count(), 3)
    for s, li in zip(want["steps"], steps.all(), strict=True):
        assert f"{s['visitors']:,} visitors" in li.inner_text()
        assert s["conversionRate"] in li.inner_text()
    assert "Visit / or Visit /docs*" in steps.first.inner_text()
    assert axe_serious(page, "[data-panel=funnel]") == []

    # edited on the screen, the view follows; deleted, the view says so
    funnel.get_by_role("button", name="Saved funnels").click()
    screen.get_by_role("button", name="Edit funnel Signup path").click()
    editing = screen.locator("li.editing")
    editing.get_by_role("button", name="Remove step 3").click()
    editing.get_by_role("button", name="Save funnel").click()
    eventually(
        lambda: "within 1 day" in made.inner_text() and "signup" not in made.inner_text(), True
    )
    page.keyboard.press("Escape")
    eventually(lambda: steps.count(), 2)
    funnel.get_by_role("button", name="Saved funnels").click()
    screen.get_by_role("button", name="Delete funnel Signup path").click()
    screen.get_by_role("button", name="Delete", exact=True).click()
    screen.get_by_text("No saved funnels yet.").wait_for()
    page.keyboard.press("Escape")
    funnel.get_by_text("does not exist any more").wait_for()

    # the goals screen with its forms at 375 px, in the dark: nothing overflows, axe is content
    page.set_viewport_size(NARROW)
    page.emulate_media(color_scheme="dark")
    goals.get_by_role("button", name="Saved goals").click()
    screen = page.get_by_test_id("goals-screen")
    screen.get_by_role("button", name="Edit goal Pro signups").click()
    page.locator("li.editing").get_by_label("Property", exact=True).wait_for()
    wide = page.evaluate(
        """() => [...document.querySelectorAll('dialog *')]
            .filter((e) => e.getBoundingClientRect().right > innerWidth + 1).length"""
    )
    assert wide == 0
    assert axe_serious(page, "dialog") == []
    shoot(page, "saved-goals-375-dark", full_page=False)


# --- segments and annotations -------------------------------------------------------------------


def test_segments_and_notes_from_the_chart(open_as: Any, server: Server, site: Site) -> None:
    page = open_as(site.owner, f"?project={site.id}&period=7d&filter=device:is:mobile")
    frm, to = last_7_days()

    # the current filters saved as a personal and as a shared segment
    page.get_by_test_id("segments-button").click()
    screen = page.get_by_test_id("segments-screen")
    screen.get_by_text("No segments yet.").wait_for()
    assert axe_serious(page, "dialog") == []
    form = screen.get_by_test_id("segment-form")
    form.get_by_label("Segment name").fill("Phones")
    form.get_by_role("button", name="Save segment").click()
    screen.locator("li[data-segment=Phones]").wait_for()
    form.get_by_label("Segment name").fill("Team phones")
    form.get_by_label("Share with the team").check()
    form.get_by_role("button", name="Save segment").click()
    screen.locator("li[data-segment='Team phones']").wait_for()
    listed = api(server, site.owner, f"/projects/{site.id}/segments", [])["segments"]
    assert [(s["name"], s["filters"], s["shared"]) for s in listed] == [
        ("Phones", ["device:is:mobile"], False),
        ("Team phones", ["device:is:mobile"], True),
    ]
    assert "Personal" in screen.locator("li[data-segment=Phones]").inner_text()
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")
    assert page.get_by_test_id("active-segment").inner_text() == "Segment Team phones"

    # filters cleared, the segment applied again from the filter bar
    page.get_by_role("button", name="Remove filter: Device is Mobile").click()
    assert page.get_by_test_id("active-segment").count() == 0
    page.get_by_test_id("segments-button").click()
    screen.get_by_role("button", name="Apply segment Phones").click()
    phones = next(s for s in listed if s["name"] == "Phones")
    eventually(lambda: query_of(page).get("filter"), ["device:is:mobile"])
    assert query_of(page).get("segment") == [phones["id"]]
    assert page.get_by_test_id("active-segment").inner_text() == "Segment Phones"
    page.get_by_role("button", name="Remove filter: Device is Mobile").click()

    # a note from the "+ Note" control (today), one from the keyboard on the chart's first day
    notes = page.get_by_test_id("annotations")
    notes.get_by_role("button", name="+ Note").click()
    form = notes.get_by_test_id("note-form")
    assert form.get_by_label("Day").input_value() == to
    form.get_by_label("Note").fill("Launched v2")
    assert axe_serious(page, ".chart-card") == []  # the note form too
    page.keyboard.press("Enter")
    notes.locator(f"li[data-day='{to}']").wait_for()
    chart = page.locator(".chart-card .chart")
    chart.focus()
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    assert form.get_by_label("Day").input_value() == frm
    assert form.get_by_label("Note").evaluate("(e) => e === document.activeElement")
    page.keyboard.type("Newsletter sent")
    page.keyboard.press("Enter")
    notes.locator(f"li[data-day='{frm}']").wait_for()
    # a click on the chart starts a note for the day clicked; Escape leaves it
    box = chart.bounding_box()
    chart.click(position={"x": box["width"] / 2, "y": box["height"] / 2})
    assert frm <= form.get_by_label("Day").input_value() <= to
    form.get_by_label("Note").press("Escape")
    assert notes.get_by_test_id("note-form").count() == 0

    stored = api(
        server, site.owner, f"/projects/{site.id}/annotations", [("from", frm), ("to", to)]
    )
    assert [(a["day"], a["text"]) for a in stored["annotations"]] == [
        (frm, "Newsletter sent"),
        (to, "Launched v2"),
    ]
    # drawn on the main chart at their days, and said by the chart's readout
    markers = page.locator(".chart-card [data-testid=annotation-markers] .annotation-marker")
    eventually(lambda: markers.count(), 2)
    assert [m.get_attribute("data-index") for m in markers.all()] == ["0", "6"]
    chart.focus()
    page.keyboard.press("Home")
    assert "note: Newsletter sent" in page.locator("#chart-readout").inner_text()
    # and on the Web Vitals chart
    vitals_marks = page.locator("[data-testid=vitals-chart] .annotation-marker")
    eventually(lambda: vitals_marks.count(), 2)
    assert axe_serious(page, ".chart-card") == []

    # edited, then deleted
    notes.get_by_role("button", name="Edit note").first.click()
    editing = notes.locator("li.editing")
    editing.get_by_label("Note").fill("Newsletter #12 sent")
    assert axe_serious(page, ".chart-card") == []  # a note being edited
    editing.get_by_role("button", name="Save note").click()
    notes.get_by_text("Newsletter #12 sent").wait_for()
    notes.get_by_role("button", name="Delete note").last.click()
    assert axe_serious(page, ".chart-card") == []  # the question before deleting
    notes.get_by_role("button", name="Delete", exact=True).click()
    eventually(lambda: notes.locator("li[data-day]").count(), 1)
    eventually(lambda: markers.count(), 1)
    page.locator(".chart-card").scroll_into_view_if_needed()
    shoot(page, "saved-owner-1440", full_page=False)

    # the "All projects" chart draws every project's notes, with the project's name
    page.goto(page.url.split("?")[0] + "?project=all&period=7d")
    overview = page.locator("[data-testid=annotations]")
    overview.get_by_text("Newsletter #12 sent").wait_for()
    eventually(lambda: page.locator(".annotation-marker").count(), 1)
    assert axe_serious(page) == []


# --- what a viewer and a share link see ---------------------------------------------------------


def test_viewer_and_share_link_read_without_changing(
    open_as: Any, server: Server, site: Site
) -> None:
    # what the owner's tests left: saved goals, segments, a note (made here if run alone)
    owner = bearer(site.owner)
    base = f"{server.url}/projects/{site.id}"
    if not api(server, site.owner, f"/projects/{site.id}/goals", [])["goals"]:
        post(
            f"{base}/goals",
            json={"name": "Signups", "kind": "event", "event": "signup"},
            headers=owner,
        )
    frm, to = last_7_days()
    r = post(
        f"{base}/segments",
        json={"name": "Desktop", "filters": ["device:is:desktop"], "shared": True},
        headers=owner,
    )
    assert r.status_code == 201, r.text
    desktop = r.json()["id"]
    post(f"{base}/annotations", json={"date": to, "text": "Viewer can read"}, headers=owner)

    # a viewer, at 375 px in the dark: reads everything, writes personal segments only
    page = open_as(site.viewer, f"?project={site.id}&period=7d", NARROW, dark=True)
    notes = page.get_by_test_id("annotations")
    notes.get_by_text("Viewer can read").wait_for()
    assert notes.get_by_role("button", name="+ Note").count() == 0
    assert notes.get_by_role("button", name="Edit note").count() == 0
    page.locator("[data-panel=goals]").get_by_role("button", name="Saved goals").click()
    screen = page.get_by_test_id("goals-screen")
    screen.locator("li[data-goal]").first.wait_for()
    assert screen.get_by_test_id("goal-form").count() == 0
    assert screen.get_by_role("button", name="Edit goal", exact=False).count() == 0
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")
    page.locator("[data-panel=funnel]").get_by_role("button", name="Saved funnels").click()
    funnels = page.get_by_test_id("funnels-screen")
    funnels.wait_for()  # open before asking what it lacks, and before Escape closes it
    assert funnels.get_by_test_id("funnel-form").count() == 0
    page.keyboard.press("Escape")
    funnels.wait_for(state="hidden")

    page.get_by_test_id("segments-button").click()
    screen = page.get_by_test_id("segments-screen")
    shared = screen.locator("li[data-segment=Desktop]")
    shared.wait_for()
    # the owner's personal segment does not exist for the viewer
    assert screen.locator("li[data-segment=Phones]").count() == 0
    assert shared.get_by_role("button", name="Edit segment Desktop").count() == 0
    shared.get_by_role("button", name="Apply segment Desktop").click()
    eventually(lambda: query_of(page).get("filter"), ["device:is:desktop"])
    page.get_by_test_id("segments-button").click()
    form = screen.get_by_test_id("segment-form")
    assert form.get_by_label("Share with the team").count() == 0
    form.get_by_label("Segment name").fill("My desktops")
    form.get_by_role("button", name="Save segment").click()
    mine = screen.locator("li[data-segment='My desktops']")
    mine.wait_for()
    assert mine.get_by_role("button", name="Edit segment My desktops").is_visible()
    assert axe_serious(page, "dialog") == []
    shoot(page, "saved-viewer-375-dark", full_page=False)
    page.keyboard.press("Escape")
    overflow = page.evaluate("() => document.documentElement.scrollWidth > innerWidth")
    assert overflow is False

    # a share link names a segment: the page opens on its filters, and changes nothing
    page = open_as(site.share, f"?period=7d&segment={desktop}")
    eventually(lambda: query_of(page).get("filter"), ["device:is:desktop"])
    assert page.get_by_test_id("active-segment").inner_text() == "Segment Desktop"
    body = api(
        server,
        site.owner,
        "/metrics",
        [("projectId", site.id), ("from", frm), ("to", to), ("filter", "device:is:desktop")],
    )
    eventually(
        lambda: page.get_by_test_id("stat-visitors").get_attribute("data-value"),
        str(body["visitors"]),
    )
    page.get_by_test_id("segments-button").click()
    screen = page.get_by_test_id("segments-screen")
    screen.locator("li[data-segment=Desktop]").wait_for()
    assert screen.locator("li[data-segment='My desktops']").count() == 0
    assert screen.get_by_test_id("segment-form").count() == 0
    assert screen.get_by_role("button", name="Edit segment Desktop").count() == 0
    page.keyboard.press("Escape")
    page.get_by_test_id("annotations").get_by_text("Viewer can read").wait_for()
    assert page.get_by_role("button", name="+ Note").count() == 0
    assert axe_serious(page) == []
