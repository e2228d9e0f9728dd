"""How the dashboard asks for its data, in real Chromium against the real server (issue 39).

The server runs at most ``reads.perProject`` reads of one project at once (GET /health) and
makes the others wait. The page asks accordingly: the top figures (GET /metrics) first, then
the panels, never more than that share in flight, and each panel shows its rows as soon as
its own answer arrives. The requests are read from the browser's network events, with the
browser's own timings.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.dashboard.conftest import Seeded, seed
from tests.dashboard.test_dashboard_browser import (
    api,
    breakdown,
    eventually,
    last_7_days,
    rows,
    sign_in,
    wait_stats,
)
from tests.support import Server

pytestmark = pytest.mark.browser

# The top figures and the realtime count: asked ahead of every panel.
FIRST = ("/metrics", "/metrics/realtime")


@dataclass
class Read:
    """One request, timed by the browser's network stack (ms since the epoch)."""

    path: str
    query: dict[str, list[str]]
    start: float = 0.0
    #: the answer's headers arrived: the page cannot be done with it before (the body may reach
    #: the page a few ms before the network stack stamps its end)
    answered: float = 0.0
    end: float | None = None  # its last byte; None: no answer (yet)


class Reads:
    """The page's requests to /metrics*, in the order the browser sent them."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.all: list[Read] = []
        self._open: dict[Any, Read] = {}
        page.on("request", self._sent)
        page.on("requestfinished", self._done)
        page.on("requestfailed", self._done)

    def _sent(self, request: Any) -> None:
        url = urlsplit(request.url)
        if url.path == "/metrics" or url.path.startswith("/metrics/"):
            read = Read(url.path, parse_qs(url.query))
            self.all.append(read)
            self._open[request] = read

    def _done(self, request: Any) -> None:
        read = self._open.pop(request, None)
        if read is not None:
            timing = request.timing
            read.start = timing["startTime"]
            if timing["responseEnd"] >= 0:
                read.answered = read.start + timing["responseStart"]
                read.end = read.start + timing["responseEnd"]

    def settle(self, quiet_ms: int = 700, timeout_ms: int = 30_000) -> None:
        """Waits until every read has its answer and none started for ``quiet_ms``."""
        seen, still, waited = -1, 0, 0
        while waited < timeout_ms:
            self.page.wait_for_timeout(100)
            waited += 100
            if self._open or len(self.all) != seen:
                seen, still = len(self.all), 0
            else:
                still += 100
                if still >= quiet_ms:
                    return
        pytest.fail(f"the page's reads did not settle: {[r.path for r in self._open.values()]}")

    def most_at_once(self) -> int:
        """The most reads in flight at one moment, each from its start to its answer's headers
        (an answer arriving as another read starts: one)."""
        marks = sorted(
            [(r.start, 1) for r in self.all] + [(r.answered, -1) for r in self.all if r.end],
            key=lambda m: (m[0], m[1]),
        )
        now = most = 0
        for _, step in marks:
            now += step
            most = max(most, now)
        return most

    def wall_ms(self) -> float:
        return max(r.end or 0.0 for r in self.all) - min(r.start for r in self.all)


def per_project(server: Server) -> int:
    n: int = httpx.get(server.url + "/health", timeout=10).json()["reads"]["perProject"]
    return n


def load_and_check(page: Any, url: str, server: Server, seeded: Seeded) -> Reads:
    """Signs in, checks that the page shows the API's numbers, and returns its reads."""
    reads = Reads(page)
    sign_in(page, url, seeded.secret, "?period=7d")
    frm, to = last_7_days()
    params = [("from", frm), ("to", to)]
    wait_stats(page, api(server, seeded.secret, "/metrics", params))
    eventually(lambda: rows(page, "pages"), breakdown(server, seeded.secret, "page", params))
    eventually(lambda: rows(page, "sources"), breakdown(server, seeded.secret, "channel", params))
    eventually(lambda: rows(page, "devices"), breakdown(server, seeded.secret, "browser", params))
    reads.settle()
    return reads


