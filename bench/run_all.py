"""Every benchmark of svc with modest defaults; the figures file and the tables of the doc.

A run measures:

1. start-up to a healthy /health on an empty data directory (cold: migrations included);
2. POST /analytics, one event per request, 32 connections (bench/ingest_load.py, wrk where
   installed), with the server's resident memory (max, from /proc) and CPU per request;
3. the same with batches of 100 events;
4. GET /metrics and every other query kind over 30 days of a generated project
   (bench/query_bench.py; ``--events``, 1M by default, 10M for the figures of the targets),
   and start-up with that store;
5. the sizes of the browser script and the dashboard as built (files, no server).

The server runs with fsync on (``SVC_FSYNC`` is never turned off here unless ``--no-fsync``
is given, for an extra line), rate limits and the monthly quota off (a load test from one
address would meet them at once).

The figures of record are ``bench/results.json``; the tables of ``docs/benchmarks.md`` between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` are rendered from it, never written by
hand. ``--record`` puts what a run measured into the file (the rows it measured, with the
date, the machine and the commit) and renders the doc; ``--render`` renders the doc from the
file alone; ``--check`` fails when the doc's tables are not what the file renders (a test does
the same, without any benchmark).

Run: ``make bench`` or ``.venv/bin/python bench/run_all.py [--duration 10] [--events 10000000]
[--record]``; ``bench/run_all.py --check``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gzip
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_load
import query_bench
from _common import ROOT, Sampler, SvcServer, busy_elsewhere, http, machine

RESULTS = ROOT / "bench" / "results.json"
DOC = ROOT / "docs" / "benchmarks.md"
TRACKER = ROOT / "src" / "svc" / "static" / "svc.js"
DASHBOARD = ROOT / "src" / "svc" / "static" / "dashboard"
#: The query kinds are timed against their targets at this size (issues 2 and 3).
TARGET_EVENTS = 10_000_000


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
        cpu_us = s1.cpu_used / max(1, single.requests) * 1e6
        raw["single"] = asdict(single) | {
            "rss_max": s1.max_rss,
            "server_cores": s1.cores,
            "cpu_us_per_request": cpu_us,
        }
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
        cpu_ev = s2.cpu_used / max(1, batch.ok * 100) * 1e6
        raw["batch"] = asdict(batch) | {
            "rss_max": s2.max_rss,
            "server_cores": s2.cores,
            "cpu_us_per_event": cpu_ev,
        }
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
    at_target = ds["events"] >= TARGET_EVENTS
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
            target = "<= 150 ms" if at_target else "(150 ms at 10M)"
            ok: bool | None = t.p50_ms <= 150 if at_target else None
        else:
            target = "<= 300 ms" if at_target else "(300 ms at 10M)"
            ok = t.p50_ms <= 300 if at_target else None
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


def size_figures() -> tuple[list[Figure], dict[str, Any]]:
    """Sizes of the built browser script and dashboard: gzip -9 and brotli -q 11, as the
    tracker's build and the dashboard's budget test count them."""
    import brotli  # a dependency of svc (the script is served brotli-compressed)

    script = TRACKER.read_bytes()
    raw: dict[str, Any] = {
        "tracker_min": len(script),
        "tracker_gzip": len(gzip.compress(script, 9, mtime=0)),
        "tracker_brotli": len(brotli.compress(script, quality=11)),
    }
    files = sorted(p for p in DASHBOARD.iterdir() if p.name != "manifest.json")
    raw["dashboard_raw"] = sum(p.stat().st_size for p in files)
    raw["dashboard_gzip"] = sum(len(gzip.compress(p.read_bytes(), 9, mtime=0)) for p in files)
    maps = [p for p in files if p.name.startswith("map-")]
    raw["dashboard_map_gzip"] = sum(len(gzip.compress(p.read_bytes(), 9, mtime=0)) for p in maps)
    figures = [
        Figure(
            "browser script (svc.js)",
            "<= 1,024 B minified, <= 600 B gzipped",
            f"{raw['tracker_min']:,} B, {raw['tracker_gzip']:,} B gzipped",
            raw["tracker_min"] <= 1024 and raw["tracker_gzip"] <= 600,
            f"{raw['tracker_brotli']:,} B brotli",
        ),
        Figure(
            "dashboard, every file gzipped",
            "<= 150 KB gzipped",
            f"{raw['dashboard_gzip']:,} B",
            raw["dashboard_gzip"] <= 150 * 1024,
            f"{raw['dashboard_raw']:,} B raw; the map {raw['dashboard_map_gzip']:,} B of it",
        ),
    ]
    return figures, raw


def table(figures: list[Figure]) -> str:
    lines = ["| what | target | measured | | detail |", "|---|---|---|---|---|"]
    for f in figures:
        mark = "" if f.ok is None else ("pass" if f.ok else "**miss**")
        lines.append(f"| {f.what} | {f.target} | {f.measured} | {mark} | {f.detail} |")
    return "\n".join(lines)


# --- the figures file (bench/results.json) and the doc's tables ------------------------------
#
# A row of "targets", "durability" or "other":
#   {"id", "what", "target": {"text", "source", "checks": [[value, op, limit], ...]},
#    "values": {name: number | [low, high] | text}, "measured": "template", "detail": "template",
#    "taken": {"date", "machine", "commit", "command"}}
# Templates name values in braces: "{req_per_s} req/s". A [low, high] value is a range of runs
# and is checked at its worst end. A row without values reads "to be measured"; a row whose
# "derive" names the queries ("query:metrics", "query:others") takes its values from them.
# "queries" holds one row per query kind (or a group of kinds with ranges), with target_ms.
# A row of "code" (the figures behind choices in the code) also says "where".

Value = float | int | str | list[float]


def load_results(path: Path = RESULTS) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def save_results(results: dict[str, Any], path: Path = RESULTS) -> None:
    text = json.dumps(results, indent=2, ensure_ascii=False)
    # lists of numbers and words on one line: [12600, 13900], ["p99_ms", "<=", 15]
    text = re.sub(
        r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text
    )
    path.write_text(text + "\n", encoding="utf-8")


def fmt(value: Value) -> str:
    """A figure as the doc writes it: thousands separated, ranges as low-high."""
    if isinstance(value, list):
        return "-".join(fmt(v) for v in value)
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 100:
        value = int(value)
    return f"{value:,}"


def fill(template: str, values: dict[str, Value]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise KeyError(f"{template!r} names {m.group(1)!r}, which has no value")
        return fmt(values[m.group(1)])

    return re.sub(r"\{([a-z0-9_]+)\}", one, template)


OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
}


def worst(value: Value, op: str) -> float:
    """The end of a range that the target is checked against."""
    if isinstance(value, list):
        return min(value) if op.startswith(">") else max(value)
    if isinstance(value, str):
        raise TypeError(f"a text value cannot be checked against a target: {value!r}")
    return float(value)


def status(row: dict[str, Any]) -> str:
    values: dict[str, Value] = row.get("values") or {}
    if not values:
        return "to be measured"
    checks = row.get("target", {}).get("checks", [])
    if not checks:
        return ""
    if any(name not in values for name, _, _ in checks):
        return "to be measured"
    ok = all(OPS[op](worst(values[name], op), limit) for name, op, limit in checks)
    return "pass" if ok else "**miss**"


def derived(row: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """A target row whose figures come from the query kinds' table."""
    how = row.get("derive")
    if not how:
        return row
    queries = results["queries"]
    rows = queries["rows"]
    if how == "query:metrics":
        (q,) = [r for r in rows if r["kinds"] == ["metrics"]]
        values: dict[str, Value] = {"p50_ms": q["p50_ms"], "p95_ms": q["p95_ms"]}
    elif how == "query:others":
        others = [r for r in rows if r["kinds"] != ["metrics"]]
        slowest = max(others, key=lambda r: worst(r["p50_ms"], "<="))
        kinds = sum(len(r["kinds"]) for r in others)
        within = sum(len(r["kinds"]) for r in others if worst(r["p50_ms"], "<=") <= r["target_ms"])
        values = {
            "kinds": kinds,
            "within": within,
            "slowest_p50_ms": slowest["p50_ms"],
            "slowest": slowest.get("label") or ", ".join(slowest["kinds"]),
        }
    else:
        raise ValueError(f"unknown derive {how!r}")
    return {**row, "values": values, "taken": queries["taken"]}


