"""Many tenants at once (issue 39): well-behaved dashboards beside an abusive tenant and a
steady ingestion, on one server over a generated store.

What it measures, against the aims of issue 39 ("Targets"), printed beside each figure:

- **Light reads per tenant**: GET /metrics (the top figures, the dashboard's first request)
  of each well-behaved tenant, p50/p95 alone on the server (in its dashboard one after
  another) and under the load below (in its dashboard all at once, sent first); aim: p50
  under load within 3x of alone, never a 5xx. A light read not answered 2xx (503 busy twice)
  is counted apart, not in the percentiles.
- **The dashboard's wall time**: the requests the dashboard makes on load (below), alone on
  the server, one after another (their sum) and all at once (the wall time of the burst);
  aim at 10M: all at once at most 0.8x one after another. Under the load too (no aim).
- **Ingestion p99**: single events at a steady ``--ingest-rate`` (open loop: a request's time
  runs from when it was due, so a stalled server counts for every request it delays); aim:
  p99 at most 15 ms.
- **The server's peak RSS** (VmHWM from /proc, over its whole life in this run, and the most
  sampled every 0.25 s under the load); aim: 768 MB at 10M, 1 GB at 100M, and under
  ``SVC_MEMORY_LIMIT_MB`` when ``--env`` sets it.
- Every answer counted by status: 503 ``busy`` (the scheduler refusing, allowed) apart from
  any other 5xx (aim: none); /health's time under the load.

**The store.** ``bench/query_bench.py``'s generator (:func:`query_bench.generation_sql`, one
project a statement) run once per project: ``--tenants`` well-behaved tenants (10) and one
abusive tenant, each a project of its own created by the server, the ``--events`` split
between them (the abusive one ``--abusive-share`` of them, 1/11 by default; the tenants
equal shares of the rest). The generator is deterministic, so every tenant has the same
traffic (same shape, same figures): a tenant's light read is the same read for all of them.
The abusive tenant's long-tail pages (the 2,001 ``/blog/post-N`` paths, ~40 % of its page
views) are lengthened to ``--long-path`` characters (1,500; a path is at most 2,048), so its
pattern filters run over long paths. Then, as query_bench does: ``OPTIMIZE ... FINAL``, the
sessions and session pages rebuilt from the events, the finished days rolled up. The data
directory is kept for the next run with the same sizes (``--regenerate`` to force).

**The dashboard's requests** on load (dashboard/src: app.tsx, chart.tsx, panels.tsx,
map.tsx, reports.tsx, measurements.tsx, realtime.tsx), default view (the last 30 days, here
the store's last ``--days`` days; no comparison, no filter, each panel's first tab): GET
/metrics, /metrics/realtime, /metrics/timeseries (by day), breakdowns by channel, page,
country (the map, 300 rows), browser, event (11 rows, shared by the goals' and the funnel's
suggestions), engagement (8), outbound, download and 404 (6 each), /metrics/revenue,
/metrics/errors, /metrics/vitals (by day), and /metrics/goals of the top five custom events,
sent once the event breakdown has answered (as the goals panel does): 16 requests. The
panels' own dedup (one request for identical URLs) is kept; the dashboard's client-side
queue (at most the server's per-project share in flight) is not, unless ``--in-flight N``:
"all at once" sends every request at once and lets the server's scheduler queue them. A 503
``busy`` is retried once after its Retry-After (at most 10 s), as the dashboard does.

**The abusive tenant**: ``--abusive-connections`` (3) loops over costly but accepted reads
over the whole range: a daily time series under ``page:contains:/blog``, an hourly one
(``--days`` x 24 points) under a ``page:matches:`` pattern, a page breakdown and GET /metrics
under other patterns (:data:`ABUSIVE_PATTERNS`, each within the bounds of
svc.queries.filters: checked before the run).

**A run**: the server starts on the store (``--env KEY=VALUE`` for its settings, ``--tree``
for another source tree, as query_bench); one warm-up dashboard per tenant and each abusive
read once (timed: their cost alone); ``--alone-rounds`` rounds of each tenant's dashboard
one after another then all at once, alone on the server; then ``--seconds`` of load: every
tenant loading its dashboard all at once in a loop, the abusive loops, the ingestion (a
process of its own, which reports its own sending lag too), /health every second. The
server runs with the memo of the facts off (bench/_common.py: every read reaches the store,
as a range not read before does); ``--env SVC_READ_MEMO_ENTRIES=N`` to turn it on. The
client is one Python process (httpx) for the reads, on the same two cores as the server.

Output: a table on stdout, and JSON in ``bench/runs/<date>-<time>-tenants-<size>.json``
(``--label smoke`` appends ``-smoke``; ``--out FILE`` elsewhere).

Generating the store: query_bench's 10M store (one project) takes 3-5 minutes here (51-108 s
of inserts, 9-18 s of merges, 99-180 s for the sessions and the 29 days' rollups; 100M: 33
minutes), and this one more: its rollups are of 11 projects' days (319 statements, not 29),
each with a fixed cost; the 200k smoke store took 7.3 minutes, 427 s of it the sessions and
rollups, on a machine at load average 22. Count on 10-15 minutes at 10M (an estimate: not
measured).

Run::

    .venv/bin/python bench/tenants_bench.py --events 10000000 --seconds 60 \\
        --data-dir /tmp/svc-bench-tenants-10m
    # the same with other settings, or another tree (git worktree add /tmp/before <commit>)
    .venv/bin/python bench/tenants_bench.py --events 10000000 --seconds 60 \\
        --data-dir /tmp/svc-bench-tenants-10m --env SVC_MEMORY_LIMIT_MB=640 --tree /tmp/before
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_load
from _common import (
    ROOT,
    Sampler,
    SvcServer,
    busy_elsewhere,
    http,
    loadavg,
    machine,
    peak_rss_bytes,
    percentile,
    rss_bytes,
    size_label,
    write_run,
)
from query_bench import generation_sql

MARKER = "bench-tenants.json"

# The aims of issue 39 ("Targets").
LIGHT_RATIO_AIM = 3.0  # a light read under the load, p50, within this times its p50 alone
DASHBOARD_RATIO_AIM = 0.8  # the dashboard all at once / one after another (at 10M)
INGEST_P99_AIM_MS = 15.0
RSS_AIM_MB = {10_000_000: 768, 100_000_000: 1024}

#: The abusive tenant's page patterns: costly (RE2 programs of 1,300-1,450 instructions, run
#: over paths of ``--long-path`` characters) but within svc.queries.filters' bounds.
ABUSIVE_PATTERNS = (
    "(?i)/blog/.{100}x.{100}[0-9]$",
    "(?i)(section|topic|part).{100}[^a-z0-9/-].{100}$",
    "(?i)[a-z]{100}\\d.{100}z$",
)

#: The generator's long-tail page (query_bench: ``/blog/post-N``), lengthened for the
#: abusive tenant; it appears twice in a statement (the page and the one before it).
TAIL_PAGE_SQL = "concat('/blog/post-', "

Params = list[tuple[str, str]]


# the store ---------------------------------------------------------------------------------


def long_prefix(length: int) -> str:
    """A path prefix under /blog of about ``length`` - 10 characters (room for
    ``/post-NNNN``): folders ``archive-NN-long-section-name``."""
    if not 16 <= length <= 2048:
        raise ValueError("--long-path: 16 to 2,048 characters (a path's most)")
    prefix, i = "/blog", 0
    while len(prefix) < length - 10:
        prefix += f"/archive-{i:02d}-long-section-name"
        i += 1
    return prefix[: length - 10]


def generate(
    data_dir: Path, events: int, days: int, tenants: int, abusive_share: float, long_path: int
) -> dict[str, Any]:
    """The data directory: the projects made by the server, each one's events written by
    query_bench's generator, then merged, sessions rebuilt and the finished days rolled up."""
    from svc.settings import Settings
    from svc.storage.events import EventStore
    from svc.storage.rollups import Rollups

    if data_dir.exists():
        shutil.rmtree(data_dir)
    server = SvcServer(data_dir)
    with server:
        made = [server.create_project(f"tenant-{i + 1:02d}") for i in range(tenants)]
        made.append(server.create_project("abusive"))
    abusive_events = max(1, round(events * abusive_share))
    shares = [(events - abusive_events) // tenants] * tenants + [abusive_events]
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    store = EventStore(Settings(data_dir=data_dir))
    started = time.perf_counter()
    for i, (project, share) in enumerate(zip(made, shares, strict=True)):
        sql, _ = generation_sql(share, days, end)
        if i == tenants:  # the abusive tenant: long paths
            if sql.count(TAIL_PAGE_SQL) != 2:
                raise RuntimeError("query_bench's generator changed: no /blog/post-N tail")
            sql = sql.replace(TAIL_PAGE_SQL, f"concat('{long_prefix(long_path)}/post-', ")
        store.client.command(
            sql,
            parameters={"project": project["id"]},
            settings={"max_insert_threads": 2, "max_threads": 2, "max_block_size": 65536},
        )
        print(f"  {project['name']}: {share:,} events", flush=True)
    inserted_s = time.perf_counter() - started
    started = time.perf_counter()
    store.client.command("OPTIMIZE TABLE events FINAL")
    optimise_s = time.perf_counter() - started
    started = time.perf_counter()
    store.rebuild_sessions()
    store.client.command("OPTIMIZE TABLE sessions FINAL")
    store.client.command("OPTIMIZE TABLE session_pages FINAL")
    Rollups(store).refresh()
    sessions_s = time.perf_counter() - started
    counts: dict[str, int] = {
        str(row[0]): int(row[1])
        for row in store.query("SELECT project_id, count() FROM events GROUP BY project_id")
    }
    size = store.query(
        "SELECT sum(bytes_on_disk) FROM system.parts WHERE table = 'events' AND active"
    )[0][0]
    store.close()
    projects = [
        {
            "id": p["id"],
            "name": p["name"],
            "secret": p["keys"]["secret"],
            "public": p["keys"]["public"],
            "events": int(counts.get(p["id"], 0)),
        }
        for p in made
    ]
    return {
        "admin_token": server.token,
        "requested": events,
        "events": sum(p["events"] for p in projects),
        "days": days,
        "tenants": tenants,
        "abusive_share": abusive_share,
        "long_path": long_path,
        "end": end.isoformat(),
        "projects": projects,
        "bytes_on_disk": int(size),
        "insert_s": round(inserted_s, 1),
        "optimize_s": round(optimise_s, 1),
        "sessions_s": round(sessions_s, 1),
    }


def store_info(args: argparse.Namespace) -> dict[str, Any]:
    """The marker of a store made for these options, generating one first if needed."""
    marker = args.data_dir / MARKER
    wanted = {
        "requested": args.events,
        "days": args.days,
        "tenants": args.tenants,
        "abusive_share": args.abusive_share,
        "long_path": args.long_path,
    }
    if marker.exists() and not args.regenerate:
        info: dict[str, Any] = json.loads(marker.read_text())
        if all(info.get(k) == v for k, v in wanted.items()):
            return info
    print(f"generating {args.events:,} events over {args.days} days in {args.data_dir} ...")
    started = time.perf_counter()
    info = generate(
        args.data_dir, args.events, args.days, args.tenants, args.abusive_share, args.long_path
    )
    info["generate_s"] = round(time.perf_counter() - started, 1)
    marker.write_text(json.dumps(info, indent=2))
    print(
        f"  {info['events']:,} events, {info['bytes_on_disk'] / 2**20:.0f} MiB, in "
        f"{info['generate_s']} s (inserts {info['insert_s']} s, merges {info['optimize_s']} s, "
        f"sessions and rollups {info['sessions_s']} s)",
        flush=True,
    )
    return info


# the requests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Req:
    name: str
    path: str
    params: Params


def dashboard_requests(first: str, last: str, days: int) -> list[Req]:
    """What the dashboard asks on load (its default view), but the goals (see
    :func:`goals_request`)."""
    base: Params = [("from", first), ("to", last)]
    interval = "hour" if days <= 2 else "day"  # dates.ts defaultInterval, up to 92 days

    def breakdown(name: str, by: str, limit: int, order: bool = True) -> Req:
        params = [*base, ("by", by), ("limit", str(limit))]
        return Req(name, "/metrics/breakdown", params + ([("order", "-visitors")] * order))

    return [
        Req("metrics", "/metrics", base),  # the top figures (app.tsx), asked first
        Req("realtime", "/metrics/realtime", []),
        Req("timeseries", "/metrics/timeseries", [*base, ("interval", interval)]),
        breakdown("by channel", "channel", 10),  # SourcesPanel's first tab
        breakdown("by page", "page", 10),  # PagesPanel; the funnel's suggestion too
        breakdown("by country (map)", "country", 300),  # LocationsPanel's first tab: the map
        breakdown("by browser", "browser", 10),  # DevicesPanel
        breakdown("by event", "event", 11),  # EventsPanel; the goals' and funnel's suggestions
        Req("revenue", "/metrics/revenue", base),
        Req("errors", "/metrics/errors", base),
        breakdown("by engagement", "engagement", 8, order=False),
        breakdown("by outbound", "outbound", 6, order=False),
        breakdown("by download", "download", 6, order=False),
        breakdown("by 404", "404", 6, order=False),
        Req("vitals", "/metrics/vitals", [*base, ("interval", interval)]),
    ]


def goals_request(first: str, last: str, events_answer: Any) -> Req | None:
    """GoalsPanel: the top five custom events of the event breakdown, as goals."""
    rows = events_answer.get("rows", []) if isinstance(events_answer, dict) else []
    names = [r.get("value") for r in rows if r.get("value") not in ("page_view", "exception")]
    goals = [("goal", f"event:{n}") for n in names[:5] if n]
    if not goals:
        return None
    return Req("goals", "/metrics/goals", [("from", first), ("to", last), *goals])


def abusive_requests(first: str, last: str) -> list[Req]:
    base: Params = [("from", first), ("to", last)]
    p1, p2, p3 = (f"page:matches:{p}" for p in ABUSIVE_PATTERNS)
    return [
        Req(
            "timeseries by day, page contains /blog",
            "/metrics/timeseries",
            [*base, ("interval", "day"), ("filter", "page:contains:/blog")],
        ),
        Req(
            "timeseries by hour, page matches",
            "/metrics/timeseries",
            [*base, ("interval", "hour"), ("filter", p1)],
        ),
        Req(
            "breakdown by page, page matches",
            "/metrics/breakdown",
            [*base, ("by", "page"), ("limit", "100"), ("filter", p2)],
        ),
        Req("metrics, page matches", "/metrics", [*base, ("filter", p3)]),
    ]


def check_patterns() -> None:
    """Fail before the run if this tree's filters would refuse a pattern (400: not costly
    reads but refusals, measuring nothing)."""
    try:
        from svc.queries.filters import pattern_refusal
    except ImportError:
        return
    for pattern in ABUSIVE_PATTERNS:
        why = pattern_refusal(pattern)
        if why is not None:
            raise SystemExit(f"the abusive pattern {pattern!r} is refused: {why}")


# the clients -------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one client (a tenant, the abusive one) got."""

    statuses: Counter[str] = field(default_factory=Counter)
    busy: int = 0  # 503 busy answers (each retried once, as the dashboard does)
    other_5xx: int = 0
    errors: Counter[str] = field(default_factory=Counter)  # no answer: timeouts, resets
    failed: Counter[str] = field(default_factory=Counter)  # requests by name, not a 2xx
    samples: dict[str, list[float]] = field(default_factory=dict)  # ms by request name

    def add(self, name: str, ms: float) -> None:
        self.samples.setdefault(name, []).append(ms)


async def timed_get(client: httpx.AsyncClient, req: Req, tally: Tally) -> tuple[int, Any]:
    """GET ``req``; its time (the retry after a 503 busy included) into ``tally``. The status
    and the JSON answer (None when none)."""
    started = time.perf_counter()
    status, doc = 0, None
    for attempt in range(2):
        try:
            r = await client.get(req.path, params=tuple(req.params))
        except httpx.HTTPError as exc:
            tally.errors[type(exc).__name__] += 1
            tally.failed[req.name] += 1
            return 0, None
        status = r.status_code
        tally.statuses[str(status)] += 1
        with contextlib.suppress(ValueError):
            doc = r.json()
        code = doc.get("error", {}).get("code") if isinstance(doc, dict) else None
        if status == 503 and code == "busy":
            tally.busy += 1
            if attempt == 0:
                wait = r.headers.get("Retry-After", "1")
                await asyncio.sleep(min(10.0, float(wait) if wait.isdigit() else 1.0))
                continue
        elif status >= 500:
            tally.other_5xx += 1
        break
    if 200 <= status < 300:
        tally.add(req.name, (time.perf_counter() - started) * 1000)
    else:
        tally.failed[req.name] += 1
    return status, doc


@dataclass
class Tenant:
    name: str
    client: httpx.AsyncClient
    first: str
    last: str
    requests: list[Req]
    in_flight: int = 0  # 0: all at once
    alone: Tally = field(default_factory=Tally)  # one after another, alone
    alone_at_once: Tally = field(default_factory=Tally)
    load: Tally = field(default_factory=Tally)
    sequential_ms: list[float] = field(default_factory=list)  # alone, one after another
    at_once_alone_ms: list[float] = field(default_factory=list)
    at_once_load_ms: list[float] = field(default_factory=list)

    async def sequential(self, tally: Tally) -> float:
        """The dashboard's requests one after another; the sum of their times."""
        started = time.perf_counter()
        events: Any = None
        for req in self.requests:
            _, doc = await timed_get(self.client, req, tally)
            if req.name == "by event":
                events = doc
        goals = goals_request(self.first, self.last, events)
        if goals is not None:
            await timed_get(self.client, goals, tally)
        return (time.perf_counter() - started) * 1000

    async def at_once(self, tally: Tally) -> float:
        """The dashboard's requests all at once (or ``in_flight`` at a time, GET /metrics
        first); the goals once the event breakdown has answered. The wall time."""
        gate = asyncio.Semaphore(self.in_flight or len(self.requests) + 1)

        async def one(req: Req) -> tuple[int, Any]:
            async with gate:
                return await timed_get(self.client, req, tally)

        async def goals_after(events: asyncio.Task[tuple[int, Any]]) -> None:
            _, doc = await events
            goals = goals_request(self.first, self.last, doc)
            if goals is not None:
                await one(goals)

        started = time.perf_counter()
        tasks = {req.name: asyncio.ensure_future(one(req)) for req in self.requests}
        await asyncio.gather(*tasks.values(), goals_after(tasks["by event"]))
        return (time.perf_counter() - started) * 1000


def make_client(url: str, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {secret}"},
        timeout=httpx.Timeout(180.0),
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
    )


# ingestion at a steady rate (a process of its own) -----------------------------------------


def ingest_process(
    url: str, keys: list[str], rate: float, seconds: float, chan: Connection
) -> None:
    """POST /analytics, one event a request, ``rate`` a second for ``seconds``: says "ready"
    on ``chan`` once its requests are built, starts at the time.monotonic() it receives, and
    sends back latencies (ms, from when each was due), statuses, errors, and how late its own
    loop sent (the client's lag, not the server's)."""
    chan.send(asyncio.run(_ingest(url, keys, rate, seconds, chan)))
    chan.close()


async def _ingest(
    url: str, keys: list[str], rate: float, seconds: float, chan: Connection
) -> dict[str, Any]:
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    bodies = ingest_load.make_bodies(2000, 0, seed=39)
    uas = ingest_load.BROWSER_UAS
    requests = [
        ingest_load._build_request(
            parts.netloc, "/analytics", keys[i % len(keys)], uas[i % len(uas)], body
        )
        for i, body in enumerate(bodies)
    ]
    pool: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter] | None] = asyncio.Queue()
    for _ in range(64):
        pool.put_nowait(None)  # a connection, opened when first used
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    lags: list[float] = []

    async def send(i: int, due: float) -> None:
        conn = await pool.get()
        try:
            if conn is None:
                conn = await asyncio.open_connection(host, port)
            reader, writer = conn
            writer.write(requests[i % len(requests)])
            status, keep_alive = await asyncio.wait_for(ingest_load._read_response(reader), 30)
            latencies.append((time.monotonic() - due) * 1000)
            statuses[str(status)] += 1
            if not keep_alive:
                writer.close()
                conn = None
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            errors[type(exc).__name__] += 1
            if conn is not None:
                conn[1].close()
            conn = None
        finally:
            pool.put_nowait(conn)

    chan.send("ready")
    start_at = float(chan.recv())
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    tasks: list[asyncio.Task[None]] = []
    i = 0
    while True:
        due = start_at + i / rate
        if due >= start_at + seconds:
            break
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        lags.append((time.monotonic() - due) * 1000)
        tasks.append(asyncio.create_task(send(i, due)))
        i += 1
    await asyncio.gather(*tasks)
    return {
        "sent": i,
        "latencies_ms": latencies,
        "statuses": dict(statuses),
        "errors": dict(errors),
        "client_lag_ms": summary(lags),
    }


