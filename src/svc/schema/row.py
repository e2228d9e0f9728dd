"""The event as it is stored: one row of the ``events`` table (storage/migrations), as the
ingestion pipeline and the imports build it and the spool writes it (JSONEachRow)."""

from __future__ import annotations

import msgspec


class EventRow(msgspec.Struct, array_like=False, gc=False, omit_defaults=True):
    """One row of the events table as the spool writes it (JSONEachRow).

    ``ts``, ``received_at`` and ``session_start`` are seconds with three decimals, as text,
    which ClickHouse reads into ``DateTime64(3)`` exactly. ``session_start`` is the time of
    the first event ingestion saw in the session (the sessions table is keyed by its day);
    left empty, the column's default (``ts``) applies.

    The ingestion pipeline builds it positionally (``EventDraft.to_row``), in this order.
    """

    project_id: str
    ts: str
    received_at: str
    event_id: str
    name: str
    session_id: int
    visitor_id: int
    hostname: str
    path: str
    url: str
    referrer: str
    referrer_host: str
    source: str
    channel: str
    utm_source: str
    utm_medium: str
    utm_campaign: str
    utm_content: str
    utm_term: str
    click_id: str
    properties: dict[str, str]
    browser: str
    browser_version: str
    os: str
    os_version: str
    device: str
    screen_width: int
    country: str
    region: str
    city: str
    session_start: str = ""


#: Columns of a stored event row, in the order the spool writes them.
EVENT_COLUMNS: tuple[str, ...] = EventRow.__struct_fields__
