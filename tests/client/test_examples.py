"""The framework examples in examples/python, with the Python client (svc_client).

The examples import without their frameworks. The ASGI middleware runs in a real Starlette app
(Starlette is installed: the service uses it); the Django middleware and the Flask hooks run
with stand-ins for the framework's request objects. Page views go to the real server, which
must see the visitor's user agent and address (8.8.8.8 is a US address in the geo data).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from svc_client import create_async_client, create_client

from tests.client.helpers import BROWSER_UA, Errors
from tests.support import ROOT, Server

EXAMPLES = ROOT / "examples" / "python"


@pytest.fixture
def examples() -> Iterator[None]:
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))


def stored(server: Server, project: dict[str, Any]) -> list[dict[str, Any]]:
    server.wait_loaded()
    return server.events(project["id"], project["keys"]["secret"])


# ----- the examples ------------------------------------------------------------------------------


@pytest.mark.usefixtures("examples")
@pytest.mark.parametrize(
    "module", ["asgi_middleware", "django_middleware", "flask_app", "fastapi_app"]
)
def test_the_examples_import_without_their_frameworks(module: str) -> None:
    mod = importlib.import_module(module)
    assert mod.__doc__


@pytest.mark.usefixtures("examples")
async def test_asgi_middleware_records_html_pages_with_the_visitors_context(
    server: Server, project: dict[str, Any], endpoint: str
) -> None:
    from asgi_middleware import SvcPageViews
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
    from starlette.routing import Route

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse("<h1>hi</h1>")

    async def api(request: Any) -> JSONResponse:
        return JSONResponse({"ok": True})

    async def css(request: Any) -> PlainTextResponse:
        return PlainTextResponse("body{}", media_type="text/css")

    errors = Errors()
    svc = create_async_client(
        api_key=project["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
    )
    app = Starlette(
        routes=[
            Route("/", page, methods=["GET", "POST"]),
            Route("/pricing", page),
            Route("/api/items", api),
            Route("/items.json", api),
            Route("/style", css),
        ],
        middleware=[Middleware(SvcPageViews, client=svc)],
    )
    headers = {
        "User-Agent": BROWSER_UA,
        "X-Forwarded-For": "8.8.8.8",
        "X-Forwarded-Proto": "https",
        "Referer": "https://www.google.com/",
    }
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://acme.test", headers=headers
    ) as http:
        assert (await http.get("/pricing?utm_source=news")).status_code == 200
        assert (await http.post("/")).status_code == 200  # not a GET
        assert (await http.get("/missing")).status_code == 404
        assert (await http.get("/api/items")).status_code == 200  # skipped prefix
        assert (await http.get("/items.json")).status_code == 200  # not HTML
        assert (await http.get("/style")).status_code == 200  # not HTML
    await svc.aclose()
    assert errors == []
    (row,) = stored(server, project)
    assert row["event"] == "page_view"
    assert row["url"] == "https://acme.test/pricing?utm_source=news"
    assert row["referrer"] == "https://www.google.com/"
    assert (row["browser"], row["country"], row["source"]) == ("Chrome", "US", "news")
    assert "8.8.8.8" not in str(row)


class FakeDjangoRequest:
    def __init__(self, path: str, method: str = "GET", **meta: str) -> None:
        self.path, self.method = path, method
        self.META = {"REMOTE_ADDR": "10.0.0.2", "HTTP_HOST": "acme.test", **meta}

    def build_absolute_uri(self) -> str:
        return f"https://{self.META['HTTP_HOST']}{self.path}"


class FakeDjangoResponse(dict[str, str]):
    def __init__(self, status_code: int, content_type: str) -> None:
        super().__init__({"Content-Type": content_type})
        self.status_code = status_code


@pytest.mark.usefixtures("examples")
def test_django_middleware_records_page_views(server: Server, project, endpoint) -> None:
    from django_middleware import SvcPageViewMiddleware

    errors = Errors()
    svc = create_client(
        api_key=project["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
    )
    responses = {
        "/docs": FakeDjangoResponse(200, "text/html; charset=utf-8"),
        "/admin/": FakeDjangoResponse(200, "text/html"),
        "/feed": FakeDjangoResponse(200, "application/rss+xml"),
    }
    middleware = SvcPageViewMiddleware(lambda request: responses[request.path], client=svc)
    meta = {"HTTP_USER_AGENT": BROWSER_UA, "HTTP_X_FORWARDED_FOR": "8.8.8.8"}
    for path in responses:
        assert middleware(FakeDjangoRequest(path, **meta)) is responses[path]
    svc.close()
    assert errors == []
    (row,) = stored(server, project)
    assert row["url"] == "https://acme.test/docs"
    assert (row["browser"], row["country"]) == ("Chrome", "US")


@pytest.mark.usefixtures("examples")
def test_flask_hooks_record_page_views(
    monkeypatch: pytest.MonkeyPatch, server: Server, project, endpoint
) -> None:
    # Flask is not installed: a stand-in module with the `request` and `g` the hooks read.
    flask = types.ModuleType("flask")
    flask.g = types.SimpleNamespace(get=lambda name, default=None: getattr(flask.g, name, default))  # type: ignore[attr-defined]

    class Headers(dict[str, str]):
        def getlist(self, name: str) -> list[str]:
            return [self[name]] if name in self else []

    flask.request = types.SimpleNamespace(  # type: ignore[attr-defined]
        url="https://acme.test/blog?page=2",
        path="/blog",
        method="GET",
        remote_addr="127.0.0.1",
        headers=Headers({"User-Agent": BROWSER_UA, "X-Forwarded-For": "8.8.8.8"}),
    )
    monkeypatch.setitem(sys.modules, "flask", flask)
    from flask_app import init_app

    hooks: dict[str, Any] = {}
    app = types.SimpleNamespace(
        before_request=lambda f: hooks.setdefault("before", f),
        after_request=lambda f: hooks.setdefault("after", f),
    )
    errors = Errors()
    svc = create_client(
        api_key=project["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
    )
    init_app(app, svc)
    hooks["before"]()
    response = types.SimpleNamespace(status_code=200, content_type="text/html; charset=utf-8")
    assert hooks["after"](response) is response
    svc.close()
    assert errors == []
    (row,) = stored(server, project)
    assert row["url"] == "https://acme.test/blog?page=2"
    assert (row["browser"], row["country"]) == ("Chrome", "US")