# a run -------------------------------------------------------------------------------------


def summary(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "p50": round(statistics.median(samples), 1),
        "p95": round(percentile(samples, 0.95), 1),
        "p99": round(percentile(samples, 0.99), 1),
        "max": round(max(samples), 1),
    }


def commit_of(tree: Path) -> str:
    def git(*a: str) -> str:
        out = subprocess.run(["git", "-C", str(tree), *a], capture_output=True, text=True)
        return out.stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def rss_aim_mb(events: int, env: dict[str, str]) -> tuple[float, str]:
    limit = env.get("SVC_MEMORY_LIMIT_MB")
    if limit:
        return float(limit), f"SVC_MEMORY_LIMIT_MB={limit}"
    size = min(RSS_AIM_MB, key=lambda n: abs(n - events))
    note = "" if size == events else f" (the aim at {size // 1_000_000}M)"
    return float(RSS_AIM_MB[size]), f"{RSS_AIM_MB[size]} MB{note}"


async def run_clients(
    url: str, info: dict[str, Any], args: argparse.Namespace, pid: int
) -> dict[str, Any]:
    end = datetime.fromisoformat(info["end"])
    last_day = (end - timedelta(milliseconds=1)).date()
    first = (last_day - timedelta(days=info["days"] - 1)).isoformat()
    last = last_day.isoformat()
    requests = dashboard_requests(first, last, info["days"])
    tenant_projects, abusive_project = info["projects"][:-1], info["projects"][-1]
    tenants = [
        Tenant(p["name"], make_client(url, p["secret"]), first, last, requests, args.in_flight)
        for p in tenant_projects
    ]
    abusive_client = make_client(url, abusive_project["secret"])
    abusive_reqs = abusive_requests(first, last)
    abusive_alone, abusive_load = Tally(), Tally()
    health_ms: list[float] = []
    health_reads: list[dict[str, Any]] = []
    health_node: dict[str, Any] = {}
    result: dict[str, Any] = {"range": {"from": first, "to": last}}
    try:
        print("warm-up: a dashboard a tenant, each abusive read once (timed alone) ...", flush=True)
        for t in tenants:
            await t.sequential(Tally())
        for req in abusive_reqs:
            await timed_get(abusive_client, req, abusive_alone)

        print(
            f"alone: {args.alone_rounds} rounds of each dashboard, one after another "
            "then all at once ...",
            flush=True,
        )
        for _ in range(args.alone_rounds):
            for t in tenants:
                t.sequential_ms.append(await t.sequential(t.alone))
                t.at_once_alone_ms.append(await t.at_once(t.alone_at_once))

        print(
            f"load: {len(tenants)} dashboards in a loop, {args.abusive_connections} abusive "
            f"connections, {args.ingest_rate:g} events/s, {args.seconds:g} s ...",
            flush=True,
        )
        ctx = mp.get_context("spawn")
        chan, child_end = ctx.Pipe()
        keys = [p["public"] for p in tenant_projects]
        ingester = ctx.Process(
            target=ingest_process,
            args=(url, keys, args.ingest_rate, args.seconds, child_end),
            daemon=True,
        )
        ingester.start()
        child_end.close()
        if not await asyncio.to_thread(chan.poll, 120) or chan.recv() != "ready":
            raise RuntimeError("the ingestion process did not start")
        start_at = time.monotonic() + 0.1
        chan.send(start_at)
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        deadline = time.perf_counter() + args.seconds

        async def dashboard_loop(t: Tenant) -> None:
            while time.perf_counter() < deadline:
                t.at_once_load_ms.append(await t.at_once(t.load))

        async def abusive_loop(offset: int) -> None:
            for k in range(offset, 10**9):
                if time.perf_counter() >= deadline:
                    return
                await timed_get(abusive_client, abusive_reqs[k % len(abusive_reqs)], abusive_load)

        async def health_loop() -> None:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    with contextlib.suppress(httpx.HTTPError, ValueError):
                        doc = (await client.get("/health")).json()
                        health_ms.append((time.perf_counter() - started) * 1000)
                        health_reads.append(doc.get("reads", {}))
                        health_node.update(doc.get("node", {}))
                    await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - started)))

        with Sampler(pid) as sampler:
            await asyncio.gather(
                *(dashboard_loop(t) for t in tenants),
                *(abusive_loop(k) for k in range(args.abusive_connections)),
                health_loop(),
            )
        ingested: dict[str, Any] = await asyncio.to_thread(chan.recv)
        ingester.join(30)
        result["sampled_max_rss_mb"] = round(sampler.max_rss / 2**20, 1)
        result["server_cpu_cores_under_load"] = round(sampler.cores, 2)
    finally:
        for t in tenants:
            await t.client.aclose()
        await abusive_client.aclose()

    result["tenants"] = tenants
    result["abusive"] = {"alone": abusive_alone, "load": abusive_load}
    result["ingestion"] = ingested
    result["health_ms"] = health_ms
    result["health_reads_max"] = {
        k: max((r.get(k, 0) for r in health_reads), default=0) for k in ("running", "waiting")
    }
    result["health_reads_last"] = health_reads[-1] if health_reads else {}
    result["health_max_rss_mb"] = round(health_node.get("maxRssBytes", 0) / 2**20, 1)
    return result


