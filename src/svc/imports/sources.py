"""Finding what to import and telling its format apart.

Inputs (``auto`` tells them apart by name, extension and header):

- ``ndjson``: svc's own NDJSON export (the columns of GET /export), or events as they are sent
  to POST /analytics, one a line (:mod:`svc.imports.svc_export`);
- ``csv``: svc's own CSV export (same columns);
- ``parquet``: svc's own Parquet export (same columns; told apart by its magic bytes);
- ``ga4``: Google Analytics 4's BigQuery export, NDJSON or Parquet files of its
  ``events_*`` tables (told apart by its columns: :mod:`svc.imports.ga4`);
- ``umami``: Umami's CSV export of ``website_event`` rows (:mod:`svc.imports.umami`);
- ``plausible``: Plausible's CSV export (a zip, a directory or the ``imported_*.csv`` files):
  aggregate tables per day, rebuilt into events by :mod:`svc.imports.plausible`.

A path may be a file, a directory (its ``.csv``, ``.ndjson``, ``.parquet`` and ``.zip``
files), a zip (its ``.csv``, ``.ndjson`` and ``.parquet`` members) or ``-`` (stdin, kept in a
temporary file so that it can be read twice: once to count its rows for a progress bar, once
to import them).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import IO, Any

from svc.imports import plausible
from svc.imports.ga4 import ga4_rows, is_ga4
from svc.imports.plausible import PLAUSIBLE_NAME, PLAUSIBLE_TABLES
from svc.imports.rows import ImportFailed, Item, Refusal, Source
from svc.imports.svc_export import (
    SVC_COLUMNS,
    ndjson_rows,
    parquet_columns,
    parquet_count,
    parquet_rows,
    svc_csv_rows,
)
from svc.imports.umami import UMAMI_COLUMNS, umami_rows

FORMATS = ("auto", "ndjson", "csv", "parquet", "umami", "plausible", "ga4")
#: The file names a directory or a zip is searched for.
SUFFIXES = (".csv", ".ndjson", ".jsonl", ".json", ".parquet")
PARQUET_MAGIC = b"PAR1"


def sources_of(paths: list[str], fmt: str) -> list[Source]:
    """Every source of ``paths`` (``-`` is stdin), each with its kind; :class:`ImportFailed`
    for a path that is missing, not readable, or of no format ``fmt`` allows."""
    out: list[Source] = []
    for raw in paths:
        if raw == "-":
            out.append(_stdin_source())
            continue
        path = Path(raw).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() in (*SUFFIXES, ".zip"))
            if not found:
                raise ImportFailed(f"{path}: no .csv, .ndjson, .parquet or .zip files in it")
            for p in found:
                out += _file_sources(p)
        elif path.is_file():
            out += _file_sources(path)
        elif not path.exists():
            raise ImportFailed(f"{path}: no such file or directory")
        else:
            raise ImportFailed(f"{path}: not a file")
    for s in out:
        s.kind = detect(s, fmt)
    return out


def _stdin_source() -> Source:
    """stdin, kept in a temporary file (in memory up to 64 MiB) so it can be read twice."""
    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 - lives for the run
    shutil.copyfileobj(sys.stdin.buffer, spool)
    size = spool.tell()

    def reopen() -> IO[bytes]:
        spool.seek(0)
        return _Unclosed(spool)  # type: ignore[return-value]

    return Source("<stdin>", reopen, size)


class _Unclosed(io.BufferedIOBase):
    """A view of a file that ``with`` does not close."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def read(self, n: int | None = -1) -> bytes:
        data: bytes = self._f.read(n)
        return data

    def read1(self, n: int = -1) -> bytes:
        data: bytes = self._f.read(n)
        return data

    def readinto(self, buffer: Any) -> int:
        data: bytes = self._f.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, n: int | None = -1) -> bytes:
        data: bytes = self._f.readline(n)
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def __iter__(self) -> Iterator[bytes]:  # type: ignore[override]
        return iter(self._f)


def _file_sources(path: Path) -> list[Source]:
    if path.suffix.lower() == ".zip" or zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ImportFailed(f"{path}: not a readable zip file ({exc})") from exc
        members = sorted(
            (
                i
                for i in archive.infolist()
                if not i.is_dir()
                and Path(i.filename).suffix.lower() in SUFFIXES
                and not Path(i.filename).name.startswith(".")
            ),
            key=lambda i: i.filename,
        )
        if not members:
            raise ImportFailed(f"{path}: the zip holds no .csv, .ndjson or .parquet files")
        return [
            Source(
                f"{path.name}:{m.filename}",
                lambda a=archive, n=m.filename: a.open(n),  # type: ignore[misc]
                m.file_size,
            )
            for m in members
        ]
    return [Source(path.name, lambda p=path: open(p, "rb"), path.stat().st_size)]  # type: ignore[misc]


def _header(source: Source) -> tuple[str, list[str]]:
    """The first line as text, and as CSV column names."""
    with source.open() as f:
        first = f.readline(1 << 20)
    text = first.decode("utf-8-sig", errors="replace").strip()
    try:
        columns = next(csv.reader([text])) if text else []
    except csv.Error:
        columns = []
    return text, [c.strip() for c in columns]


