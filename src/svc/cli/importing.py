"""Reading exports for ``svcm import`` and turning their rows into svc events.

Inputs (``--format auto`` tells them apart by name, extension and header):

- ``ndjson``: svc's own NDJSON export (the columns of ``EXPORT_COLUMNS``), or events as they
  are sent to POST /analytics (``event``, ``url``, ``ts`` in ms or ISO 8601, ...), one a line;
- ``csv``: svc's own CSV export (same columns; ``properties`` as ClickHouse map text);
- ``umami``: Umami's CSV export of ``website_event`` rows (``event_type`` 1 page view, 2 event);
- ``plausible``: Plausible's CSV export (a zip, a directory or the ``imported_*.csv`` files):
  aggregate tables per day, rebuilt into events by :mod:`svc.cli.plausible`.

Every row gets a deterministic ``eventId``: its own (svc exports), Umami's ``event_id``, or a
hash of what identifies it in the source, so the same file imported again is recognised and
skipped. Each row is validated as POST /analytics validates an event; a row that fails is
refused with the reason.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from svc.cli.errors import CliError, UsageError

FORMATS = ("auto", "ndjson", "csv", "umami", "plausible")
MIN_TS_MS = 946_684_800_000  # 2000-01-01
FUTURE_MS = 5 * 60 * 1000
HTTP_MAX_AGE_MS = 7 * 24 * 3600 * 1000
ENRICHED = ("browser", "browser_version", "os", "os_version", "device", "country", "region", "city")
SVC_COLUMNS = frozenset(("ts_ms", "event", "url"))


@dataclass(slots=True)
class Row:
    """One event read from a source."""

    where: str
    name: str
    url: str
    ts_ms: int
    event_id: str = ""
    referrer: str = ""
    session: str = ""  # the source's session identity
    visitor: str = ""  # the source's visitor identity
    properties: dict[str, Any] = field(default_factory=dict)
    screen: int = 0
    fields: dict[str, str] = field(default_factory=dict)  # browser, os, device, country, ...
    stored: dict[str, Any] | None = None  # every column of an svc export (kept as it is)
    received_ms: int = 0
    source_hint: str = ""  # a source name without referrer (Plausible's "Google")


@dataclass(slots=True)
class Refusal:
    where: str
    reason: str


Item = Row | Refusal


@dataclass
class Source:
    """One file (or zip member, or stdin) to read."""

    label: str
    open: Callable[[], IO[bytes]]
    size: int
    kind: str = ""  # ndjson, csv, umami, plausible:<table>


def event_id_of(*parts: str) -> str:
    digest = hashlib.blake2b(
        "\x1f".join(parts).encode(), digest_size=16, person=b"svcm-import"
    ).hexdigest()
    return "imp_" + digest


# finding the sources ---------------------------------------------------------------------------


def sources_of(paths: list[str], fmt: str) -> list[Source]:
    out: list[Source] = []
    for raw in paths:
        if raw == "-":
            out.append(_stdin_source())
            continue
        path = Path(raw).expanduser()
        if path.is_dir():
            found = sorted(
                p
                for p in path.iterdir()
                if p.suffix.lower() in (".csv", ".ndjson", ".jsonl", ".json", ".zip")
            )
            if not found:
                raise CliError(f"{path}: no .csv, .ndjson or .zip files in it")
            for p in found:
                out += _file_sources(p)
        elif path.is_file():
            out += _file_sources(path)
        elif not path.exists():
            raise CliError(f"{path}: no such file or directory")
        else:
            raise CliError(f"{path}: not a file")
    for s in out:
        s.kind = detect(s, fmt)
    return out


def _stdin_source() -> Source:
    """stdin, kept in a temporary file (in memory up to 64 MiB) so it can be read twice."""
    import shutil
    import tempfile

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
            raise CliError(f"{path}: not a readable zip file ({exc})") from exc
        members = sorted(
            (
                i
                for i in archive.infolist()
                if not i.is_dir()
                and Path(i.filename).suffix.lower() in (".csv", ".ndjson", ".jsonl")
                and not Path(i.filename).name.startswith(".")
            ),
            key=lambda i: i.filename,
        )
        if not members:
            raise CliError(f"{path}: the zip holds no .csv or .ndjson files")
        return [
            Source(
                f"{path.name}:{m.filename}",
                lambda a=archive, n=m.filename: a.open(n),  # type: ignore[misc]
                m.file_size,
            )
            for m in members
        ]
    return [Source(path.name, lambda p=path: open(p, "rb"), path.stat().st_size)]  # type: ignore[misc]


PLAUSIBLE_NAME = re.compile(r"(?:^|/)imported_([a-z_]+?)(?:_\d{8}_\d{8})?\.csv$")
PLAUSIBLE_TABLES = {
    "visitors": {"date", "visitors", "pageviews", "bounces", "visits", "visit_duration"},
    "pages": {"date", "hostname", "page", "visitors", "pageviews"},
    "entry_pages": {"date", "entry_page", "entrances"},
    "exit_pages": {"date", "exit_page", "exits"},
    "sources": {"date", "source", "visits"},
    "locations": {"date", "country", "region", "city", "visits"},
    "devices": {"date", "device", "visits"},
    "browsers": {"date", "browser", "visits"},
    "operating_systems": {"date", "operating_system", "visits"},
    "custom_events": {"date", "name", "events"},
}


def _header(source: Source) -> tuple[str, list[str]]:
    """The first line as text, and as CSV column names."""
    with source.open() as f:
        first = _peek_line(f)
    text = first.decode("utf-8-sig", errors="replace").strip()
    try:
        columns = next(csv.reader([text])) if text else []
    except csv.Error:
        columns = []
    return text, [c.strip() for c in columns]


def _peek_line(f: IO[bytes]) -> bytes:
    return f.readline(1 << 20)


def detect(source: Source, fmt: str) -> str:
    """The kind of a source: ``ndjson``, ``csv`` (svc), ``umami`` or ``plausible:<table>``."""
    name = source.label.lower()
    text, columns = _header(source)
    cols = set(columns)
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
            raise CliError(f"{source.label}: not one of Plausible's tables (columns: {found})")
        return "plausible:" + plausible_table
    if fmt == "umami" or (fmt == "auto" and {"url_path", "created_at"} <= cols):
        if not {"url_path", "created_at"} <= cols:
            raise CliError(
                f"{source.label}: not an Umami export (no url_path and created_at columns)"
            )
        return "umami"
    if fmt == "csv" or (fmt == "auto" and cols >= SVC_COLUMNS):
        if not cols >= SVC_COLUMNS:
            raise CliError(
                f"{source.label}: not an svc CSV export (no ts_ms, event and url columns)"
            )
        return "csv"
    if fmt == "auto" and plausible_table:
        return "plausible:" + plausible_table
    if fmt == "auto" and name.endswith((".ndjson", ".jsonl", ".json")):
        return "ndjson"
    raise CliError(
        f"{source.label}: cannot tell its format (columns: {', '.join(columns[:8]) or 'none'}); "
        "give --format ndjson, csv, umami or plausible"
    )


def count_rows(source: Source) -> int:
    """Lines in a source (a progress total: close enough for CSV with quoted newlines)."""
    n = 0
    with source.open() as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
    return max(0, n - (0 if source.kind == "ndjson" else 1))


def _text_lines(f: IO[bytes]) -> io.TextIOWrapper:
    return io.TextIOWrapper(f, encoding="utf-8-sig", errors="strict", newline="")


# times -----------------------------------------------------------------------------------------


def parse_time(value: Any) -> int:
    """Milliseconds since the epoch from ms (int), seconds (float < 1e11) or ISO 8601 text."""
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError("no time")
    if isinstance(value, int | float):
        ms = int(value if value > 1e11 else value * 1000)
        return ms
    text = str(value).strip()
    if re.fullmatch(r"\d{10,13}(\.\d+)?", text):
        return parse_time(float(text))
    text = text.replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # exports are in UTC
    return int(parsed.timestamp() * 1000)


# svc's own exports -----------------------------------------------------------------------------


def _svc_row(where: str, obj: dict[str, Any], raw_identity: str) -> Row:
    ts = parse_time(obj.get("ts_ms"))
    props = obj.get("properties") or {}
    if isinstance(props, str):
        props = parse_ch_map(props)
    if not isinstance(props, dict):
        raise ValueError("`properties` is not an object")
    stored = {k: obj.get(k) for k in STORED_COLUMNS}
    event_id = str(obj.get("event_id") or "") or raw_identity
    return Row(
        where=where,
        name=str(obj.get("event") or ""),
        url=str(obj.get("url") or ""),
        ts_ms=ts,
        event_id=event_id,
        referrer=str(obj.get("referrer") or ""),
        session=str(obj.get("session_id") or ""),
        visitor=str(obj.get("visitor_id") or ""),
        properties={str(k): v for k, v in props.items()},
        screen=_int(obj.get("screen_width")),
        fields={k: str(obj.get(k) or "") for k in ENRICHED},
        stored=stored,
        received_ms=_int(obj.get("received_ms")),
    )


STORED_COLUMNS = (
    "hostname",
    "path",
    "referrer_host",
    "source",
    "channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "click_id",
    "session_id",
    "visitor_id",
)


def svc_identity(obj: dict[str, Any]) -> str:
    """What identifies a row of an svc export, the same in its NDJSON and CSV forms."""
    keys = ("ts_ms", "event", "url", "session_id", "visitor_id", "received_ms", "referrer")
    return "svc\x1f" + "\x1f".join(str(obj.get(k) or "") for k in keys)


def _wire_row(where: str, obj: dict[str, Any], raw_identity: str) -> Row:
    """An event as POST /analytics takes it."""
    ts = parse_time(obj.get("ts")) if obj.get("ts") is not None else 0
    props = obj.get("properties") or {}
    if not isinstance(props, dict):
        raise ValueError("`properties` is not an object")
    session = str(obj.get("sessionId") or "")
    return Row(
        where=where,
        name=str(obj.get("event") or ""),
        url=str(obj.get("url") or ""),
        ts_ms=ts,
        event_id=str(obj.get("eventId") or "") or raw_identity,
        referrer=str(obj.get("referrer") or ""),
        session=session,
        visitor=session,
        properties=props,
        screen=_int(obj.get("screen")),
    )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class _Occurrences:
    """Identity of rows without an id of their own: a hash of their content and how many
    identical rows came before it with the same time (identical rows are neighbours in a
    time-ordered export; the memory stays that of one instant)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.ts: Any = None
        self.counts: dict[str, int] = {}

    def identity(self, ts: Any, content: str) -> str:
        if ts != self.ts:
            self.ts, self.counts = ts, {}
        n = self.counts.get(content, 0)
        self.counts[content] = n + 1
        return event_id_of(self.namespace, content, str(n))


