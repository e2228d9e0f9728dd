"""The ingestion pipeline: an ordered list of named steps applied to each valid event.

Each step reads and fills an :class:`EventDraft`; a step that drops the event returns its one
:class:`DropReason`, and the event goes no further. The steps, in order:

1. ``parse_url``: hostname, path, kept query parameters (UTM, click ids).
2. ``drop_bots``: crawler, headless and HTTP-library user agents.
3. ``drop_data_centres``: a client address in the operator's data-centre ranges
   (``SVC_DATACENTRE_RANGES``, :mod:`svc.ingestion.enrich.datacentres`), unless the project
   keeps them (``options.keepDataCentres``). Only in the list when ranges are configured: an
   event pays nothing for it otherwise.
4. ``drop_excluded``: the project's excluded address ranges and paths, foreign hostnames
   (compiled once per version of the project: :mod:`svc.ingestion.exclusions`).
5. ``drop_duplicates``: an ``eventId`` seen before.
6. ``enrich_user_agent``: browser, OS, device class.
7. ``attribute_source``: source, channel, referrer host.
8. ``locate``: country, region, city.

A server-side sender (secret key) may name the end user's client as another service recorded
it (the event's ``client``: an import's browser, system, device and location); what it names
replaces what steps 6 and 8 would derive.
9. ``identify``: visitor and session ids.

The spool append follows in :mod:`svc.ingestion.service`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from svc.ingestion import identity
from svc.ingestion.dedup import EventIdFilter
from svc.ingestion.enrich.bots import bot_reason
from svc.ingestion.enrich.datacentres import DataCentreRanges
from svc.ingestion.enrich.geo import Geo, GeoLookup
from svc.ingestion.enrich.sources import attribute
from svc.ingestion.enrich.useragent import device_from_screen, parse_user_agent
from svc.ingestion.exclusions import Exclusions, exclusions_of
from svc.ingestion.outcomes import DropReason
from svc.ingestion.urls import PageUrl, parse_page_url
from svc.meta.store import Project
from svc.schema.measurements import MEASUREMENTS
from svc.schema.row import EventRow
from svc.schema.wire import RawEvent
from svc.storage.events import ch_time

_BOT_REASONS = {
    "missing_user_agent": DropReason.MISSING_USER_AGENT,
    "headless": DropReason.HEADLESS,
    "http_library": DropReason.HTTP_LIBRARY,
}


#: The project option that keeps the events from data-centre addresses (default: dropped).
KEEP_DATA_CENTRES = "keepDataCentres"

_NO_GEO = Geo("", "", "")
_NO_PAGE = PageUrl("", "/")  # a placeholder: replaced, never changed
_NO_UTM = ("", "", "", "", "", "")


@dataclass(slots=True)
class RequestContext:
    """What the request tells about every event in it."""

    project: Project
    key_kind: str
    address: str
    user_agent: str
    edge_geo: Geo | None  # where a trusted edge located the request's client
    received_ms: int
    # Per-request memos (the events of a batch share them): ``received_ms`` as ClickHouse
    # text, and the visitor id of (salt, address, user agent) of this request.
    received_text: str = ""
    visitor_memo: identity.VisitorMemo | None = None
    # The same under yesterday's salt (several nodes: svc.ingestion.shared_identity).
    before_memo: identity.VisitorMemo | None = None
    # The last session start (ms) written, as ClickHouse text: a batch's events share few.
    start_memo: tuple[int, str] = (0, "")
    # The project's compiled exclusions (``exclusions_of``), looked up once per request.
    exclusions: Exclusions | None = None


@dataclass(slots=True)
class EventDraft:
    raw: RawEvent
    ctx: RequestContext
    ts_ms: int
    address: str
    user_agent: str
    page: PageUrl  # the parse_url step replaces draft()'s placeholder
    browser: str = ""
    browser_version: str = ""
    os: str = ""
    os_version: str = ""
    device: str = ""
    source: str = "direct"
    channel: str = "direct"
    referrer_host: str = ""
    geo: Geo = _NO_GEO
    visitor_id: int = 0
    session_id: int = 0
    session_start_ms: int = 0
    dedup_key: int | None = None

    def to_row(self) -> EventRow:
        raw = self.raw
        ctx = self.ctx
        page = self.page
        geo = self.geo
        received = ctx.received_text
        if not received:
            received = ctx.received_text = ch_time(ctx.received_ms)
        ts = received if self.ts_ms == ctx.received_ms else ch_time(self.ts_ms)
        start_ms = self.session_start_ms
        if not start_ms or start_ms == self.ts_ms:
            start = ts
        elif ctx.start_memo[0] == start_ms:
            start = ctx.start_memo[1]
        else:
            start = ch_time(start_ms)
            ctx.start_memo = (start_ms, start)
        q = page.query
        if q:
            utm = (
                q.get("utm_source", "").lower(),
                q.get("utm_medium", "").lower(),
                q.get("utm_campaign", ""),
                q.get("utm_content", ""),
                q.get("utm_term", ""),
                page.click_id,
            )
        else:
            utm = _NO_UTM
        # Positional, in the order of EventRow's fields (cheaper than 30 keywords): a test
        # (tests/test_schema.py) checks each column gets its value.
        return EventRow(
            ctx.project.id,
            ts,
            received,
            raw.event_id or "",
            raw.name,
            self.session_id,
            self.visitor_id,
            page.hostname,
            page.path,
            raw.url,
            raw.referrer or "",
            self.referrer_host,
            self.source,
            self.channel,
            *utm,
            raw.properties,
            self.browser,
            self.browser_version,
            self.os,
            self.os_version,
            self.device,
            raw.screen or 0,
            geo.country,
            geo.region,
            geo.city,
            start,
        )


Step = Callable[[EventDraft], DropReason | None]


class Pipeline:
    """The ordered enrichment steps, with the state some of them keep."""

    def __init__(
        self,
        *,
        salts: identity.Salts,
        sessions: identity.SessionTracker,
        event_ids: EventIdFilter,
        geo: GeoLookup,
        data_centres: DataCentreRanges | None = None,
    ) -> None:
        self.salts = salts
        self.sessions = sessions
        self.event_ids = event_ids
        self.geo = geo
        self.data_centres = data_centres
        self.steps: list[tuple[str, Step]] = [
            ("parse_url", self.parse_url),
            ("drop_bots", self.drop_bots),
            *([("drop_data_centres", self.drop_data_centres)] if data_centres else []),
            ("drop_excluded", self.drop_excluded),
            ("drop_duplicates", self.drop_duplicates),
            ("enrich_user_agent", self.enrich_user_agent),
            ("attribute_source", self.attribute_source),
            ("locate", self.locate),
            ("identify", self.identify),
        ]
        self._run_steps = tuple(step for _, step in self.steps)
        # without the steps several nodes run in Redis (svc.ingestion.shared_identity)
        self._local_steps = tuple(
            step for name, step in self.steps if name not in ("drop_duplicates", "identify")
        )

    def warm_up(self) -> None:
        """Load what the steps load lazily (geo data, user-agent rules), so that the first
        requests do not pay for it. Blocking: call it in a worker thread."""
        self.geo.lookup("8.8.8.8")
        parse_user_agent("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0")
        bot_reason("Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0")

    def draft(self, raw: RawEvent, ctx: RequestContext) -> EventDraft:
        # Server-side senders (secret key) may speak for their end user.
        trusted = ctx.key_kind == "secret"
        address = (raw.ip if trusted and raw.ip else None) or ctx.address
        user_agent = (raw.user_agent if trusted and raw.user_agent else None) or ctx.user_agent
        return EventDraft(
            raw=raw,
            ctx=ctx,
            ts_ms=raw.ts_ms if raw.ts_ms is not None else ctx.received_ms,
            address=address,
            user_agent=user_agent,
            page=_NO_PAGE,
        )

    def run(self, draft: EventDraft) -> DropReason | None:
        """Run the steps in order; the first reason to drop the event ends it."""
        for step in self._run_steps:
            reason = step(draft)
            if reason is not None:
                return reason
        return None

    def run_local(self, draft: EventDraft) -> DropReason | None:
        """Run the steps but ``drop_duplicates`` and ``identify`` (run for the whole request
        in Redis when nodes share it: svc.ingestion.shared_identity)."""
        for step in self._local_steps:
            reason = step(draft)
            if reason is not None:
                return reason
        return None

    # the steps ------------------------------------------------------------------------------

    @staticmethod
    def parse_url(d: EventDraft) -> DropReason | None:
        d.page = parse_page_url(d.raw.url)
        return None

    @staticmethod
    def drop_bots(d: EventDraft) -> DropReason | None:
        # A server-side sender is not judged by its own user agent, only by one it passes on.
        if d.ctx.key_kind == "secret" and not d.raw.user_agent:
            return None
        reason = bot_reason(d.user_agent)
        if reason is None:
            return None
        return _BOT_REASONS.get(reason, DropReason.BOT)

    def drop_data_centres(self, d: EventDraft) -> DropReason | None:
        # The address checked is the client's (an edge's signed one: svc.http.edge_auth) or
        # the one a server-side sender passes on; never a server-side sender's own, which is
        # in a data centre more often than not.
        ctx = d.ctx
        if ctx.key_kind == "secret" and not d.raw.ip:
            return None
        ranges = self.data_centres
        if ranges is None or not d.address or ctx.project.options.get(KEEP_DATA_CENTRES):
            return None
        return DropReason.DATA_CENTRE if ranges.contains(d.address) else None

    @staticmethod
    def drop_excluded(d: EventDraft) -> DropReason | None:
        ctx = d.ctx
        if not ctx.project.options:
            return None
        ex = ctx.exclusions
        if ex is None:
            ex = ctx.exclusions = exclusions_of(ctx.project)
        if ex.addresses and d.address and ex.excludes_address(d.address):
            return DropReason.EXCLUDED_ADDRESS
        if ex.paths is not None and ex.excludes_path(d.page.path):
            return DropReason.EXCLUDED_PATH
        if ex.own_domains is not None and d.page.hostname and ex.foreign(d.page.hostname):
            return DropReason.FOREIGN_HOSTNAME
        return None

    def drop_duplicates(self, d: EventDraft) -> DropReason | None:
        event_id = d.raw.event_id
        if not event_id:
            return None
        project_id = d.ctx.project.id
        if not self.event_ids.reserve(project_id, event_id, d.ctx.received_ms):
            return DropReason.DUPLICATE_EVENT_ID
        d.dedup_key = EventIdFilter.key(project_id, event_id)
        return None

    @staticmethod
    def enrich_user_agent(d: EventDraft) -> DropReason | None:
        if d.user_agent:
            info = parse_user_agent(d.user_agent)
            d.browser, d.browser_version = info.browser, info.browser_version
            d.os, d.os_version, d.device = info.os, info.os_version, info.device
        client = d.raw.client
        if client is not None and d.ctx.key_kind == "secret":
            get = client.get
            d.browser = get("browser", d.browser)
            d.browser_version = get("browserVersion", d.browser_version)
            d.os = get("os", d.os)
            d.os_version = get("osVersion", d.os_version)
            d.device = get("device", d.device).lower()
        if not d.device and d.raw.screen:
            d.device = device_from_screen(d.raw.screen)
        return None

    @staticmethod
    def attribute_source(d: EventDraft) -> DropReason | None:
        a = attribute(d.page.query, d.raw.referrer, d.page.hostname, d.ctx.project.domains)
        d.source, d.channel, d.referrer_host = a.source, a.channel, a.referrer_host
        return None

    def locate(self, d: EventDraft) -> DropReason | None:
        client = d.raw.client
        if client is not None and d.ctx.key_kind == "secret" and "country" in client:
            d.geo = Geo(client["country"].upper(), client.get("region", ""), client.get("city", ""))
        elif d.ctx.edge_geo is not None and d.address == d.ctx.address:
            d.geo = d.ctx.edge_geo
        elif d.address:
            d.geo = self.geo.lookup(d.address)
        return None

    def identify(self, d: EventDraft) -> DropReason | None:
        ctx = d.ctx
        project_id = ctx.project.id
        now = ctx.received_ms
        salt = self.salts.today(now)
        visitor, ctx.visitor_memo = identity.remembered_visitor_id(
            ctx.visitor_memo, salt, project_id, d.address, d.user_agent
        )
        if d.raw.name in MEASUREMENTS:  # a page measurement: joins, never starts or extends
            return self._identify_measurement(d, visitor)
        if d.raw.session_id:  # the client's session: its start and its first event's person
            sid = identity.client_session_id(project_id, d.raw.session_id)
            d.session_id = sid
            start, person = self.sessions.client_session(sid, d.ts_ms, project_id, visitor, now)
            d.session_start_ms = start
            d.visitor_id = identity.stored_visitor_id(person, start)
            return None
        if not self.sessions.has_active(project_id, visitor, d.ts_ms):
            # A session that began before midnight goes on under yesterday's visitor id.
            before = identity.visitor_id(
                self.salts.yesterday(now), project_id, d.address, d.user_agent
            )
            if self.sessions.has_active(project_id, before, d.ts_ms):
                visitor = before
        d.session_id, d.session_start_ms = self.sessions.assign(project_id, visitor, d.ts_ms, now)
        d.visitor_id = identity.stored_visitor_id(visitor, d.session_start_ms)
        return None

    def _identify_measurement(self, d: EventDraft, visitor: int) -> DropReason | None:
        """A page measurement (``engagement``, ``web_vitals``: svc.schema.measurements) takes
        the session of the page view it describes, sent when that page is left, maybe after
        the session's timeout: the visitor's (or the client's) live session whatever its idle
        time, under today's visitor hash or yesterday's. It never starts a session nor moves
        its last event; without a live session it gets a session id of its own (its page
        view's session was forgotten: after a restart past the timeout), which no session
        count reads (the sessions' tables leave page measurements out)."""
        project_id = d.ctx.project.id
        if d.raw.session_id:
            sid = identity.client_session_id(project_id, d.raw.session_id)
            start = self.sessions.client_start_of(sid)
        else:
            found = self.sessions.live(project_id, visitor)
            if found is None:
                before = identity.visitor_id(
                    self.salts.yesterday(d.ctx.received_ms), project_id, d.address, d.user_agent
                )
                found = self.sessions.live(project_id, before)
                if found is not None:
                    visitor = before
            sid, start = found if found is not None else (0, None)
        if start is None:
            sid = sid or identity.derived_session_id(visitor, d.ts_ms)
            start = d.ts_ms
        d.session_id, d.session_start_ms = sid, start
        d.visitor_id = identity.stored_visitor_id(visitor, start)
        return None
