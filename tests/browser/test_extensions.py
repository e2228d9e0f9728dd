"""The browser script's opt-in extensions (issue 20) in real headless Chromium, against the real
service: engagement, outbound, downloads, 404 and vitals, served at /svc/js/<names>.

Same topology as test_tracker.py (conftest.py): the site on site.test, the service behind a
recording proxy on svc.test; every test has its own project. Events of one page are sent as
separate beacons that may arrive in any order, so the tests look them up by name.
"""

from __future__ import annotations

import itertools
import random
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from svc.http.script import EXTENSIONS

if TYPE_CHECKING:  # the fixtures' types; pytest loads conftest.py itself
    from conftest import Hit, Project, Site

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

PathOf = Callable[[str], str]  # the unique_path fixture
QUIET = 1.5  # seconds to wait before concluding that nothing more was sent

# A page much taller than the viewport (Playwright's default: 1280 x 720).
LONG = '<div style="height:6000px;background:linear-gradient(#fff,#ccc)">long read</div>'


def tag(
    project: Project, extensions: str, *flags: str, automation: bool = True, **attrs: str
) -> str:
    """The script tag of /svc/js/<extensions> (the arguments of Project.tag)."""
    src = f"{project.collector.url}/svc/js/{extensions}"
    result: str = project.tag(*flags, src=src, automation=automation, **attrs)
    return result


def by_name(hits: list[Hit]) -> dict[str, list[dict[str, Any]]]:
    events: dict[str, list[dict[str, Any]]] = {}
    for hit in hits:
        assert hit.status == 200, hit.body
        event = hit.json()
        events.setdefault(event["event"], []).append(event)
    return events


def quiet(project: Project, before: int) -> None:
    time.sleep(QUIET)
    assert len(project.sent()) == before, [h.body for h in project.sent()[before:]]


def leave(page: Any, site: Site, unique_path: PathOf) -> None:
    """Navigates the page away to a page of the site without the script."""
    path = unique_path("/elsewhere-" + str(time.monotonic_ns()))
    site.pages[path] = "<!doctype html><title>elsewhere</title>elsewhere"
    page.goto(site.url(path))


def stored_properties(event: dict[str, Any]) -> dict[str, str]:
    """A stored event's properties: the store keeps values as text (JSON text for numbers)."""
    return {k: str(v) for k, v in event["properties"].items()}


# --- engagement ------------------------------------------------------------------------------