def ndjson_rows(source: Source) -> Iterator[Item]:
    occ = _Occurrences("svc")
    with source.open() as f:
        for number, line in enumerate(f, 1):
            where = f"{source.label}:{number}"
            try:
                text = line.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            except UnicodeDecodeError:
                yield Refusal(where, "not UTF-8 text")
                continue
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield Refusal(where, f"not valid JSON: {exc.msg}")
                continue
            if not isinstance(obj, dict):
                yield Refusal(where, "not a JSON object")
                continue
            try:
                ts = obj.get("ts_ms", obj.get("ts"))
                identity = occ.identity(ts, svc_identity(obj) if "ts_ms" in obj else text)
                if "ts_ms" in obj:
                    yield _svc_row(where, obj, identity)
                else:
                    yield _wire_row(where, obj, identity)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, _reason(exc))


def svc_csv_rows(source: Source) -> Iterator[Item]:
    occ = _Occurrences("svc")
    with source.open() as raw:
        reader = csv.DictReader(_text_lines(raw))
        for number, rec in enumerate(reader, 2):
            where = f"{source.label}:{number}"
            try:
                identity = occ.identity(rec.get("ts_ms"), svc_identity(rec))
                yield _svc_row(where, dict(rec), identity)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, _reason(exc))


def _reason(exc: Exception) -> str:
    text = str(exc)
    if "isoformat" in text or "Invalid isoformat" in text or text == "no time":
        return "no readable time (ts_ms, ts or created_at)"
    return text


