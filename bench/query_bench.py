"""Query speed over a big project: generate it in the store with SQL, then time the API.

1. A data directory with a project ``bench`` is made by the server itself (metadata, admin
   token, migrations); the server is stopped.
2. ``--events`` events over ``--days`` days are written DIRECTLY into the store, through
   :class:`svc.storage.events.EventStore` on that data directory, by one
   ``INSERT INTO events_in SELECT ... FROM numbers(...)`` (its views write `events` and
   the derived tables, as for the loader): about one session per 3.3 events
   (geometric lengths, 30 % one-page sessions), 60 % as many visitors as sessions (a visitor id
   lives for a day: mixed with the UTC day of its session's start, as in the service; each
   event carries its session's start, as the service stores it), events 45-75 s apart, a
   daily traffic cycle, page paths with a long tail, the first event of each session with a
   referrer and source (direct, search engines, social networks, a newsletter
   with UTM tags, a tail of referring sites), later ones internal; 15 % custom events with
   properties; browsers, systems, devices and countries in realistic shares. Deterministic
   (hashes of the row number), so every run builds the same table. The table is optimised
   (one part per monthly partition, as an old table ends up after background merges), and so
   are the sessions and session pages written from it.
3. The server is started on it (start-up time to a healthy /health with a big store), and
   GET /metrics over the last ``--days`` days is timed warm: ``--runs`` runs after two warm-up
   runs, p50/p95/max. So are the other query endpoints where they exist (404s are skipped):
   time series, breakdowns by page, source, country, browser, with and without filters.

The generated directory is kept for the next run (``--data-dir``; ``--regenerate`` to force).

``--extensions`` makes a project whose pages load the script's extensions (issue 20): of the
events after a session's first, 30 % are ``engagement`` (its time and scroll depth), 12 %
``web_vitals`` (all five vitals, spread across Google's thresholds), 2 % ``outbound``, 1 %
``download`` and 0.5 % ``404`` (from 200, 50, 30 and 100 distinct targets and pages), the page
views and custom events taking the rest in their usual proportion; and times the reports of
those events too (:data:`EXTENSION_ENDPOINTS`), which are not in the default list.

Run: ``.venv/bin/python bench/query_bench.py --events 10000000 --data-dir /tmp/svc-bench-10m``
(``--tree /tmp/before``: the server from another source tree, ``git worktree add /tmp/before
<commit>``, to time two commits one after the other on the same store).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SvcServer, http, peak_rss_bytes, rss_bytes

MARKER = "bench-dataset.json"

# Weighted choices, as arrays the SQL indexes with a uniform number (weights in percent).
SOURCES = [
    # source, referrer, referrer_host, channel, utm_source, utm_medium, weight
    ("direct", "", "", "direct", "", "", 38),
    ("google", "https://www.google.com/", "google.com", "organic_search", "", "", 27),
    ("bing", "https://www.bing.com/", "bing.com", "organic_search", "", "", 4),
    ("duckduckgo", "https://duckduckgo.com/", "duckduckgo.com", "organic_search", "", "", 3),
    ("facebook", "https://l.facebook.com/", "l.facebook.com", "organic_social", "", "", 5),
    ("twitter", "https://t.co/abc", "t.co", "organic_social", "", "", 3),
    ("linkedin", "https://www.linkedin.com/", "linkedin.com", "organic_social", "", "", 2),
    ("reddit", "https://www.reddit.com/r/x/", "reddit.com", "organic_social", "", "", 3),
    (
        "news.ycombinator.com",
        "https://news.ycombinator.com/item?id=1",
        "news.ycombinator.com",
        "referral",
        "",
        "",
        3,
    ),
    ("newsletter", "", "", "email", "newsletter", "email", 5),
    ("chatgpt.com", "https://chatgpt.com/", "chatgpt.com", "ai_assistant", "", "", 1),
]
TAIL_SITES = 6  # percent of sessions from one of 300 referring blogs
BROWSERS = [
    ("Chrome", "126", 60),
    ("Safari", "17.4", 20),
    ("Firefox", "127", 6),
    ("Edge", "124", 6),
    ("Samsung Internet", "24", 5),
    ("Opera", "110", 3),
]
SYSTEMS = [  # os, version, device, screen width
    ("Windows", "10", "desktop", 1920, 38),
    ("macOS", "10.15", "desktop", 1512, 16),
    ("iOS", "17.4", "mobile", 390, 20),
    ("Android", "14", "mobile", 412, 20),
    ("Linux", "", "desktop", 1920, 3),
    ("iPadOS", "17.4", "tablet", 820, 3),
]
COUNTRIES = [
    ("US", 30),
    ("DE", 9),
    ("GB", 8),
    ("FR", 6),
    ("IN", 6),
    ("CA", 4),
    ("NL", 3),
    ("BR", 3),
    ("ES", 3),
    ("IT", 3),
    ("JP", 3),
    ("AU", 2),
    ("PL", 2),
    ("SE", 2),
    ("CH", 2),
    ("AT", 1),
    ("BE", 1),
    ("DK", 1),
    ("NO", 1),
    ("FI", 1),
    ("IE", 1),
    ("MX", 1),
    ("KR", 1),
    ("SG", 1),
    ("ZA", 1),
    ("AR", 1),
    ("PT", 1),
    ("CZ", 1),
    ("TR", 1),
]
TOP_PATHS = ["/", "/pricing", "/features", "/docs", "/blog", "/about", "/signup", "/login"]
CUSTOM_EVENTS = ["signup", "click", "download", "outbound_link", "purchase"]


def _spread(items: list[tuple[Any, ...]]) -> list[int]:
    """Indexes (1-based) of ``items`` repeated by their weight (the last element)."""
    out: list[int] = []
    for i, item in enumerate(items, 1):
        out.extend([i] * int(item[-1]))
    return out


def _arr(values: list[Any]) -> str:
    return "[" + ",".join(json.dumps(v) if isinstance(v, str) else str(v) for v in values) + "]"


def _sq(values: list[str]) -> str:
    return "[" + ",".join("'" + v.replace("'", "\\'") + "'" for v in values) + "]"


#: With ``--extensions``: per 1000 events after a session's first, the extensions' events (the
#: rest are page views and custom events, 85 : 15 as without).
EXTENSION_SHARES = (("engagement", 300), ("web_vitals", 120), ("outbound", 20), ("download", 10),
                    ("404", 5))  # fmt: skip


def _event_name(extensions: bool) -> str:
    """The SQL of an event's name (``h``: a uniform number of 0-999 per event)."""
    plain = (
        "if(k = 0 OR cityHash64(s, k, 'kind') % 100 < 85, 'page_view', "
        f"{_sq(CUSTOM_EVENTS)}[1 + cityHash64(s, k, 'ev') % {len(CUSTOM_EVENTS)}])"
    )
    if not extensions:
        return plain
    cases, edge = [], 0
    for name, share in EXTENSION_SHARES:
        edge += share
        cases.append(f"k > 0 AND cityHash64(s, k, 'ext') % 1000 < {edge}, '{name}'")
    return f"multiIf({', '.join(cases)}, {plain})"


