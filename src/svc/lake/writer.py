"""Write one project's UTC day to the lake: ``project=<id>/day=<YYYY-MM-DD>/events.parquet``
and then its ``manifest.json``.

The file holds the day's events received before the writer's watermark ``through``, in the
columns of GET /export (the same statement, written by the store's own Parquet writer, as
GET /export?format=parquet is), in a total order (:data:`svc.queries.sql.lake.LAKE_ORDER`):
the same events give the same bytes (measured: three writes of a 1M-event day, one SHA-256),
for the same svc and store version (the file names its writer: ``created_by``). On a
ClickHouse server (``SVC_CLICKHOUSE_URL``) the server's Parquet answer is streamed into the
file, as GET /export streams it (not tested here: no server on this machine).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from svc import __version__
from svc.lake.places import Place
from svc.queries import sql
from svc.queries.sql import lake as lake_sql
from svc.storage.events import EventStore

#: The version of the files' columns and of the manifest; raised when either changes.
SCHEMA_VERSION = 1
FILE = "events.parquet"
MANIFEST = "manifest.json"
#: The files' columns (GET /export's), in order.
COLUMNS = [c.strip().rsplit(" AS ", 1)[-1] for c in sql.EXPORT_COLUMNS.split(",")]


def day_prefix(project_id: str, day: date) -> str:
    return f"project={project_id}/day={day.isoformat()}/"


def naive(ms: int) -> datetime:
    """Milliseconds since the epoch as the naive UTC datetime the store binds."""
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def iso(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def read_manifest(place: Place, project_id: str, day: date) -> dict[str, Any] | None:
    """The day's manifest in the lake, if it has one svc can read."""
    data = place.get_bytes(day_prefix(project_id, day) + MANIFEST)
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("schemaVersion") == SCHEMA_VERSION else None


def write_day(
    store: EventStore, place: Place, project_id: str, day: date, through_ms: int, work_dir: Path
) -> dict[str, Any] | None:
    """Write the day's file and manifest (the manifest last); the manifest, or None when the
    day has no events received before ``through_ms`` (nothing is written then)."""
    through = naive(through_ms)
    summary = lake_sql.lake_day_summary(project_id, day, through)
    rows, first_ts, last_ts, newest = store.query(summary.sql, summary.params)[0]
    if not int(rows):
        return None
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / f"lake-{uuid.uuid4().hex}.parquet"
    try:
        events = lake_sql.lake_day_events(project_id, day, through)
        if store.streams_results:  # a ClickHouse server: its Parquet answer, streamed
            with path.open("wb") as file:
                for chunk in store.stream_raw(events.sql, events.params, "Parquet"):
                    file.write(chunk)
        else:  # the embedded store writes the file itself, as GET /export's Parquet does
            stmt = sql.into_parquet_file(events, str(path.resolve()))
            store.export_command(stmt.sql, stmt.params)
        digest, size = _sha256(path)
        prefix = day_prefix(project_id, day)
        place.put_file(prefix + FILE, path)
    finally:
        path.unlink(missing_ok=True)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    manifest = {
        "schemaVersion": SCHEMA_VERSION,
        "project": project_id,
        "day": day.isoformat(),
        "file": FILE,
        "format": "parquet",
        "columns": COLUMNS,
        "rows": int(rows),
        "bytes": size,
        "sha256": digest,
        "timeRange": {  # the day, and the events' own first and last times
            "from": iso(int(start.timestamp() * 1000)),
            "to": iso(int(start.timestamp() * 1000) + 86_400_000),
            "firstEvent": iso(int(first_ts)),
            "lastEvent": iso(int(last_ts)),
        },
        # every event of the day received before this is in the file, none after it
        "receivedThrough": iso(through_ms),
        "receivedThroughMs": through_ms,
        "newestReceivedMs": int(newest),
        "writtenAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "writer": f"svc {__version__}",
    }
    data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    place.put_bytes(prefix + MANIFEST, data)
    return manifest


def _sha256(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size