def parse_ch_map(text: str) -> dict[str, str]:
    """ClickHouse's text form of a Map(String, String): ``{'k':'v','k2':'v2'}``."""
    text = text.strip()
    if not text or text == "{}":
        return {}
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError("`properties` is not a map")
    out: dict[str, str] = {}
    i, n = 1, len(text) - 1
    items: list[str] = []
    while i < n:
        ch = text[i]
        if ch in ", :":
            i += 1
            continue
        if ch != "'":
            raise ValueError("`properties` is not a map")
        value, i = _ch_string(text, i + 1)
        items.append(value)
    if len(items) % 2:
        raise ValueError("`properties` is not a map")
    for k in range(0, len(items), 2):
        out[items[k]] = items[k + 1]
    return out


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "\\": "\\", "'": "'"}


def _ch_string(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if ch == "'":
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise ValueError("`properties` is not a map")


# Umami -----------------------------------------------------------------------------------------

UMAMI_BROWSERS = {
    "chrome": "Chrome",
    "crios": "Chrome",
    "chromium-webview": "Chrome WebView",
    "firefox": "Firefox",
    "fxios": "Firefox",
    "safari": "Safari",
    "ios": "Safari",
    "ios-webview": "Safari WebView",
    "edge-chromium": "Edge",
    "edge": "Edge",
    "edge-ios": "Edge",
    "opera": "Opera",
    "opera-mini": "Opera Mini",
    "samsung": "Samsung Internet",
    "yandexbrowser": "Yandex Browser",
    "facebook": "Facebook",
    "instagram": "Instagram",
    "android": "Android",
    "silk": "Amazon Silk",
    "brave": "Brave",
    "ie": "IE",
}
UMAMI_OS = {
    "mac os": "macOS",
    "os x": "macOS",
    "ios": "iOS",
    "android os": "Android",
    "linux": "Linux",
    "chrome os": "Chrome OS",
    "windows mobile": "Windows Phone",
}


def _umami_os(value: str) -> tuple[str, str]:
    low = value.strip().lower()
    if low.startswith("windows") and low not in UMAMI_OS:
        version = value.strip()[len("windows") :].strip()
        return "Windows", version
    return UMAMI_OS.get(low, value.strip()), ""


def _device(value: str) -> str:
    low = value.strip().lower()
    return {"laptop": "desktop", "desktop": "desktop", "mobile": "mobile", "tablet": "tablet"}.get(
        low, low
    )


def umami_rows(source: Source) -> Iterator[Item]:
    occ = _Occurrences("umami")
    with source.open() as raw:
        reader = csv.DictReader(_text_lines(raw))
        for number, rec in enumerate(reader, 2):
            where = f"{source.label}:{number}"
            try:
                yield _umami_row(where, rec, occ)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, _reason(exc))


