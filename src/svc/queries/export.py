"""Raw export of a project's events for a range: NDJSON, CSV or Parquet, streamed from
ClickHouse in its own output formats (Python never touches a row).

NDJSON and Parquet hold every value exactly as stored. CSV is for spreadsheets, and its
text columns hold what visitors sent (event names, URLs, referrers, UTM values,
properties): a cell that would begin with ``=``, ``+``, ``-``, ``@``, a tab, a carriage
return or a single quote begins with a single quote instead (OWASP's advice on CSV
injection; :func:`svc.queries.sql.csv_cell`), so that no spreadsheet runs it as a formula.
The numeric columns are left as they are."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path

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


#: The format of every piece after the first (the header is written once).
_CONTINUED = {"CSVWithNames": "CSV"}


def export_chunks(
    store: EventStore, project_id: str, rng: DateRange, fmt: str, piece_events: int
) -> Generator[bytes, None, None]:
    """The export in chunks. A ClickHouse server streams the result of one query. The
    embedded store answers a query in one piece, so NDJSON and CSV are read in pieces of
    whole UTC hours with at most about ``piece_events`` events (an hour with more is a piece
    of its own): the memory an export takes stays bounded and the store serves other work
    between pieces. A Parquet file cannot be cut: the store writes it to a file in the data
    directory (~30 bytes an event), which is then sent and deleted."""
    ch_format = export_format(fmt)[0]
    # CSV: the properties as JSON text, and every text cell neutralised for spreadsheets
    csv = ch_format.startswith("CSV")
    if store.streams_results:
        stmt = sql.export_events(project_id, rng, csv=csv)
        yield from store.stream_raw(stmt.sql, stmt.params, ch_format)
        return
    if ch_format == "Parquet":
        yield from _parquet_through_a_file(store, sql.export_events(project_id, rng))
        return
    hours = store.query(*_statement(sql.export_hours(project_id, rng)))
    windows = plan_windows(
        [(datetime.fromtimestamp(int(h), UTC).replace(tzinfo=None), int(n)) for h, n in hours],
        rng.start_utc.replace(tzinfo=None),
        rng.end_utc.replace(tzinfo=None),
        piece_events,
    )
    for i, window in enumerate(windows or [None]):  # none: the header (CSV) alone
        stmt = sql.export_events(project_id, rng, window, csv=csv)
        piece_format = ch_format if i == 0 else _CONTINUED.get(ch_format, ch_format)
        piece = store.raw_query(stmt.sql, stmt.params, piece_format)
        if store.settings.store_memory_release_seconds:  # 0: never
            # what formatting the piece took, before the next one: a lower peak for a longer
            # export (docs/benchmarks.md, Figures behind the code)
            with contextlib.suppress(Exception):  # only memory: never fail an export for it
                store.release_memory()
        yield piece


def plan_windows(
    hours: list[tuple[datetime, int]], start: datetime, end: datetime, piece_events: int
) -> list[tuple[datetime, datetime]]:
    """Cut [start, end) at hour starts into consecutive windows of at most ``piece_events``
    events each, given the events per hour (hour start, count; oldest first, within the
    range); an hour with more events is a window of its own. No windows without events."""
    windows: list[tuple[datetime, datetime]] = []
    window_start, in_window = start, 0
    for hour, count in hours:
        if in_window and in_window + count > piece_events:
            windows.append((window_start, hour))
            window_start, in_window = hour, 0
        in_window += count
    if in_window:
        windows.append((window_start, end))
    return windows


#: Bytes read from a written Parquet file at a time.
_FILE_CHUNK = 1 << 20
#: Files of exports older than this are deleted by the next Parquet export (a process killed
#: while sending one leaves its file behind).
_STALE_AFTER_S = 86_400


def _parquet_through_a_file(store: EventStore, stmt: sql.Statement) -> Iterator[bytes]:
    directory = store.settings.export_dir
    directory.mkdir(parents=True, exist_ok=True)
    _delete_stale(directory)
    path = directory / f"export-{uuid.uuid4().hex}.parquet"
    try:
        written = sql.into_parquet_file(stmt, str(path.resolve()))
        store.export_command(written.sql, written.params)
        with path.open("rb") as file:
            while chunk := file.read(_FILE_CHUNK):
                yield chunk
    finally:
        path.unlink(missing_ok=True)


def _delete_stale(directory: Path) -> None:
    cutoff = time.time() - _STALE_AFTER_S
    for old in directory.glob("export-*.parquet"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < cutoff:
                old.unlink()


def _statement(stmt: sql.Statement) -> tuple[str, dict[str, object]]:
    return stmt.sql, stmt.params
