"""The lake's writer in the service: each pass writes the UTC days that are over (plus a
settle time) and not in the lake yet, and writes again the days that events received later
changed.

A pass has a watermark ``through`` (the runtime's ``loaded_through_ms``: every event received
before it is in the store) and reads only events received before it. A day is due once
``through`` is past its end plus ``SVC_LAKE_SETTLE_SECONDS``. The days a pass looks at:

- the first pass (and a pass after a failed one): every day with events, each compared with
  the manifest in the lake (so a restart, or a lake written by another node, costs a read of
  each manifest, never a rewrite of an unchanged day);
- later passes: the days with an event received since the previous pass's watermark, and the
  days that became due since it.

A day is (re)written when the lake has no manifest for it, or when an event of it was received
at or after its manifest's ``receivedThroughMs`` (a late event: the day is stale).

Retention reaches the lake too: the retention job (svc.retention.job) calls :meth:`Lake.expire`
after each run with every project's raw-data horizon, and the days before it go from the lake
(:mod:`.expiry`). A day written between the deletion of its raw events and that call (a pass
that read it just before) is deleted by it; one written later has no events left to write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from svc.cluster.leases import Leases
from svc.lake import expiry, writer
from svc.lake.places import LocalPlace, Place, PlaceError, S3Access, open_place
from svc.queries.sql import lake as lake_sql
from svc.runtime import Runtime
from svc.storage.events import EventStore
from svc.timeutil import as_date

log = logging.getLogger(__name__)

#: Where a day's file is written before it goes to the lake (in the data directory).
WORK_DIR = "lake-work"


class Lake:
    """Keeps the lake current; :meth:`run_pass` is blocking (a worker thread), :meth:`run`
    is the service's background task."""

    def __init__(
        self,
        store: EventStore,
        place: Place,
        *,
        settle_seconds: float,
        interval_seconds: float,
        work_dir: Path,
        watermark: Callable[[], int],
        leases: Leases | None = None,
    ) -> None:
        self.store, self.place = store, place
        #: With several nodes, the holder of the ``lake`` lease alone runs passes
        #: (svc.cluster.leases); None: this process always does.
        self.leases = leases
        self.settle_ms = int(settle_seconds * 1000)
        self.interval_seconds = interval_seconds
        self.work_dir = work_dir
        self.watermark = watermark
        #: (project, day) -> the receivedThroughMs of its manifest in the lake
        self.written: dict[tuple[str, date], int] = {}
        self._writing = threading.Lock()  # one day written at a time (a pass, svcm lake)
        self._stopping = threading.Event()  # set by finish(): the pass stops between days
        self._pass: asyncio.Future[list[dict[str, Any]]] | None = None
        self._since_ms: int | None = None  # the previous complete pass's watermark
        self._last_due: date | None = None  # the last day due then
        # for /health and /internal/metrics
        self.passes = 0
        self.days_written = 0
        self.rows_written = 0
        self.bytes_written = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.last_pass_at: float | None = None
        self.last_day_written: str | None = None
        self.last_written_at: float | None = None
        self.days_expired = 0

    def due_through(self, through_ms: int) -> date:
        """The last day that is due at watermark ``through_ms``."""
        moment = datetime.fromtimestamp((through_ms - self.settle_ms) / 1000, UTC)
        return moment.date() - timedelta(days=1)

    def run_pass(self, through_ms: int) -> list[dict[str, Any]]:
        """One pass at watermark ``through_ms`` (every event received before it is in the
        store); the manifests written. A day that fails is tried again next pass."""
        through = min(through_ms, int(time.time() * 1000))
        last_due = self.due_through(through)
        first = self._since_ms is None
        stmt = lake_sql.lake_days(
            writer.naive(through),
            last_due,
            since=None if first else writer.naive(self._since_ms or 0),
            new_after=self._last_due,
        )
        written: list[dict[str, Any]] = []
        failed = False
        for project_id, day_value, _count, newest in self.store.query(stmt.sql, stmt.params):
            if self._stopping.is_set():
                failed = True  # the next start looks at every day again
                break
            key = (str(project_id), as_date(day_value))
            if key not in self.written and first:
                manifest = writer.read_manifest(self.place, *key)
                if manifest is not None:
                    self.written[key] = int(manifest["receivedThroughMs"])
                    self._note_day(key[1])
            if key in self.written and int(newest) < self.written[key]:
                continue  # every event of the day is in its file
            try:
                manifest = self.write(key[0], key[1], through)
            except Exception as exc:
                failed = True
                self._failed(f"{key[0]} {key[1]}: {type(exc).__name__}: {exc}")
                continue
            if manifest is not None:
                written.append(manifest)
        self.passes += 1
        self.last_pass_at = time.time()
        if not failed:  # else the next pass looks at every day again
            self._since_ms, self._last_due = through, last_due
        else:
            self._since_ms = None
        return written

    def write(self, project_id: str, day: date, through_ms: int) -> dict[str, Any] | None:
        """Write one day now (also ``svcm lake export``); its manifest."""
        with self._writing:
            manifest = writer.write_day(
                self.store, self.place, project_id, day, through_ms, self.work_dir
            )
        if manifest is not None:
            self.written[(project_id, day)] = through_ms
            self.days_written += 1
            self.rows_written += int(manifest["rows"])
            self.bytes_written += int(manifest["bytes"])
            self._note_day(day)
            self.last_written_at = time.time()
            log.info("lake: wrote %s %s (%d events)", project_id, day, manifest["rows"])
        return manifest

    def write_days(
        self, day: date, project_id: str | None, through_ms: int
    ) -> list[dict[str, Any]]:
        """Write a day now, of one project or of every project with events that day
        (``svcm lake export``); the manifests written."""
        if project_id is None:
            stmt = lake_sql.lake_day_projects(day, writer.naive(through_ms))
            projects = [str(r[0]) for r in self.store.query(stmt.sql, stmt.params)]
        else:
            projects = [project_id]
        written = []
        for project in projects:
            try:
                manifest = self.write(project, day, through_ms)
            except Exception as exc:
                self._failed(f"{project} {day}: {type(exc).__name__}: {exc}")
                raise
            if manifest is not None:
                written.append(manifest)
        return written

    def expire(self, horizons: Mapping[str, date]) -> list[tuple[str, date]]:
        """Delete each project's days before its horizon (``horizons``: project id -> the
        first day of raw events it keeps) from the lake, and forget their manifests; the
        (project, day) pairs deleted. Blocking (a worker thread); no day is written meanwhile.
        PlaceError when the lake refuses (the retention job tries again at its next run)."""
        with self._writing:
            gone = expiry.expire_days(self.place, horizons)
            for key in [k for k in self.written if k[0] in horizons and k[1] < horizons[k[0]]]:
                del self.written[key]
        self.days_expired += len(gone)
        if gone:
            log.info("lake: deleted %d day(s) past their retention", len(gone))
        return gone

    def _note_day(self, day: date) -> None:
        """The newest day the lake holds (written now, or found there at start)."""
        if self.last_day_written is None or day.isoformat() > self.last_day_written:
            self.last_day_written = day.isoformat()

    def _failed(self, error: str) -> None:
        self.failures += 1
        self.last_error = error[:500]
        self.last_error_at = time.time()
        log.warning("lake: %s", self.last_error)

    async def run(self) -> None:
        """Passes every ``interval_seconds`` until cancelled."""
        while True:
            if self.leases is None:
                await self._one_pass()
            elif await self.leases.held("lake"):
                await self.leases.run_held("lake", self._one_pass)
            else:  # another node writes: when this one takes over, it looks at every day
                self._since_ms = None
            await asyncio.sleep(self.interval_seconds)

    async def _one_pass(self) -> None:
        # the watermark is read here, on the event loop, where it changes
        self._pass = asyncio.ensure_future(asyncio.to_thread(self.run_pass, self.watermark()))
        try:
            # shielded: a stop lets the pass end between two days (finish), never cuts
            # a thread off while it writes
            await asyncio.shield(self._pass)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the store or the lake may be down: try again later
            self._since_ms = None
            self._failed(f"{type(exc).__name__}: {exc}")

    async def finish(self) -> None:
        """Stop: the pass under way ends after the day it is writing; wait for it."""
        self._stopping.set()
        if self._pass is not None and not self._pass.done():
            with contextlib.suppress(Exception):
                await self._pass

    def status(self) -> dict[str, Any]:
        """The lake's state, for /health."""
        return {
            "url": self.place.url,
            "passes": self.passes,
            "daysWritten": self.days_written,
            "rowsWritten": self.rows_written,
            "bytesWritten": self.bytes_written,
            "lastDayWritten": self.last_day_written,
            "daysExpired": self.days_expired,
            "lastWrittenAt": _iso(self.last_written_at),
            "lastPassAt": _iso(self.last_pass_at),
            "failures": self.failures,
            "lastError": self.last_error,
            "lastErrorAt": _iso(self.last_error_at),
        }


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def lake_of(runtime: Runtime) -> Lake | None:
    """The service's lake when ``SVC_LAKE_URL`` is set, handed to the runtime's retention job
    (which expires its days: :meth:`Lake.expire`); ValueError naming a bad setting (at
    start-up)."""
    settings = runtime.settings
    if not settings.lake_url:
        return None
    access = S3Access(
        endpoint=settings.lake_s3_endpoint,
        key_id=settings.lake_s3_key_id,
        secret=settings.lake_s3_secret,
        region=settings.lake_s3_region,
    )
    try:
        place = open_place(settings.lake_url, access)
    except PlaceError as exc:
        raise ValueError(f"setting SVC_LAKE_URL: {exc}") from exc
    if isinstance(place, LocalPlace):
        data = settings.data_dir.resolve()
        root = place.root.resolve()
        if root == data or data in root.parents:
            raise ValueError("setting SVC_LAKE_URL: the lake must be outside the data directory")
    if settings.lake_settle_seconds < 0 or settings.lake_interval_seconds <= 0:
        raise ValueError(
            "settings SVC_LAKE_SETTLE_SECONDS (0 or more) and SVC_LAKE_INTERVAL_SECONDS (more "
            "than 0)"
        )
    lake = Lake(
        runtime.store,
        place,
        settle_seconds=settings.lake_settle_seconds,
        interval_seconds=settings.lake_interval_seconds,
        work_dir=settings.data_dir / WORK_DIR,
        watermark=runtime.loaded_through_ms,
        leases=runtime.leases,
    )
    runtime.retention.lake = lake
    return lake
