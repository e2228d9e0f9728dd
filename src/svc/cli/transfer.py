"""``svcm export`` and ``svcm import``.

Import writes through one of two sinks:

- over HTTP (:class:`HttpSink`): batches of up to 1,000 events to POST /analytics, each with
  its ``ts`` and deterministic ``eventId``, with the admin token or a secret key. The service
  takes ``ts`` up to 7 days old only, so older rows are refused with a pointer to direct mode.
  Before sending, the event ids already stored in those days are read from GET /export, and
  rows among them are skipped (the service also drops an ``eventId`` it saw in the last 48 h).
- on a data directory (:class:`StoreSink`), the server-side import path: rows become event
  rows (URL, source and channel attribution as ingestion does it; browser, OS, device and
  location as the export has them) and are inserted straight into the event store, in chunks
  of up to 1,000, each with a deterministic insert deduplication token; rows whose ``eventId``
  is already stored are skipped first. History of any age is taken. Imported rows carry their
  own time as ``received_at`` so that they do not count against this month's quota.

Either way, running the same import again after a failure stores nothing twice.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from svc.cli.common import (
    Context,
    command,
    connection_options,
    output_options,
    project_option,
    range_options,
    range_params,
)
from svc.cli.connection import Api, DirectApi
from svc.cli.errors import EXIT_PARTIAL, CliError, UsageError
from svc.cli.importing import (
    FORMATS,
    FUTURE_MS,
    HTTP_MAX_AGE_MS,
    MIN_TS_MS,
    Item,
    Refusal,
    Row,
    Source,
    count_rows,
    rows_of,
    sources_of,
)

if TYPE_CHECKING:
    from svc.ingestion.wire import RawEvent
    from svc.meta.store import Project
    from svc.storage.events import EventRow

EXPORT_FORMATS = ("ndjson", "csv", "parquet")
EXTENSIONS = {
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".json": "ndjson",
    ".csv": "csv",
    ".parquet": "parquet",
}
MAX_BATCH = 1000
MAX_BATCH_BYTES = 900 * 1024


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    p = command(
        sub,
        "export",
        summary="write a project's events of a range as NDJSON, CSV or Parquet",
        description="Write every event of a project in a range of days, oldest first, with "
        "the columns\ndocumented for GET /export. The format is --format, else the output "
        "file's extension\n(.ndjson, .jsonl, .csv, .parquet), else NDJSON. A file is written "
        "whole or not at all.",
        examples=[
            "svcm export -p acme --from 2024-01-01 --to 2024-12-31 -o acme-2024.parquet",
            "svcm export -p acme --from 7d --format csv > last-week.csv",
            "svcm export -p acme --from today | jq -r .url",
        ],
        handler=run_export,
        parents=parents,
    )
    project_option(p)
    range_options(p)
    p.add_argument("--format", choices=EXPORT_FORMATS, help="ndjson, csv or parquet")
    out = p.add_argument(
        "-o", "--output", metavar="FILE", help="write to this file (default: stdout)"
    )
    out.completion_files = True  # type: ignore[attr-defined]

    p = command(
        sub,
        "import",
        summary="import events from svc, Umami or Plausible exports",
        description="Import events into a project from svc's NDJSON or CSV export (or "
        "NDJSON of events as\nPOST /analytics takes them), Umami's CSV export of "
        "website_event, or Plausible's CSV\nexport (the zip, its directory or its "
        "imported_*.csv files; rebuilt from daily totals).\n\n"
        "Every row gets a deterministic eventId, so running the same import again (after a "
        "failure\nhalfway, say) skips what is stored already. Over HTTP (--url) the service "
        "takes events up\nto 7 days old; for history, run the import on the data directory "
        "(--data-dir, with the\nservice stopped). A summary tells what was imported, skipped "
        "and refused, and why.",
        examples=[
            "svcm import -p acme acme-2024.ndjson",
            "svcm import -p acme --data-dir /var/lib/svc plausible-export.zip",
            "svcm import -p acme --data-dir ./data --format umami umami-events.csv",
            "svcm export -p old --from 30d | svcm import -p new -",
            "svcm import -p acme --dry-run events.csv",
        ],
        handler=run_import,
        parents=parents,
    )
    project_option(p)
    files = p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="files, directories or zips to import ('-': stdin)",
    )
    files.completion_files = True  # type: ignore[attr-defined]
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="auto (default: from name, extension and columns), ndjson, csv, umami or plausible",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=MAX_BATCH,
        metavar="N",
        help=f"events per request or insert (1-{MAX_BATCH}, default {MAX_BATCH})",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="read and check everything, store nothing"
    )


# export ----------------------------------------------------------------------------------------


def export_format(ctx: Context) -> str:
    fmt: str | None = ctx.opt("format")
    output = ctx.opt("output")
    if fmt is None and output and output != "-":
        fmt = EXTENSIONS.get(Path(output).suffix.lower())
    return fmt or "ndjson"


class _Counter:
    """Counts the rows of an NDJSON or CSV stream as it passes (newlines outside quotes)."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.newlines = 0
        self.quoted = False
        self.bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        if self.fmt == "ndjson":
            self.newlines += chunk.count(b"\n")
        elif self.fmt == "csv":
            parts = chunk.split(b'"')
            for k, part in enumerate(parts):
                if k:
                    self.quoted = not self.quoted
                if not self.quoted:
                    self.newlines += part.count(b"\n")

    @property
    def rows(self) -> int | None:
        if self.fmt == "ndjson":
            return self.newlines
        if self.fmt == "csv":
            return max(0, self.newlines - 1)
        return None


