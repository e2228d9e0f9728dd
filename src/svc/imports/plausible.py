"""Plausible's CSV export rebuilt as svc events.

Plausible exports aggregates per day, not events: ``imported_visitors`` (visits, page views,
bounces, total visit duration, visitors), ``imported_pages`` (page views per page),
``imported_entry_pages``, ``imported_sources`` (visits per source, referrer and UTM fields),
``imported_locations``, ``imported_devices``, ``imported_browsers``,
``imported_operating_systems`` and ``imported_custom_events`` (events per goal name).

For each day the import makes as many sessions as the day had visits, ``bounces`` of them with
one page view and the others with at least two, holding exactly the day's page views; the pages
are dealt out from ``imported_pages`` (each session starting on a page of
``imported_entry_pages``), and sources, countries, devices, browsers and operating systems from
their tables, by visits; the visit duration is shared among the sessions that did not bounce;
sessions are spread over the day in the project's time zone and shared among the day's visitors.
Custom events join sessions that did not bounce (so the bounces stay right).

So the day's visitors, sessions, page views, bounce rate and average duration, and its
breakdowns by page (page views), entry page, source, country, device, browser and system (by
sessions) come out as Plausible had them. What the export does not hold is not real:
combinations of two dimensions (source *and* country), exit pages (``imported_exit_pages`` is
recognised but not used) and the hours of the day. Plausible's city ids (GeoNames numbers) are
not names and are left out.

Every event's ``eventId`` is a hash of the day, the content of the day's rows and its place in
the day, so the same export imported again is skipped.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from svc.imports.rows import Item, Refusal, Row, Source, event_id_of

UTM = ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
BROWSERS = {"Microsoft Edge": "Edge", "Samsung Browser": "Samsung Internet", "Mobile App": ""}
OSES = {"Mac": "macOS", "GNU/Linux": "Linux", "(not set)": ""}
NONE = ("", "(none)", "(not set)", "Direct / None")

#: The file names of the export's tables, and the columns that tell each table apart.
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


@dataclass
class Day:
    day: date
    visits: int | None = None
    visitors: int = 0
    pageviews: int | None = None
    bounces: int = 0
    duration: int = 0
    pages: Counter[tuple[str, str]] = field(default_factory=Counter)
    entries: Counter[str] = field(default_factory=Counter)
    sources: Counter[tuple[str, ...]] = field(default_factory=Counter)
    locations: Counter[tuple[str, str]] = field(default_factory=Counter)
    devices: Counter[str] = field(default_factory=Counter)
    browsers: Counter[tuple[str, str]] = field(default_factory=Counter)
    oses: Counter[tuple[str, str]] = field(default_factory=Counter)
    custom: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  # for the day's digest

    @property
    def digest(self) -> str:
        return hashlib.blake2b("\n".join(sorted(self.rows)).encode(), digest_size=8).hexdigest()


def _n(value: Any) -> int:
    if value in (None, ""):
        return 0
    return max(0, int(float(value)))


def read(sources: list[Source]) -> tuple[dict[date, Day], list[Refusal]]:
    """Every table of the export, by day."""
    days: dict[date, Day] = {}
    refused: list[Refusal] = []
    for source in sources:
        table = source.kind.split(":", 1)[1]
        with source.open() as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""))
            for number, rec in enumerate(reader, 2):
                where = f"{source.label}:{number}"
                try:
                    d = date.fromisoformat((rec.get("date") or "").strip())
                    day = days.setdefault(d, Day(d))
                    _add(day, table, {k: (v or "").strip() for k, v in rec.items() if k})
                except (ValueError, TypeError) as exc:
                    refused.append(Refusal(where, f"unreadable {table} row: {exc}"))
                    continue
                day.rows.append(
                    table + "\x1f" + "\x1f".join(f"{k}={v}" for k, v in sorted(rec.items()))
                )
    return days, refused


def _add(day: Day, table: str, r: dict[str, str]) -> None:
    visits = _n(r.get("visits"))
    if table == "visitors":
        day.visits = (day.visits or 0) + _n(r.get("visits"))
        day.visitors += _n(r.get("visitors"))
        day.pageviews = (day.pageviews or 0) + _n(r.get("pageviews"))
        day.bounces += _n(r.get("bounces"))
        day.duration += _n(r.get("visit_duration"))
    elif table == "pages":
        page = r.get("page") or "/"
        day.pages[(r.get("hostname", ""), page if page.startswith("/") else "/" + page)] += _n(
            r.get("pageviews")
        )
    elif table == "entry_pages":
        day.entries[r.get("entry_page") or "/"] += _n(r.get("entrances"))
    elif table == "sources":
        key = (r.get("source", ""), r.get("referrer", ""), *(r.get(u, "") for u in UTM))
        day.sources[key] += visits
    elif table == "locations":
        day.locations[(r.get("country", "").upper(), r.get("region", ""))] += visits
    elif table == "devices":
        day.devices[r.get("device", "").lower()] += visits
    elif table == "browsers":
        day.browsers[(r.get("browser", ""), r.get("browser_version", ""))] += visits
    elif table == "operating_systems":
        day.oses[(r.get("operating_system", ""), r.get("operating_system_version", ""))] += visits
    elif table == "custom_events":
        name = r.get("name", "")
        if name:
            day.custom.append(
                (
                    name,
                    r.get("link_url", ""),
                    r.get("path", ""),
                    _n(r.get("events")),
                    _n(r.get("visitors")),
                )
            )
    # exit_pages: implied by the rest


def _deal(counts: Counter[Any], n: int) -> list[Any]:
    """``n`` values dealt from a multiset, most frequent first (deterministic)."""
    out: list[Any] = []
    for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        if len(out) >= n:
            break
        out += [value] * min(count, n - len(out))
    return out


def _sessions(day: Day) -> tuple[int, int, int]:
    """(sessions, page views, bounces) of a day, from the visitors table or the others."""
    pageviews = day.pageviews if day.pageviews is not None else sum(day.pages.values())
    visits = day.visits
    if visits is None:
        visits = (
            max(
                sum(day.entries.values()),
                sum(day.sources.values()),
                sum(day.locations.values()),
                sum(day.devices.values()),
            )
            or pageviews
        )
    if pageviews == 0:
        visits = 0
    visits = min(visits, pageviews) if pageviews else 0
    return visits, pageviews, min(day.bounces, visits)


def count(days: dict[date, Day]) -> int:
    total = 0
    for day in days.values():
        sessions, pageviews, _ = _sessions(day)
        total += max(pageviews, sessions) + sum(c[3] for c in day.custom)
    return total


def rows(days: dict[date, Day], tz: str, label: str) -> Iterator[Item]:
    zone = ZoneInfo(tz)
    for d in sorted(days):
        yield from _day_rows(days[d], zone, label)


def _day_rows(day: Day, zone: ZoneInfo, label: str) -> Iterator[Item]:
    sessions, pageviews, bounces = _sessions(day)
    start = datetime.combine(day.day, time(0), zone)
    end = datetime.combine(day.day + timedelta(days=1), time(0), zone)
    start_ms = int(start.timestamp() * 1000)
    length_s = int((end - start).total_seconds())
    digest = day.digest
    where = f"{label}:{day.day.isoformat()}"
    host = _main_host(day)

    # page views per session: bounces 1, the others at least 2
    counts = [1] * sessions
    extra = pageviews - sessions
    movers = list(range(bounces, sessions)) or list(range(sessions))
    for i in movers:
        if extra <= 0 or bounces == sessions:
            break
        counts[i] += 1
        extra -= 1
    if extra > 0 and movers:
        q, r = divmod(extra, len(movers))
        for k, i in enumerate(movers):
            counts[i] += q + (1 if k < r else 0)
    durations = [0] * sessions
    long_sessions = [i for i in range(sessions) if counts[i] > 1]
    if long_sessions and day.duration:
        q, r = divmod(day.duration, len(long_sessions))
        for k, i in enumerate(long_sessions):
            durations[i] = q + (1 if k < r else 0)

    # custom events join the sessions that did not bounce
    custom_by_session: dict[int, list[tuple[str, str, str, int]]] = {}
    extra_sessions: list[list[tuple[str, str, str, int]]] = []
    targets = long_sessions or list(range(sessions))
    cursor = 0
    for index, (name, link, path, events, _visitors) in enumerate(day.custom):
        for k in range(events):
            item = (name, link, path, index * 1_000_000 + k)
            if targets:
                custom_by_session.setdefault(targets[cursor % len(targets)], []).append(item)
                cursor += 1
            else:
                extra_sessions.append([item])

    pages = Counter(day.pages)
    by_path: dict[str, list[tuple[str, str]]] = {}
    for page_key in sorted(pages):
        by_path.setdefault(page_key[1], []).append(page_key)
    entries = _deal(day.entries, sessions)
    firsts: list[tuple[str, str] | None] = []
    for i in range(sessions):
        page = None
        if i < len(entries):
            page = _page_of(entries[i], pages, by_path, host)
            if pages.get(page, 0) > 0:
                pages[page] -= 1
        firsts.append(page)
    rest = iter(_deal(+pages, pageviews))
    fallback = _deal(day.pages, 1)[0] if day.pages else (host, "/")
    srcs = _deal(day.sources, sessions)
    locs = _deal(day.locations, sessions)
    devs = _deal(day.devices, sessions)
    brws = _deal(day.browsers, sessions)
    oses = _deal(day.oses, sessions)
    visitors = max(1, min(day.visitors or sessions, sessions)) if sessions else 1

    for i in range(sessions):
        n_custom = len(custom_by_session.get(i, []))
        n_events = counts[i] + n_custom
        begin = i * length_s // max(sessions, 1)
        span = min(durations[i], max(0, length_s - 1 - begin))
        times = [
            start_ms + 1000 * (begin + (span * j // (n_events - 1) if n_events > 1 else 0))
            for j in range(n_events)
        ]
        fields = {
            "device": devs[i] if i < len(devs) else "",
            "browser": BROWSERS.get(brws[i][0], brws[i][0]) if i < len(brws) else "",
            "browser_version": brws[i][1] if i < len(brws) else "",
            "os": OSES.get(oses[i][0], oses[i][0]) if i < len(oses) else "",
            "os_version": oses[i][1] if i < len(oses) else "",
            "country": locs[i][0] if i < len(locs) else "",
            "region": locs[i][1] if i < len(locs) else "",
            "city": "",
        }
        source = srcs[i] if i < len(srcs) else None
        session, visitor = f"{day.day}:{i}", f"{day.day}:v{i % visitors}"
        pvs: list[tuple[str, str]] = []
        for j in range(counts[i]):
            page = firsts[i] if j == 0 and firsts[i] is not None else next(rest, None)
            pvs.append(page or fallback)
        slot = 0
        for j, (page_host, path) in enumerate(pvs):
            url = _url(page_host or host, path)
            referrer, hint = "", ""
            if j == 0 and source is not None:
                url, referrer, hint = _with_source(url, source)
            yield Row(
                where=where,
                name="page_view",
                url=url,
                ts_ms=times[slot],
                event_id=event_id_of("plausible", day.day.isoformat(), digest, str(i), str(j)),
                referrer=referrer,
                session=session,
                visitor=visitor,
                fields=fields,
                source_hint=hint,
            )
            slot += 1
            if j == 0:
                for name, link, cpath, key in custom_by_session.get(i, []):
                    yield _custom(
                        day,
                        digest,
                        where,
                        name,
                        link,
                        cpath or path,
                        key,
                        host,
                        times[slot],
                        session,
                        visitor,
                        fields,
                    )
                    slot += 1
    for n, items in enumerate(extra_sessions):
        name, link, cpath, key = items[0]
        session = f"{day.day}:x{n}"
        yield _custom(
            day,
            digest,
            where,
            name,
            link,
            cpath or "/",
            key,
            host,
            start_ms + 1000 * (n * length_s // max(len(extra_sessions), 1)),
            session,
            session,
            {},
        )


def _custom(
    day: Day,
    digest: str,
    where: str,
    name: str,
    link: str,
    path: str,
    key: int,
    host: str,
    ts: int,
    session: str,
    visitor: str,
    fields: dict[str, str],
) -> Row:
    return Row(
        where=where,
        name=name,
        url=_url(host, path if path.startswith("/") else "/" + path),
        ts_ms=ts,
        event_id=event_id_of("plausible", day.day.isoformat(), digest, "c", str(key)),
        session=session,
        visitor=visitor,
        properties={"url": link} if link else {},
        fields=fields,
    )


def _main_host(day: Day) -> str:
    hosts: Counter[str] = Counter()
    for (host, _), n in day.pages.items():
        if host:
            hosts[host] += n
    return hosts.most_common(1)[0][0] if hosts else ""


def _page_of(
    path: str,
    pages: Counter[tuple[str, str]],
    by_path: dict[str, list[tuple[str, str]]],
    host: str,
) -> tuple[str, str]:
    """The page (host, path) an entry path stands for: one with page views left first."""
    path = path if path.startswith("/") else "/" + path
    candidates = by_path.get(path, [])
    for key in candidates:
        if pages[key] > 0:
            return key
    return candidates[0] if candidates else (host, path)


def _url(host: str, path: str) -> str:
    return f"https://{host}{path}" if host else path


def _with_source(url: str, source: tuple[str, ...]) -> tuple[str, str, str]:
    name, referrer = source[0], source[1]
    utm = [(k, v) for k, v in zip(UTM, source[2:], strict=False) if v and v not in NONE]
    if utm:
        url += ("&" if "?" in url else "?") + urlencode(utm)
    ref = ""
    if referrer and referrer not in NONE:
        ref = referrer if "://" in referrer else "https://" + referrer
    hint = name if name not in NONE and not ref and not utm else ""
    return url, ref, hint
