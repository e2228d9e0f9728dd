"""Fixtures for the dashboard tests: the dashboard's URL on the real server, a seeded project
(and a second one it must not see), and Debian's headless Chromium driven by Playwright.

When ``svc.app`` does not mount the dashboard routes yet, :class:`DashboardFront` serves them
in front of the real server (one origin, as in production).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.dashboard.harness import DashboardFront
from tests.dashboard.seed import traffic
from tests.support import ROOT, Server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
TIMEZONE = "Europe/Berlin"


@dataclass
class Seeded:
    id: str
    name: str
    secret: str
    public: str
    other_id: str
    other_secret: str
    events: int


@pytest.fixture(scope="session")
def dashboard_url(server: Server) -> Iterator[str]:
    """Where the dashboard is served: the server itself once svc.app mounts the routes."""
    r = httpx.get(server.url + "/dashboard", timeout=10)
    if r.status_code == 200 and r.headers.get("content-type", "").startswith("text/html"):
        yield server.url
        return
    front = DashboardFront(server.url).start()
    yield front.url
    front.stop()


@pytest.fixture(scope="session")
def seeded(server: Server) -> Seeded:
    """A project in Europe/Berlin with six days of traffic, and another project with some."""
    return seed(server)


def seed(server: Server) -> Seeded:
    """Seeds ``server`` as the ``seeded`` fixture does (for a test's own server)."""
    suffix = uuid.uuid4().hex[:8]
    main = server.create_project(f"dash-{suffix}", timezone=TIMEZONE, domains=["acme.test"])
    other = server.create_project(f"other-{suffix}")
    events = traffic(seed=7, visitors=140, live=3)
    for i in range(0, len(events), 500):
        r = server.send(main["keys"]["secret"], events[i : i + 500])
        assert r.status_code == 200, r.text
        assert "rejected" not in r.json(), r.text
    r = server.send(
        other["keys"]["secret"], traffic(seed=99, visitors=12, host="other.test", live=0)
    )
    assert r.status_code == 200, r.text
    server.wait_loaded()
    return Seeded(
        id=main["id"],
        name=main["name"],
        secret=main["keys"]["secret"],
        public=main["keys"]["public"],
        other_id=other["id"],
        other_secret=other["keys"]["secret"],
        events=len(events),
    )


# Module scope: Playwright's sync API keeps an event loop running in the main thread while it
# lives, which would break every later test that runs asyncio (and a second Playwright).
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def context(chromium: Any) -> Iterator[Any]:
    ctx = chromium.new_context(viewport=DESKTOP, locale="en-US", timezone_id="UTC")
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Iterator[Any]:
    p = context.new_page()
    p.set_default_timeout(15_000)
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    yield p
    assert not errors, f"uncaught errors in the page: {errors}"
