"""The browser script in real headless Chromium, against the real service.

The site (http://site.test:<port>) and the service (http://svc.test:<port>, a recording proxy in
front of the real server) are different origins and different sites; see conftest.py. Every test
has its own project, so its public key tells its events apart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the fixtures' types; pytest loads conftest.py itself
    from conftest import Collector, Hit, Project, Site

CHROMIUM = Path("/usr/bin/chromium")

# The queue snippet, exactly as documented in tracker/README.md.
QUEUE_SNIPPET = (
    "window.svc=window.svc||function(){(svc.q=svc.q||[]).push(arguments)};svc.track=svc.track||svc"
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]

PathOf = Callable[[str], str]  # the unique_path fixture

WIRE_FIELDS = {"event", "url", "referrer", "projectId", "properties", "screen"}
QUIET = 1.5  # seconds to wait before concluding that nothing was sent


def origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def assert_wire(hit: Hit, project: Project, page_url: str) -> dict[str, Any]:
    """One event request as the contract describes it; returns the decoded event."""
    assert hit.method == "POST"
    assert hit.path == "/analytics"
    assert hit.query == {"key": project.public}
    # A CORS-safelisted type (no preflight), and nothing that identifies the visitor.
    assert hit.headers["content-type"] == "text/plain;charset=UTF-8"
    assert "cookie" not in hit.headers
    assert "authorization" not in hit.headers
    assert hit.headers.get("origin") == origin(page_url)
    assert hit.status == 200, hit.body
    assert hit.response_headers.get("access-control-allow-origin") == "*"
    assert "set-cookie" not in hit.response_headers
    event: dict[str, Any] = hit.json()
    assert set(event) <= WIRE_FIELDS, event
    assert {"event", "url", "projectId", "screen"} <= set(event), event
    assert event["projectId"] == project.id
    assert isinstance(event["screen"], int) and event["screen"] > 0
    assert event.get("referrer", "x") != ""  # omitted when empty, never ""
    assert event.get("properties", {"x": 1}) != {}  # omitted when none
    return event


def names(hits: list[Hit]) -> list[str]:
    return [h.json()["event"] for h in hits]


def urls(hits: list[Hit]) -> list[str]:
    return [h.json()["url"] for h in hits]


def back(page: Any) -> None:
    """history.back() and wait for its popstate (a same-document traversal)."""
    page.evaluate(
        """() => new Promise(done => {
            addEventListener("popstate", () => setTimeout(done, 50), {once: true});
            history.back();
        })"""
    )


def quiet(project: Project, before: int) -> None:
    """Asserts that nothing more than ``before`` events arrives for a while."""
    time.sleep(QUIET)
    assert len(project.sent()) == before, [h.body for h in project.sent()[before:]]


# --- page views ------------------------------------------------------------------------------


def test_page_view_arrives_with_url_referrer_and_a_derived_session(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    second = site.add(unique_path("/second"), "second", head=project.tag())
    landing = site.add(
        unique_path("/landing"), f'<a id="next" href="{second}">next</a>', head=project.tag()
    )

    page.goto(landing + "?utm_campaign=spring#intro", referer="https://www.google.com/search?q=x")
    [first] = project.wait(1)
    event = assert_wire(first, project, landing)
    assert event["event"] == "page_view"
    assert event["url"] == landing + "?utm_campaign=spring"  # no fragment without data-hash
    assert event["referrer"].startswith("https://www.google.com/")
    assert "properties" not in event
    assert event["screen"] == page.evaluate("innerWidth")

    page.click("#next")
    hits = project.wait(2)
    event = assert_wire(hits[1], project, second)
    assert event == {
        "event": "page_view",
        "url": second,
        "referrer": landing + "?utm_campaign=spring",
        "projectId": project.id,
        "screen": event["screen"],
    }

    # The service stored both, and derived one session for them without any client id.
    stored = project.stored(2)
    assert [e["event"] for e in stored] == ["page_view", "page_view"]
    assert [e["path"] for e in stored] == [unique_path("/landing"), unique_path("/second")]
    assert {e["hostname"] for e in stored} == {"site.test"}
    assert stored[0]["url"].startswith(landing)
    assert stored[0]["referrer"].startswith("https://www.google.com/")
    assert stored[0]["source"] == "google"
    assert stored[0]["session_id"] and stored[0]["visitor_id"]
    assert stored[1]["session_id"] == stored[0]["session_id"]
    assert stored[1]["visitor_id"] == stored[0]["visitor_id"]


def test_spa_navigations_send_page_views(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    p = unique_path
    url = site.add(p("/spa/a"), '<a id="frag" href="#section">section</a>', head=project.tag())
    page.goto(url)
    project.wait(1)

    def nav(js: str) -> None:
        page.evaluate(js)

    nav(f"history.pushState({{}}, '', '{p('/spa/b')}')")  # new path: page view
    project.wait(2)
    nav(f"history.replaceState({{}}, '', '{p('/spa/b')}?q=1')")  # same path: none
    nav(f"history.replaceState({{}}, '', '{p('/spa/c')}')")  # replaceState, new path
    project.wait(3)
    nav(f"history.pushState({{}}, '', '{p('/spa/c')}?x=1')")  # same path: none
    nav(f"history.pushState({{}}, '', '{p('/spa/d')}')")
    project.wait(4)
    back(page)  # popstate to /spa/c?x=1: page view
    project.wait(5)
    back(page)  # popstate to /spa/c: same path, none
    back(page)  # popstate to /spa/a: page view
    project.wait(6)
    nav("location.hash = '#somewhere'")  # no data-hash: fragments are not pages
    page.click("#frag")
    nav(f"history.pushState({{}}, '', '{p('/spa/e')}')")  # a fence: the next event
    hits = project.wait(7)
    quiet(project, 7)

    base = site.url("")
    assert names(hits) == ["page_view"] * 7
    assert urls(hits) == [
        base + p("/spa/a"),
        base + p("/spa/b"),
        base + p("/spa/c"),
        base + p("/spa/d"),
        base + p("/spa/c") + "?x=1",
        base + p("/spa/a"),
        base + p("/spa/e"),
    ]
    for hit in hits:
        assert_wire(hit, project, url)
    stored = project.stored(7)
    assert [e["path"] for e in stored] == [
        p(x) for x in ("/spa/a", "/spa/b", "/spa/c", "/spa/d", "/spa/c", "/spa/a", "/spa/e")
    ]
    assert len({e["session_id"] for e in stored}) == 1


def test_hash_changes_are_page_views_only_with_data_hash(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    path = unique_path("/hash/")
    url = site.add(path, '<a id="contact" href="#/contact">contact</a>', head=project.tag("hash"))
    page.goto(url + "#/home")
    project.wait(1)
    page.evaluate("location.hash = '#/about'")
    project.wait(2)
    page.click("#contact")
    project.wait(3)
    back(page)  # to #/about
    project.wait(4)
    page.evaluate(f"history.pushState({{}}, '', '{path}#/pushed')")
    project.wait(5)
    page.evaluate(f"history.replaceState({{}}, '', '{path}?q=1#/pushed')")  # same page: none
    page.evaluate("location.hash = '#/end'")  # the fence
    hits = project.wait(6)
    quiet(project, 6)
    assert urls(hits) == [
        url + "#/home",
        url + "#/about",
        url + "#/contact",
        url + "#/about",
        url + "#/pushed",
        url + "?q=1#/end",
    ]
    # The service keeps the URL as sent, fragment included.
    assert sorted(e["url"] for e in project.stored(6)) == sorted(urls(hits))


# --- custom events ---------------------------------------------------------------------------


def test_track_sends_custom_events_with_properties(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/pricing"), "pricing", head=project.tag())
    page.goto(url)
    project.wait(1)
    # One at a time: concurrent beacons may arrive in any order.
    page.evaluate("svc.track('signup', {plan: 'pro', seats: 3, trial: true, coupon: null})")
    project.wait(2)
    page.evaluate("svc('cta_click', {source: 'hero'})")  # window.svc is callable too
    project.wait(3)
    page.evaluate("svc.track('no_properties')")
    hits = project.wait(4)
    assert names(hits) == ["page_view", "signup", "cta_click", "no_properties"]
    signup = assert_wire(hits[1], project, url)
    assert signup == {
        "event": "signup",
        "url": url,
        "projectId": project.id,
        "properties": {"plan": "pro", "seats": 3, "trial": True, "coupon": None},
        "screen": signup["screen"],
    }
    assert assert_wire(hits[2], project, url)["properties"] == {"source": "hero"}
    assert "properties" not in assert_wire(hits[3], project, url)

    stored = {e["event"]: e for e in project.stored(4)}
    typed = {"plan": "pro", "seats": 3, "trial": True, "coupon": None}
    # The store may keep property values as text (a ClickHouse Map of strings): accept the
    # values as sent or as their JSON text.
    as_text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in typed.items()}
    assert stored["signup"]["properties"] in (typed, as_text)
    assert stored["cta_click"]["properties"] == {"source": "hero"}
    assert stored["no_properties"]["properties"] == {}
    assert stored["signup"]["path"] == unique_path("/pricing")
    assert len({e["session_id"] for e in stored.values()}) == 1


def test_calls_queued_before_the_script_loaded_are_sent(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    head = (
        f"<script>{QUEUE_SNIPPET};"
        "svc.track('queued_track', {n: 1}); svc('queued_call')</script>" + project.tag()
    )
    # An inline script in the body also runs before the deferred script.
    body = "<script>svc.track('queued_in_body', {n: 2})</script>"
    url = site.add(unique_path("/queued"), body, head=head)
    page.goto(url)
    hits = project.wait(4)
    # Sent in this order, but as concurrent requests that may arrive in any order.
    sent = {h.json()["event"]: h.json().get("properties") for h in hits}
    assert sent == {
        "page_view": None,
        "queued_track": {"n": 1},
        "queued_call": None,
        "queued_in_body": {"n": 2},
    }
    for hit in hits:
        assert_wire(hit, project, url)
    # Loaded, window.svc is the real function; running the snippet again changes nothing.
    page.evaluate(f"() => {{ {QUEUE_SNIPPET} }}")  # (a function value would be called)
    page.evaluate("svc.track('after_load')")
    assert sorted(names(project.wait(5)))[0] == "after_load"
    assert page.evaluate("svc.q === undefined && svc.track === svc")
    stored = project.stored(5)
    assert sorted(e["event"] for e in stored) == sorted(
        ["page_view", "queued_track", "queued_call", "queued_in_body", "after_load"]
    )


# --- nothing lost on unload ------------------------------------------------------------------


def test_an_event_sent_right_before_navigating_away_is_not_lost(
    page: Any, context: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    # The targets carry no tag: they send nothing themselves.
    elsewhere = site.url(unique_path("/elsewhere"), host="other.test")
    site.pages[unique_path("/elsewhere")] = "<!doctype html><title>elsewhere</title>away"
    start = site.add(
        unique_path("/leaving"),
        f'<a id="out" href="{elsewhere}">out</a>'
        "<script>document.getElementById('out').addEventListener('click',"
        " () => svc.track('outbound_click', {to: 'other.test'}))</script>",
        head=project.tag(),
    )

    # 1. A tracked link click that navigates to another site at once.
    page.goto(start)
    project.wait(1)
    page.click("#out")
    page.wait_for_url(elsewhere)
    # 2. A script that tracks and navigates in the same task.
    page.goto(start)
    project.wait(2)
    page.evaluate(f"() => {{ svc.track('leaving', {{n: 1}}); location.href = '{elsewhere}' }}")
    page.wait_for_url(elsewhere)
    # 3. A tab closed right after the call.
    tab = context.new_page()
    tab.goto(start)
    project.wait(4)  # the page views of step 2's page... and this one
    tab.evaluate("svc.track('closing')")
    tab.close()

    hits = project.wait(6)
    assert sorted(names(hits)) == sorted(
        ["page_view", "outbound_click", "page_view", "leaving", "page_view", "closing"]
    )
    stored = project.stored(6)
    assert sorted(e["event"] for e in stored) == sorted(names(hits))


# --- privacy ---------------------------------------------------------------------------------


def test_the_script_writes_no_cookie_and_no_storage(
    page: Any, context: Any, site: Site, project: Project, collector: Collector, unique_path: PathOf
) -> None:
    mark = collector.mark()
    url = site.add(unique_path("/private"), "private", head=project.tag("hash"))
    page.goto(url)
    project.wait(1)
    page.evaluate("svc.track('clicked', {a: 1})")
    page.evaluate(f"history.pushState({{}}, '', '{unique_path('/private/2')}')")
    page.evaluate("location.hash = '#x'")
    project.wait(4)

    state = context.storage_state()
    assert state["cookies"] == []
    assert state["origins"] == []  # no localStorage on any origin
    seen = page.evaluate(
        """async () => ({
            cookie: document.cookie,
            local: localStorage.length,
            session: sessionStorage.length,
            idb: (await indexedDB.databases()).length,
        })"""
    )
    assert seen == {"cookie": "", "local": 0, "session": 0, "idb": 0}
    # Neither the script nor any event response set a cookie, and none was sent.
    hits = collector.since(mark)
    assert {h.path for h in hits} >= {"/svc/js", "/analytics"}
    for hit in hits:
        assert "set-cookie" not in hit.response_headers, hit.path
        assert "cookie" not in hit.headers, hit.path
    # The script does not send a session id either: the service derives sessions.
    assert all("sessionId" not in h.json() for h in project.sent())


def test_no_cors_preflight_for_any_event(
    browser: Any, site: Site, project: Project, collector: Collector, unique_path: PathOf
) -> None:
    from tests.conftest import BROWSER_UA

    url = site.add(unique_path("/preflight"), "preflight", head=project.tag())
    mark = collector.mark()
    sent = 0
    # sendBeacon; a browser without it; a sendBeacon that refuses (the fetch fallback).
    count_fetches = (
        "window.fetches = 0; const f = window.fetch;"
        " window.fetch = (...a) => (window.fetches++, f(...a));"
    )
    for init in (
        "",
        "delete Navigator.prototype.sendBeacon",
        "Navigator.prototype.sendBeacon = function () { return false }",
    ):
        ctx = browser.new_context(user_agent=BROWSER_UA)
        try:
            ctx.add_init_script(count_fetches + init)
            pg = ctx.new_page()
            pg.goto(url)
            pg.evaluate("svc.track('one', {k: 'v'})")
            pg.evaluate(f"history.pushState({{}}, '', '{unique_path('/preflight/2')}')")
            pg.evaluate("svc.track('two')")
            sent += 4
            hits = project.wait(sent)
            # Beacons first; fetch only where sendBeacon is missing or refuses.
            assert pg.evaluate("window.fetches") == (4 if init else 0)
        finally:
            ctx.close()
        for hit in hits[-4:]:
            assert_wire(hit, project, url)
    hits = collector.since(mark)
    assert [h for h in hits if h.method == "OPTIONS"] == []
    assert len([h for h in hits if h.method == "POST"]) == sent == 12
    assert len(project.stored(sent)) == sent


# --- when nothing is sent --------------------------------------------------------------------


def test_nothing_is_sent_from_localhost_without_data_allow_localhost(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    path = unique_path("/dev")
    site.add(path, "dev", head=project.tag())
    allowed_path = unique_path("/dev-allowed")
    site.add(allowed_path, "dev", head=project.tag("allow-localhost"))

    for host in ("127.0.0.1", "localhost"):
        page.goto(site.url(path, host=host))
        assert page.evaluate("typeof svc.track") == "function"  # the page's calls still work
        page.evaluate("svc.track('dev_event')")
        page.evaluate(f"history.pushState({{}}, '', '{path}/next')")
    quiet(project, 0)

    # The control: the same page with data-allow-localhost sends.
    allowed = site.url(allowed_path, host="127.0.0.1")
    page.goto(allowed)
    [hit] = project.wait(1)
    assert assert_wire(hit, project, allowed)["url"] == allowed
    quiet(project, 1)


def test_nothing_is_sent_under_automation_without_data_allow_automation(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/robot"), "robot", head=project.tag(automation=False))
    page.goto(url)
    assert page.evaluate("navigator.webdriver") is True
    page.evaluate("svc.track('robot_event')")
    quiet(project, 0)
    control = site.add(unique_path("/robot-allowed"), "ok", head=project.tag())
    page.goto(control)
    assert urls(project.wait(1)) == [control]


def test_the_opt_out_flag_is_honoured(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    url = site.add(unique_path("/opt-out"), "opt-out", head=project.tag())
    page.goto(site.add(unique_path("/plain"), "no script here"))
    page.evaluate("localStorage.svc_ignore = 'true'")
    page.goto(url)
    page.evaluate("svc.track('ignored')")
    quiet(project, 0)
    assert page.evaluate("localStorage.svc_ignore") == "true"  # read, never changed

    page.evaluate("localStorage.removeItem('svc_ignore')")
    page.reload()
    assert urls(project.wait(1)) == [url]


# --- configuration ---------------------------------------------------------------------------


def test_data_endpoint_is_the_base_url_events_go_to(
    page: Any, site: Site, project: Project, collector: Collector, unique_path: PathOf
) -> None:
    # The script comes straight from the service; its events go to the endpoint given,
    # here the proxy under a path prefix.
    tag = project.tag(src=project.server.url + "/svc/js", endpoint=collector.url + "/base")
    url = site.add(unique_path("/endpoint"), "endpoint", head=tag)
    page.goto(url)
    [hit] = project.wait(1)
    assert hit.raw_path == "/base/analytics"
    assert_wire(hit, project, url)
    assert len(project.stored(1)) == 1


# --- the page lifecycle ----------------------------------------------------------------------


def test_a_page_restored_from_the_back_forward_cache_is_a_page_view(
    page: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    second = site.add(unique_path("/bf-2"), "second", head=project.tag())
    first = site.add(
        unique_path("/bf-1"),
        f'<a id="next" href="{second}">next</a>'
        "<script>addEventListener('pageshow', e => { window.restored = e.persisted })</script>",
        head=project.tag(),
    )
    page.goto(first)
    project.wait(1)
    page.click("#next")
    project.wait(2)
    page.go_back(wait_until="commit")  # a restored page fires no load event
    page.wait_for_function("window.restored !== undefined")
    if not page.evaluate("window.restored"):
        pytest.skip("Chromium did not use its back/forward cache for this page")
    hits = project.wait(3)
    assert urls(hits) == [first, second, first]
    quiet(project, 3)


def test_a_prerendered_page_counts_only_once_activated(
    context: Any, site: Site, project: Project, unique_path: PathOf
) -> None:
    """Chrome may prerender a page the visitor never opens; its events wait for activation.

    Real prerendering cannot run here: Chromium disables it while DevTools (Playwright) is
    attached ("PrerenderingDisabledByDevTools"). So the page is made to look prerendered:
    ``document.prerendering`` is true until the test activates it and fires
    ``prerenderingchange``, as Chrome does on activation.
    """
    context.add_init_script(
        "window.prerendered = true;"
        "Object.defineProperty(Document.prototype, 'prerendering',"
        " {get: () => window.prerendered, configurable: true})"
    )
    page = context.new_page()
    url = site.add(unique_path("/prerendered"), "prerendered", head=project.tag())
    page.goto(url)
    page.evaluate("svc.track('during_prerender', {k: 1})")
    quiet(project, 0)

    page.evaluate(
        "window.prerendered = false; document.dispatchEvent(new Event('prerenderingchange'))"
    )
    hits = project.wait(2)
    assert sorted(names(hits)) == ["during_prerender", "page_view"]
    quiet(project, 2)
