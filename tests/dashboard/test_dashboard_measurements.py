"""The extensions' panels of the dashboard (engagement, Web Vitals, outbound links, downloads,
404s) in real headless Chromium against the real server: what they show is what the API says,
and a row filters the page."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest

from svc.mail.report import duration  # the page's rule (dashboard/src/format.ts)
from svc.schema.measurements import VITALS
from tests.dashboard.test_dashboard_browser import api, eventually, last_7_days, rows, sign_in
from tests.support import Server
from tests.test_breakdown_compare import DAY as COMPARED_DAY
from tests.test_breakdown_compare import PDF, PREV, at, events
from tests.test_page_measurements import DAY, GITHUB, REPORTS, ev, vitals

# The day before DAY: two page loads' vitals, for the comparison period (09:00 and 14:00 UTC).
BEFORE = [
    vitals(1, int((DAY - timedelta(hours=15)).timestamp() * 1000), "/", lcp=4500, cls=0.2),
    vitals(2, int((DAY - timedelta(hours=10)).timestamp() * 1000), "/", lcp=1200),
]

pytestmark = pytest.mark.browser

# The events of tests/test_breakdown_compare on COMPARED_DAY and PREV (the day before), and
# three more direct visitors of /docs on PREV (V6, V7, V8).
COMPARED = [
    *events(COMPARED_DAY, PREV),
    *(ev(v, at(PREV, 15, v), path="/docs") for v in (6, 7, 8)),
]


@pytest.fixture(scope="module")
def measured(server: Server) -> dict[str, Any]:
    p = server.create_project("dash-measure-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], [*REPORTS, *BEFORE])
    assert r.status_code == 200 and r.json()["accepted"] == len(REPORTS) + 2, r.text
    server.wait_loaded()
    return p


def test_the_extensions_panels_show_what_the_api_says(
    page: Any, dashboard_url: str, server: Server, measured: dict[str, Any]
) -> None:
    key = measured["keys"]["secret"]
    sign_in(page, dashboard_url, key, "?period=7d")
    frm, to = last_7_days("UTC")
    params = [("from", frm), ("to", to)]

    vitals = api(server, key, "/metrics/vitals", params)
    lcp = page.locator("[data-panel=vitals] [data-vital=lcp]")
    # a duration as every panel writes it ("2.8s", "180ms")
    eventually(
        lambda: lcp.locator("[data-testid=p75]").inner_text(), duration(vitals["lcp"]["p75"] / 1000)
    )
    assert vitals["lcp"]["good"] in lcp.inner_text()
    assert page.locator("[data-panel=vitals] [data-vital=cls] [data-testid=p75]").inner_text() == (
        f"{vitals['cls']['p75']:.3f}"
    )

    engagement = api(
        server, key, "/metrics/breakdown", [*params, ("by", "engagement"), ("limit", "8")]
    )
    pages = [r["value"] for r in engagement["rows"]]
    eventually(lambda: [v for v, _ in rows(page, "engagement")], pages)
    first = page.locator("[data-panel=engagement] button.row").first
    assert engagement["rows"][0]["scrollDepth"]["75"] in first.inner_text()

    outbound = page.locator("[data-panel=links] [data-report=outbound] button.row")
    eventually(lambda: outbound.first.get_attribute("data-value"), GITHUB)
    assert page.locator("[data-panel=links] [data-report='404'] button.row").count() == 2

    # a click on an outbound link's row filters the page by it
    outbound.first.click()
    eventually(lambda: "prop:url:is:" in page.url or "prop%3Aurl" in page.url, True)


def test_web_vitals_over_time_is_a_line_with_googles_thresholds(
    page: Any, dashboard_url: str, server: Server, measured: dict[str, Any]
) -> None:
    """The p75 of each vital per hour of one day: a point per hour that measured it (a gap
    where none did), and Google's thresholds as the API counts them (svc.schema.measurements)."""
    key = measured["keys"]["secret"]
    day = DAY.date().isoformat()
    sign_in(page, dashboard_url, key, f"?period=custom&from={day}&to={day}&interval=hour")
    body = api(server, key, "/metrics/vitals", [("from", day), ("to", day), ("interval", "hour")])
    assert len(body["points"]) == 24
    chart = page.locator("[data-panel=vitals] [data-testid=vitals-chart]")
    eventually(lambda: chart.get_attribute("data-points"), "24")
    points = chart.locator("circle.vital-point")

    def shown() -> dict[str, float]:
        return {
            p.get_attribute("data-time"): float(p.get_attribute("data-p75")) for p in points.all()
        }

    # LCP by hand (tests/test_page_measurements.REPORTS): page loads at 10, 11, 12 and 15 UTC
    eventually(lambda: [t[-5:] for t in shown()], ["10:00", "11:00", "12:00", "15:00"])
    for vital in VITALS:
        page.locator("[data-panel=vitals]").get_by_role("tab", name=vital.name.upper()).click()
        eventually(lambda: chart.get_attribute("data-chart-vital"), vital.name)
        expected = {
            p["time"]: p[vital.name]["p75"]
            for p in body["points"]
            if p[vital.name]["p75"] is not None
        }
        eventually(shown, expected)
        marked = {
            kind: float(chart.locator(f"[data-threshold={kind}]").get_attribute("data-value"))
            for kind in ("good", "poor")
        }
        assert marked == {"good": vital.good, "poor": vital.poor}, vital.name

    # compared with the day before: its points dashed, bucket by bucket (LCP at 09 and 14 UTC)
    page.goto(
        page.url.split("?")[0] + f"?period=custom&from={day}&to={day}&interval=hour"
        "&compare=previous_period"
    )
    page.locator("[data-panel=vitals]").get_by_role("tab", name="LCP").click()
    dashed = page.locator("[data-panel=vitals] [data-testid=vitals-compare]")
    eventually(lambda: dashed.get_attribute("data-points") if dashed.count() else None, "2")
    assert page.locator("[data-panel=vitals] circle.vital-point.compare").count() == 2
    before = api(
        server,
        key,
        "/metrics/vitals",
        [
            ("from", str(DAY.date() - timedelta(days=1))),
            ("to", str(DAY.date() - timedelta(days=1))),
            ("interval", "hour"),
        ],
    )
    assert [p["time"][-5:] for p in before["points"] if p["lcp"]["p75"] is not None] == [
        "09:00", "14:00"
    ]  # fmt: skip
    # and each vital's p75 beside its change against the day before (a rise is bad news)
    both = api(
        server, key, "/metrics/vitals", [("from", day), ("to", day), ("compare", "previous_period")]
    )
    now, then = both["lcp"]["p75"], both["compare"]["lcp"]["p75"]
    assert now is not None and then
    change = page.locator("[data-panel=vitals] [data-vital=lcp] [data-testid=row-change]")
    eventually(lambda: change.count(), 1)
    assert abs(float(change.get_attribute("data-change")) - 100 * (now - then) / then) <= 0.05
    assert ("bad" if now > then else "good") in (change.get_attribute("class") or "")


