"""Raw export of a project's events for a range: NDJSON, CSV or Parquet, streamed from
ClickHouse in its own output formats (Python never touches a row)."""

from __future__ import annotations

from collections.abc import Iterator

from svc.errors import InvalidRequest
from svc.queries import sql
from svc.queries.dates import DateRange
from svc.storage.events import EventStore

FORMATS = {
    "ndjson": ("JSONEachRow", "application/x-ndjson"),
    "csv": ("CSVWithNames", "text/csv; charset=utf-8"),
    "parquet": ("Parquet", "application/vnd.apache.parquet"),
}


def export_format(name: str) -> tuple[str, str]:
    """(ClickHouse format, media type) of an export format name; 400 for an unknown one."""
    try:
        return FORMATS[name]
    except KeyError:
        raise InvalidRequest(
            f"`format` must be one of {', '.join(FORMATS)}", field="format"
        ) from None


def export_chunks(store: EventStore, project_id: str, rng: DateRange, fmt: str) -> Iterator[bytes]:
    stmt = sql.export_events(project_id, rng)
    yield from store.stream_raw(stmt.sql, stmt.params, export_format(fmt)[0])