def taken(row: dict[str, Any], results: dict[str, Any]) -> str:
    t = row.get("taken")
    if not t:
        return ""
    where = results["machines"][t["machine"]]["short"]
    return f"{t['date']}, {where}, {t['commit']}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_rows(
    rows: list[dict[str, Any]], results: dict[str, Any], targets: bool, code: bool = False
) -> str:
    """A table of rows; ``targets``: with the target and pass or miss; ``code``: with where in
    the code the figure is the reason for what it does."""
    if targets:
        lines = ["| what | target | measured | | notes | taken |", "|---|---|---|---|---|---|"]
    elif code:
        lines = ["| what | measured | notes | in the code | taken |", "|---|---|---|---|---|"]
    else:
        lines = ["| what | measured | notes | taken |", "|---|---|---|---|"]
    for row in rows:
        row = derived(row, results)
        values = row.get("values") or {}
        measured = fill(row["measured"], values) if values else "to be measured"
        notes = fill(row.get("detail", ""), values) if values else row.get("detail_pending", "")
        when = taken(row, results) if values else ""
        if targets:
            target = row["target"]["text"]
            if row["target"].get("source"):
                target += f" ({row['target']['source']})"
            mark = status(row)
            mark = "" if mark == "to be measured" else mark
            cells = [row["what"], target, measured, mark, notes, when]
        elif code:
            cells = [row["what"], measured, notes, row["where"], when]
        else:
            cells = [row["what"], measured, notes, when]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines)


