"""Issue 41's dashboard parts in real headless Chromium against the real server: the filter
dialog suggests the API's values as one types (a combobox: arrow keys, Enter picks, Escape
closes the list) and the picked filter gives the API's numbers; every duration is written one
way, rounded before it is split into units; Regions and Cities without geo data say why; the
realtime view's per-minute bars and top lists are the API's, with the notes of its minutes.
Each screen passes axe."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from svc.mail.report import duration  # the page's rule (dashboard/src/format.ts), once
from tests.dashboard.conftest import Seeded
from tests.dashboard.test_dashboard_accounts import axe_serious, new_page
from tests.dashboard.test_dashboard_browser import (
    api,
    eventually,
    last_7_days,
    query_of,
    sign_in,
    wait_stats,
)
from tests.support import Server

pytestmark = pytest.mark.browser

UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


def test_the_duration_rule() -> None:
    assert duration(59.96) == "1m 00s"
    assert duration(119.6) == "2m 00s"
    assert duration(128) == "2m 08s"
    assert duration(4.2) == "4.2s"
    assert duration(9.96) == "10s"
    assert duration(0.18) == "180ms"
    assert duration(3599.6) == "1h 00m"
    assert duration(3725) == "1h 02m"


@pytest.fixture
def browser_page(chromium: Any) -> Any:
    errors: list[str] = []
    ctx, page = new_page(chromium, errors)
    yield page
    ctx.close()
    assert not errors, errors


def options(page: Any) -> list[tuple[str, str, int]]:
    """The listed suggestions: value, label shown, visitors."""
    out: list[tuple[str, str, int]] = page.evaluate(
        """() => [...document.querySelectorAll('dialog [role=listbox]:not([hidden]) [role=option]')]
            .map((o) => [o.dataset.value, o.querySelector('.label').textContent,
                Number(o.querySelector('.num').firstChild.textContent.replace(/[^0-9]/g, ''))])"""
    )
    return [(v, label, n) for v, label, n in out]


def test_filter_suggestions_as_one_types(
    browser_page: Any, dashboard_url: str, server: Server, seeded: Seeded
) -> None:
    page = browser_page
    sign_in(page, dashboard_url, seeded.secret, "?period=7d")
    frm, to = last_7_days()
    params = [("from", frm), ("to", to)]
    page.get_by_role("button", name="+ Filter").click()
    dialog = page.get_by_role("dialog", name="Add a filter")
    dialog.get_by_label("Dimension").select_option("device")
    box = dialog.get_by_role("combobox", name="Value")
    box.click()
    page.keyboard.type("o")  # mObile, desktOp: in any case
    want = api(
        server, seeded.secret, "/metrics/values", [*params, ("dimension", "device"), ("q", "o")]
    )["values"]
    assert want, "the seed has devices holding an o"
    shown = [(v["value"], v["value"].capitalize(), v["visitors"]) for v in want]
    eventually(lambda: options(page), shown)
    assert box.get_attribute("aria-expanded") == "true"
    assert box.get_attribute("aria-activedescendant") is None
    assert axe_serious(page, "dialog") == []

    # arrow keys move through the options, the input keeps the focus
    page.keyboard.press("ArrowDown")
    first = page.locator("dialog [role=option]").first
    eventually(lambda: box.get_attribute("aria-activedescendant"), first.get_attribute("id"))
    assert first.get_attribute("aria-selected") == "true"
    if len(want) > 1:
        page.keyboard.press("ArrowDown")
        second = page.locator("dialog [role=option]").nth(1)
        eventually(lambda: box.get_attribute("aria-activedescendant"), second.get_attribute("id"))
        page.keyboard.press("ArrowUp")
        eventually(lambda: box.get_attribute("aria-activedescendant"), first.get_attribute("id"))
    assert box.evaluate("(e) => e === document.activeElement")

    # Escape closes the list, not the dialog
    page.keyboard.press("Escape")
    eventually(lambda: box.get_attribute("aria-expanded"), "false")
    assert dialog.is_visible()

    # typed on: the list narrows; Enter picks the active option, a second Enter applies
    page.keyboard.type("b")
    narrowed = api(
        server, seeded.secret, "/metrics/values", [*params, ("dimension", "device"), ("q", "ob")]
    )["values"]
    eventually(lambda: [o[0] for o in options(page)], [v["value"] for v in narrowed])
    picked = narrowed[0]["value"]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    eventually(lambda: box.input_value(), picked)
    eventually(lambda: box.get_attribute("aria-expanded"), "false")
    assert dialog.is_visible()
    page.keyboard.press("Enter")
    eventually(lambda: query_of(page).get("filter"), [f"device:is:{picked}"])
    filtered = [*params, ("filter", f"device:is:{picked}")]
    wait_stats(page, api(server, seeded.secret, "/metrics", filtered))
    chip = page.get_by_role("button", name=f"Remove filter: Device is {picked.capitalize()}")
    assert chip.is_visible()

    # the other filters hold for the suggestions; channels are shown in the dashboard's words
    page.get_by_role("button", name="+ Filter").click()
    dialog.get_by_label("Dimension").select_option("channel")
    box.click()
    page.keyboard.type("organic")
    want = api(
        server,
        seeded.secret,
        "/metrics/values",
        [*filtered, ("dimension", "channel"), ("q", "organic")],
    )["values"]
    eventually(
        lambda: [(o[0], o[2]) for o in options(page)], [(v["value"], v["visitors"]) for v in want]
    )
    labels = {o[0]: o[1] for o in options(page)}
    if "organic_search" in labels:
        assert labels["organic_search"] == "Organic search"
    assert axe_serious(page, "dialog") == []
    # on a phone, in the dark: the open list stays on the screen, axe is content
    page.set_viewport_size({"width": 375, "height": 812})
    page.emulate_media(color_scheme="dark")
    assert box.get_attribute("aria-expanded") == "true"
    assert (
        page.evaluate(
            """() => [...document.querySelectorAll('dialog *')]
            .filter((e) => e.getBoundingClientRect().right > innerWidth + 1).length"""
        )
        == 0
    )
    assert axe_serious(page, "dialog") == []
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    eventually(lambda: page.get_by_role("dialog").count(), 0)


# --- durations and the geo message: a project of its own --------------------------------------


def _ev(visitor: int, ts: int, name: str, path: str, **extra: Any) -> dict[str, Any]:
    return {
        "event": name,
        "url": f"https://dur.test{path}",
        "ts": ts,
        "ip": f"10.9.0.{visitor}",
        "userAgent": UA,
        **extra,
    }


# page -> its one visit's engaged time (ms), and how the Engagement panel writes it
ENGAGED = {
    "/a": (119_600, "2m 00s"),
    "/b": (59_960, "1m 00s"),
    "/c": (4_200, "4.2s"),
    "/d": (128_000, "2m 08s"),
    "/e": (3_725_000, "1h 02m"),
}


@pytest.fixture(scope="module")
def timed(server: Server) -> dict[str, Any]:
    p = server.create_project("dash-dur-" + uuid.uuid4().hex[:8], domains=["dur.test"])
    t0 = int(time.time() * 1000) - 3 * 3600 * 1000
    events: list[dict[str, Any]] = []
    for v, (path, (ms, _)) in enumerate(ENGAGED.items(), start=1):
        events.append(_ev(v, t0 + v * 60_000, "page_view", path))
        props = {"engaged_ms": ms, "scroll_pct": 50}
        events.append(_ev(v, t0 + v * 60_000 + 1000, "engagement", path, properties=props))
    # a visit of 128 s (two page views): the visit duration is not a bounce's 0 s
    events.append(_ev(9, t0, "page_view", "/a"))
    events.append(_ev(9, t0 + 128_000, "page_view", "/b"))
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    server.wait_loaded()
    return p


def test_durations_are_written_one_way(
    browser_page: Any, dashboard_url: str, server: Server, timed: dict[str, Any]
) -> None:
    page = browser_page
    key = timed["keys"]["secret"]
    sign_in(page, dashboard_url, key, "?period=7d")
    frm, to = last_7_days("UTC")
    params = [("from", frm), ("to", to)]
    body = api(server, key, "/metrics", params)
    stat = page.get_by_test_id("stat-avgSessionDuration").locator(".stat-value")
    eventually(lambda: stat.inner_text(), duration(body["avgSessionDuration"]))

    rows = api(server, key, "/metrics/breakdown", [*params, ("by", "engagement")])["rows"]
    assert {r["value"]: r["medianEngagedMs"] for r in rows} == {
        p: ms for p, (ms, _) in ENGAGED.items()
    }
    shown = page.locator("[data-panel=engagement] button.row")
    eventually(lambda: shown.count(), len(ENGAGED))
    got = {
        b.get_attribute("data-value"): b.locator("[data-testid=row-num]").evaluate(
            "(e) => e.firstChild.textContent"
        )
        for b in shown.all()
    }
    assert got == {p: text for p, (_, text) in ENGAGED.items()}
    assert axe_serious(page, "[data-panel=engagement]") == []


def test_regions_and_cities_without_geo_data_say_why(
    browser_page: Any, dashboard_url: str, server: Server, timed: dict[str, Any]
) -> None:
    page = browser_page
    key = timed["keys"]["secret"]
    frm, to = last_7_days("UTC")
    regions = api(server, key, "/metrics/breakdown", [("from", frm), ("to", to), ("by", "region")])
    assert [r["value"] for r in regions["rows"]] == [""]  # no edge: nobody's region is known
    sign_in(page, dashboard_url, key, "?period=7d")
    panel = page.locator("[data-panel=locations]")
    for tab, what in (("Regions", "region"), ("Cities", "city")):
        panel.get_by_role("tab", name=tab).click()
        note = panel.get_by_test_id("unknown-values")
        note.wait_for()
        text = note.inner_text()
        assert f"No {what} is known for these visitors." in text
        assert "edge" in text and "SVC_TRUSTED_PROXIES" in text
        assert panel.locator("button.row").count() == 0  # no "(none)" row
        assert axe_serious(page, "[data-panel=locations]") == []


# --- the realtime view -------------------------------------------------------------------------


def test_the_realtime_view(browser_page: Any, dashboard_url: str, server: Server) -> None:
    page = browser_page
    p = server.create_project("dash-rt-" + uuid.uuid4().hex[:8], domains=["rt.test"])
    key = p["keys"]["secret"]
    now = int(time.time() * 1000)

    def hit(ip: str, path: str, ago_s: int, **extra: Any) -> dict[str, Any]:
        return {
            "event": "page_view",
            "url": f"https://rt.test{path}",
            "ts": now - ago_s * 1000,
            "ip": ip,
            "userAgent": UA,
            **extra,
        }

    events = [
        hit("8.8.8.10", "/", 60, referrer="https://www.google.com/"),
        hit("8.8.8.11", "/pricing", 30),
        hit("5.9.1.10", "/pricing", 10, referrer="https://t.co/x"),
        hit("81.2.69.10", "/docs", 15 * 60),  # 15 minutes ago: a bar, not a current visitor
    ]
    assert server.send(key, events).status_code == 200
    # a note of a moment of the last 30 minutes is drawn on its minute; a day's note is not
    moment = datetime.fromtimestamp(now / 1000 - 5 * 60, UTC).isoformat(timespec="seconds")
    notes = f"{server.url}/projects/{p['id']}/annotations"
    for body in (
        {"date": moment, "text": "Deployed v2"},
        {"date": moment[:10], "text": "A whole day"},
    ):
        r = httpx.post(notes, json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 201, r.text
    server.wait_loaded()
    sign_in(page, dashboard_url, key, "?period=today")
    counter = page.get_by_test_id("realtime")
    eventually(lambda: counter.get_attribute("data-value"), "3")
    counter.click()
    view = page.get_by_role("dialog", name="Realtime")
    view.wait_for()

    def shown() -> dict[str, Any]:
        out: dict[str, Any] = page.evaluate(
            """() => {
                const lists = {};
                for (const s of document.querySelectorAll('[data-realtime]')) {
                    lists[s.dataset.realtime] = [...s.querySelectorAll('li')].map((li) =>
                        ({value: li.dataset.value, visitors: Number(li.dataset.visitors)}));
                }
                const bars = [...document.querySelectorAll('[data-testid=realtime-minutes] rect')]
                    .map((r) => ({time: r.dataset.time, visitors: Number(r.dataset.visitors)}));
                return {...lists, minutes: bars};
            }"""
        )
        return out

    def expected() -> dict[str, Any]:
        body = api(server, key, "/metrics/realtime", [])
        return {k: body[k] for k in ("pages", "sources", "countries", "minutes")}

    # the page polls every 5 s while the view is open: within a poll it shows the API's answer
    # (compared twice in a row, so that a minute turning between the two reads cannot fail it)
    deadline = time.monotonic() + 20
    while True:
        want, got = expected(), shown()
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert got == want
    assert [v["value"] for v in want["pages"]] == ["/pricing", "/"]
    assert {v["value"] for v in want["sources"]} == {"direct", "google", "twitter"}
    assert len(want["minutes"]) == 30 and sum(m["visitors"] for m in want["minutes"]) == 4
    # read at once, so that a minute turning between two reads cannot fail it
    minute, markers, listed = page.evaluate(
        """(t) => [[...document.querySelectorAll('[data-testid=realtime-minutes] rect')]
                .findIndex((r) => r.dataset.time === t),
            [...document.querySelectorAll('[data-testid=realtime-minutes] .annotation-marker')]
                .map((m) => m.dataset.index),
            [...document.querySelectorAll('[data-testid=realtime-notes] li')]
                .map((li) => li.textContent)]""",
        moment[:16],
    )
    assert minute >= 0 and markers == [str(minute)]
    assert listed == [f"{29 - minute} minutes ago: Deployed v2"]
    assert (
        view.get_by_role("region", name="Countries right now").get_by_text("Germany").is_visible()
    )
    assert (
        view.get_by_role("region", name="Sources right now")
        .get_by_text("Direct / None")
        .is_visible()
    )
    assert axe_serious(page, "dialog") == []
    # on a phone, in the dark: nothing of the view overflows the screen, axe is content
    page.set_viewport_size({"width": 375, "height": 812})
    page.emulate_media(color_scheme="dark")
    wide = page.evaluate(
        """() => [...document.querySelectorAll('dialog *')]
            .filter((e) => e.getBoundingClientRect().right > innerWidth + 1).length"""
    )
    assert wide == 0
    assert axe_serious(page, "dialog") == []

    # a new visitor shows up within a poll (5 s), without a reload
    assert server.send(key, hit("8.8.8.12", "/new", 0)).status_code == 200
    server.wait_loaded()
    eventually(lambda: page.get_by_test_id("realtime-visitors").inner_text(), "4", timeout=12)
    eventually(lambda: "/new" in [v["value"] for v in shown().get("pages", [])], True, timeout=12)
    page.keyboard.press("Escape")
    eventually(lambda: page.get_by_role("dialog").count(), 0)