def report(
    args: argparse.Namespace,
    info: dict[str, Any],
    server: SvcServer,
    env: dict[str, str],
    out: dict[str, Any],
    peak_mb: float,
    noise: float,
    tree: Path,
) -> dict[str, Any]:
    """The JSON document of the run, with the table printed on the way."""
    tenants: list[Tenant] = out["tenants"]
    rows: list[dict[str, Any]] = []
    print()
    print(
        f"{'tenant':10} {'light alone p50/p95':>20} {'under load p50/p95':>20} "
        f"{'ratio':>6}  aim <= {LIGHT_RATIO_AIM:g}x  {'n':>4} {'not 2xx':>7} {'busy':>5} "
        f"{'5xx':>4} {'loads':>5}"
    )
    for t in tenants:
        alone = summary(t.alone.samples.get("metrics", []))
        load = summary(t.load.samples.get("metrics", []))
        ratio = load["p50"] / alone["p50"] if alone["n"] and load["n"] else 0.0
        verdict = "pass" if ratio and ratio <= LIGHT_RATIO_AIM and not t.load.other_5xx else "MISS"
        print(
            f"{t.name:10} {alone.get('p50', 0):9.0f} / {alone.get('p95', 0):6.0f} ms "
            f"{load.get('p50', 0):9.0f} / {load.get('p95', 0):6.0f} ms {ratio:5.1f}x  "
            f"{verdict:13} {load['n']:>4} {t.load.failed['metrics']:>7} {t.load.busy:>5} "
            f"{t.load.other_5xx:>4} "
            f"{len(t.at_once_load_ms):>5}"
        )
        rows.append(
            {
                "tenant": t.name,
                "light_alone_ms": alone,
                "light_load_ms": load,
                "light_ratio_p50": round(ratio, 2),
                "light_aim": verdict,
                "requests_alone_ms": {k: summary(v) for k, v in t.alone.samples.items()},
                "requests_at_once_alone_ms": {
                    k: summary(v) for k, v in t.alone_at_once.samples.items()
                },
                "requests_load_ms": {k: summary(v) for k, v in t.load.samples.items()},
                "dashboard_sequential_ms": summary(t.sequential_ms),
                "dashboard_at_once_alone_ms": summary(t.at_once_alone_ms),
                "dashboard_at_once_load_ms": summary(t.at_once_load_ms),
                "statuses_load": dict(t.load.statuses),
                "busy_load": t.load.busy,
                "other_5xx_load": t.load.other_5xx,
                "errors_load": dict(t.load.errors),
                "not_2xx_load": dict(t.load.failed),
                "statuses_alone": dict(t.alone.statuses + t.alone_at_once.statuses),
            }
        )

    seq = [ms for t in tenants for ms in t.sequential_ms]
    at_once = [ms for t in tenants for ms in t.at_once_alone_ms]
    under = [ms for t in tenants for ms in t.at_once_load_ms]
    dash_ratio = statistics.median(at_once) / statistics.median(seq) if seq and at_once else 0.0
    at_10m = "" if info["requested"] == 10_000_000 else " (the aim is at 10M)"
    dash_verdict = "pass" if 0 < dash_ratio <= DASHBOARD_RATIO_AIM else "MISS"
    print()
    print(
        f"dashboard ({len(requests_of(tenants)) + 1} requests), alone: one after another p50 "
        f"{statistics.median(seq) if seq else 0:.0f} ms, all at once p50 "
        f"{statistics.median(at_once) if at_once else 0:.0f} ms: {dash_ratio:.2f}x "
        f"(aim <= {DASHBOARD_RATIO_AIM}x{at_10m}: {dash_verdict})"
    )
    load_dash = summary(under)
    print(
        f"dashboard all at once under the load: p50 {load_dash.get('p50', 0):.0f} ms, "
        f"p95 {load_dash.get('p95', 0):.0f} ms ({load_dash['n']} loads; no aim)"
    )

    ing = out["ingestion"]
    lat = summary(ing["latencies_ms"])
    ok = sum(n for s, n in ing["statuses"].items() if s.startswith("2"))
    ing_verdict = "pass" if lat["n"] and lat["p99"] <= INGEST_P99_AIM_MS else "MISS"
    print(
        f"ingestion: {ing['sent']:,} sent at {args.ingest_rate:g}/s, {ok:,} answered 2xx, "
        f"statuses {ing['statuses']}, errors {ing['errors']}; p50 {lat.get('p50', 0):.1f} ms, "
        f"p99 {lat.get('p99', 0):.1f} ms (aim <= {INGEST_P99_AIM_MS:g} ms: {ing_verdict}), "
        f"max {lat.get('max', 0):.1f} ms; the client's own lag p99 "
        f"{ing['client_lag_ms'].get('p99', 0):.1f} ms"
    )

    aim_mb, aim_text = rss_aim_mb(info["requested"], env)
    rss_verdict = "pass" if peak_mb <= aim_mb else "MISS"
    print(
        f"server peak RSS (VmHWM, whole run): {peak_mb:.0f} MB (aim <= {aim_text}: "
        f"{rss_verdict}); most sampled under the load {out['sampled_max_rss_mb']:.0f} MB; "
        f"server CPU under the load {out['server_cpu_cores_under_load']} cores"
    )

    ab_alone: Tally = out["abusive"]["alone"]
    ab_load: Tally = out["abusive"]["load"]
    print("abusive tenant (alone once; under the load p50/p95, count):")
    abusive_rows = {}
    for name in [r.name for r in abusive_requests("", "")]:
        a, b = ab_alone.samples.get(name, []), summary(ab_load.samples.get(name, []))
        print(
            f"  {name:40} alone {a[0] if a else 0:8.0f} ms   load {b.get('p50', 0):8.0f} / "
            f"{b.get('p95', 0):8.0f} ms  n={b['n']}"
        )
        abusive_rows[name] = {"alone_ms": a, "load_ms": b}
    print(
        f"  statuses alone {dict(ab_alone.statuses)}, under the load "
        f"{dict(ab_load.statuses)}, errors {dict(ab_load.errors)}"
    )

    tallies = [x for t in tenants for x in (t.alone, t.alone_at_once, t.load)]
    busy = sum(x.busy for x in tallies) + ab_load.busy + ab_alone.busy
    other = sum(x.other_5xx for x in tallies)
    other += ab_load.other_5xx + ab_alone.other_5xx
    no_answer = sum(sum(t.load.errors.values()) for t in tenants) + sum(ab_load.errors.values())
    ingest_5xx = sum(n for s, n in ing["statuses"].items() if s.startswith("5"))
    health = summary(out["health_ms"])
    print(
        f"503 busy: {busy}; other 5xx: {other + ingest_5xx} (aim 0: "
        f"{'pass' if other + ingest_5xx == 0 else 'MISS'}); requests without an answer: "
        f"{no_answer}; /health under the load p50 {health.get('p50', 0):.0f} ms, max "
        f"{health.get('max', 0):.0f} ms; reads running/waiting at most "
        f"{out['health_reads_max']}"
    )

    return {
        "kind": "tenants",
        "issue": 39,
        "label": args.label,
        "taken": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit_of(tree),
        "tree": str(tree),
        "machine": machine(),
        "busy_elsewhere_cores_before": round(noise, 2),
        "loadavg_after": loadavg(),
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "server_env": env,
        "startup_s": round(server.startup_s, 2),
        "dataset": {k: v for k, v in info.items() if k != "admin_token"}
        | {"projects": [{"name": p["name"], "events": p["events"]} for p in info["projects"]]},
        "range": out["range"],
        "dashboard_requests": [r.name for r in requests_of(tenants)] + ["goals"],
        "aims": {
            "light_ratio_p50": LIGHT_RATIO_AIM,
            "dashboard_ratio": DASHBOARD_RATIO_AIM,
            "ingest_p99_ms": INGEST_P99_AIM_MS,
            "peak_rss_mb": aim_mb,
            "other_5xx": 0,
        },
        "tenants": rows,
        "dashboard": {
            "sequential_alone_ms": summary(seq),
            "at_once_alone_ms": summary(at_once),
            "ratio_p50": round(dash_ratio, 3),
            "aim": dash_verdict,
            "at_once_load_ms": load_dash,
        },
        "ingestion": {
            "rate": args.ingest_rate,
            "sent": ing["sent"],
            "statuses": ing["statuses"],
            "errors": ing["errors"],
            "latency_ms": lat,
            "client_lag_ms": ing["client_lag_ms"],
            "aim": ing_verdict,
        },
        "peak_rss_mb": round(peak_mb, 1),
        "health_max_rss_mb": out["health_max_rss_mb"],
        "rss_mb_after": out["rss_mb_after"],
        "sampled_max_rss_mb_under_load": out["sampled_max_rss_mb"],
        "rss_aim": rss_verdict,
        "server_cpu_cores_under_load": out["server_cpu_cores_under_load"],
        "abusive": {
            "requests": abusive_rows,
            "statuses_alone": dict(ab_alone.statuses),
            "statuses_load": dict(ab_load.statuses),
            "errors_load": dict(ab_load.errors),
        },
        "busy_503": busy,
        "other_5xx": other + ingest_5xx,
        "no_answer": no_answer,
        "health_under_load_ms": health,
        "health_reads_max": out["health_reads_max"],
        "health_reads_last": out["health_reads_last"],
    }


