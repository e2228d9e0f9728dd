"""Fixtures for the browser-script tests: headless Chromium, a test site and a recording proxy.

Topology (all on loopback, two origins that are also two sites):

    Chromium --(pages)--> http://site.test:<p1>   the customer's site: test pages with the tag
    Chromium --(script, events)--> http://svc.test:<p2>   a recording proxy in front of ...
                                   ... the real svc server (the session fixture ``server``)

Chromium resolves ``*.test`` to 127.0.0.1 (``--host-resolver-rules``), so the site is neither
``localhost`` nor ``127.*`` and the script's development check does not apply to it, while the
same site server is also reachable as ``127.0.0.1`` and ``localhost`` for the tests of that
check. The proxy forwards every request unchanged to the server and records what the browser
put on the wire (method, path, headers, body), so the tests can count CORS preflights and read
the exact event format; a path prefix ``/base`` is stripped, to test ``data-endpoint`` with a
path.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--host-resolver-rules=MAP *.test 127.0.0.1",
    # A real browser's user agent for every request, including the beacons a page sends as it
    # is left, which Playwright's per-page override no longer reaches ("HeadlessChrome" is
    # dropped by the service's bot filter on purpose).
    f"--user-agent={BROWSER_UA}",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: needs headless Chromium (/usr/bin/chromium)")


# --- the recording proxy in front of the service ---------------------------------------------


@dataclass
class Hit:
    """One request the browser sent to the service, as it was on the wire."""

    method: str
    path: str  # without the /base prefix
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        return json.loads(self.body)


_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
}


class Collector:
    """A reverse proxy to the real service that records every request."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.hits: list[Hit] = []
        self._cond = threading.Condition()
        self._client = httpx.Client(timeout=30)
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                collector._forward(self, body)

            do_GET = do_POST = do_HEAD = do_OPTIONS = do_PUT = do_DELETE = do_PATCH = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://svc.test:{self.port}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        split = urlsplit(handler.path)
        path = split.path.removeprefix("/base") or "/"
        target = path + (f"?{split.query}" if split.query else "")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        hit = Hit(
            method=handler.command,
            path=path,
            raw_path=split.path,
            query={k: v[-1] for k, v in parse_qs(split.query).items()},
            headers=headers,
            body=body,
        )
        forward = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
        request = self._client.build_request(
            handler.command, self.upstream + target, headers=forward, content=body
        )
        upstream = self._client.send(request, stream=True)
        try:
            payload = b"".join(upstream.iter_raw())
        finally:
            upstream.close()
        hit.status = upstream.status_code
        hit.response_headers = {k.lower(): v for k, v in upstream.headers.items()}
        handler.send_response(upstream.status_code)
        for name, value in upstream.headers.multi_items():
            if name.lower() not in _HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)
        with self._cond:
            self.hits.append(hit)
            self._cond.notify_all()

    def events(self, key: str) -> list[Hit]:
        """The event posts made with this public key, in arrival order."""
        with self._cond:
            return [
                h
                for h in self.hits
                if h.method == "POST" and h.path == "/analytics" and h.query.get("key") == key
            ]

    def wait_events(self, key: str, count: int, timeout: float = 10.0) -> list[Hit]:
        """Waits until at least ``count`` events with this key arrived; returns them all."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.events(key)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    got = [h.body.decode() for h in self.events(key)]
                    raise AssertionError(f"expected {count} events for the key, got {got}")
                self._cond.wait(left)
            return self.events(key)

    def since(self, start: int) -> list[Hit]:
        with self._cond:
            return list(self.hits[start:])

    def mark(self) -> int:
        with self._cond:
            return len(self.hits)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._client.close()


# --- the customer's site ---------------------------------------------------------------------


class Site:
    """Serves test pages registered by the tests, on site.test, 127.0.0.1 and localhost; and
    other files (images), each with its content type and an optional delay before the answer."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.files: dict[str, tuple[str, bytes, float]] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path in site.files:
                    content_type, data, delay = site.files[path]
                    time.sleep(delay)
                    self.send_response(200)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                page = site.pages.get(path)
                body = (page or "not found").encode()
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "site.test") -> str:
        return f"http://{host}:{self.port}{path}"

    def add(self, path: str, body: str, head: str = "") -> str:
        """Registers a page; returns its URL on site.test."""
        self.pages[path] = (
            f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(path)}</title>"
            f"{head}</head><body>{body}</body></html>"
        )
        return self.url(path)

    def add_file(self, path: str, content_type: str, data: bytes, delay: float = 0.0) -> str:
        """Registers a file served after ``delay`` seconds; returns its URL on site.test."""
        self.files[path] = (content_type, data, delay)
        return self.url(path)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# --- a project per test, and its script tag --------------------------------------------------


@dataclass
class Project:
    id: str
    public: str
    secret: str
    collector: Collector
    server: Server

    def tag(
        self,
        *flags: str,
        src: str | None = None,
        automation: bool = True,
        **attrs: str,
    ) -> str:
        """The script tag for this project. ``flags`` are value-less data attributes (``hash``,
        ``allow-localhost``); ``automation`` adds ``data-allow-automation`` (Playwright's
        Chromium has navigator.webdriver set); ``attrs`` are more ``data-*`` attributes."""
        parts = [
            f'src="{html.escape(src or self.collector.url + "/svc/js")}"',
            f'data-key="{self.public}"',
            f'data-project="{self.id}"',
        ]
        parts += [f'data-{k.replace("_", "-")}="{html.escape(v)}"' for k, v in attrs.items()]
        parts += [f"data-{f}" for f in flags]
        if automation:
            parts.append("data-allow-automation")
        return f"<script defer {' '.join(parts)}></script>"

    def wait(self, count: int, timeout: float = 10.0) -> list[Hit]:
        return self.collector.wait_events(self.public, count, timeout)

    def sent(self) -> list[Hit]:
        return self.collector.events(self.public)

    def stored(self, count: int | None = None, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The project's events as the service stored them (after every accepted one loaded)."""
        deadline = time.monotonic() + timeout
        while True:
            self.server.wait_loaded()
            events = self.server.events(self.id, self.secret)
            if count is None or len(events) >= count or time.monotonic() > deadline:
                return events
            time.sleep(0.1)


# --- fixtures --------------------------------------------------------------------------------


# Module scope: Playwright's sync API keeps an event loop running in the main thread while it
# lives, which would break every later test that runs asyncio (and a second Playwright).
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            # Playwright turns the back/forward cache off; the script handles pages restored
            # from it, so the tests want it on.
            ignore_default_args=["--disable-back-forward-cache"],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


@pytest.fixture(scope="session")
def collector(server: Server) -> Iterator[Collector]:
    c = Collector(server.url)
    yield c
    c.close()


@pytest.fixture
def project(server: Server, collector: Collector) -> Project:
    name = "browser-" + uuid.uuid4().hex[:12]
    created = server.create_project(name)
    return Project(
        id=created["project"]["id"],
        public=created["keys"]["public"],
        secret=created["keys"]["secret"],
        collector=collector,
        server=server,
    )


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    # A real browser's user agent: headless Chromium says "HeadlessChrome", which the service's
    # bot filter drops on purpose.
    ctx = browser.new_context(user_agent=BROWSER_UA)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Any:
    p = context.new_page()
    p.set_default_timeout(10_000)
    return p


@pytest.fixture
def unique_path() -> Callable[[str], str]:
    """Page paths unique to a test (the site is shared by the session)."""
    prefix = "/" + uuid.uuid4().hex[:8]
    return lambda path: prefix + path
