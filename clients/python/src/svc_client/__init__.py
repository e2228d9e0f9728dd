"""The Python client of svc, the cookie-free analytics service: the same API as the TypeScript
package ``svc`` (``clients/js``), in Python style, and the same bytes on the wire.

```python
from svc_client import create_client

with create_client(
    api_key="svc_live_...",  # the project's secret key on a server
    project_id="svc_proj_acme",
    endpoint="https://analytics.example.com/analytics",
) as svc:
    svc.track("signup", {"plan": "pro"})
    svc.page_view("/pricing")
    svc.purchase("T1", 30, "EUR", [{"item_id": "sku1", "price": 10, "quantity": 3}])
```

For asyncio apps, :func:`create_async_client` returns an :class:`AsyncClient` (``await
client.flush()``, ``await client.aclose()``, ``async with``). Documentation: ``docs/clients.md``.
"""

from __future__ import annotations

from typing import Unpack

import httpx

from svc_client._async import AsyncClient
from svc_client._core import VERSION, BaseClient, ClientStats
from svc_client._ga4 import GA4_HELPERS
from svc_client._sync import Client
from svc_client._types import (
    ClientOptions,
    EventContext,
    Item,
    OnError,
    Properties,
    PropertyValue,
    Timestamp,
)
from svc_client.errors import RejectedEvent, SvcError

__all__ = [
    "GA4_HELPERS",
    "VERSION",
    "AsyncClient",
    "BaseClient",
    "Client",
    "ClientOptions",
    "ClientStats",
    "EventContext",
    "Item",
    "OnError",
    "Properties",
    "PropertyValue",
    "RejectedEvent",
    "SvcError",
    "Timestamp",
    "create_async_client",
    "create_client",
]


def create_client(
    *,
    transport: httpx.BaseTransport | None = None,
    http_client: httpx.Client | None = None,
    **options: Unpack[ClientOptions],
) -> Client:
    """A client for threaded code, sending from a background daemon thread.

    - ``api_key``: ``svc_live_...``; on a server, the project's secret key (required to pass the
      end user's ``user_agent``/``ip``).
    - ``project_id``: ``svc_proj_<name>``. ``endpoint``: the ingestion URL, e.g.
      ``https://analytics.example.com/analytics``.
    - ``flush_interval``: seconds a partial batch waits (0: only full batches and ``flush()``;
      default 2.0).
    - ``max_batch_size``: events a request, 1-1000 (default 100). ``max_queue_size``: events
      kept while waiting (default 10,000); past it the oldest are dropped, counted in
      ``stats().dropped`` and reported.
    - ``timeout``: seconds before a request is abandoned and retried (default 10.0).
      ``max_retries`` (5), ``retry_base_delay`` (0.5 s), ``retry_max_delay`` (30.0 s): the
      backoff, see ``docs/clients.md``.
    - ``on_error``: called with an :class:`SvcError` for every failure (default: a warning on
      the ``svc_client`` logger). ``session_id``: sent with every event unless a call overrides it.
    - ``transport`` or ``http_client``: the httpx transport or client to send with (tests,
      proxies, custom TLS). A client passed in is not closed by ``close()``.

    Raises ``TypeError``/``ValueError`` for invalid options.
    """
    return Client(transport=transport, http_client=http_client, **options)


def create_async_client(
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    http_client: httpx.AsyncClient | None = None,
    **options: Unpack[ClientOptions],
) -> AsyncClient:
    """A client for asyncio apps; the options of :func:`create_client`, with an httpx
    ``AsyncBaseTransport`` or ``AsyncClient`` to send with."""
    return AsyncClient(transport=transport, http_client=http_client, **options)