def server_pid(server: SvcServer) -> int:
    """The process that serves (/health's ``node.pid``); the one launched if it does not say."""
    _, doc = http("GET", server.url + "/health")
    pid = doc.get("node", {}).get("pid") if isinstance(doc, dict) else None
    return int(pid) if pid else server.pid


def requests_of(tenants: list[Tenant]) -> list[Req]:
    return tenants[0].requests if tenants else []


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=10_000_000, help="all projects' events")
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--tenants", type=int, default=10, help="well-behaved tenants")
    p.add_argument(
        "--abusive-share",
        type=float,
        default=1 / 11,
        help="the abusive tenant's share of the events",
    )
    p.add_argument(
        "--long-path",
        type=int,
        default=1500,
        help="characters of the abusive tenant's long-tail paths",
    )
    p.add_argument("--data-dir", type=Path, help="default /tmp/svc-bench-tenants-<size>")
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--seconds", type=float, default=60.0, help="the load's duration")
    p.add_argument(
        "--alone-rounds",
        type=int,
        default=5,
        help="rounds of each dashboard alone, one after another and all at once",
    )
    p.add_argument("--abusive-connections", type=int, default=3)
    p.add_argument("--ingest-rate", type=float, default=200.0, help="events a second")
    p.add_argument(
        "--in-flight",
        type=int,
        default=0,
        help="a dashboard's requests in flight at once (0: all at once)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the server (repeatable), e.g. SVC_READ_SLOTS=4",
    )
    p.add_argument(
        "--tree", type=Path, help="run the server from this source tree (a git worktree: A/B)"
    )
    p.add_argument("--label", default="", help="appended to the JSON's name, e.g. smoke")
    p.add_argument("--out", type=Path, help="the JSON file (default bench/runs/...)")
    args = p.parse_args(argv)
    if args.tenants < 1 or not 0 < args.abusive_share < 1 or args.ingest_rate <= 0:
        p.error("at least one tenant, an abusive share in (0, 1), a positive ingest rate")
    size = size_label(args.events)
    args.data_dir = args.data_dir or Path(f"/tmp/svc-bench-tenants-{size}")
    env = parse_env(args.env)
    check_patterns()

    info = store_info(args)
    tree = (args.tree or ROOT).resolve()
    server_env = {**env, **({"PYTHONPATH": str(tree / "src")} if args.tree else {})}
    server = SvcServer(args.data_dir, env=server_env, token=info["admin_token"])
    noise = busy_elsewhere(exclude=[os.getpid()])
    print(
        f"other processes use {noise:.2f} cores of {os.cpu_count()} (load average "
        f"{loadavg():.2f}); starting the server ...",
        flush=True,
    )
    server.start()
    try:
        print(f"  healthy in {server.startup_s:.2f} s", flush=True)
        pid = server_pid(server)
        out = asyncio.run(run_clients(server.url, info, args, pid))
        peak_mb = peak_rss_bytes(pid) / 2**20
        out["rss_mb_after"] = round(rss_bytes(pid) / 2**20, 1)
    finally:
        server.stop()
    doc = report(args, info, server, env, out, peak_mb, noise, tree)
    path = write_run(doc, f"tenants-{size}", args.label, args.out)
    print(f"\nwritten: {path}")
    return doc


if __name__ == "__main__":
    main()
