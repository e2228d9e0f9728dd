"""``svcm export`` and ``svcm import``: their arguments, progress and summaries.

What an import does is :mod:`svc.imports`: the readers of svc's, Umami's and Plausible's
exports, the checks, and the server-side path into a data directory's event store
(:class:`svc.imports.store.StoreSink`, through the ingestion pipeline's steps for history).
Over HTTP (:class:`HttpSink`, here: it is svcm's connection) the events go to POST /analytics
in batches of up to 1,000, each with its ``ts`` and deterministic ``eventId``, with the admin
token or a secret key; the service takes ``ts`` up to 7 days old only, so older rows are
refused with a pointer to direct mode (``--data-dir``), which takes history of any age.

Either way, running the same import again after a failure stores nothing twice.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from svc.cli.common import (
    Context,
    command,
    connection_options,
    output_options,
    project_option,
    range_options,
    range_params,
)
from svc.cli.connection import Api, DirectApi, Reply, error_of
from svc.cli.errors import EXIT_PARTIAL, CliError, UsageError
from svc.errors import ApiError
from svc.imports.over_http import wire_event
from svc.imports.rows import HTTP_MAX_AGE_MS, MAX_BATCH, ImportFailed
from svc.imports.sources import FORMATS, items_of, sources_of
from svc.timeutil import now_ms

if TYPE_CHECKING:
    from svc.imports.run import Checked, Sink, Summary

EXPORT_FORMATS = ("ndjson", "csv", "parquet")
EXTENSIONS = {
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".json": "ndjson",
    ".csv": "csv",
    ".parquet": "parquet",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parents = [connection_options(), output_options()]
    p = command(
        sub,
        "export",
        summary="write a project's events of a range as NDJSON, CSV or Parquet",
        description="Write every event of a project in a range of days, oldest first, with "
        "the columns\ndocumented for GET /export. The format is --format, else the output "
        "file's extension\n(.ndjson, .jsonl, .csv, .parquet), else NDJSON. In CSV, "
        "properties are a JSON object,\nand a text cell that begins with =, +, -, @, a tab, "
        "a carriage return or ' gets a ' in\nfront, so that no spreadsheet runs it as a "
        "formula (svcm import takes it off again).\nA file is written whole or not at all.",
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
        summary="import events from svc, Umami, Plausible or GA4 exports",
        description="Import events into a project from svc's NDJSON, CSV or Parquet export "
        "(or NDJSON of\nevents as POST /analytics takes them), Umami's CSV export of "
        "website_event, Plausible's\nCSV export (the zip, its directory or its "
        "imported_*.csv files; rebuilt from daily totals)\nor GA4's BigQuery export "
        "(NDJSON or Parquet files of its events_* tables).\n\n"
        "Every row gets a deterministic eventId, so running the same import again (after a "
        "failure\nhalfway, say) skips what is stored already. Over HTTP (--url) the service "
        "takes events up\nto 7 days old; for history, run the import on the data directory "
        "(--data-dir, with the\nservice stopped). In svc's CSV export, the ' that svcm export "
        "puts before a text cell\nthat begins with =, +, -, @, a tab, a carriage return or ' "
        "is taken off again. A summary\ntells what was imported, skipped and refused, and why.",
        examples=[
            "svcm import -p acme acme-2024.ndjson",
            "svcm import -p acme --data-dir /var/lib/svc plausible-export.zip",
            "svcm import -p acme --data-dir ./data --format umami umami-events.csv",
            "svcm import -p acme --data-dir ./data ga4-bigquery-export/",
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
        help="auto (default: from name, extension, magic bytes and columns), "
        + ", ".join(FORMATS[1:]),
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
            import pyarrow.parquet as pq  # heavy (~0.3 s): only after a Parquet export

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


class HttpSink:
    """Imports through a running service: batches to POST /analytics, whose pipeline ingests
    them (the service takes ``ts`` up to 7 days old only). Before sending, the event ids
    already stored in those days are read from GET /export, and rows among them are skipped
    (the service also drops an ``eventId`` it saw in the last 48 h)."""

    def __init__(self, ctx: Context, api: Api, project: str) -> None:
        self.ctx = ctx
        self.api = api
        self.project = project
        self.known: set[str] | None = None

    def _load_known(self) -> set[str]:
        """Event ids stored in the last 8 days (the only days HTTP import reaches)."""
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

    def _post(self, events: list[dict[str, Any]]) -> Reply:
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


def _is_batch_answer(resp: Reply) -> bool:
    try:
        return "rejected" in resp.json()
    except ValueError:
        return False


def _retry_after(resp: Reply, default: float) -> float:
    try:
        return min(max(float(resp.headers.get("retry-after", default)), 0.5), 300.0)
    except ValueError:
        return default


def run_import(ctx: Context) -> int:
    # The import's checks load msgspec and the wire format, its store sink the ingestion
    # pipeline and the event store (~0.4 s): only when importing (and the store sink only on
    # a data directory), not at every svcm start, which registers this command.
    from svc.imports import run as importer

    size = int(ctx.opt("batch_size"))
    if not 1 <= size <= MAX_BATCH:
        raise UsageError(f"--batch-size must be between 1 and {MAX_BATCH}")
    files: list[str] = ctx.opt("files")
    if files.count("-") > 1:
        raise UsageError("stdin ('-') can be read once")
    try:
        sources = sources_of(files, ctx.opt("format"))
    except ImportFailed as exc:
        raise CliError(str(exc)) from exc
    project_ref = ctx.project()
    api = ctx.api()
    summary = importer.Summary(files=[{"file": s.label, "format": s.kind} for s in sources])
    sink: Sink
    if isinstance(api, DirectApi):
        try:
            project = api.runtime.meta.get_project(project_ref)
        except ApiError as exc:
            raise CliError(exc.message) from exc
        from svc.imports.store import StoreSink  # see above

        tz = project.timezone
        sink = StoreSink(api.runtime.store, project)
    else:
        resp = api.send("GET", "/projects/" + quote(project_ref, safe=""))
        if resp.status_code == 403:
            raise CliError("importing needs the admin token or the project's secret key")
        if resp.status_code >= 400:
            raise error_of(resp)
        tz = str(resp.json().get("timezone") or "UTC")
        sink = HttpSink(ctx, api, project_ref)
    max_age = None if isinstance(api, DirectApi) else HTTP_MAX_AGE_MS - 60_000
    try:
        total, items = items_of(sources, tz)
    except ImportFailed as exc:
        raise CliError(str(exc)) from exc
    dry = bool(ctx.opt("dry_run"))
    verb = "checking" if dry else "importing"
    with ctx.out.progress(f"{verb} into {project_ref}", total) as bar:
        try:
            importer.run_import(
                items,
                sink,
                summary,
                now_ms=now_ms(),
                max_age_ms=max_age,
                batch_size=size,
                dry_run=dry,
                advance=bar.advance,
            )
        except (CliError, ImportFailed, KeyboardInterrupt) as exc:
            # say how far it got; running the same command again goes on from there
            report(ctx, summary, project_ref, dry, stopped=True)
            if isinstance(exc, ImportFailed):
                raise CliError(str(exc)) from exc
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
