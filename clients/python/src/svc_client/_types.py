"""The types of the public API: property values, items, timestamps, options, call context."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Required, TypeAlias, TypedDict

from svc_client.errors import SvcError

PropertyValue: TypeAlias = str | int | float | bool | Decimal | None
"""A property value as the service stores it: a flat JSON scalar."""
Item: TypeAlias = Mapping[str, PropertyValue]
"""A GA4 item: ``item_id`` and/or ``item_name``, ``price``, ``quantity``, and any flat field."""
Properties: TypeAlias = Mapping[str, PropertyValue | Sequence[Item]]
"""Custom event properties: at most 50 flat values; ``items`` may be a list of items."""
Timestamp: TypeAlias = datetime | int | float
"""When an event happened: a ``datetime`` or milliseconds since the epoch."""
OnError: TypeAlias = Callable[[SvcError], object]
"""What ``on_error`` is: called with every delivery failure."""


class ClientOptions(TypedDict, total=False):
    """The options of :func:`create_client` and :func:`create_async_client` (the TypeScript
    ``ClientOptions``), with their defaults and checks in :class:`BaseClient`."""

    api_key: Required[str]
    project_id: Required[str]
    endpoint: Required[str]
    flush_interval: float
    max_batch_size: int
    max_queue_size: int
    timeout: float
    max_retries: int
    retry_base_delay: float
    retry_max_delay: float
    on_error: OnError | None
    session_id: str | None


class EventContext(TypedDict, total=False):
    """Per-call context of the GA4 helpers (the same keywords as :meth:`Client.track`)."""

    url: str
    referrer: str | None
    session_id: str | None
    user_agent: str | None
    ip: str | None
    timestamp: Timestamp
    event_id: str