def run_export(ctx: Context) -> int:
    fmt = export_format(ctx)
    output: str | None = ctx.opt("output")
    to_stdout = not output or output == "-"
    if to_stdout and fmt == "parquet" and ctx.out.stdout_tty:
        raise UsageError("Parquet is binary: write it to a file with -o FILE.parquet")
    params = [*range_params(ctx), ("format", fmt)]
    project = ctx.project()
    params.append(("projectId", project))
    api = ctx.api()
    counter = _Counter(fmt)
    target: IO[bytes]
    tmp: Path | None = None
    final: Path | None = None
    if to_stdout:
        target = sys.stdout.buffer
    else:
        final = Path(str(output)).expanduser()
        tmp = final.with_name(f".{final.name}.part")
        try:
            target = open(tmp, "wb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise CliError(f"cannot write {final}: {exc.strerror}") from exc
    ok = False
    try:
        with ctx.out.progress(f"exporting {project}", None, unit="bytes") as bar:

            def sink(chunk: bytes) -> None:
                counter.feed(chunk)
                target.write(chunk)
                bar.advance(len(chunk))

            api.download("/export", params, sink)
        target.flush()
        ok = True
    finally:
        if not to_stdout:
            target.close()
            if tmp is not None and final is not None:
                if ok:
                    os.replace(tmp, final)
                else:
                    tmp.unlink(missing_ok=True)
    rows = counter.rows
    if fmt == "parquet" and final is not None:
        try:
            import pyarrow.parquet as pq

            rows = int(pq.read_metadata(final).num_rows)
        except Exception:  # a summary detail, never a failure
            rows = None
    where = str(final) if final else "stdout"
    what = f"{rows:,} events" if rows is not None else "the events"
    ctx.out.done(f"Exported {what} ({_size(counter.bytes)}) of {project} to {where}")
    return 0


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


# import ----------------------------------------------------------------------------------------


@dataclass
class Summary:
    read: int = 0
    imported: int = 0
    skipped: int = 0  # stored already (or twice in the input)
    dropped: int = 0  # dropped by the service on purpose
    refused: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    files: list[dict[str, str]] = field(default_factory=list)

    def refuse(self, where: str, reason: str) -> None:
        self.refused[reason] += 1
        examples = self.examples.setdefault(reason, [])
        if len(examples) < 3:
            examples.append(where)

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "read": self.read,
            "imported": self.imported,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "refused": self.refused_total,
            "reasons": [
                {"reason": r, "rows": n, "examples": self.examples.get(r, [])}
                for r, n in self.refused.most_common()
            ],
        }