def test_compare_shows_each_rows_change_against_the_previous_period(
    page: Any, dashboard_url: str, server: Server
) -> None:
    """With Compare on, every breakdown asks with ``compare`` and a row shows the change of its
    main figure. By hand (COMPARED): page / 2 visitors (V1, V2) against 1 (V1): +100.0 %;
    /docs 2 (V1, V3) against 3 (V6-V8): -33.3 %; source google 2 against 1: +100.0 %, direct
    1 (V3) against 4 (V5-V8): -75.0 %; outbound GitHub 2 (V1, V3) against 1 (V5): +100.0 %;
    404 /gone 1 against 1: 0.0 %; the download 1 against 0: no change to show."""
    p = server.create_project("dash-compare-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], COMPARED)
    assert r.status_code == 200 and r.json()["accepted"] == len(COMPARED), r.text
    server.wait_loaded()
    day = COMPARED_DAY.date().isoformat()
    sign_in(page, dashboard_url, p["keys"]["secret"], f"?period=custom&from={day}&to={day}")

    def changes(panel: str) -> dict[str, str | None]:
        """Each row's change as its data-change attribute, None for an empty cell."""
        out: dict[str, str | None] = page.evaluate(
            """(sel) => Object.fromEntries([...document.querySelectorAll(`${sel} button.row`)]
                .map((b) => [b.dataset.value,
                    b.querySelector('[data-testid=row-change]')?.dataset.change ?? null]))""",
            panel,
        )
        return out

    # Compare off: no change cells
    pages = page.locator("[data-panel=pages]")
    eventually(lambda: pages.locator("button.row").count() >= 2, True)
    assert page.locator("[data-testid=row-change], .row .delta").count() == 0

    page.get_by_label("Compare").select_option("previous_period")
    eventually(lambda: changes("[data-panel=pages]").get("/docs"), "-33.3")
    assert {v: changes("[data-panel=pages]")[v] for v in ("/", "/docs")} == {
        "/": "100",
        "/docs": "-33.3",
    }
    docs = pages.locator("button.row[data-value='/docs']")
    assert docs.locator("[data-testid=row-change] [aria-hidden=true]").inner_text() == "↓33.3%"
    assert "bad" in (docs.locator("[data-testid=row-change]").get_attribute("class") or "")
    # the row's accessible name says it
    name = re.compile(r"^\/docs 2 views 2 visitors -33\.3% against the previous period$")
    assert pages.get_by_role("button", name=name).count() == 1
    assert (
        pages.get_by_role(
            "button", name=re.compile(r"\+100\.0% against the previous period")
        ).count()
        == 1
    )

    page.locator("[data-panel=sources]").get_by_role("tab", name="Sources").click()
    eventually(
        lambda: {v: changes("[data-panel=sources]").get(v) for v in ("google", "direct")},
        {"google": "100", "direct": "-75"},
    )
    links = "[data-panel=links] [data-report={}]"
    eventually(lambda: changes(links.format("outbound")), {GITHUB: "100"})
    eventually(lambda: changes(links.format("'404'")), {"/gone": "0"})
    eventually(lambda: changes(links.format("download")), {PDF: None})
    gone = page.locator("[data-panel=links] [data-report='404'] [data-testid=row-change]")
    assert gone.locator("[aria-hidden=true]").inner_text() == "0.0%"
    assert "flat" in (gone.get_attribute("class") or "")
