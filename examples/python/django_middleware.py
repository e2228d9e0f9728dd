"""Server-side page views for a Django site (WSGI or ASGI).

settings.py::

    MIDDLEWARE = [
        "django.middleware.security.SecurityMiddleware",
        ...,
        "django_middleware.SvcPageViewMiddleware",  # this file, on the Python path
    ]
    SVC = {
        "API_KEY": os.environ["SVC_SECRET_KEY"],  # the project's SECRET key: server only
        "PROJECT_ID": "svc_proj_acme",
        "ENDPOINT": "https://analytics.example.com/analytics",
        # CIDRs of the reverse proxies whose X-Forwarded-For is believed
        # (default: loopback and private networks; [] when Django faces the Internet).
        "TRUSTED_PROXIES": ["10.0.0.0/8"],
        "SKIP": ["/admin/", "/static/", "/healthz"],
    }

After each ``GET`` answered with a 2xx HTML page, the middleware records a ``page_view`` with
the visitor's user agent, address and referrer. ``page_view`` does not wait for the network:
one :class:`svc_client.Client` per process sends in batches from a background thread, and is
closed (what is queued is sent) when the process exits. Custom events from views::

    from django_middleware import get_client, visitor
    get_client().sign_up("email", **visitor(request))

This module imports without Django installed (Django is imported when the middleware starts).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from svc_client import Client, create_client
from svc_client.web import DEFAULT_TRUSTED_PROXIES, client_ip, is_page_request

_client: Client | None = None
_lock = threading.Lock()


def _settings() -> Mapping[str, Any]:
    from django.conf import settings

    return getattr(settings, "SVC", {})


def get_client() -> Client:
    """The process's client, created from ``settings.SVC`` on first use."""
    global _client
    with _lock:
        if _client is None:
            conf = _settings()
            _client = create_client(
                api_key=conf["API_KEY"], project_id=conf["PROJECT_ID"], endpoint=conf["ENDPOINT"]
            )
        return _client


def visitor(
    request: Any, trusted_proxies: Sequence[str] = DEFAULT_TRUSTED_PROXIES
) -> dict[str, Any]:
    """The context of a server-side event sent for this request's visitor."""
    meta = request.META
    return {
        "url": request.build_absolute_uri(),
        "referrer": meta.get("HTTP_REFERER"),
        "user_agent": meta.get("HTTP_USER_AGENT"),
        "ip": client_ip(
            meta.get("REMOTE_ADDR"),
            meta.get("HTTP_X_FORWARDED_FOR"),
            trusted_proxies=trusted_proxies,
        ),
    }


class SvcPageViewMiddleware:
    """Records a ``page_view`` for every HTML page Django serves."""

    def __init__(self, get_response: Callable[[Any], Any], client: Client | None = None) -> None:
        self.get_response = get_response
        self.client = client
        conf = _settings() if client is None else {}
        self.trusted_proxies = tuple(conf.get("TRUSTED_PROXIES", DEFAULT_TRUSTED_PROXIES))
        self.skip = tuple(conf.get("SKIP", ("/admin/", "/static/", "/media/")))

    def __call__(self, request: Any) -> Any:
        response = self.get_response(request)
        path = request.path
        if not path.startswith(self.skip) and is_page_request(
            request.method, path, response.status_code, response.get("Content-Type")
        ):
            client = self.client or get_client()
            # A URL the service would refuse (over 2,048 characters) is no page view.
            with contextlib.suppress(ValueError):
                client.page_view(**visitor(request, self.trusted_proxies))
        return response
