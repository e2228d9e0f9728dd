"""A FastAPI app that records server-side page views and custom events with svc.

Run it (FastAPI and uvicorn are the example's own dependencies, not svc's)::

    pip install fastapi uvicorn
    export SVC_SECRET_KEY=svc_live_...            # the project's SECRET key
    export SVC_PROJECT_ID=svc_proj_acme
    export SVC_ENDPOINT=http://127.0.0.1:8080/analytics
    uvicorn fastapi_app:app --app-dir examples/python

Every HTML page is recorded by :class:`asgi_middleware.SvcPageViews`; routes send their own
events (``sign_up``, ``purchase``, ``exception``) with the visitor's context. This module
imports without FastAPI installed; ``app`` is then ``None``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from asgi_middleware import SvcPageViews
from svc_client import AsyncClient, create_async_client
from svc_client.web import client_ip


def make_client() -> AsyncClient:
    return create_async_client(
        api_key=os.environ.get("SVC_SECRET_KEY", "svc_live_replace_me"),
        project_id=os.environ.get("SVC_PROJECT_ID", "svc_proj_acme"),
        endpoint=os.environ.get("SVC_ENDPOINT", "http://127.0.0.1:8080/analytics"),
    )


def create_app(svc: AsyncClient | None = None) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse

    client = svc or make_client()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with client:  # on shutdown: sends what is queued, then closes
            yield

    app = FastAPI(lifespan=lifespan)
    app.add_middleware(SvcPageViews, client=client)

    def visitor(request: Request) -> dict[str, Any]:
        """The context of a server-side event: the visitor's agent and address."""
        peer = request.client.host if request.client else None
        return {
            "url": str(request.url),
            "user_agent": request.headers.get("user-agent"),
            "ip": client_ip(peer, request.headers.get("x-forwarded-for")),
        }

    @app.get("/", response_class=HTMLResponse)
    async def home() -> str:
        return "<h1>Acme</h1>"

    @app.post("/signup")
    async def signup(request: Request) -> dict[str, bool]:
        client.sign_up("email", extra={"plan": "pro"}, **visitor(request))
        return {"ok": True}

    @app.post("/checkout")
    async def checkout(request: Request) -> dict[str, bool]:
        client.purchase(
            "T-1001",
            30,
            "EUR",
            [{"item_id": "sku1", "price": 10, "quantity": 3}],
            **visitor(request),
        )
        return {"ok": True}

    @app.exception_handler(Exception)
    async def report(request: Request, exc: Exception) -> HTMLResponse:
        client.capture_exception(exc, fatal=True, **visitor(request))
        return HTMLResponse("<h1>Something went wrong</h1>", status_code=500)

    return app


try:
    app = create_app()
except ImportError:  # FastAPI is not installed: the module stays importable
    app = None
