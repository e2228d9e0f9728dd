"""The ingestion pipeline: an ordered list of named steps applied to each valid event.

Each step reads and fills an :class:`EventDraft`; a step that drops the event returns its one
:class:`DropReason`, and the event goes no further. The steps, in order:

1. ``parse_url``: hostname, path, kept query parameters (UTM, click ids).
2. ``drop_bots``: crawler, headless and HTTP-library user agents.
3. ``drop_excluded``: the project's excluded address ranges and paths, foreign hostnames.
4. ``drop_duplicates``: an ``eventId`` seen before.
5. ``enrich_user_agent``: browser, OS, device class.
6. ``attribute_source``: source, channel, referrer host.
7. ``locate``: country, region, city.

A server-side sender (secret key) may name the end user's client as another service recorded
it (the event's ``client``: an import's browser, system, device and location); what it names
replaces what steps 5 and 7 would derive.
8. ``identify``: visitor and session ids.

The spool append follows in :mod:`svc.ingestion.service`.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import itertools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from svc.ingestion import identity
from svc.ingestion.dedup import EventIdFilter
from svc.ingestion.enrich.bots import bot_reason
from svc.ingestion.enrich.geo import Geo, GeoLookup
from svc.ingestion.enrich.sources import attribute
from svc.ingestion.enrich.useragent import device_from_screen, parse_user_agent
from svc.ingestion.outcomes import DropReason
from svc.ingestion.urls import PageUrl, parse_page_url
from svc.meta.store import Project
from svc.schema.measurements import MEASUREMENTS
from svc.schema.row import EventRow
from svc.schema.wire import RawEvent
from svc.storage.events import ch_time

log = logging.getLogger(__name__)

_BOT_REASONS = {
    "missing_user_agent": DropReason.MISSING_USER_AGENT,
    "headless": DropReason.HEADLESS,
    "http_library": DropReason.HTTP_LIBRARY,
}


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
    ) -> None:
        self.salts = salts
        self.sessions = sessions
        self.event_ids = event_ids
        self.geo = geo
        self.steps: list[tuple[str, Step]] = [
            ("parse_url", self.parse_url),
            ("drop_bots", self.drop_bots),
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


# the project's exclusions, compiled once per project version --------------------------------


class Exclusions:
    """A project's ``options`` as the ``drop_excluded`` step reads them: the excluded path
    globs as RE2 automata of ``GLOBS_PER_AUTOMATON`` globs each (a check is linear in the
    path's length; see there), the excluded address ranges as a set of network numbers per
    prefix length (a check costs one set lookup per distinct prefix length, whatever the
    number of ranges), the project's domains as a set (a check walks the host's suffixes)."""

    __slots__ = ("addresses", "own_domains", "paths")

    def __init__(self, options: dict[str, Any], domains: Sequence[str]) -> None:
        ranges = options.get("excludeAddresses") or ()
        tables: dict[int, dict[int, set[int]]] = {4: {}, 6: {}}
        for r in ranges:
            try:
                net = ipaddress.ip_network(str(r), strict=False)
            except ValueError:
                continue  # refused when set (svc.http.projects); never fatal here
            shift = net.max_prefixlen - net.prefixlen
            tables[net.version].setdefault(shift, set()).add(int(net.network_address) >> shift)
        # (version -> ((shift, networks), ...)), the widest ranges first
        self.addresses: dict[int, tuple[tuple[int, frozenset[int]], ...]] = {
            version: tuple((shift, frozenset(nets)) for shift, nets in sorted(table.items()))[::-1]
            for version, table in tables.items()
            if table
        }
        globs = [g for g in options.get("excludePaths") or () if isinstance(g, str)]
        # More globs than the bound (stored before it) are all kept, in at most 10 automata
        # (their cost: docs/benchmarks.md, Figures behind the code).
        size = max(GLOBS_PER_AUTOMATON, -(-len(globs) // 10))
        if len(globs) > MAX_EXCLUDED_PATHS:
            log.warning(
                "a project has %d excluded path globs, stored before at most %d were "
                "accepted: keep them few (each of its events is checked against all)",
                len(globs),
                MAX_EXCLUDED_PATHS,
            )
        self.paths: tuple[Any, ...] | None = (
            tuple(_compile_globs(globs[i : i + size]) for i in range(0, len(globs), size))
            if globs
            else None
        )
        self.own_domains: frozenset[str] | None = (
            frozenset(domains) if options.get("onlyOwnDomains") and domains else None
        )

    def excludes_address(self, address: str) -> bool:
        try:
            addr = ipaddress.ip_address(address)
        except ValueError:
            return False
        table = self.addresses.get(addr.version)
        if not table:
            return False
        n = int(addr)
        return any((n >> shift) in nets for shift, nets in table)

    def excludes_path(self, path: str) -> bool:
        for automaton in self.paths or ():
            try:
                if automaton.fullmatch(path) is not None:
                    return True
            except UnicodeEncodeError:  # a lone surrogate: read as a replacement character
                return self.excludes_path(path.encode("utf-8", "replace").decode())
        return False

    def foreign(self, host: str) -> bool:
        """Whether ``host`` is neither one of the domains nor a subdomain of one."""
        domains = self.own_domains
        if domains is None:
            return False
        while True:
            if host in domains:
                return False
            dot = host.find(".")
            if dot < 0:
                return True
            host = host[dot + 1 :]


_NEVER = r"[^\x00-\x{10FFFF}]"  # an empty class: matches nothing


def glob_wildcards(glob: str) -> int:
    """How many wildcards a glob has: each run of ``*``, each ``?`` and each ``[``."""
    runs = sum(1 for i, c in enumerate(glob) if c == "*" and (i == 0 or glob[i - 1] != "*"))
    return runs + glob.count("?") + glob.count("[")


def glob_regex(glob: str) -> str:
    """A path glob as an RE2 expression matching the whole path, with the meaning of
    :func:`fnmatch.fnmatchcase`: ``*`` any characters, ``?`` one, ``[...]`` one of a set
    (``[!...]`` none of it; ``a-z`` a range; a ``[`` without its ``]`` itself), anything
    else itself. Every other character is written as ``\\x{...}``: nothing in a glob is
    read as RE2 syntax."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        i += 1
        if c == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and glob[j] == "!":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(_literal("["))
                continue
            out.append(_char_class(glob[i - 1 : j + 1]))
            i = j + 1
        else:
            out.append(_literal(c))
    return "".join(out)


def _literal(c: str) -> str:
    return c if c.isascii() and (c.isalnum() or c == "/") else f"\\x{{{ord(c):x}}}"


def _char_class(bracket: str) -> str:
    """``[...]`` as the set of characters fnmatch reads in it (its ranges, ``!``, and its
    quirks: ``[z-a]`` matches nothing), written as RE2 ranges. Which characters a class
    holds changes only at a character it names or the one after, so fnmatch's own
    expression is asked about those alone."""
    one = re.compile(fnmatch.translate(bracket))
    points = sorted({0, 0x110000} | {o for c in bracket for o in (ord(c), ord(c) + 1)})
    ranges: list[tuple[int, int]] = []
    for low, end in itertools.pairwise(points):
        if low > 0x10FFFF or not one.match(chr(low)):
            continue
        if ranges and ranges[-1][1] == low - 1:
            ranges[-1] = (ranges[-1][0], end - 1)
        else:
            ranges.append((low, end - 1))
    if not ranges:
        return _NEVER
    return "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]"


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a large set (stored before the bounds) runs without a DFA
    return options


_RE2_OPTIONS = _re2_options()

# The bounds of a project's excluded path globs (svc.http.projects refuses more) and how
# they are checked. RE2 builds an automaton's states as paths need them, each a set of
# positions in every glob: with many globs of several wildcards, distinct long paths keep
# needing new states and a check costs nearly what RE2's NFA does: automata of 10 globs
# bound that cost, and few globs of few wildcards keep it small (what paths made to be
# costly and real paths cost: docs/benchmarks.md, Figures behind the code).
MAX_EXCLUDED_PATHS = 50
MAX_PATH_GLOB_LENGTH = 256
MAX_GLOB_WILDCARDS = 4  # runs of *, each ? and each [
GLOBS_PER_AUTOMATON = 10


def _compile_globs(globs: list[str]) -> Any:
    """One RE2 expression for every glob (a glob RE2 refuses, which none should be, is left
    out and logged rather than failing every event of the project)."""
    parts = [glob_regex(g) for g in globs]
    try:
        return re2.compile("(?s)(?:" + "|".join(parts) + ")", _RE2_OPTIONS)
    except re2.error:
        kept = []
        for glob, part in zip(globs, parts, strict=True):
            try:
                re2.compile(part, _RE2_OPTIONS)
            except re2.error:
                log.warning("excluded path glob %r left out: RE2 cannot compile it", glob)
            else:
                kept.append(part)
        return re2.compile("(?s)(?:" + "|".join(kept or [_NEVER]) + ")", _RE2_OPTIONS)


# project id -> (options, domains, updated_at, compiled): the options dict of the project
# record the key cache hands out is the same object for every request, so a lookup is one
# identity check; a record loaded again with the same version (same updated_at and content)
# reuses the compiled form too.
_COMPILED: dict[str, tuple[dict[str, Any], tuple[str, ...], int, Exclusions]] = {}
_COMPILED_MAX = 10_000


def exclusions_of(project: Project) -> Exclusions:
    """The project's compiled exclusions: compiled once per version of the project."""
    options, domains = project.options, project.domains
    known = _COMPILED.get(project.id)
    if known is not None:
        if known[0] is options and known[1] is domains:
            return known[3]
        if known[2] == project.updated_at and known[0] == options and known[1] == domains:
            _COMPILED[project.id] = (options, domains, known[2], known[3])
            return known[3]
    compiled = Exclusions(options, domains)
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[project.id] = (options, domains, project.updated_at, compiled)
    return compiled