def assert_asks_well(reads: Reads, share: int) -> None:
    assert reads.all, "the page read nothing"
    assert all(r.end for r in reads.all), [r.path for r in reads.all if not r.end]
    # (a) GET /metrics first, and the range's top figures ahead of every panel.
    assert reads.all[0].path == "/metrics"
    top = next(r for r in reads.all if r.path == "/metrics" and "to" in r.query)
    panels = [r for r in reads.all if r.path not in FIRST]
    assert len(panels) >= 10, [r.path for r in reads.all]
    assert reads.all.index(top) < min(reads.all.index(p) for p in panels)
    assert top.start <= min(p.start for p in panels)
    # (b) never more than the server's share at once, and the share used.
    assert reads.most_at_once() == share, [(r.path, r.start, r.end) for r in reads.all]


def test_top_figures_first_then_panels_within_the_share(
    page: Any, dashboard_url: str, server: Server, seeded: Seeded
) -> None:
    share = per_project(server)
    assert share == 2  # the default
    reads = load_and_check(page, dashboard_url, server, seeded)
    assert_asks_well(reads, share)


@pytest.fixture
def one_at_a_time(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "data", env={"SVC_READS_PER_PROJECT": "1"}).start()
    yield srv
    srv.stop()


def test_a_share_of_one_is_honoured(page: Any, one_at_a_time: Server) -> None:
    assert per_project(one_at_a_time) == 1
    seeded = seed(one_at_a_time)
    reads = load_and_check(page, one_at_a_time.url, one_at_a_time, seeded)
    assert_asks_well(reads, 1)


def test_each_panel_shows_when_its_answer_arrives(
    page: Any, dashboard_url: str, server: Server, seeded: Seeded
) -> None:
    """The sources panel's answer is held back: the other panels show theirs meanwhile."""
    held: list[Any] = []

    def hold(route: Any) -> None:
        if parse_qs(urlsplit(route.request.url).query).get("by") == ["channel"]:
            held.append(route)
        else:
            route.continue_()

    page.route(lambda url: "/metrics/breakdown?" in url, hold)
    sign_in(page, dashboard_url, seeded.secret, "?period=7d")
    frm, to = last_7_days()
    params = [("from", frm), ("to", to)]
    eventually(lambda: rows(page, "pages"), breakdown(server, seeded.secret, "page", params))
    eventually(lambda: rows(page, "devices"), breakdown(server, seeded.secret, "browser", params))
    assert len(held) == 1
    sources = page.locator("[data-panel=sources]")
    assert sources.locator("button.row").count() == 0
    assert sources.locator(".skeleton").count() > 0
    held[0].continue_()
    eventually(lambda: rows(page, "sources"), breakdown(server, seeded.secret, "channel", params))


def test_a_busy_answer_is_asked_again_after_retry_after(
    page: Any, dashboard_url: str, server: Server, seeded: Seeded
) -> None:
    """The server's 503 ``busy`` (its read queue was full) is retried once, after Retry-After."""
    asked: list[float] = []

    def busy_once(route: Any) -> None:
        if parse_qs(urlsplit(route.request.url).query).get("by") != ["page"]:
            route.continue_()
            return
        asked.append(time.monotonic())
        if len(asked) > 1:
            route.continue_()
            return
        route.fulfill(
            status=503,
            headers={"Retry-After": "1", "Content-Type": "application/json"},
            body='{"ok": false, "error": {"code": "busy", "message": "Too many reads."}}',
        )

    page.route(lambda url: "/metrics/breakdown?" in url, busy_once)
    sign_in(page, dashboard_url, seeded.secret, "?period=7d")
    frm, to = last_7_days()
    params = [("from", frm), ("to", to)]
    eventually(lambda: rows(page, "pages"), breakdown(server, seeded.secret, "page", params))
    assert len(asked) == 2
    assert asked[1] - asked[0] >= 0.8  # 1 s in the page; Python sees a route up to a poll late