def _umami_row(where: str, rec: dict[str, str], occ: _Occurrences) -> Item:
    def get(key: str) -> str:
        return (rec.get(key) or "").strip()

    kind = get("event_type") or "1"
    if kind == "1":
        name = "page_view"
    elif kind == "2":
        name = get("event_name")
        if not name:
            return Refusal(where, "an Umami event (event_type 2) without event_name")
    else:
        return Refusal(where, f"Umami event_type {kind} is not imported (only 1 and 2)")
    ts = parse_time(get("created_at"))
    host = get("hostname")
    path = get("url_path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    query = get("url_query")
    utm = [
        (k, get(k)) for k in ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
    ]
    if not query and any(v for _, v in utm):
        from urllib.parse import urlencode

        query = urlencode([(k, v) for k, v in utm if v])
    url = (f"https://{host}{path}" if host else path) + (f"?{query.lstrip('?')}" if query else "")
    referrer = ""
    if get("referrer_domain"):
        referrer = f"https://{get('referrer_domain')}{get('referrer_path') or '/'}"
        if get("referrer_query"):
            referrer += "?" + get("referrer_query").lstrip("?")
    os_name, os_version = _umami_os(get("os"))
    screen = get("screen")
    width = _int(screen.lower().split("x", 1)[0]) if screen else 0
    umami_id = get("event_id")
    identity = (
        event_id_of("umami", umami_id)
        if umami_id
        else occ.identity(ts, "\x1f".join(rec.values() if rec else []))
    )
    visitor = get("session_id") or get("distinct_id")
    return Row(
        where=where,
        name=name,
        url=url,
        ts_ms=ts,
        event_id=identity,
        referrer=referrer,
        session=get("visit_id") or visitor,
        visitor=visitor,
        screen=width,
        fields={
            "browser": UMAMI_BROWSERS.get(get("browser").lower(), get("browser")),
            "browser_version": "",
            "os": os_name,
            "os_version": os_version,
            "device": _device(get("device")),
            "country": get("country").upper(),
            "region": get("region") or get("subdivision1"),
            "city": get("city"),
        },
    )


def rows_of(source: Source) -> Iterator[Item]:
    if source.kind == "ndjson":
        return ndjson_rows(source)
    if source.kind == "csv":
        return svc_csv_rows(source)
    if source.kind == "umami":
        return umami_rows(source)
    raise UsageError(f"{source.label}: no reader for {source.kind}")
