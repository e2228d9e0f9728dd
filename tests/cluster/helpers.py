"""Scaffolding of the several-nodes tests: one node's ingestion path with its own spool."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from svc.cluster.shared import SharedIdentity
from svc.ingestion.identity import Salts
from svc.ingestion.pipeline import RequestContext
from svc.ingestion.service import IngestService
from svc.meta.store import Project
from svc.settings import Settings
from svc.spool.log import Spool, read_segment

PROJECT = Project("svc_proj_nodes", "nodes", "UTC", ("nodes.test",), "free")
MIDNIGHT = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
START_MS = int((MIDNIGHT - timedelta(hours=1)).timestamp() * 1000)  # 23:00 yesterday
MINUTE = 60_000


def salts(days: list[str]) -> dict[str, bytes]:
    return {d: hashlib.sha256(d.encode()).digest()[:16] for d in days}


class Node:
    """One node's ingestion path: the service, its pipeline and its own spool."""

    def __init__(self, root: Path, shared: SharedIdentity | None) -> None:
        settings = Settings(data_dir=root)
        self.spool = Spool(root / "spool", segment_bytes=1 << 22, flush_interval_ms=1, fsync=False)
        self.spool.recover()
        self.service = IngestService.build(settings, self.spool, Salts(salts))
        self.service.shared = shared

    async def send(self, addr: str, ua: str, received_ms: int, events: list[Any]) -> None:
        ctx = RequestContext(PROJECT, "public", addr, ua, None, received_ms)
        body = msgspec.json.encode(events if len(events) > 1 else events[0])
        await self.service.ingest(ctx, body)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.spool.directory.glob("*")):
            for line in read_segment(path).payload().splitlines():
                out.append(msgspec.json.decode(line))
        return out

    def payload(self) -> bytes:
        """Every row spooled, as the loader would insert them (JSONEachRow)."""
        return b"".join(
            read_segment(path).payload() for path in sorted(self.spool.directory.glob("*"))
        )