def render_queries(results: dict[str, Any]) -> str:
    q = results["queries"]
    t = q["taken"]
    machine_name = results["machines"][t["machine"]]["short"]
    lines = [
        f"Taken {t['date']} on {machine_name}, commit {t['commit']}: `{t['command']}`; "
        f"{q['dataset']}. p50 and p95 of {q['runs']} timed requests after two warm-ups.",
        "",
        "| query | p50 | p95 | target (p50) | |",
        "|---|---:|---:|---:|---|",
    ]
    for row in q["rows"]:
        label = row.get("label") or ", ".join(row["kinds"])
        target = row["target_ms"]
        ok = worst(row["p50_ms"], "<=") <= target
        lines.append(
            f"| {cell(label)} | {fmt(row['p50_ms'])} ms | {fmt(row['p95_ms'])} ms "
            f"| {fmt(target)} ms | {'pass' if ok else '**miss**'} |"
        )
    return "\n".join(lines)


def render_machines(results: dict[str, Any]) -> str:
    lines = [
        "| machine | CPU | cores | memory | disk | kernel | Python | stack |",
        "|---|---|---:|---:|---|---|---|---|",
    ]
    for m in results["machines"].values():
        cells = [
            m["short"],
            m["cpu_model"],
            str(m["cpus"]),
            f"{fmt(m['memory_gb'])} GB",
            m.get("disk", ""),
            m["kernel"],
            m["python"],
            m.get("stack", ""),
        ]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines)


def sections(results: dict[str, Any]) -> dict[str, str]:
    """Every table of the doc, by the name of its markers."""
    return {
        "targets": render_rows(results["targets"], results, targets=True),
        "durability": render_rows(results["durability"], results, targets=True),
        "queries": render_queries(results),
        "other": render_rows(results["other"], results, targets=False),
        "code": render_rows(results["code"], results, targets=False, code=True),
        "machines": render_machines(results),
    }


def render_doc(doc: str, results: dict[str, Any]) -> str:
    """The doc with each ``<!-- bench:NAME -->`` ... ``<!-- /bench:NAME -->`` block replaced by
    the table rendered from the results."""
    for name, body in sections(results).items():
        begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
        if len(pattern.findall(doc)) != 1:
            raise ValueError(f"the doc must hold {begin} ... {end} once")
        block = f"{begin}\n{body}\n{end}"
        doc = pattern.sub(lambda _m, block=block: block, doc)
    return doc