@dataclass
class Checked:
    row: Row
    raw: RawEvent


class Sink(Protocol):
    def stored(self, batch: list[Checked]) -> set[str]:
        """The event ids of ``batch`` that the project has already."""

    def write(self, batch: list[Checked], summary: Summary) -> None: ...

    def finish(self) -> None:
        """After the last write."""


def check(row: Row, now: int, *, max_age_ms: int | None) -> RawEvent | str:
    """The validated event, or why the row is refused (the service's own rules)."""
    from svc.errors import ApiError
    from svc.ingestion.wire import validate_event

    obj: dict[str, Any] = {"event": row.name, "url": row.url, "eventId": row.event_id}
    if row.referrer:
        obj["referrer"] = row.referrer
    if row.properties:
        obj["properties"] = row.properties
    try:
        raw = validate_event(obj, now)
    except ApiError as exc:
        return exc.message
    if not row.ts_ms:
        return "no time (ts_ms, ts or created_at)"
    if row.ts_ms < MIN_TS_MS:
        return "the time is before 2000"
    if row.ts_ms > now + FUTURE_MS:
        return "the time is in the future"
    if max_age_ms is not None and row.ts_ms < now - max_age_ms:
        return (
            "older than 7 days: the service takes only the last 7 days over HTTP; import "
            "history on the data directory with --data-dir (service stopped)"
        )
    return raw


class HttpSink:
    def __init__(self, ctx: Context, api: Api, project: str) -> None:
        self.ctx = ctx
        self.api = api
        self.project = project
        self.known: set[str] | None = None

    def _load_known(self) -> set[str]:
        """Event ids stored in the last 8 days (the only days HTTP import reaches)."""
        from datetime import UTC, datetime, timedelta

        since = (datetime.now(UTC) - timedelta(days=8)).date().isoformat()
        known: set[str] = set()
        buffer = b""

        def sink(chunk: bytes) -> None:
            nonlocal buffer
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if b'"event_id":""' in line or not line.strip():
                    continue
                event_id = json.loads(line).get("event_id")
                if event_id:
                    known.add(str(event_id))

        self.api.download(
            "/export",
            [("from", since), ("tz", "UTC"), ("format", "ndjson"), ("projectId", self.project)],
            sink,
        )
        sink(b"\n")
        return known

    def stored(self, batch: list[Checked]) -> set[str]:
        if self.known is None:
            self.known = self._load_known()
        return {c.row.event_id for c in batch if c.row.event_id in self.known}

    def write(self, batch: list[Checked], summary: Summary) -> None:
        events = [wire_event(c, self.project) for c in batch]
        resp = self._post(events)
        doc = resp.json()
        summary.imported += int(doc.get("accepted", 0))
        summary.dropped += int(doc.get("dropped", 0))
        for entry in doc.get("rejected", []) or []:
            index = int(entry.get("index", -1))
            message = str((entry.get("error") or {}).get("message", "refused by the service"))
            where = batch[index].row.where if 0 <= index < len(batch) else "?"
            summary.refuse(where, message)
        if self.known is not None:
            self.known.update(c.row.event_id for c in batch)

    def finish(self) -> None:
        """Nothing: the service tracked the sessions as it ingested."""

    def _post(self, events: list[dict[str, Any]]) -> Any:
        from svc.cli.connection import error_of

        delay = 1.0
        for attempt in range(8):
            try:
                resp = self.api.send("POST", "/analytics", body=events, timeout=120)
            except CliError:
                if attempt >= 3:
                    raise CliError(
                        "lost the service in the middle of the import; run the same command "
                        "again to go on (what is stored already is skipped)"
                    ) from None
                time.sleep(delay)
                delay *= 2
                continue
            if resp.status_code == 200 or (resp.status_code == 400 and _is_batch_answer(resp)):
                return resp
            if resp.status_code in (429, 502, 503, 504):
                wait = _retry_after(resp, delay)
                self.ctx.out.note(
                    f"the service asks to wait {wait:.0f} s (HTTP {resp.status_code})"
                )
                time.sleep(wait)
                delay = min(delay * 2, 60)
                continue
            raise error_of(resp)
        raise CliError(
            "the service kept refusing the import (rate limited or unavailable); try again later"
        )


