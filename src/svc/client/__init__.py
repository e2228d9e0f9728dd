"""The Python client of svc, the cookie-free analytics service: the same API as the TypeScript
package ``svc`` (``clients/js``), in Python style, and the same bytes on the wire.

```python
from svc.client import create_client

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

import httpx

from svc.client._async import AsyncClient
from svc.client._core import (
    GA4_HELPERS,
    VERSION,
    BaseClient,
    ClientStats,
    EventContext,
    Item,
    OnError,
    Properties,
    PropertyValue,
    Timestamp,
)
from svc.client._sync import Client
from svc.client.errors import RejectedEvent, SvcError

__all__ = [
    "GA4_HELPERS",
    "VERSION",
    "AsyncClient",
    "BaseClient",
    "Client",
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
    api_key: str,
    project_id: str,
    endpoint: str,
    flush_interval: float = 2.0,
    max_batch_size: int = 100,
    max_queue_size: int = 10_000,
    timeout: float = 10.0,
    max_retries: int = 5,
    retry_base_delay: float = 0.5,
    retry_max_delay: float = 30.0,
    on_error: OnError | None = None,
    session_id: str | None = None,
    transport: httpx.BaseTransport | None = None,
    http_client: httpx.Client | None = None,
) -> Client:
    """A client for threaded code, sending from a background daemon thread.

    - ``api_key``: ``svc_live_...``; on a server, the project's secret key (required to pass the
      end user's ``user_agent``/``ip``).
    - ``project_id``: ``svc_proj_<name>``. ``endpoint``: the ingestion URL, e.g.
      ``https://analytics.example.com/analytics``.
    - ``flush_interval``: seconds a partial batch waits (0: only full batches and ``flush()``).
    - ``max_batch_size``: events a request, 1-1000. ``max_queue_size``: events kept while
      waiting; past it the oldest are dropped, counted in ``stats().dropped`` and reported.
    - ``timeout``: seconds before a request is abandoned and retried. ``max_retries``,
      ``retry_base_delay``, ``retry_max_delay`` (seconds): the backoff, see ``docs/clients.md``.
    - ``on_error``: called with an :class:`SvcError` for every failure (default: a warning on
      the ``svc.client`` logger). ``session_id``: sent with every event unless a call overrides it.
    - ``transport`` or ``http_client``: the httpx transport or client to send with (tests,
      proxies, custom TLS). A client passed in is not closed by ``close()``.

    Raises ``TypeError``/``ValueError`` for invalid options.
    """
    return Client(
        api_key=api_key,
        project_id=project_id,
        endpoint=endpoint,
        flush_interval=flush_interval,
        max_batch_size=max_batch_size,
        max_queue_size=max_queue_size,
        timeout=timeout,
        max_retries=max_retries,
        retry_base_delay=retry_base_delay,
        retry_max_delay=retry_max_delay,
        on_error=on_error,
        session_id=session_id,
        transport=transport,
        http_client=http_client,
    )


def create_async_client(
    *,
    api_key: str,
    project_id: str,
    endpoint: str,
    flush_interval: float = 2.0,
    max_batch_size: int = 100,
    max_queue_size: int = 10_000,
    timeout: float = 10.0,
    max_retries: int = 5,
    retry_base_delay: float = 0.5,
    retry_max_delay: float = 30.0,
    on_error: OnError | None = None,
    session_id: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> AsyncClient:
    """A client for asyncio apps; the options of :func:`create_client`, with an httpx
    ``AsyncBaseTransport`` or ``AsyncClient`` to send with."""
    return AsyncClient(
        api_key=api_key,
        project_id=project_id,
        endpoint=endpoint,
        flush_interval=flush_interval,
        max_batch_size=max_batch_size,
        max_queue_size=max_queue_size,
        timeout=timeout,
        max_retries=max_retries,
        retry_base_delay=retry_base_delay,
        retry_max_delay=retry_max_delay,
        on_error=on_error,
        session_id=session_id,
        transport=transport,
        http_client=http_client,
    )