def _properties(extensions: bool) -> str:
    """The SQL of an event's properties by its ``name``."""
    custom = (
        "map('plan', ['free', 'pro', 'team'][1 + cityHash64(s, k, 'plan') % 3], "
        "'value', toString(cityHash64(s, k, 'value') % 200))"
    )
    if not extensions:
        return f"if(name = 'page_view', map(), {custom})"

    def u(key: str, top: int) -> str:
        return f"toString(cityHash64(s, k, '{key}') % {top})"

    return (
        "multiIf(name = 'page_view' OR name = '404', map(), "
        f"name = 'engagement', map('engaged_ms', {u('eng', 300000)}, 'scroll_pct', "
        f"{u('scroll', 101)}), "
        f"name = 'web_vitals', map('lcp', {u('lcp', 6000)}, 'fcp', {u('fcp', 4000)}, "
        f"'ttfb', {u('ttfb', 2500)}, 'inp', {u('inp', 700)}, "
        "'cls', toString(round((cityHash64(s, k, 'cls') % 400) / 1000, 3))), "
        "name = 'outbound', map('url', concat('https://partner', "
        f"{u('out', 200)}, '.example.org/')), "
        "name = 'download', map('url', concat('https://example.com/files/f', "
        f"{u('dl', 50)}, '.pdf')), {custom})"
    )


