"""The dashboard's routes in front of a running svc, for servers whose app does not mount them.

``DashboardFront(upstream)`` serves GET ``/``, ``/dashboard``, ``/dashboard/assets/{path}`` and
``/share/{token}`` with the handlers of :mod:`svc.http.dashboard` and forwards every other
request unchanged to ``upstream``, so the browser sees one origin exactly as with the routes
mounted in ``svc.app``. Runs uvicorn in a thread on a free loopback port.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.http.dashboard import dashboard_asset, dashboard_page, share_page
from tests.support import free_port

_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def dashboard_routes() -> list[Route]:
    """The Route lines svc.app mounts (the same as documented in docs/dashboard.md)."""
    return [
        Route("/", dashboard_page, methods=["GET"]),
        Route("/dashboard", dashboard_page, methods=["GET"]),
        Route("/dashboard/assets/{path:path}", dashboard_asset, methods=["GET"]),
        Route("/share/{token}", share_page, methods=["GET"]),
    ]


class DashboardFront:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[*dashboard_routes(), Route("/{rest:path}", self._forward, methods=_METHODS)]
        )
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    async def _forward(self, request: Request) -> Response:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=60)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        headers.pop("content-length", None)
        upstream = await self._client.request(
            request.method,
            self.upstream + request.url.path,
            params=list(request.query_params.multi_items()),
            headers=headers,
            content=await request.body(),
        )
        out = {
            k: v
            for k, v in upstream.headers.items()
            if k.lower() not in _HOP and k.lower() not in ("content-length", "content-encoding")
        }
        return Response(upstream.content, status_code=upstream.status_code, headers=out)

    def start(self) -> DashboardFront:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the dashboard front did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