def _is_parquet(source: Source) -> bool:
    with source.open() as f:
        return f.read(4) == PARQUET_MAGIC


def _ga4_line(text: str) -> bool:
    """Whether the first line of an NDJSON file is an event of GA4's BigQuery export."""
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    return isinstance(obj, dict) and is_ga4(set(obj))


def detect(source: Source, fmt: str) -> str:
    """The kind of a source: ``ndjson``, ``csv`` (svc), ``umami`` or ``plausible:<table>``."""
    name = source.label.lower()
    if _is_parquet(source):
        ga4 = is_ga4(parquet_columns(source))
        if fmt == "ga4" or (fmt == "auto" and ga4):
            if not ga4:
                raise ImportFailed(f"{source.label}: not a GA4 BigQuery export (no event_name)")
            return "ga4"
        if fmt in ("auto", "parquet"):
            return "parquet"
        raise ImportFailed(f"{source.label}: a Parquet file, not {fmt}")
    if fmt == "parquet":
        raise ImportFailed(f"{source.label}: not a Parquet file")
    text, columns = _header(source)
    cols = set(columns)
    if fmt == "ga4" or (fmt == "auto" and text.startswith("{") and _ga4_line(text)):
        if not _ga4_line(text):
            raise ImportFailed(
                f"{source.label}: not a GA4 BigQuery export (no event_name, event_timestamp...)"
            )
        return "ga4"
    if fmt == "ndjson" or (fmt == "auto" and text.startswith("{")):
        return "ndjson"
    match = PLAUSIBLE_NAME.search(name)
    plausible_table = match.group(1) if match and match.group(1) in PLAUSIBLE_TABLES else ""
    if not plausible_table:
        for table, needed in PLAUSIBLE_TABLES.items():
            if needed <= cols and (
                not plausible_table or len(needed) > len(PLAUSIBLE_TABLES[plausible_table])
            ):
                plausible_table = table
    if fmt == "plausible":
        if not plausible_table:
            found = ", ".join(columns[:8])
            raise ImportFailed(f"{source.label}: not one of Plausible's tables (columns: {found})")
        return "plausible:" + plausible_table
    if fmt == "umami" or (fmt == "auto" and cols >= UMAMI_COLUMNS):
        if not cols >= UMAMI_COLUMNS:
            raise ImportFailed(
                f"{source.label}: not an Umami export (no url_path and created_at columns)"
            )
        return "umami"
    if fmt == "csv" or (fmt == "auto" and cols >= SVC_COLUMNS):
        if not cols >= SVC_COLUMNS:
            raise ImportFailed(
                f"{source.label}: not an svc CSV export (no ts_ms, event and url columns)"
            )
        return "csv"
    if fmt == "auto" and plausible_table:
        return "plausible:" + plausible_table
    if fmt == "auto" and name.endswith((".ndjson", ".jsonl", ".json")):
        return "ndjson"
    raise ImportFailed(
        f"{source.label}: cannot tell its format (columns: {', '.join(columns[:8]) or 'none'}); "
        "give --format ndjson, csv, parquet, umami, plausible or ga4"
    )


def count_rows(source: Source) -> int:
    """Lines in a source (a progress total: close enough for CSV with quoted newlines)."""
    if _is_parquet(source):
        return parquet_count(source)
    n = 0
    with source.open() as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
    return max(0, n - (0 if source.kind in ("ndjson", "ga4") else 1))


def rows_of(source: Source) -> Iterator[Item]:
    """The rows of one source of events (not of Plausible's tables: :func:`items_of`)."""
    if source.kind == "ndjson":
        return ndjson_rows(source)
    if source.kind == "csv":
        return svc_csv_rows(source)
    if source.kind == "parquet":
        return parquet_rows(source)
    if source.kind == "ga4":
        return ga4_rows(source, parquet=_is_parquet(source))
    if source.kind == "umami":
        return umami_rows(source)
    raise ImportFailed(f"{source.label}: no reader for {source.kind}")


def items_of(sources: list[Source], tz: str) -> tuple[int | None, Iterator[Item]]:
    """Every row of every source, and how many there are (for a progress bar; None when
    counting would mean reading a large stdin twice). Plausible's tables are read first and
    rebuilt per day in the project's time zone ``tz``."""
    plausible_sources = [s for s in sources if s.kind.startswith("plausible:")]
    others = [s for s in sources if not s.kind.startswith("plausible:")]
    total: int | None = 0
    days: dict[date, plausible.Day] = {}
    early: list[Refusal] = []
    if plausible_sources:
        days, early = plausible.read(plausible_sources)
        total = plausible.count(days) + len(early)
    for s in others:
        if s.label == "<stdin>" and s.size > 256 << 20:
            total = None
        elif total is not None:
            total += count_rows(s)

    def items() -> Iterator[Item]:
        yield from early
        if days:
            label = plausible_sources[0].label.split(":", 1)[0]
            yield from plausible.rows(days, tz, label)
        for s in others:
            yield from rows_of(s)

    return total, items()
