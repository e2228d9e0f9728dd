"""Server-side page views and events for a Flask app, with before/after request hooks.

Run it (Flask is the example's own dependency, not svc's)::

    pip install flask
    export SVC_SECRET_KEY=svc_live_...            # the project's SECRET key
    export SVC_PROJECT_ID=svc_proj_acme
    export SVC_ENDPOINT=http://127.0.0.1:8080/analytics
    flask --app examples/python/flask_app.py run

``init_app(app, client)`` adds two hooks: ``before_request`` notes the visitor's context (URL,
referrer, user agent, address from ``X-Forwarded-For`` of trusted proxies only) in ``flask.g``
for views that send their own events; ``after_request`` records a ``page_view`` when a ``GET``
was answered with a 2xx HTML page. Nothing waits for the network: the client sends in batches
from a background thread, and sends what is queued when the process exits. This module
imports without Flask installed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from svc_client import Client, create_client
from svc_client.web import DEFAULT_TRUSTED_PROXIES, client_ip, is_page_request

SKIP = ("/static/", "/health")


def init_app(
    app: Any,
    client: Client,
    *,
    trusted_proxies: Sequence[str] = DEFAULT_TRUSTED_PROXIES,
    skip: Sequence[str] = SKIP,
) -> None:
    """Records page views of ``app`` with ``client`` (use the project's secret key)."""
    from flask import g, request

    skip = tuple(skip)

    @app.before_request
    def svc_context() -> None:
        g.svc = {
            "url": request.url,
            "referrer": request.headers.get("Referer"),
            "user_agent": request.headers.get("User-Agent"),
            "ip": client_ip(
                request.remote_addr,
                request.headers.getlist("X-Forwarded-For"),
                trusted_proxies=trusted_proxies,
            ),
        }

    @app.after_request
    def svc_page_view(response: Any) -> Any:
        context = g.get("svc")
        if (
            context is not None
            and not request.path.startswith(skip)
            and is_page_request(
                request.method, request.path, response.status_code, response.content_type
            )
        ):
            # A URL the service would refuse (over 2,048 characters) is no page view.
            with contextlib.suppress(ValueError):
                client.page_view(**context)
        return response


def create_app(client: Client | None = None) -> Any:
    from flask import Flask, g

    svc = client or create_client(
        api_key=os.environ.get("SVC_SECRET_KEY", "svc_live_replace_me"),
        project_id=os.environ.get("SVC_PROJECT_ID", "svc_proj_acme"),
        endpoint=os.environ.get("SVC_ENDPOINT", "http://127.0.0.1:8080/analytics"),
    )
    app = Flask(__name__)
    init_app(app, svc)

    @app.get("/")
    def home() -> str:
        return "<h1>Acme</h1>"

    @app.post("/signup")
    def signup() -> dict[str, bool]:
        svc.sign_up("email", extra={"plan": "pro"}, **g.svc)
        return {"ok": True}

    @app.errorhandler(Exception)
    def report(exc: Exception) -> tuple[str, int]:
        svc.capture_exception(exc, fatal=True, **g.get("svc", {}))
        return "<h1>Something went wrong</h1>", 500

    return app


if __name__ == "__main__":
    create_app().run()