def check_doc(doc_path: Path = DOC, results_path: Path = RESULTS) -> list[str]:
    """The differences between the doc and what the results render (empty when equal)."""
    doc = doc_path.read_text(encoding="utf-8")
    want = render_doc(doc, load_results(results_path))
    return list(
        difflib.unified_diff(
            doc.splitlines(), want.splitlines(), str(doc_path), "rendered", lineterm=""
        )
    )


# --- recording a run ----------------------------------------------------------------------------


def commit() -> str:
    """The commit measured; ``+changes`` when src/ differs from it."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "src") else "")


def machine_entry(info: dict[str, Any]) -> dict[str, Any]:
    versions = []
    for dist, name in (("uvicorn", "uvicorn"), ("chdb", "chDB"), ("clickhouse-connect", "")):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{name or dist} {importlib.metadata.version(dist)}")
    wrk = "wrk" if shutil.which("wrk") else "no wrk (Python engine)"
    model = re.sub(r"\((R|TM)\)|CPU|Processor", "", info["cpu_model"] or "unknown").split()
    return {
        "short": " ".join(model[:2]) or "unknown",
        "cpu_model": info["cpu_model"] or "unknown",
        "cpus": info["cpus"],
        "memory_gb": info["memory_gb"],
        "kernel": info["kernel"],
        "python": info["python"],
        "stack": ", ".join([*versions, wrk]),
    }


def machine_key(results: dict[str, Any], entry: dict[str, Any], date: str) -> str:
    for key, known in results["machines"].items():
        if all(known.get(k) == v for k, v in entry.items() if k != "disk"):
            return key
    key = re.sub(r"[^a-z0-9]+", "-", f"{entry['short']} {date}".lower()).strip("-")
    if any(known["short"] == entry["short"] for known in results["machines"].values()):
        entry = {**entry, "short": f"{entry['short']} ({date})"}
    results["machines"][key] = entry
    return key


def record(
    results: dict[str, Any], raw: dict[str, Any], taken: dict[str, str], queries_taken: bool
) -> None:
    """Put what a run measured into the results (only the rows it measured)."""
    rows = {r["id"]: r for r in [*results["targets"], *results["other"]]}

    def put(row_id: str, values: dict[str, Value], measured: str, detail: str = "") -> None:
        rows[row_id].update(values=values, measured=measured, detail=detail, taken=taken)

    ingest = raw.get("ingest")
    if ingest:
        single, batch = ingest["single"], ingest["batch"]
        put(
            "ingest_single",
            {
                "req_per_s": round(single["req_per_s"]),
                "p99_ms": round(single["p99_ms"], 1),
                "p50_ms": round(single["p50_ms"], 1),
                "max_ms": round(single["max_ms"]),
                "cpu_us": round(single["cpu_us_per_request"]),
            },
            "{req_per_s} req/s, p99 {p99_ms} ms",
            "p50 {p50_ms} ms, max {max_ms} ms; server {cpu_us} µs CPU a request",
        )
        put(
            "ingest_batch",
            {
                "events_per_s": round(batch["events_per_s"]),
                "p99_ms": round(batch["p99_ms"], 1),
                "p50_ms": round(batch["p50_ms"], 1),
                "cpu_us": round(batch["cpu_us_per_event"], 1),
            },
            "{events_per_s} events/s",
            "p50 {p50_ms} ms, p99 {p99_ms} ms; server {cpu_us} µs CPU an event",
        )
        put(
            "memory_ingest",
            {"rss_mb": round(ingest["rss_max"] / 1e6)},
            "{rss_mb} MB",
            "the most of both loads, sampled every 0.25 s",
        )
        put(
            "startup",
            {
                "empty_s": round(ingest["startup_cold_s"], 2),
                "after_load_s": round(ingest["startup_restart_s"], 2),
            },
            "{empty_s} s on an empty data dir, {after_load_s} s after the load",
        )
        put("loader_drain", {"drain_s": round(ingest["drain_s"], 1)}, "{drain_s} s")
    query = raw.get("query")
    if query and queries_taken:
        ds = query["dataset"]
        groups = [
            {
                "kinds": [t["name"]],
                "p50_ms": round(t["p50_ms"]),
                "p95_ms": round(t["p95_ms"]),
                "target_ms": 150 if t["name"] == "metrics" else 300,
            }
            for t in query["timings"]
            if t["runs"]
        ]
        results["queries"].update(
            taken=taken,
            runs=max((t["runs"] for t in query["timings"]), default=0),
            dataset=(
                f"30 days, {ds['events']:,} events, {ds['sessions']:,} sessions, "
                f"{ds['visitors']:,} visitors (bench/query_bench.py's generated project)"
            ),
            rows=groups,
        )
        put("startup_store", {"store_s": round(query["startup_s"], 2)}, "{store_s} s")
        put(
            "memory_queries",
            {
                "after_mb": round(query["rss_mb_after"]),
                "settled_mb": round(query["rss_mb_settled"]),
            },
            "{after_mb} MB right after the last query, {settled_mb} MB 2 s later",
        )
    sizes = raw.get("sizes")
    if sizes:
        put(
            "tracker_size",
            {
                "min_b": sizes["tracker_min"],
                "gzip_b": sizes["tracker_gzip"],
                "brotli_b": sizes["tracker_brotli"],
            },
            "{min_b} B minified, {gzip_b} B gzipped",
            "{brotli_b} B brotli",
        )
        put(
            "dashboard_size",
            {
                "gzip_b": sizes["dashboard_gzip"],
                "raw_b": sizes["dashboard_raw"],
                "map_gzip_b": sizes["dashboard_map_gzip"],
            },
            "{gzip_b} B gzipped",
            "{raw_b} B raw; the world map, {map_gzip_b} B gzipped, loads with its tab only",
        )


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
    p.add_argument("--json", metavar="FILE", help="write every figure of the run as JSON")
    p.add_argument(
        "--record",
        action="store_true",
        help="put the run's figures into the results file and render the doc's tables",
    )
    p.add_argument(
        "--render", action="store_true", help="render the doc's tables from the results file"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="fail when the doc's tables differ from what the results file renders",
    )
    p.add_argument("--results", type=Path, default=RESULTS, help="the figures file")
    p.add_argument("--doc", type=Path, default=DOC, help="the doc whose tables are rendered")
    args = p.parse_args(argv)

    if args.check:
        diff = check_doc(args.doc, args.results)
        if diff:
            print("\n".join(diff))
            sys.exit(f"{args.doc} differs from {args.results}: run bench/run_all.py --render")
        print(f"{args.doc}: the tables match {args.results}")
        return
    if args.render:
        doc = args.doc.read_text(encoding="utf-8")
        args.doc.write_text(render_doc(doc, load_results(args.results)), encoding="utf-8")
        return

    info = machine()
    noise = busy_elsewhere()
    now = datetime.now(UTC)
    print(
        f"# svc benchmarks, {now:%Y-%m-%d %H:%M} UTC\n\n"
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
    query_events = 0
    if not args.skip_query:
        f, raw["query"] = query_figures(args)
        query_events = raw["query"]["dataset"]["events"]
        figures += f
    f, raw["sizes"] = size_figures()
    figures += f
    print("\n" + table(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=2, default=str))
    if args.record:
        if not args.fsync:
            sys.exit("not recorded: the figures of record are taken with fsync on")
        results = load_results(args.results)
        taken = {
            "date": f"{now:%Y-%m-%d}",
            "machine": machine_key(results, machine_entry(info), f"{now:%Y-%m-%d}"),
            "commit": commit(),
            "command": "bench/run_all.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        }
        if noise > 0.1:
            print(f"note: other processes used {noise:.2f} cores as the run began", flush=True)
        record(results, raw, taken, queries_taken=query_events >= TARGET_EVENTS)
        save_results(results, args.results)
        doc = args.doc.read_text(encoding="utf-8")
        args.doc.write_text(render_doc(doc, results), encoding="utf-8")
        print(f"recorded in {args.results} and {args.doc}")


if __name__ == "__main__":
    main()
