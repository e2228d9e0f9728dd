"""The state the nodes of one ClickHouse server share in Redis, as the runtime holds it
(svc.cluster.shared): ingestion's event ids and sessions, signed edge requests served, and the
count of every node's writes that the store's read memo keys rows on. Built by the runtime
when both a ClickHouse server and ``SVC_REDIS_URL`` are set; redis-py is imported only then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from svc.ingestion.service import IngestService
from svc.settings import Settings
from svc.spool.log import read_segment
from svc.storage.events import EventStore
from svc.timeutil import now_ms


class SharedState:
    """Ingestion's state and the memo's generation in Redis, shared by the nodes of one
    ClickHouse server (svc.cluster.shared); redis-py is imported only then."""

    def __init__(self, settings: Settings, ingest: IngestService, store: EventStore) -> None:
        from svc.cluster.shared import Link, SharedGeneration, SharedIdentity, SharedReplays
        from svc.ingestion.identity import CLIENT_SESSION_MEMORY_MS

        self.link = Link(settings.redis_url)
        ingest.shared = SharedIdentity(
            self.link,
            ingest.pipeline.sessions.timeout_ms,
            ingest.pipeline.event_ids.window_ms,
            CLIENT_SESSION_MEMORY_MS,
            int(settings.event_id_pending_seconds * 1000),
        )
        self.replays = SharedReplays(self.link)
        generation = SharedGeneration(self.link)
        store.shared_generation = generation
        store.memo.entries = settings.read_memo_entries  # keyed on the shared generation too
        self.identity = ingest.shared

    def confirm_spooled(self, paths: list[Path]) -> None:
        """Mark the event ids of the spool's segments stored in Redis (blocking)."""
        decoder = msgspec.json.Decoder(_IdRow)
        rows: list[tuple[str, str, int]] = []
        for path in paths:
            for line in read_segment(path).payload().splitlines():
                try:
                    row = decoder.decode(line)
                    if row.event_id:
                        rows.append((row.project_id, row.event_id, ms_of(row.received_at)))
                except (msgspec.DecodeError, ValueError):
                    continue
        if rows:
            self.identity.confirm_stored(rows, now_ms())

    def status(self) -> dict[str, Any]:
        """For /health: Redis as the shared state sees it, and what went through it."""
        return {
            **self.link.status(),
            "identifyCalls": self.identity.calls,
            "identifiedEvents": self.identity.events,
        }


class _IdRow(msgspec.Struct):
    """The fields of a spooled row that name its event id."""

    project_id: str
    received_at: str
    event_id: str = ""


def ms_of(value: str) -> int:
    """Milliseconds of a spooled ClickHouse time (``seconds.millis``)."""
    seconds, _, frac = value.partition(".")
    return int(seconds) * 1000 + int((frac + "000")[:3])