def generation_sql(
    events: int,
    days: int,
    end: datetime,
    extensions: bool = False,
    sessions: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """One INSERT ... SELECT that writes ``events`` rows ending at ``end`` (UTC); with
    ``extensions``, shares of the browser script's extensions' events among them.
    ``sessions``: how many sessions to write (by default a few more than ``events`` needs, the
    events of the last cut off; fewer: every session whole over all the days, fewer events
    than ``events``, as a small store wants)."""
    sessions = sessions or max(1, int(events / 3.3) + 1000)
    span_ms = days * 86_400_000
    start_ms = int((end - timedelta(days=days)).timestamp() * 1000)
    col = {  # column index of SOURCES
        "source": 0,
        "referrer": 1,
        "host": 2,
        "channel": 3,
        "utm_source": 4,
        "utm_medium": 5,
    }
    src = {name: [s[i] for s in SOURCES] for name, i in col.items()}
    # u(x, k): a uniform number in [0, 1) from a hash
    sql = f"""
INSERT INTO events_in (project_id, ts, received_at, event_id, name, session_id, visitor_id,
    hostname, path, url, referrer, referrer_host, source, channel, utm_source, utm_medium,
    utm_campaign, utm_content, utm_term, click_id, properties, browser, browser_version, os,
    os_version, device, screen_width, country, region, city, session_start)
SELECT
    {{project:String}},
    ts, ts, '', name, cityHash64(s, 'session'), cityHash64(v, first_day, 'visitor'),
    'example.com', path, concat('https://example.com', path,
        if(k = 0 AND src_i = 10, '?utm_source=newsletter&utm_medium=email', '')),
    if(k = 0, referrer, concat('https://example.com', prev_path)),
    if(k = 0, ref_host, ''),
    if(k = 0, source, 'direct'),
    if(k = 0, channel, 'direct'),
    if(k = 0, utm_source, ''), if(k = 0, utm_medium, ''),
    if(k = 0 AND src_i = 10, concat('weekly-', toString(s % 30)), ''), '', '', '',
    {_properties(extensions)},
    {_sq([b[0] for b in BROWSERS])}[br_i], {_sq([b[1] for b in BROWSERS])}[br_i],
    {_sq([o[0] for o in SYSTEMS])}[os_i], {_sq([o[1] for o in SYSTEMS])}[os_i],
    {_sq([o[2] for o in SYSTEMS])}[os_i], {_arr([o[3] for o in SYSTEMS])}[os_i],
    {_sq([c[0] for c in COUNTRIES])}[co_i], '', '', session_start
FROM
(
    SELECT s, k, v, day, src_i, br_i, os_i, co_i,
        fromUnixTimestamp64Milli(toInt64(
            {start_ms} + day * 86400000 + sec_of_day * 1000 + k * 45000
            + cityHash64(s, k, 'gap') % 30000), 'UTC') AS ts,
        -- the time of the session's first event, stored with each of its events as the
        -- service stores it (the session rows and their views are keyed by its day)
        fromUnixTimestamp64Milli(toInt64(
            {start_ms} + day * 86400000 + sec_of_day * 1000
            + cityHash64(s, toUInt64(0), 'gap') % 30000), 'UTC') AS session_start,
        -- its UTC day: the visitor id is mixed with it, as the service mixes a stored
        -- visitor id with the day of its session's start
        toDate(session_start) AS first_day,
        {_event_name(extensions)} AS name,
        if(name = '404', concat('/old/page-', toString(cityHash64(s, k, '404') % 30)),
           page_of(s, k)) AS path,
        page_of(s, k - 1) AS prev_path,
        {_sq(src["source"])}[src_i] AS source0,
        if(src_i = 0, concat('blog', toString(cityHash64(s, 'blog') % 300), '.example.net'),
           source0) AS source,
        if(src_i = 0, concat('https://', source, '/post'),
           {_sq(src["referrer"])}[src_i]) AS referrer,
        if(src_i = 0, source, {_sq(src["host"])}[src_i]) AS ref_host,
        if(src_i = 0, 'referral', {_sq(src["channel"])}[src_i]) AS channel,
        if(src_i = 0, '', {_sq(src["utm_source"])}[src_i]) AS utm_source,
        if(src_i = 0, '', {_sq(src["utm_medium"])}[src_i]) AS utm_medium
    FROM
    (
        SELECT number AS s,
            cityHash64(number, 'visitor') % {max(1, int(sessions * 0.6))} AS v,
            toUInt32(intDiv(number * {days}, {sessions})) AS day,
            -- a daily cycle: more sessions in the (UTC) afternoon
            toUInt32(86399 * pow(cityHash64(number, 'tod') / 18446744073709551616.0, 0.8))
                AS sec_of_day,
            -- 1 + geometric(0.7): mean 3.3 events, 30 % one-event sessions
            1 + toUInt32(floor(log(1 - cityHash64(number, 'len') / 18446744073709551616.0)
                / log(0.7))) AS n,
            toUInt8(if(cityHash64(number, 'tail') % 100 < {TAIL_SITES}, 0,
                {_arr(_spread(SOURCES))}[1 + cityHash64(number, 'src') % 100])) AS src_i,
            {_arr(_spread(BROWSERS))}[1 + cityHash64(v, 'br') % 100] AS br_i,
            {_arr(_spread(SYSTEMS))}[1 + cityHash64(v, 'os') % 100] AS os_i,
            {_arr(_spread(COUNTRIES))}[1 + cityHash64(v, 'co') % 100] AS co_i
        FROM numbers({sessions})
    )
    ARRAY JOIN range(least(n, 40)) AS k
    WHERE ts < fromUnixTimestamp64Milli(toInt64({start_ms + span_ms}), 'UTC')
)
LIMIT {events}
"""
    # page_of(s, k): a long-tailed page path (the top 8 pages get most views)
    page = (
        "if(cityHash64({s}, {k}, 'page') % 100 < 60, "
        f"{_sq(TOP_PATHS)}[1 + toUInt32(8 * pow(cityHash64({{s}}, {{k}}, 'top') "
        "/ 18446744073709551616.0, 2))], "
        "concat('/blog/post-', toString(toUInt32(2000 * pow(cityHash64({s}, {k}, 'tail') "
        "/ 18446744073709551616.0, 3)))))"
    )
    for args in (("s", "k"), ("s", "k - 1")):
        sql = sql.replace(f"page_of({args[0]}, {args[1]})", page.format(s=args[0], k=args[1]))
    return sql, {}


def generate(
    data_dir: Path,
    events: int,
    days: int,
    extensions: bool = False,
    sessions: int | None = None,
) -> dict[str, Any]:
    """Make the data directory: project via the server, events via EventStore + SQL
    (``sessions`` as :func:`generation_sql` takes it)."""
    from svc.settings import Settings
    from svc.storage.events import EventStore
    from svc.storage.rollups import Rollups

    if data_dir.exists():
        shutil.rmtree(data_dir)
    server = SvcServer(data_dir, env={"SVC_WARM_UP": "false"})  # no event to enrich
    with server:
        project = server.create_project("bench")
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    sql, _ = generation_sql(events, days, end, extensions, sessions)
    store = EventStore(Settings(data_dir=data_dir))
    started = time.perf_counter()
    store.client.command(
        sql,
        parameters={"project": project["id"]},
        settings={"max_insert_threads": 2, "max_threads": 2, "max_block_size": 65536},
    )
    inserted_s = time.perf_counter() - started
    started = time.perf_counter()
    store.client.command("OPTIMIZE TABLE events FINAL")
    optimise_s = time.perf_counter() - started
    started = time.perf_counter()
    # The views wrote each session's rows in pieces (one per block of the insert): write the
    # sessions (and session pages) anew from the events, merged as background merges leave
    # an older month.
    store.rebuild_sessions()
    store.client.command("OPTIMIZE TABLE sessions FINAL")
    store.client.command("OPTIMIZE TABLE session_pages FINAL")
    Rollups(store).refresh()  # the days that are over (the server keeps them current)
    sessions_s = time.perf_counter() - started
    count, sessions, visitors = store.query(
        "SELECT count(), uniqExact(session_id), uniqExact(visitor_id) FROM events "
        "WHERE project_id = {p:String}",
        {"p": project["id"]},
    )[0]
    parts = store.query("SELECT count() FROM system.parts WHERE table = 'events' AND active")[0][0]
    size = store.query(
        "SELECT sum(bytes_on_disk) FROM system.parts WHERE table = 'events' AND active"
    )[0][0]
    store.close()
    info = {
        "project": project["id"],
        "secret": project["keys"]["secret"],
        "admin_token": server.token,
        "events": int(count),
        "sessions": int(sessions),
        "visitors": int(visitors),
        "days": days,
        "extensions": extensions,
        "end": end.isoformat(),
        "parts": int(parts),
        "bytes_on_disk": int(size),
        "insert_s": round(inserted_s, 1),
        "optimize_s": round(optimise_s, 1),
        "sessions_s": round(sessions_s, 1),
    }
    (data_dir / MARKER).write_text(json.dumps(info, indent=2))
    return info


@dataclass
class Timing:
    name: str
    path: str
    status: int
    runs: int
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    max_ms: float = 0.0
    note: str = ""


@dataclass
class QueryReport:
    dataset: dict[str, Any]
    startup_s: float
    rss_mb_after: float
    rss_mb_settled: float = 0.0  # 2 s later: after the release of memory at the reads' pause
    rss_mb_peak: float = 0.0  # the most the server held resident during the whole run (VmHWM)
    timings: list[Timing] = field(default_factory=list)


def time_get(url: str, token: str, runs: int, warmup: int = 2) -> tuple[int, list[float], Any]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    samples: list[float] = []
    status, body = 0, None
    for i in range(warmup + runs):
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as exc:
            return exc.code, [], exc.read()[:300]
        elapsed = time.perf_counter() - started
        if i >= warmup:
            samples.append(elapsed * 1000)
        body = raw
    return status, samples, json.loads(body) if body else None


def endpoints(days: int, end_day: str, start_day: str) -> list[tuple[str, str]]:
    rng = {"from": start_day, "to": end_day}

    def q(path: str, **params: Any) -> str:
        items = list({**rng, **params}.items())
        flat: list[tuple[str, str]] = []
        for k, v in items:
            if isinstance(v, list):
                flat.extend((k, x) for x in v)
            else:
                flat.append((k, str(v)))
        return path + "?" + urllib.parse.urlencode(flat)

    return [
        ("metrics", q("/metrics")),
        ("metrics, compare previous period", q("/metrics", compare="previous_period")),
        ("metrics, filter source is google", q("/metrics", filter=["source:is:google"])),
        ("timeseries by day", q("/metrics/timeseries", interval="day")),
        ("timeseries by hour, 7 days", q("/metrics/timeseries", interval="hour")),
        ("breakdown by page", q("/metrics/breakdown", by="page")),
        ("breakdown by entry page", q("/metrics/breakdown", by="entry_page")),
        ("breakdown by source", q("/metrics/breakdown", by="source")),
        ("breakdown by country", q("/metrics/breakdown", by="country")),
        ("breakdown by browser", q("/metrics/breakdown", by="browser")),
        (
            "breakdown by page, filter country is DE",
            q("/metrics/breakdown", by="page", filter=["country:is:DE"]),
        ),
        (
            "breakdown by source, filter page contains /blog",
            q("/metrics/breakdown", by="source", filter=["page:contains:/blog"]),
        ),
        ("goals", q("/metrics/goals", goal=["event:signup", "page:/pricing"])),
        (
            "funnel (3 steps)",
            q("/metrics/funnel", step=["page:/", "page:/pricing", "event:signup"]),
        ),
        ("properties (keys)", q("/metrics/properties")),
        ("property values (plan)", q("/metrics/properties", key="plan")),
        ("revenue", q("/metrics/revenue")),
        ("errors", q("/metrics/errors")),
        ("realtime", "/metrics/realtime"),
        # the other kinds of breakdown, filter and interval
        ("metrics, compare previous year", q("/metrics", compare="previous_year")),
        ("metrics, filter event is signup", q("/metrics", filter=["event:is:signup"])),
        ("timeseries by week", q("/metrics/timeseries", interval="week")),
        ("breakdown by exit page", q("/metrics/breakdown", by="exit_page")),
        ("breakdown by channel", q("/metrics/breakdown", by="channel")),
        ("breakdown by device", q("/metrics/breakdown", by="device")),
        ("breakdown by event name", q("/metrics/breakdown", by="event")),
        ("breakdown by property plan", q("/metrics/breakdown", by="prop:plan")),
        ("breakdown by hostname", q("/metrics/breakdown", by="hostname")),
        ("metrics, filter event is not signup", q("/metrics", filter=["event:is_not:signup"])),
        ("metrics, filter page contains /blog", q("/metrics", filter=["page:contains:/blog"])),
        (
            "metrics, filter country is DE, browser is Firefox",
            q("/metrics", filter=["country:is:DE", "browser:is:Firefox"]),
        ),
    ]


def extension_endpoints(days: int, end_day: str, start_day: str) -> list[tuple[str, str]]:
    """The reports of the script's extensions (timed with ``--extensions``)."""
    rng = {"from": start_day, "to": end_day}

    def q(path: str, **params: str) -> str:
        return path + "?" + urllib.parse.urlencode({**rng, **params})

    return [
        ("breakdown by engagement", q("/metrics/breakdown", by="engagement")),
        ("metrics, engaged duration", q("/metrics", duration="engaged")),
        ("breakdown by outbound", q("/metrics/breakdown", by="outbound")),
        ("breakdown by download", q("/metrics/breakdown", by="download")),
        ("breakdown by 404", q("/metrics/breakdown", by="404")),
        ("vitals", q("/metrics/vitals")),
        ("vitals by day", q("/metrics/vitals", interval="day")),
        ("breakdown by vitals:page", q("/metrics/breakdown", by="vitals:page")),
        ("breakdown by vitals:device", q("/metrics/breakdown", by="vitals:device")),
        ("breakdown by vitals:country", q("/metrics/breakdown", by="vitals:country")),
        (
            "breakdown by engagement, filter country is DE",
            q("/metrics/breakdown", by="engagement", filter="country:is:DE"),
        ),
        (
            "vitals, filter page contains /blog",
            q("/metrics/vitals", filter="page:contains:/blog"),
        ),
    ]


def dataset(
    data_dir: Path, events: int, days: int, regenerate: bool = False, extensions: bool = False
) -> dict[str, Any]:
    """The marker of the store in ``data_dir`` (its project, keys and size), generating it
    first when it is missing, of another size or kind, or ``regenerate`` is set."""
    marker = data_dir / MARKER
    info: dict[str, Any] | None = None
    if marker.exists() and not regenerate:
        info = json.loads(marker.read_text())
        other_size = info.get("events") != events and info.get("requested") != events
        if other_size or bool(info.get("extensions")) != extensions:
            info = None
    if info is None:
        print(f"generating {events:,} events over {days} days in {data_dir} ...", flush=True)
        info = generate(data_dir, events, days, extensions)
        info["requested"] = events
        marker.write_text(json.dumps(info, indent=2))
        print(
            f"  {info['events']:,} events, {info['sessions']:,} sessions, "
            f"{info['visitors']:,} visitors; insert {info['insert_s']} s, "
            f"optimize {info['optimize_s']} s, {info['bytes_on_disk'] / 2**20:.0f} MiB",
            flush=True,
        )
    return info


def run(
    data_dir: Path,
    events: int,
    days: int,
    runs: int,
    regenerate: bool,
    only: str = "",
    extensions: bool = False,
    tree: Path | None = None,
) -> QueryReport:
    info = dataset(data_dir, events, days, regenerate, extensions)
    end = datetime.fromisoformat(info["end"])
    last_day = (end - timedelta(milliseconds=1)).date()
    first_day = last_day - timedelta(days=info["days"] - 1)
    env = {"PYTHONPATH": str(tree.resolve() / "src")} if tree else {}
    server = SvcServer(data_dir, env=env, token=info["admin_token"])
    server.start()
    report = QueryReport(info, server.startup_s, 0.0)
    try:
        span = (info["days"], last_day.isoformat(), first_day.isoformat())
        timed = endpoints(*span) + (extension_endpoints(*span) if extensions else [])
        for name, path in timed:
            if only and only not in name:
                continue
            if "hour" in name:
                path = path.replace(f"from={first_day}", f"from={last_day - timedelta(days=6)}")
            status, samples, body = time_get(server.url + path, info["secret"], runs)
            t = Timing(name, path, status, len(samples))
            if samples:
                t.p50_ms = statistics.median(samples)
                t.p95_ms = sorted(samples)[max(0, int(len(samples) * 0.95 + 0.5) - 1)]
                t.max_ms = max(samples)
            elif status == 404:
                t.note = "no such endpoint (skipped)"
            else:
                t.note = f"{body!r}"[:200]
            if name == "metrics" and isinstance(body, dict):
                t.note = (
                    f"pageviews {body.get('pageviews'):,}, sessions {body.get('sessions'):,}, "
                    f"bounceRate {body.get('bounceRate')}"
                )
            report.timings.append(t)
            print(
                f"  {name:48} {status}  p50 {t.p50_ms:8.1f} ms  p95 {t.p95_ms:8.1f} ms  {t.note}",
                flush=True,
            )
        report.rss_mb_after = rss_bytes(server.pid) / 2**20
        report.rss_mb_peak = peak_rss_bytes(server.pid) / 2**20
        time.sleep(2.0)
        report.rss_mb_settled = rss_bytes(server.pid) / 2**20
    finally:
        server.stop()
    return report


def main(argv: list[str] | None = None) -> QueryReport:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--runs", type=int, default=20, help="timed runs per query (after 2 warm)")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/svc-bench-query"))
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--only", default="", help="time only the queries whose name has this")
    p.add_argument("--json", metavar="FILE")
    p.add_argument(
        "--extensions",
        action="store_true",
        help="a project with the script's extensions' events, and their reports timed too",
    )
    p.add_argument(
        "--tree",
        type=Path,
        help="run the server from this source tree (a git worktree of another commit: A/B)",
    )
    args = p.parse_args(argv)
    report = run(
        args.data_dir,
        args.events,
        args.days,
        args.runs,
        args.regenerate,
        args.only,
        args.extensions,
        args.tree,
    )
    print(f"start-up to a healthy /health with this store: {report.startup_s:.2f} s")
    print(
        f"server RSS after the queries: {report.rss_mb_after:.0f} MB, "
        f"2 s later {report.rss_mb_settled:.0f} MB, peak {report.rss_mb_peak:.0f} MB"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2))
    _ = http  # re-exported helper, kept for interactive use
    return report


if __name__ == "__main__":
    main()
