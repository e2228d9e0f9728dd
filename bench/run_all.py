"""Every benchmark of svc with modest defaults, and a markdown table of figures vs targets.

1. start-up to a healthy /health on an empty data directory (cold: migrations included);
2. POST /analytics, one event per request, 32 connections (bench/ingest_load.py, wrk where
   installed), with the server's resident memory (max, from /proc) and CPU per request;
3. the same with batches of 100 events;
4. GET /metrics over 30 days of a generated project (bench/query_bench.py; ``--events``, 1M by
   default, 10M for the figure of the target), and start-up with that store.

The server runs with fsync on (``SVC_FSYNC`` is never turned off here unless ``--no-fsync``
is given, for an extra line), rate limits and the monthly quota off (a load test from one
address would meet them at once).

Run: ``make bench`` or ``.venv/bin/python bench/run_all.py [--duration 10] [--events 10000000]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_load
import query_bench
from _common import Sampler, SvcServer, busy_elsewhere, http, machine


@dataclass
class Figure:
    what: str
    target: str
    measured: str
    ok: bool | None
    detail: str = ""


def ingest_run(
    server: SvcServer, key: str, batch: int, duration: float, connections: int
) -> tuple[ingest_load.Result, Sampler]:
    argv = ["--url", server.url, "--key", key, "--connections", str(connections)]
    argv += ["--batch", str(batch)]
    ingest_load.run([*argv, "--duration", "2"])  # warm-up (caches, first segment)
    with Sampler(server.pid) as sampler:
        result = ingest_load.run([*argv, "--duration", str(duration)])
    return result, sampler


def drain(server: SvcServer, timeout: float = 120.0) -> tuple[float, int]:
    """Seconds until the loader has emptied the spool, and the backlog left."""
    started = time.perf_counter()
    backlog = -1
    while time.perf_counter() - started < timeout:
        status, doc = http("GET", server.url + "/health")
        if status == 200 and isinstance(doc, dict):
            backlog = int(doc["pipeline"]["backlogEvents"])
            if backlog == 0:
                break
        time.sleep(0.5)
    return time.perf_counter() - started, backlog


def ingest_figures(args: argparse.Namespace, workdir: Path) -> tuple[list[Figure], dict[str, Any]]:
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    env = {} if args.fsync else {"SVC_FSYNC": "false"}
    server = SvcServer(workdir / "ingest", env=env)
    server.start()
    raw["startup_cold_s"] = server.startup_s
    figures.append(
        Figure(
            "start-up to healthy /health (empty data dir)",
            "< 3 s",
            f"{server.startup_s:.2f} s",
            server.startup_s < 3,
        )
    )
    try:
        key = server.create_project("bench")["keys"]["public"]
        single, s1 = ingest_run(server, key, 0, args.duration, args.connections)
        raw["single"] = asdict(single) | {"rss_max": s1.max_rss, "server_cores": s1.cores}
        cpu_us = s1.cpu_used / max(1, single.requests) * 1e6
        ok = single.req_per_s >= 8000 and single.p99_ms <= 15
        errors = single.requests - single.ok
        figures.append(
            Figure(
                f"POST /analytics, 1 event, {args.connections} conns",
                ">= 8,000 req/s, p99 <= 15 ms",
                f"{single.req_per_s:,.0f} req/s, p99 {single.p99_ms:.1f} ms",
                ok,
                f"p50 {single.p50_ms:.1f} ms, p90 {single.p90_ms:.1f}, max {single.max_ms:.0f}; "
                f"server {cpu_us:.0f} µs CPU/req, {s1.cores:.2f} cores; errors {errors}",
            )
        )
        batch, s2 = ingest_run(server, key, 100, args.duration, args.connections)
        raw["batch"] = asdict(batch) | {"rss_max": s2.max_rss, "server_cores": s2.cores}
        cpu_ev = s2.cpu_used / max(1, batch.ok * 100) * 1e6
        figures.append(
            Figure(
                f"POST /analytics, batches of 100, {args.connections} conns",
                ">= 100,000 events/s",
                f"{batch.events_per_s:,.0f} events/s",
                batch.events_per_s >= 100_000,
                f"{batch.req_per_s:,.0f} req/s, p50 {batch.p50_ms:.1f} ms, p99 "
                f"{batch.p99_ms:.1f} ms; server {cpu_ev:.1f} µs CPU/event; errors "
                f"{batch.requests - batch.ok}",
            )
        )
        rss = max(s1.max_rss, s2.max_rss)
        raw["rss_max"] = rss
        figures.append(
            Figure(
                "resident memory under that load", "<= 600 MB", f"{rss / 1e6:.0f} MB", rss <= 600e6
            )
        )
        took, left = drain(server)
        raw["drain_s"], raw["backlog_left"] = took, left
        figures.append(
            Figure(
                "loader catches up after the load",
                "(no target)",
                f"{took:.1f} s to an empty spool",
                None,
                f"backlog left {left}",
            )
        )
    finally:
        server.stop()
    started = time.perf_counter()
    server.start()
    raw["startup_restart_s"] = server.startup_s
    server.stop()
    figures.append(
        Figure(
            "start-up after the load (store with the events)",
            "< 3 s",
            f"{server.startup_s:.2f} s",
            server.startup_s < 3,
            f"{time.perf_counter() - started:.1f} s with shutdown",
        )
    )
    return figures, raw


def query_figures(args: argparse.Namespace) -> tuple[list[Figure], dict[str, Any]]:
    data_dir = Path(args.query_dir or f"/tmp/svc-bench-query-{args.events}")
    report = query_bench.run(data_dir, args.events, 30, args.runs, False)
    ds = report.dataset
    figures = [
        Figure(
            f"start-up with a {ds['events'] / 1e6:g}M-event store",
            "< 3 s",
            f"{report.startup_s:.2f} s",
            report.startup_s < 3,
        )
    ]
    for t in report.timings:
        if not t.runs:
            continue
        if t.name == "metrics":
            target = "<= 150 ms" if ds["events"] >= 10_000_000 else "(150 ms at 10M)"
            ok: bool | None = t.p50_ms <= 150 if ds["events"] >= 10_000_000 else None
        else:
            target = "<= 300 ms" if ds["events"] >= 10_000_000 else "(300 ms at 10M)"
            ok = t.p50_ms <= 300 if ds["events"] >= 10_000_000 else None
        figures.append(
            Figure(
                f"GET {t.name}, 30 days of {ds['events'] / 1e6:g}M events",
                target,
                f"p50 {t.p50_ms:.0f} ms",
                ok,
                f"p95 {t.p95_ms:.0f} ms, {t.runs} warm runs",
            )
        )
    return figures, asdict(report)


def table(figures: list[Figure]) -> str:
    lines = ["| what | target | measured | | detail |", "|---|---|---|---|---|"]
    for f in figures:
        mark = "" if f.ok is None else ("pass" if f.ok else "**miss**")
        lines.append(f"| {f.what} | {f.target} | {f.measured} | {mark} | {f.detail} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=10.0, help="seconds per load run")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--events", type=int, default=1_000_000, help="size of the query project")
    p.add_argument("--runs", type=int, default=10, help="timed runs per query")
    p.add_argument("--query-dir", help="where the query project is generated and kept")
    p.add_argument("--skip-ingest", action="store_true")
    p.add_argument("--skip-query", action="store_true")
    p.add_argument(
        "--no-fsync", dest="fsync", action="store_false", help="extra figures: SVC_FSYNC=false"
    )
    p.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    args = p.parse_args(argv)

    info = machine()
    noise = busy_elsewhere()
    print(
        f"# svc benchmarks, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n\n"
        f"{info['cpus']} CPUs ({info['cpu_model']}), {info['memory_gb']} GB, Python "
        f"{info['python']}, kernel {info['kernel']}; other processes were using "
        f"{noise:.2f} cores when the run began; fsync {'on' if args.fsync else 'OFF'}.\n",
        flush=True,
    )
    figures: list[Figure] = []
    raw: dict[str, Any] = {"machine": info, "noise_cores": noise, "fsync": args.fsync}
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as tmp:
        if not args.skip_ingest:
            f, raw["ingest"] = ingest_figures(args, Path(tmp))
            figures += f
            print(table(f), "\n", flush=True)
    if not args.skip_query:
        f, raw["query"] = query_figures(args)
        figures += f
    print("\n" + table(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=2, default=str))


if __name__ == "__main__":
    main()