def test_engagement_scroll_a_long_page_and_leave(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/article"), LONG, head=tag(project, "engagement"))
    page.goto(url)
    project.wait(1)
    start = time.monotonic()
    # Real wheel input, in steps: one scroll event after another, and not one request.
    page.mouse.move(600, 300)
    for _ in range(6):
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(150)
    page.wait_for_function("scrollY >= 2000")
    expected = page.evaluate(
        "Math.round((scrollY + innerHeight) * 100 / document.documentElement.scrollHeight)"
    )
    page.mouse.wheel(0, -1500)  # back up: the deepest point counts, not the last
    page.wait_for_function("scrollY < 1000")
    page.wait_for_timeout(500)
    assert len(project.sent()) == 1  # nothing while reading
    before_leaving = time.monotonic()
    leave(page, site, unique_path)
    after_leaving = time.monotonic()

    hits = project.wait(2)
    quiet(project, 2)
    events = by_name(hits)
    assert sorted(events) == ["engagement", "page_view"]
    [engagement] = events["engagement"]
    assert engagement["url"] == url
    assert engagement["projectId"] == project.id
    props = engagement["properties"]
    assert set(props) == {"engaged_ms", "scroll_pct"}
    assert isinstance(props["engaged_ms"], int) and isinstance(props["scroll_pct"], int)
    # Engaged from the page view to the leave: at least the time the test spent reading.
    assert (before_leaving - start) * 1000 - 50 <= props["engaged_ms"]
    assert props["engaged_ms"] <= (after_leaving - start) * 1000 + 2000
    assert props["scroll_pct"] == expected
    assert 30 < expected < 100

    all_stored = project.stored(2)
    stored = {e["event"]: e for e in all_stored}
    assert "engagement" in stored
    assert stored_properties(stored["engagement"]) == {k: str(v) for k, v in props.items()}
    assert stored["engagement"]["path"] == unique_path("/article")
    assert stored["engagement"]["session_id"] == stored["page_view"]["session_id"]


def test_a_short_page_left_at_once_is_read_to_the_end(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/short"), "<p>short</p>", head=tag(project, "engagement"))
    page.goto(url)
    project.wait(1)
    page.wait_for_timeout(300)
    leave(page, site, unique_path)
    [engagement] = by_name(project.wait(2))["engagement"]
    assert engagement["properties"]["scroll_pct"] == 100
    assert 250 <= engagement["properties"]["engaged_ms"] < 5000


def test_engaged_time_counts_only_while_the_tab_is_visible_and_focused(
    site: Site, project: Project, unique_path: PathOf, tmp_path: Path
) -> None:
    """A real tab switch: another tab comes to the front of the window, the page is hidden,
    then brought back and closed. Playwright cannot do this (its pages never become hidden),
    so the browser is driven over the DevTools protocol (cdp.py)."""
    from tests.browser.cdp import RawChromium

    url = site.add(unique_path("/tabs"), LONG, head=tag(project, "engagement"))
    with RawChromium(tmp_path / "profile") as chrome:
        first = chrome.new_tab("about:blank", new_window=True)
        session = chrome.attach(first)
        chrome.send("Page.navigate", {"url": url}, session)
        project.wait(1)
        chrome.activate(first)
        chrome.wait_for(session, "document.visibilityState == 'visible' && document.hasFocus()")
        engaged_from = time.monotonic()
        time.sleep(1.0)

        # Another tab in front: this one is hidden, and sends what it measured.
        other = chrome.new_tab("about:blank", new_window=False)
        hidden_from = time.monotonic()
        chrome.wait_for(session, "document.visibilityState == 'hidden'")
        hits = project.wait(2)
        [first_part] = by_name(hits)["engagement"]
        assert first_part["url"] == url
        first_ms = first_part["properties"]["engaged_ms"]
        assert 1000 - 50 <= first_ms <= (hidden_from - engaged_from) * 1000 + 1000

        time.sleep(2.0)  # hidden: not engaged, nothing sent
        assert len(project.sent()) == 2

        # Back to the front, read on, and close the tab.
        chrome.activate(first)
        chrome.wait_for(session, "document.visibilityState == 'visible' && document.hasFocus()")
        shown_at = time.monotonic()
        hidden_ms = (shown_at - hidden_from) * 1000
        time.sleep(0.7)
        chrome.close_tab(first)
        closed_at = time.monotonic()
        hits = project.wait(3)
        chrome.close_tab(other)

    parts = by_name(hits)["engagement"]
    assert len(parts) == 2
    second_ms = parts[1]["properties"]["engaged_ms"]
    # The second part is the time since the tab came back, not the time it was hidden.
    assert 700 - 50 <= second_ms <= (closed_at - shown_at) * 1000 + 1000
    assert second_ms < hidden_ms
    assert {p["url"] for p in parts} == {url}
    assert parts[1]["properties"]["scroll_pct"] == first_part["properties"]["scroll_pct"]
    stored = [e for e in project.stored(3) if e["event"] == "engagement"]
    assert sorted(int(e["properties"]["engaged_ms"]) for e in stored) == sorted(
        [first_ms, second_ms]
    )


def test_spa_navigation_sends_the_previous_pages_engagement_and_vitals(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    p = unique_path
    url = site.add(p("/app/a"), LONG, head=tag(project, "engagement,vitals"))
    page.goto(url)
    project.wait(1)
    page.mouse.move(600, 300)
    page.mouse.wheel(0, 1200)
    page.wait_for_function("scrollY >= 1200")
    page.wait_for_timeout(400)
    page.evaluate(f"history.pushState({{}}, '', '{p('/app/b')}?tab=1')")
    hits = project.wait(4)
    events = by_name(hits)
    assert sorted(events) == ["engagement", "page_view", "web_vitals"]
    # The previous page's events carry the previous page's URL.
    assert events["engagement"][0]["url"] == url
    assert events["web_vitals"][0]["url"] == url
    assert sorted(e["url"] for e in events["page_view"]) == sorted(
        [url, site.url(p("/app/b")) + "?tab=1"]
    )
    assert events["engagement"][0]["properties"]["engaged_ms"] >= 400
    assert events["engagement"][0]["properties"]["scroll_pct"] > 20

    # A query change is not a page view, and leaves nothing.
    page.evaluate(f"history.replaceState({{}}, '', '{p('/app/b')}?tab=2')")
    page.wait_for_timeout(300)
    page.evaluate(f"history.pushState({{}}, '', '{p('/app/c')}')")
    hits = project.wait(6)
    late = by_name(hits[4:])
    assert sorted(late) == ["engagement", "page_view"]  # web vitals: once per page load
    assert late["engagement"][0]["url"] == site.url(p("/app/b")) + "?tab=1"
    leave(page, site, unique_path)
    hits = project.wait(7)
    quiet(project, 7)
    assert hits[6].json()["event"] == "engagement"
    assert hits[6].json()["url"] == site.url(p("/app/c"))
    stored = project.stored(7)
    assert sorted(e["path"] for e in stored if e["event"] == "engagement") == sorted(
        [p("/app/a"), p("/app/b"), p("/app/c")]
    )


# --- outbound links and downloads ------------------------------------------------------------


def test_outbound_clicks_that_navigate_away_arrive(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    other_path = unique_path("/landing")
    site.pages[other_path] = "<!doctype html><title>other</title>other site"
    outside = site.url(other_path, host="other.test") + "?ref=acme#top"
    inside = site.add(unique_path("/inside"), "inside")
    body = (
        f'<a id="out" href="{outside}">out</a> <a id="in" href="{inside}">in</a>'
        '<a id="mail" href="mailto:a@example.com" onclick="event.preventDefault()">mail</a>'
        '<a id="nohref">no href</a>'
        '<a id="wrapped" href="https://www.example.org/"><span id="inner">in a span</span></a>'
    )
    url = site.add(unique_path("/links"), body, head=tag(project, "outbound"))
    page.goto(url)
    project.wait(1)
    # Clicks that are not outbound: a link on the site, mailto:, an anchor without href.
    page.evaluate(
        "for (const id of ['mail', 'nohref']) document.getElementById(id)"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}))"
    )
    page.click("#in")
    page.wait_for_url(inside)
    quiet(project, 1)  # the page on the site sends nothing (no tag), the click nothing either

    page.goto(url)
    project.wait(2)
    page.click("#out")  # navigates to the other site at once
    page.wait_for_url(outside)
    hits = project.wait(3)
    [outbound] = by_name(hits)["outbound"]
    assert outbound["properties"] == {"url": outside}
    assert outbound["url"] == url

    # A click on an element inside the link counts for the link.
    page.goto(url)
    project.wait(4)
    page.evaluate(
        "document.getElementById('inner').dispatchEvent("
        "new MouseEvent('click', {bubbles: true, cancelable: true}))"
    )
    hits = project.wait(5)
    quiet(project, 5)
    assert by_name(hits)["outbound"][1]["properties"] == {"url": "https://www.example.org/"}
    stored = [e for e in project.stored(5) if e["event"] == "outbound"]
    assert sorted(e["properties"]["url"] for e in stored) == sorted(
        [outside, "https://www.example.org/"]
    )


def test_download_clicks_that_navigate_away_arrive(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    report = site.url(unique_path("/files/Report.PDF"))
    archive = site.url(unique_path("/dist/app-1.2.tar.gz"), host="cdn.test")
    body = (
        f'<a id="report" href="{report}?token=secret#page=2">report</a>'
        f'<a id="archive" href="{archive}">archive</a>'
        f'<a id="page" href="{site.url(unique_path("/about.html"))}">about</a>'
    )
    url = site.add(unique_path("/downloads"), body, head=tag(project, "downloads,outbound"))
    page.goto(url)
    project.wait(1)
    page.click("#report")  # the site answers 404 HTML: the click navigates away
    page.wait_for_url(report + "?token=secret#page=2")
    hits = project.wait(2)
    [download] = by_name(hits)["download"]
    # The file, without the query (a signed URL's token) and the fragment.
    assert download["properties"] == {"url": report}

    page.goto(url)
    project.wait(3)
    page.click("#archive")  # a file on another host: a download, not an outbound click
    page.wait_for_url(archive)
    hits = project.wait(4)
    page.goto(url)
    project.wait(5)
    page.click("#page")
    hits = project.wait(5)
    quiet(project, 5)
    events = by_name(hits)
    assert [e["properties"]["url"] for e in events["download"]] == [report, archive]
    assert "outbound" not in events
    stored = [e for e in project.stored(5) if e["event"] == "download"]
    assert sorted(e["properties"]["url"] for e in stored) == sorted([report, archive])


def test_data_downloads_replaces_the_list_of_extensions(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    notes = site.url(unique_path("/notes.txt"))
    body = (
        f'<a id="notes" href="{notes}">notes</a>'
        f'<a id="pdf" href="{site.url(unique_path("/a.pdf"))}">pdf</a>'
    )
    head = tag(project, "downloads", downloads="txt|md")
    url = site.add(unique_path("/custom"), body, head=head)
    page.goto(url)
    project.wait(1)
    page.click("#pdf")  # not in the list given
    page.goto(url)
    project.wait(2)
    page.click("#notes")
    hits = project.wait(3)
    quiet(project, 3)
    assert by_name(hits)["download"] == [hits[2].json()]
    assert hits[2].json()["properties"] == {"url": notes}


# --- 404 -------------------------------------------------------------------------------------


def test_a_page_marked_not_found_sends_404(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    missing = site.add(unique_path("/no-such-page"), "gone", head=tag(project, "404", "404"))
    page.goto(missing, referer="https://www.example.org/links")
    hits = project.wait(2)
    events = by_name(hits)
    assert sorted(events) == ["404", "page_view"]
    [not_found] = events["404"]
    assert not_found["url"] == missing
    assert not_found["referrer"] == "https://www.example.org/links"
    assert "properties" not in not_found

    # Without the attribute, the same build sends the page view alone.
    fine = site.add(unique_path("/fine"), "fine", head=tag(project, "404"))
    page.goto(fine)
    project.wait(3)
    # svc('404') is the way for a client-side route (every build, the default one too).
    spa = site.add(unique_path("/spa"), "spa", head=project.tag())
    page.goto(spa)
    project.wait(4)
    page.evaluate(f"history.pushState({{}}, '', '{unique_path('/spa/missing')}'); svc('404')")
    hits = project.wait(6)
    quiet(project, 6)
    assert [h.json()["url"] for h in hits if h.json()["event"] == "404"] == [
        missing,
        site.url(unique_path("/spa/missing")),
    ]
    stored = [e for e in project.stored(6) if e["event"] == "404"]
    assert sorted(e["path"] for e in stored) == sorted(
        [unique_path("/no-such-page"), unique_path("/spa/missing")]
    )
    assert {e["referrer"] for e in stored} >= {"https://www.example.org/links"}


# --- Web Vitals ------------------------------------------------------------------------------


def png(width: int, height: int) -> bytes:
    """A grey PNG of random noise: Chrome leaves images of little content (a solid colour
    compresses to a few bytes a million pixels) out of the LCP."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    noise = random.Random(20)
    rows = b"".join(b"\x00" + noise.randbytes(width) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


# The page records what the browser reports, with observers of its own, to compare.
VITALS_PAGE = """
<script>
  window.seen = {lcp: 0, shifts: [], fcp: 0, longest: 0};
  new PerformanceObserver(l => l.getEntries().forEach(e => seen.lcp = e.startTime))
    .observe({type: 'largest-contentful-paint', buffered: true});
  new PerformanceObserver(l => l.getEntries().forEach(e => e.hadRecentInput || seen.shifts.push(
    [e.startTime, e.value]))).observe({type: 'layout-shift', buffered: true});
  // A banner inserted above the text, without input, once the text was painted: a layout
  // shift (inserted before the first paint, as a loaded machine may, it would shift nothing).
  const banner = () => { document.getElementById('slot').innerHTML =
    '<div style="height:200px;background:#fc0">banner</div>' };
  new PerformanceObserver(l => l.getEntries().forEach(e => {
    if (e.name == 'first-contentful-paint') { seen.fcp = e.startTime; setTimeout(banner, 200) }
  })).observe({type: 'paint', buffered: true});
  new PerformanceObserver(l => l.getEntries().forEach(e => e.interactionId &&
    (seen.longest = Math.max(seen.longest, e.duration))))
    .observe({type: 'event', buffered: true, durationThreshold: 16});
</script>
<h1>Vitals</h1>
<div id="slot"></div>
<p id="text">Some text that the banner pushes down.</p>
<img id="hero" src="HERO" width="800" height="480" alt="">
<button id="slow">slow</button>
<script>
  // A click handler that keeps the main thread busy: a slow interaction.
  document.getElementById('slow').addEventListener('click', () => {
    const end = performance.now() + 250; while (performance.now() < end) {}
  });
</script>
"""


def test_web_vitals_of_a_real_page_load(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    hero = site.add_file(unique_path("/hero.png"), "image/png", png(800, 480), delay=0.6)
    body = VITALS_PAGE.replace("HERO", hero)
    url = site.add(unique_path("/vitals"), body, head=tag(project, "vitals"))
    page.goto(url, wait_until="load")
    project.wait(1)
    page.wait_for_function("seen.lcp > 0 && seen.shifts.length > 0")
    page.wait_for_timeout(300)
    page.click("#slow")
    page.wait_for_function("seen.longest >= 250")
    page.wait_for_timeout(200)
    seen = page.evaluate("seen")
    timing = page.evaluate(
        "(({responseStart, activationStart}) => ({responseStart, activationStart}))"
        "(performance.getEntriesByType('navigation')[0])"
    )
    quiet(project, 1)  # nothing until the page is left
    leave(page, site, unique_path)

    hits = project.wait(2)
    quiet(project, 2)
    [vitals] = by_name(hits)["web_vitals"]
    assert vitals["url"] == url
    props = vitals["properties"]
    assert set(props) == {"ttfb", "fcp", "lcp", "cls", "inp"}
    assert timing["activationStart"] == 0
    assert props["ttfb"] == int(timing["responseStart"])
    assert props["fcp"] == int(seen["fcp"])
    assert props["lcp"] == int(seen["lcp"])
    assert 0 <= props["ttfb"] <= props["fcp"] <= props["lcp"]
    assert props["lcp"] >= 600  # the image came 0.6 s late, and it is the largest element
    # One shift (a session window of one): its value, as the page saw it.
    assert len(seen["shifts"]) == 1
    assert props["cls"] == pytest.approx(seen["shifts"][0][1], abs=1e-9)
    assert 0.05 < props["cls"] < 1
    assert props["inp"] == seen["longest"] >= 250

    [stored] = [e for e in project.stored(2) if e["event"] == "web_vitals"]
    assert set(stored["properties"]) == set(props)
    assert float(stored["properties"]["cls"]) == pytest.approx(props["cls"])
    assert int(stored["properties"]["lcp"]) == props["lcp"]


def test_web_vitals_cls_is_0_without_a_shift_and_inp_absent_without_input(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/still"), "<p>nothing moves</p>", head=tag(project, "vitals"))
    page.goto(url, wait_until="load")
    project.wait(1)
    page.wait_for_timeout(300)
    leave(page, site, unique_path)
    [vitals] = by_name(project.wait(2))["web_vitals"]
    props = vitals["properties"]
    assert props["cls"] == 0
    assert "inp" not in props
    assert {"ttfb", "fcp", "lcp"} <= set(props)


# --- the same rules as the default script ----------------------------------------------------


def test_extensions_send_nothing_under_automation_or_opt_out(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    everything = ",".join(EXTENSIONS)
    out = site.url(unique_path("/x"), host="other.test")
    site.pages[unique_path("/x")] = "x"
    body = LONG + f'<a id="out" href="{out}" style="position:fixed;top:0">out</a>'
    robot = site.add(
        unique_path("/robot"), body, head=tag(project, everything, "404", automation=False)
    )
    page.goto(robot)
    page.mouse.wheel(0, 800)
    page.wait_for_timeout(200)
    page.click("#out")
    page.wait_for_url(out)
    opted_out = site.add(unique_path("/opted-out"), body, head=tag(project, everything, "404"))
    page.goto(site.add(unique_path("/plain"), "no script here"))
    page.evaluate("localStorage.svc_ignore = 'true'")
    page.goto(opted_out)
    page.mouse.wheel(0, 800)
    page.wait_for_timeout(200)
    page.click("#out")
    page.wait_for_url(out)
    quiet(project, 0)
    page.evaluate("localStorage.removeItem('svc_ignore')")


def test_extensions_write_no_cookie_and_no_storage(
    page: Any, context: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/all"), LONG, head=tag(project, ",".join(EXTENSIONS), "404"))
    page.goto(url)
    project.wait(2)
    page.mouse.wheel(0, 500)
    page.evaluate(f"history.pushState({{}}, '', '{unique_path('/all/2')}')")
    project.wait(5)  # engagement, web_vitals, the second page view
    state = context.storage_state()
    assert state["cookies"] == [] and state["origins"] == []
    seen = page.evaluate(
        """async () => [document.cookie, localStorage.length, sessionStorage.length,
                        (await indexedDB.databases()).length]"""
    )
    assert seen == ["", 0, 0, 0]


@pytest.fixture(scope="module")
def build_page(browser: Any) -> Iterator[Any]:
    """One page for the builds' tests: each navigates it to a page of its own on site.test (a
    new document, the build's script loaded anew from its own URL, sending with its own
    project's key). A same-site navigation keeps the renderer process that a new context and
    page per build started again, 31 times (the script keeps no state in the browser:
    test_extensions_write_no_cookie_and_no_storage)."""
    from tests.conftest import BROWSER_UA

    ctx = browser.new_context(user_agent=BROWSER_UA)
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    yield page
    ctx.close()


@pytest.mark.parametrize(
    "names",
    [
        ",".join(c)
        for n in range(1, len(EXTENSIONS) + 1)
        for c in itertools.combinations(EXTENSIONS, n)
    ],
)
def test_every_build_runs_and_sends_the_page_view(
    build_page: Any, site: Site, project: Project, unique_path: PathOf, names: str
) -> None:
    page = build_page
    errors: list[str] = []

    def on_error(e: Any) -> None:
        errors.append(str(e))

    page.on("pageerror", on_error)
    try:
        url = site.add(unique_path("/build"), LONG, head=tag(project, names))
        page.goto(url, wait_until="load")
        [hit] = project.wait(1)
        assert hit.json()["url"] == url
        assert page.evaluate("typeof svc.track") == "function"
        assert errors == []
    finally:
        page.remove_listener("pageerror", on_error)
