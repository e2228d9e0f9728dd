"""Plausible's CSV export rebuilt as svc events.

Plausible exports aggregates per day, not events (its ``export_queries``): ``imported_visitors``
(visits, page views, bounces, total visit duration, visitors), ``imported_pages`` (page views
per page), ``imported_custom_events`` (events per goal name) and the session tables
``imported_sources`` (per source, referrer and UTM fields), ``imported_devices``,
``imported_browsers``, ``imported_operating_systems``, ``imported_locations`` and
``imported_entry_pages``, each with the visits, visitors, page views, bounces and visit
duration of the sessions of each value.

Each day is rebuilt as sessions by :mod:`svc.imports.plausible_sessions`: as many as the day's
visits, each with a source, device, browser, system, country and entry page, so that every
session table's visits and bounces per value come out as Plausible had them, and the page
views and visit duration per source and per device too (the other tables' as close as the
export lets tell). The pages are dealt out from ``imported_pages`` (each session starting on
its entry page), so page views per page are Plausible's. Sessions are spread over the day in
the project's time zone. Custom events join sessions that did not bounce (first those of one
page view, which an event keeps from being a bounce). Plausible's screen size ``Laptop`` is
svc's ``desktop``.

What the export does not hold is not real: combinations of two dimensions (source *and*
country), exit pages (``imported_exit_pages`` is recognised but not used) and the hours of the
day. Plausible's city ids (GeoNames numbers) are not names and are left out.

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

from svc.imports.plausible_sessions import Session, Stat, rebuild
from svc.imports.rows import Item, Refusal, Row, Source, event_id_of

UTM = ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
BROWSERS = {"Microsoft Edge": "Edge", "Samsung Browser": "Samsung Internet", "Mobile App": ""}
OSES = {"Mac": "macOS", "GNU/Linux": "Linux", "(not set)": ""}
NONE = ("", "(none)", "(not set)", "Direct / None")
DEVICES = {"laptop": "desktop"}  # Plausible's screen sizes as svc's device classes

#: The session tables, by the dimension of the rebuilt sessions they name.
DIMENSIONS = {
    "sources": "source",
    "devices": "device",
    "browsers": "browser",
    "operating_systems": "os",
    "locations": "location",
    "entry_pages": "entry",
}
#: Each dimension's value for the sessions its table does not name.
BLANKS: dict[str, Any] = {
    "source": ("",) * (2 + len(UTM)),
    "device": "",
    "browser": ("", ""),
    "os": ("", ""),
    "location": ("", ""),
    "entry": None,
}

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
    total: Stat | None = None  # imported_visitors
    tables: dict[str, dict[Any, Stat]] = field(default_factory=dict)  # session tables
    pages: Counter[tuple[str, str]] = field(default_factory=Counter)
    custom: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  # for the day's digest

    @property
    def digest(self) -> str:
        return hashlib.blake2b("\n".join(sorted(self.rows)).encode(), digest_size=8).hexdigest()

    def totals(self) -> Stat:
        """The day's totals: imported_visitors', else the largest of the other tables'."""
        if self.total is not None:
            return self.total
        out = Stat()
        for table in self.tables.values():
            sums = Stat()
            for stat in table.values():
                sums.add(stat)
            for name in ("visits", "visitors", "pageviews", "bounces", "duration"):
                setattr(out, name, max(getattr(out, name), getattr(sums, name)))
        out.pageviews = max(out.pageviews, sum(self.pages.values()))
        if not out.visits:
            out.visits = out.pageviews  # page views alone: a session each
        return out


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


def _stat(r: dict[str, str], visits: str = "visits") -> Stat:
    return Stat(
        visits=_n(r.get(visits)),
        visitors=_n(r.get("visitors")),
        pageviews=_n(r.get("pageviews")),
        bounces=_n(r.get("bounces")),
        duration=_n(r.get("visit_duration")),
    )


def _key(table: str, r: dict[str, str]) -> Any:
    """A row's value in a session table, in svc's terms."""
    if table == "sources":
        return (r.get("source", ""), r.get("referrer", ""), *(r.get(u, "") for u in UTM))
    if table == "locations":
        return (r.get("country", "").upper(), r.get("region", ""))
    if table == "devices":
        device = r.get("device", "").lower()
        return DEVICES.get(device, device)
    if table == "browsers":
        return (r.get("browser", ""), r.get("browser_version", ""))
    if table == "operating_systems":
        return (r.get("operating_system", ""), r.get("operating_system_version", ""))
    page = r.get("entry_page") or "/"
    return page if page.startswith("/") else "/" + page


