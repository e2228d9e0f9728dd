"""History into the event store: imported events through the ingestion pipeline's steps
that fit historical data.

Live ingestion (:mod:`svc.ingestion.pipeline`) runs ``parse_url``, ``drop_bots``,
``drop_excluded``, ``drop_duplicates``, ``enrich_user_agent``, ``attribute_source``,
``locate`` and ``identify`` on each event of a request. An imported event was counted by
another service, maybe years ago: it has no request, user agent or address, and the salts of
its days are long destroyed. Its steps (:attr:`HistoricalPipeline.steps`), on the same
:class:`~svc.ingestion.pipeline.EventDraft` and into the same row (``EventDraft.to_row``):

1. ``parse_url`` (the pipeline's): hostname, path, kept query parameters.
2. ``take_source_hint``: a source the export names without a referrer or UTM source
   (Plausible's "Google") counts as the URL's ``ref`` parameter would.
3. ``restore_enrichment``: the browser, system, device and location the source recorded.
4. ``enrich_user_agent`` (the pipeline's): there is no user agent; a device class from the
   screen width when the source named none.
5. ``attribute_source`` (the pipeline's): source, channel and referrer host, with the
   project's domains.
6. ``identify_history``: visitor and session ids from the source's own identities
   (:func:`history_visitor_id`, :func:`history_session_id`), and the session's start.

Left out: ``drop_bots`` (no user agent to judge; the source counted its visitors already),
``drop_excluded`` (the history is taken as the source counted it), ``drop_duplicates`` (the
store is asked instead, whatever the events' age: :meth:`svc.imports.store.StoreSink.stored`)
and ``locate`` (no address; the location the source recorded is kept).

The rows of svc's own exports are what the pipeline made already: they are restored column by
column (:meth:`HistoricalPipeline.restored`), nothing derived again, so an export imported on
a data directory is the same events.

A session's start is what ingestion makes it (svc.ingestion.identity.SessionTracker): the
time of the first of its events seen, here in the order of the import (exports list events
in time order). Every row of a session carries it (``session_start``), so the materialized
views key the session by its day exactly as for ingested events, and a session that runs
over midnight is one session under one visitor id: the id of its visitor on the day its
session began (in the project's time zone; ingestion's salts make it the UTC day), as an
ingested session keeps its visitor over midnight. Sessions are remembered while their events
come within :data:`SESSION_MEMORY_MS` (7 days: the window ingestion takes late events in) of
the newest event read; a session id seen again after that starts again.

Each row's ``received_at`` is its own time (or its export's ``received_ms``), so history does
not count against this month's quota.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

from svc.imports.rows import Row
from svc.imports.run import Checked
from svc.ingestion.enrich.geo import Geo
from svc.ingestion.enrich.useragent import device_from_screen
from svc.ingestion.identity import client_session_id
from svc.ingestion.outcomes import DropReason
from svc.ingestion.pipeline import EventDraft, Pipeline, RequestContext
from svc.ingestion.urls import PageUrl
from svc.meta.store import Project
from svc.schema.limits import MAX_SCREEN
from svc.schema.row import EventRow
from svc.storage.events import ch_time

_NO_PAGE = PageUrl("", "/")  # replaced by parse_url, never changed
#: How long after its last event an imported session's start is remembered (ms).
SESSION_MEMORY_MS = 7 * 86_400_000
_PRUNE_EVERY = 65_536  # new sessions between two looks for forgotten ones


def history_visitor_id(project_id: str, day: date, visitor: str) -> int:
    """The stored visitor id of an imported visitor on a day (of the project's time zone).

    A visitor is a person on one day, as the daily salt makes it for ingested events and as
    the services svc imports from count them; the salts of past days are destroyed, so the id
    is a keyed hash of the project, the day and the source's own visitor identity."""
    digest = hashlib.blake2b(
        f"{project_id}\x00{day}\x00{visitor}".encode(), digest_size=8, person=b"svcm-visitor"
    ).digest()
    return int.from_bytes(digest, "little")


def history_session_id(project_id: str, session: str) -> int:
    """The stored id of an imported session: a client-named session ``imp:<its identity>``."""
    return client_session_id(project_id, "imp:" + session)


@dataclass(slots=True)
class HistoricalDraft(EventDraft):
    """An event draft with the row it was read from."""

    row: Row = field(kw_only=True)


Step = Callable[[HistoricalDraft], DropReason | None]


class HistoricalPipeline:
    """The steps that fit historical rows of one project, as the event rows they make."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.zone = ZoneInfo(project.timezone)
        self.steps: list[tuple[str, Step]] = [
            ("parse_url", Pipeline.parse_url),
            ("take_source_hint", self.take_source_hint),
            ("restore_enrichment", self.restore_enrichment),
            ("enrich_user_agent", Pipeline.enrich_user_agent),
            ("attribute_source", Pipeline.attribute_source),
            ("identify_history", self.identify_history),
        ]
        # session id -> [start ms, last ms] (svc.ingestion.identity.SessionTracker's rule)
        self._sessions: dict[int, list[int]] = {}
        self._newest = 0
        self._new = 0

    def session_start(self, session_id: int, ts_ms: int) -> int:
        """The start (ms) of an imported session, given one of its events: the time of the
        first of its events seen (see the module docstring)."""
        if ts_ms > self._newest:
            self._newest = ts_ms
        s = self._sessions.get(session_id)
        if s is not None and ts_ms - s[1] <= SESSION_MEMORY_MS:
            if ts_ms > s[1]:
                s[1] = ts_ms
            return s[0]
        self._sessions[session_id] = [ts_ms, ts_ms]
        self._new += 1
        if self._new >= _PRUNE_EVERY:
            self._new = 0
            cutoff = self._newest - SESSION_MEMORY_MS
            self._sessions = {k: v for k, v in self._sessions.items() if v[1] >= cutoff}
        return ts_ms

    def row(self, c: Checked) -> EventRow | DropReason:
        """The events-table row of an imported event, or why it is dropped."""
        if c.row.stored is not None:
            return self.restored(c)
        draft = self.draft(c)
        for _, step in self.steps:
            reason = step(draft)
            if reason is not None:
                return reason
        return draft.to_row()

    def draft(self, c: Checked) -> HistoricalDraft:
        row = c.row
        ctx = RequestContext(
            project=self.project,
            key_kind="import",
            address="",
            user_agent="",
            edge_geo=None,
            received_ms=row.received_ms or row.ts_ms,
        )
        return HistoricalDraft(
            raw=c.raw, ctx=ctx, ts_ms=row.ts_ms, address="", user_agent="", page=_NO_PAGE, row=row
        )

    # the steps of history --------------------------------------------------------------------

    @staticmethod
    def take_source_hint(d: HistoricalDraft) -> DropReason | None:
        hint = d.row.source_hint
        page = d.page
        if hint and not d.raw.referrer and not page.query.get("utm_source"):
            # parse_page_url's PageUrl is shared (cached): a new one
            d.page = PageUrl(page.hostname, page.path, {**page.query, "ref": hint})
        return None

    @staticmethod
    def restore_enrichment(d: HistoricalDraft) -> DropReason | None:
        f = d.row.fields
        d.browser, d.browser_version = f.get("browser", ""), f.get("browser_version", "")
        d.os, d.os_version = f.get("os", ""), f.get("os_version", "")
        d.device = f.get("device", "")
        d.geo = Geo(f.get("country", ""), f.get("region", ""), f.get("city", ""))
        return None

    def identify_history(self, d: HistoricalDraft) -> DropReason | None:
        row = d.row
        project_id = self.project.id
        session = row.session or row.visitor or row.event_id
        d.session_id = history_session_id(project_id, session)
        d.session_start_ms = start = self.session_start(d.session_id, d.ts_ms)
        day = datetime.fromtimestamp(start / 1000, self.zone).date()  # of the session's start
        d.visitor_id = history_visitor_id(project_id, day, row.visitor or session)
        return None

    # svc's own exports -------------------------------------------------------------------------

    def restored(self, c: Checked) -> EventRow:
        """A row of an svc export as it was stored: every column of the events table taken
        from the export's column of the same name (``EventRow``'s names), nothing derived but
        the session's start, which an export does not hold (see the module docstring)."""
        row, raw = c.row, c.raw
        s = row.stored or {}

        def col(name: str) -> str:
            return str(s.get(name) or "")

        session_id = int(s.get("session_id") or 0)
        start = self.session_start(session_id, row.ts_ms) if session_id else row.ts_ms
        return EventRow(
            project_id=self.project.id,
            ts=ch_time(row.ts_ms),
            received_at=ch_time(row.received_ms or row.ts_ms),
            event_id=row.event_id,
            name=raw.name,
            session_id=session_id,
            visitor_id=int(s.get("visitor_id") or 0),
            hostname=col("hostname"),
            path=col("path") or "/",
            url=raw.url,
            referrer=raw.referrer or "",
            referrer_host=col("referrer_host"),
            source=col("source") or "direct",
            channel=col("channel") or "direct",
            utm_source=col("utm_source"),
            utm_medium=col("utm_medium"),
            utm_campaign=col("utm_campaign"),
            utm_content=col("utm_content"),
            utm_term=col("utm_term"),
            click_id=col("click_id"),
            properties=raw.properties,
            browser=col("browser"),
            browser_version=col("browser_version"),
            os=col("os"),
            os_version=col("os_version"),
            device=col("device") or (device_from_screen(row.screen) if row.screen else ""),
            screen_width=row.screen if 0 <= row.screen <= MAX_SCREEN else 0,
            country=col("country"),
            region=col("region"),
            city=col("city"),
            session_start=ch_time(start),
        )