def _is_batch_answer(resp: Any) -> bool:
    try:
        return "rejected" in resp.json()
    except ValueError:
        return False


def _retry_after(resp: Any, default: float) -> float:
    try:
        return min(max(float(resp.headers.get("retry-after", default)), 0.5), 300.0)
    except ValueError:
        return default


def synthetic_address(project: str, visitor: str) -> str:
    """A stand-in client address for an imported visitor: in 2001:db8::/32, the range kept for
    documentation, so it is never a real address and has no location. The service hashes it
    (with the day's salt) into the visitor id, so each imported visitor stays one visitor."""
    d = hashlib.blake2b(f"{project}\x00{visitor}".encode(), digest_size=12).digest()
    groups = [f"{int.from_bytes(d[i : i + 2], 'big'):x}" for i in range(0, 12, 2)]
    return "2001:db8:" + ":".join(groups)


def wire_event(c: Checked, project: str) -> dict[str, Any]:
    """The event as POST /analytics takes it (with a secret key or the admin token)."""
    row, raw = c.row, c.raw
    url = raw.url
    if row.source_hint:
        from urllib.parse import urlencode

        url += ("&" if "?" in url else "?") + urlencode({"ref": row.source_hint})
    event: dict[str, Any] = {
        "event": raw.name,
        "url": url,
        "ts": row.ts_ms,
        "eventId": row.event_id,
        "projectId": project,
    }
    if raw.referrer:
        event["referrer"] = raw.referrer
    if raw.properties:
        event["properties"] = raw.properties
    session = row.session or row.visitor
    if session:
        event["sessionId"] = (
            session if len(session) <= 128 else hashlib.sha256(session.encode()).hexdigest()
        )
    if row.visitor or session:
        event["ip"] = synthetic_address(project, row.visitor or session)
    if row.screen and 0 < row.screen <= 65535:
        event["screen"] = row.screen
    return event


class StoreSink:
    """The server-side import path: rows straight into the event store."""

    def __init__(self, api: DirectApi, project: Project) -> None:
        self.api = api
        self.project = project
        self.store = api.runtime.store

    def stored(self, batch: list[Checked]) -> set[str]:
        ids = [c.row.event_id for c in batch if c.row.event_id]
        if not ids:
            return set()
        from svc.queries.transfer import stored_event_ids

        lo = min(c.row.ts_ms for c in batch)
        hi = max(c.row.ts_ms for c in batch)
        stmt = stored_event_ids(self.project.id, lo, hi, ids)
        return {str(r[0]) for r in self.store.query(stmt.sql, stmt.params)}

    def write(self, batch: list[Checked], summary: Summary) -> None:
        import msgspec

        rows = [event_row(c, self.project) for c in batch]
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
            raise CliError(
                f"the event store refused a chunk ({type(exc).__name__}: {str(exc)[:200]}); "
                "run the same command again to go on (what is stored already is skipped)"
            ) from exc
        summary.imported += len(rows)

    def finish(self) -> None:
        """Imported events carry no session start (ingestion tracks it live): write the
        project's sessions anew from its events, and let its daily rollups be redone."""
        from svc.storage.rollups import Rollups

        self.store.rebuild_sessions(self.project.id)
        Rollups(self.store).forget(self.project.id)


