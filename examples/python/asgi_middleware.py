"""Server-side page views for any ASGI app: FastAPI, Starlette, Quart, Django's ASGI handler.

A pure ASGI middleware (it imports no framework): after each ``GET`` answered with a 2xx HTML
page, it records a ``page_view`` with the visitor's user agent, address (``X-Forwarded-For``
from trusted proxies only) and referrer. ``page_view`` never waits for the network: the
``AsyncClient`` sends in batches from the event loop.

The visitor's user agent and address are honoured with the project's SECRET key only; keep it
on the server (an environment variable), never in a page.

FastAPI::

    from contextlib import asynccontextmanager
    from fastapi import FastAPI
    from svc_client import create_async_client
    from asgi_middleware import SvcPageViews

    svc = create_async_client(
        api_key=os.environ["SVC_SECRET_KEY"],
        project_id=os.environ["SVC_PROJECT_ID"],
        endpoint=os.environ["SVC_ENDPOINT"],  # https://analytics.example.com/analytics
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with svc:  # sends what is queued at shutdown
            yield

    app = FastAPI(lifespan=lifespan)
    app.add_middleware(SvcPageViews, client=svc)

Starlette: ``Starlette(routes=..., lifespan=lifespan, middleware=[Middleware(SvcPageViews,
client=svc)])``. A complete app: ``fastapi_app.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any

from svc_client import AsyncClient
from svc_client.web import DEFAULT_TRUSTED_PROXIES, client_ip, is_page_request, is_trusted

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class SvcPageViews:
    """ASGI middleware recording a ``page_view`` per HTML page served.

    ``skip``: path prefixes never recorded (health checks, admin, API routes...).
    ``trusted_proxies``: CIDRs of the reverse proxies in front of the app, whose
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed (default: loopback and private
    networks; ``()`` when the app faces the Internet directly).
    """

    def __init__(
        self,
        app: ASGIApp,
        client: AsyncClient,
        *,
        skip: Iterable[str] = ("/health", "/metrics", "/static/", "/api/"),
        trusted_proxies: Sequence[str] = DEFAULT_TRUSTED_PROXIES,
    ) -> None:
        self.app = app
        self.client = client
        self.skip = tuple(skip)
        self.trusted_proxies = tuple(trusted_proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or self._skipped(scope["path"]):
            await self.app(scope, receive, send)
            return
        response: dict[str, Any] = {}

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                for name, value in message.get("headers", ()):
                    if name.lower() == b"content-type":
                        response["content_type"] = value.decode("latin-1")
            await send(message)

        await self.app(scope, receive, watch)
        if is_page_request(
            "GET", scope["path"], response.get("status", 0), response.get("content_type")
        ):
            self._record(scope)

    def _skipped(self, path: str) -> bool:
        return path.startswith(self.skip)

    def _record(self, scope: Scope) -> None:
        headers = _headers(scope)
        client = scope.get("client")
        peer = client[0] if client else None
        ip = client_ip(peer, headers.get("x-forwarded-for"), trusted_proxies=self.trusted_proxies)
        # A URL the service would refuse (over 2,048 characters) is no page view.
        with contextlib.suppress(ValueError):
            self.client.page_view(
                _url(scope, headers, proxied=is_trusted(peer, self.trusted_proxies)),
                referrer=headers.get("referer"),
                user_agent=headers.get("user-agent"),
                ip=ip,
            )


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers, lower-case names; repeated ones joined with commas (as HTTP says)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _url(scope: Scope, headers: dict[str, str], *, proxied: bool) -> str:
    """The page's full URL as the visitor requested it."""
    scheme = scope.get("scheme", "http")
    if proxied and headers.get("x-forwarded-proto"):
        scheme = headers["x-forwarded-proto"].split(",")[0].strip()
    host = headers.get("host")
    if not host:
        server = scope.get("server")
        host = f"{server[0]}:{server[1]}" if server else "localhost"
    path = scope.get("root_path", "") + scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    return f"{scheme}://{host}{path}" + (f"?{query}" if query else "")
