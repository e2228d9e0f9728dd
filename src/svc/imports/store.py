"""The server-side import path: history straight into a data directory's event store.

Rows become event rows through :class:`svc.imports.historical.HistoricalPipeline` and are
inserted in chunks of up to 1,000, each with a deterministic insert deduplication token; the
rows whose ``eventId`` is stored already are skipped first. History of any age is taken. The
rows carry their session's start as ingested rows do (svc.imports.historical), so the
materialized views write the sessions as for ingested events; at the end the project's daily
rollups are redone.
"""

from __future__ import annotations

import hashlib

import msgspec

from svc.imports.historical import HistoricalPipeline
from svc.imports.rows import ImportFailed
from svc.imports.run import Checked, Summary
from svc.ingestion.outcomes import DropReason
from svc.meta.store import Project
from svc.queries.transfer import stored_event_ids
from svc.schema.row import EventRow
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups


class StoreSink:
    """Writes imported events into the event store (no service may run on it)."""

    def __init__(self, store: EventStore, project: Project) -> None:
        self.store = store
        self.project = project
        self.pipeline = HistoricalPipeline(project)

    def stored(self, batch: list[Checked]) -> set[str]:
        ids = [c.row.event_id for c in batch if c.row.event_id]
        if not ids:
            return set()
        lo = min(c.row.ts_ms for c in batch)
        hi = max(c.row.ts_ms for c in batch)
        stmt = stored_event_ids(self.project.id, lo, hi, ids)
        return {str(r[0]) for r in self.store.query(stmt.sql, stmt.params)}

    def write(self, batch: list[Checked], summary: Summary) -> None:
        rows: list[EventRow] = []
        for c in batch:
            made = self.pipeline.row(c)
            if isinstance(made, DropReason):
                summary.dropped += 1
            else:
                rows.append(made)
        if not rows:
            return
        data = b"\n".join(msgspec.json.encode(r) for r in rows) + b"\n"
        token = (
            "svcm-import-"
            + hashlib.blake2b(
                (self.project.id + "\x00" + "\x00".join(c.row.event_id for c in batch)).encode(),
                digest_size=16,
            ).hexdigest()
        )
        try:
            self.store.insert_ndjson(data, token)
        except Exception as exc:
            raise ImportFailed(
                f"the event store refused a chunk ({type(exc).__name__}: {str(exc)[:200]}); "
                "run the same command again to go on (what is stored already is skipped)"
            ) from exc
        summary.imported += len(rows)

    def finish(self) -> None:
        """Let the project's daily rollups be redone (they may hold days the import
        changed)."""
        Rollups(self.store).forget(self.project.id)