def event_row(c: Checked, project: Project) -> EventRow:
    """An events-table row: an svc export's own columns, or attributed as ingestion does."""
    from svc.ingestion.enrich.sources import attribute
    from svc.ingestion.enrich.useragent import device_from_screen
    from svc.ingestion.identity import client_session_id
    from svc.ingestion.urls import parse_page_url
    from svc.storage.events import EventRow, ch_time

    row, raw = c.row, c.raw
    f = row.fields
    common: dict[str, Any] = {
        "project_id": project.id,
        "ts": ch_time(row.ts_ms),
        "received_at": ch_time(row.received_ms or row.ts_ms),
        "event_id": row.event_id,
        "name": raw.name,
        "url": raw.url,
        "referrer": raw.referrer or "",
        "properties": raw.properties,
        "browser": f.get("browser", ""),
        "browser_version": f.get("browser_version", ""),
        "os": f.get("os", ""),
        "os_version": f.get("os_version", ""),
        "device": f.get("device", "") or (device_from_screen(row.screen) if row.screen else ""),
        "screen_width": row.screen if 0 <= row.screen <= 65535 else 0,
        "country": f.get("country", ""),
        "region": f.get("region", ""),
        "city": f.get("city", ""),
    }
    s = row.stored
    if s is not None:

        def col(name: str) -> str:
            return str(s.get(name) or "")

        return EventRow(
            **common,
            session_id=int(s.get("session_id") or 0),
            visitor_id=int(s.get("visitor_id") or 0),
            hostname=col("hostname"),
            path=col("path") or "/",
            referrer_host=col("referrer_host"),
            source=col("source") or "direct",
            channel=col("channel") or "direct",
            utm_source=col("utm_source"),
            utm_medium=col("utm_medium"),
            utm_campaign=col("utm_campaign"),
            utm_content=col("utm_content"),
            utm_term=col("utm_term"),
            click_id=col("click_id"),
        )
    page = parse_page_url(raw.url)
    query = dict(page.query)
    if row.source_hint and not raw.referrer and not query.get("utm_source"):
        query["ref"] = row.source_hint
    a = attribute(query, raw.referrer, page.hostname, project.domains)
    q = page.query
    session_key = row.session or row.visitor or row.event_id
    visitor_key = row.visitor or session_key
    # A visitor is a person on one day (as the daily salt makes it for ingested events, and as
    # the services we import from count them): the day in the project's time zone.
    day = datetime.fromtimestamp(row.ts_ms / 1000, ZoneInfo(project.timezone)).date()
    visitor = int.from_bytes(
        hashlib.blake2b(
            f"{project.id}\x00{day}\x00{visitor_key}".encode(),
            digest_size=8,
            person=b"svcm-visitor",
        ).digest(),
        "little",
    )
    return EventRow(
        **common,
        session_id=client_session_id(project.id, "imp:" + session_key),
        visitor_id=visitor,
        hostname=page.hostname,
        path=page.path,
        referrer_host=a.referrer_host,
        source=a.source,
        channel=a.channel,
        utm_source=q.get("utm_source", "").lower(),
        utm_medium=q.get("utm_medium", "").lower(),
        utm_campaign=q.get("utm_campaign", ""),
        utm_content=q.get("utm_content", ""),
        utm_term=q.get("utm_term", ""),
        click_id=page.click_id,
    )


def _items(ctx: Context, sources: list[Source], tz: str) -> tuple[int | None, Iterator[Item]]:
    """Every row of every source, and how many there are (for the progress bar)."""
    from svc.cli import plausible

    plausible_sources = [s for s in sources if s.kind.startswith("plausible:")]
    others = [s for s in sources if not s.kind.startswith("plausible:")]
    total: int | None = 0
    days: dict[Any, Any] = {}
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


def _batches(items: Iterable[Checked], size: int) -> Iterator[list[Checked]]:
    batch: list[Checked] = []
    weight = 0
    for c in items:
        cost = (
            len(c.row.url)
            + len(c.row.referrer)
            + 200
            + sum(len(str(k)) + len(str(v)) + 8 for k, v in c.raw.properties.items())
        )
        if batch and (len(batch) >= size or weight + cost > MAX_BATCH_BYTES):
            yield batch
            batch, weight = [], 0
        batch.append(c)
        weight += cost
    if batch:
        yield batch