def _add(day: Day, table: str, r: dict[str, str]) -> None:
    if table == "visitors":
        total = day.total or Stat()
        total.add(_stat(r))
        day.total = total
    elif table == "pages":
        page = r.get("page") or "/"
        day.pages[(r.get("hostname", ""), page if page.startswith("/") else "/" + page)] += _n(
            r.get("pageviews")
        )
    elif table in DIMENSIONS:
        stat = _stat(r, "entrances" if table == "entry_pages" else "visits")
        day.tables.setdefault(DIMENSIONS[table], {}).setdefault(_key(table, r), Stat()).add(stat)
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


def _sessions(day: Day) -> list[Session]:
    total = day.totals()
    if total.pageviews == 0:
        total = Stat()
    return rebuild(day.tables, total, BLANKS)


def count(days: dict[date, Day]) -> int:
    total = 0
    for day in days.values():
        sessions = _sessions(day)
        custom = sum(c[3] for c in day.custom)
        total += sum(s.pageviews for s in sessions) + custom
    return total


def rows(days: dict[date, Day], tz: str, label: str) -> Iterator[Item]:
    zone = ZoneInfo(tz)
    for d in sorted(days):
        yield from _day_rows(days[d], zone, label)


def _day_rows(day: Day, zone: ZoneInfo, label: str) -> Iterator[Item]:
    sessions = _sessions(day)
    n = len(sessions)
    start = datetime.combine(day.day, time(0), zone)
    end = datetime.combine(day.day + timedelta(days=1), time(0), zone)
    start_ms = int(start.timestamp() * 1000)
    length_s = int((end - start).total_seconds())
    digest = day.digest
    where = f"{label}:{day.day.isoformat()}"
    host = _main_host(day)
    pageviews = sum(s.pageviews for s in sessions)

    # custom events join the sessions that did not bounce, first those of one page view
    # (which a custom event keeps from being a bounce)
    targets = sorted(
        (i for i, s in enumerate(sessions) if not s.bounce),
        key=lambda i: (sessions[i].pageviews > 1, i),
    )
    extra_sessions: list[list[tuple[str, str, str, int]]] = []
    cursor = 0
    for index, (name, link, path, events, _visitors) in enumerate(day.custom):
        for k in range(events):
            item = (name, link, path, index * 1_000_000 + k)
            if targets:
                sessions[targets[cursor % len(targets)]].custom.append(item)
                cursor += 1
            else:
                extra_sessions.append([item])

    pages = Counter(day.pages)
    by_path: dict[str, list[tuple[str, str]]] = {}
    for page_key in sorted(pages):
        by_path.setdefault(page_key[1], []).append(page_key)
    firsts: list[tuple[str, str] | None] = []
    for s in sessions:
        entry = s.values.get("entry")
        page = None
        if entry is not None:
            page = _page_of(entry, pages, by_path, host)
            if pages.get(page, 0) > 0:
                pages[page] -= 1
        firsts.append(page)
    rest = iter(_deal(+pages, pageviews))
    fallback = _deal(day.pages, 1)[0] if day.pages else (host, "/")

    for i, s in enumerate(sessions):
        n_events = s.pageviews + len(s.custom)
        begin = i * length_s // max(n, 1)
        # its events in order, 1 ms apart at least (a visit of 0 s keeps its first page)
        span = max(1000 * min(s.duration, max(0, length_s - 1 - begin)), n_events - 1)
        times = [
            start_ms + 1000 * begin + (span * j // (n_events - 1) if n_events > 1 else 0)
            for j in range(n_events)
        ]
        brw, system, loc = s.values["browser"], s.values["os"], s.values["location"]
        fields = {
            "device": s.values["device"],
            "browser": BROWSERS.get(brw[0], brw[0]),
            "browser_version": brw[1],
            "os": OSES.get(system[0], system[0]),
            "os_version": system[1],
            "country": loc[0],
            "region": loc[1],
            "city": "",
        }
        source = s.values["source"]
        session, visitor = f"{day.day}:{i}", f"{day.day}:v{s.visitor}"
        pvs: list[tuple[str, str]] = []
        for j in range(s.pageviews):
            page = firsts[i] if j == 0 and firsts[i] is not None else next(rest, None)
            pvs.append(page or fallback)
        slot = 0
        for j, (page_host, path) in enumerate(pvs):
            url = _url(page_host or host, path)
            referrer, hint = "", ""
            if j == 0:
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
                for name, link, cpath, key in s.custom:
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
    for k, items in enumerate(extra_sessions):
        name, link, cpath, key = items[0]
        session = f"{day.day}:x{k}"
        yield _custom(
            day,
            digest,
            where,
            name,
            link,
            cpath or "/",
            key,
            host,
            start_ms + 1000 * (k * length_s // max(len(extra_sessions), 1)),
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