def run_import(ctx: Context) -> int:
    from svc.timeutil import now_ms

    size = int(ctx.opt("batch_size"))
    if not 1 <= size <= MAX_BATCH:
        raise UsageError(f"--batch-size must be between 1 and {MAX_BATCH}")
    files: list[str] = ctx.opt("files")
    if files.count("-") > 1:
        raise UsageError("stdin ('-') can be read once")
    sources = sources_of(files, ctx.opt("format"))
    project_ref = ctx.project()
    api = ctx.api()
    summary = Summary(files=[{"file": s.label, "format": s.kind} for s in sources])
    sink: Sink
    if isinstance(api, DirectApi):
        from svc.errors import ApiError

        try:
            project = api.runtime.meta.get_project(project_ref)
        except ApiError as exc:
            raise CliError(exc.message) from exc
        tz = project.timezone
        sink = StoreSink(api, project)
    else:
        from urllib.parse import quote

        from svc.cli.connection import error_of

        resp = api.send("GET", "/projects/" + quote(project_ref, safe=""))
        if resp.status_code == 403:
            raise CliError("importing needs the admin token or the project's secret key")
        if resp.status_code >= 400:
            raise error_of(resp)
        tz = str(resp.json().get("timezone") or "UTC")
        sink = HttpSink(ctx, api, project_ref)
    now = now_ms()
    max_age = None if isinstance(api, DirectApi) else HTTP_MAX_AGE_MS - 60_000
    total, items = _items(ctx, sources, tz)
    dry = bool(ctx.opt("dry_run"))
    verb = "checking" if dry else "importing"
    with ctx.out.progress(f"{verb} into {project_ref}", total) as bar:

        def checked() -> Iterator[Checked]:
            for item in items:
                summary.read += 1
                bar.advance(1)
                if isinstance(item, Refusal):
                    summary.refuse(item.where, item.reason)
                    continue
                result = check(item, now, max_age_ms=max_age)
                if isinstance(result, str):
                    summary.refuse(item.where, result)
                    continue
                yield Checked(item, result)

        try:
            for batch in _batches(checked(), size):
                seen: set[str] = set()
                fresh: list[Checked] = []
                for c in batch:
                    if c.row.event_id in seen:
                        summary.skipped += 1
                        continue
                    seen.add(c.row.event_id)
                    fresh.append(c)
                if dry:
                    summary.imported += len(fresh)
                    continue
                known = sink.stored(fresh)
                summary.skipped += len(known)
                fresh = [c for c in fresh if c.row.event_id not in known]
                if fresh:
                    sink.write(fresh, summary)
        except (CliError, KeyboardInterrupt):
            # say how far it got; running the same command again goes on from there
            report(ctx, summary, project_ref, dry, stopped=True)
            raise
    if not dry and summary.imported:
        sink.finish()
    report(ctx, summary, project_ref, dry)
    return EXIT_PARTIAL if summary.refused_total else 0


def report(ctx: Context, s: Summary, project: str, dry: bool, *, stopped: bool = False) -> None:
    if ctx.json and not stopped:
        ctx.out.json({**s.to_json(), "project": project, "dryRun": dry})
        return
    verb = "would import" if dry else "imported"
    parts = [f"{verb} {s.imported:,}"]
    if s.skipped:
        parts.append(f"skipped {s.skipped:,} stored already")
    if s.dropped:
        parts.append(f"{s.dropped:,} dropped by the service (project exclusions or duplicates)")
    if s.refused_total:
        parts.append(f"refused {s.refused_total:,}")
    rows = "row" if s.read == 1 else "rows"
    message = f"Read {s.read:,} {rows} for {project}: " + ", ".join(parts)
    if stopped:
        ctx.out.warn("stopped early. " + message)
        return
    if s.refused_total:
        ctx.out.warn(message)
        for reason, n in s.refused.most_common(10):
            examples = ", ".join(s.examples.get(reason, []))
            print(f"  {n:>8,}  {reason}  (e.g. {examples})", file=sys.stderr)
        if len(s.refused) > 10:
            print(
                f"  ... and {len(s.refused) - 10} more reasons (--json lists all)", file=sys.stderr
            )
    else:
        ctx.out.done(message)
