"""Where the idle service's memory goes (issue 39: "say where the rest goes and what of it
can be deferred or shed").

Three looks at an idle server, each on an empty data directory and on a small store
(``--events`` events of one project, loaded through the real server first):

1. **The real ``svcm serve``** started as the benchmarks start it (bench/_common.SvcServer),
   idle for ``--settle`` seconds after its first healthy /health: its resident memory from
   /proc (VmRSS = RssAnon + RssFile + RssShmem) and, from /proc/<pid>/smaps, the resident
   pages of each mapped file grouped by owner (chDB's library, Python and its extension
   modules by package, the rest) against the anonymous memory (heaps, stacks, allocators).
2. **The same start-up step by step in one process** (no HTTP server: what serve does
   before it listens), the resident memory after each step: the interpreter, the imports
   of the server and svc, the application built, the event store opened and its schema
   checked (chDB), the runtime started (metadata, spool, loader, jobs), the enrichment data
   (geo, user agents: ``SVC_WARM_UP``'s part), a pause; then chDB's own account from its
   tables (system.metrics: chDB has no system.asynchronous_metrics): the memory it tracks
   (MemoryTracking), its caches, the primary keys in memory (system.parts).
3. **Python's own allocations** in that same sequence under tracemalloc (a run of its own:
   tracing costs memory), grouped by the package that allocated them.

Memory is not a timing: it can be measured on a busy machine. Output: a report on stdout
and JSON in ``bench/runs/<date>-<time>-idle-memory.json`` (``--out FILE`` elsewhere).

Run::

    .venv/bin/python bench/idle_memory.py --events 20000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import BROWSER_UA, ROOT, SvcServer, http

MB = 1024 * 1024

#: What the in-process look runs in a fresh interpreter: argv[1] the data directory,
#: argv[2] "trace" to group Python's allocations by package (tracemalloc on from the start).
STEPS = r"""
import asyncio, json, os, sys, time
TRACE = sys.argv[2] == "trace"
if TRACE:
    import tracemalloc
    tracemalloc.start(1)

def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024
    if TRACE:
        out["traced"] = tracemalloc.get_traced_memory()[0]
    return out

steps = [("interpreter", status())]
import uvicorn, uvloop, httptools  # what svcm serve imports before the application
from svc.cli import serve
from svc.http import analytics, edge_auth, limits, logs, observe, server
from svc.app import create_app
from svc.settings import Settings
steps.append(("imports (uvicorn, Starlette, svc)", status()))
settings = Settings.from_env(data_dir=sys.argv[1], warm_up=False, log_level="warning")
logs.configure(settings)
app = create_app(settings)
runtime = app.state.runtime
steps.append(("application built (settings, routes, runtime objects)", status()))
runtime.store.migrate()
steps.append(("event store opened, schema checked (chDB)", status()))
loop = asyncio.new_event_loop()
loop.run_until_complete(runtime.start())
steps.append(("runtime started (metadata, spool, loader, jobs)", status()))
runtime.ingest.pipeline.warm_up()
steps.append(("enrichment data loaded (geo, user agents)", status()))
loop.run_until_complete(asyncio.sleep(float(os.environ.get("SETTLE", "5"))))
steps.append(("idle", status()))

engine = {}
rows = runtime.store.query(  # chDB has no system.asynchronous_metrics
    "SELECT metric, value FROM system.metrics WHERE metric LIKE 'Memory%' "
    "OR metric LIKE '%CacheBytes' OR metric LIKE '%Cache%Bytes%'"
)
engine.update({str(m): float(v) for m, v in rows})
rows = runtime.store.query(
    "SELECT count(), sum(primary_key_bytes_in_memory_allocated), "
    "sum(bytes_on_disk) FROM system.parts WHERE active"
)
parts, keys, on_disk = rows[0]
engine.update(parts=float(parts), primary_keys=float(keys or 0), on_disk=float(on_disk or 0))
packages = {}
if TRACE:
    snapshot = tracemalloc.take_snapshot()
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename
        packages[name] = packages.get(name, 0) + stat.size
print(json.dumps({"steps": steps, "engine": engine, "files": packages}))
loop.run_until_complete(runtime.stop())
"""


def status_of(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024
    return out


def owner_of(path: str) -> str:
    """Who a mapped file belongs to: chDB, a Python package (by its top directory under
    site-packages), the interpreter, the C library and other system libraries."""
    if "chdb" in path:
        return "chDB (library)"
    found = re.search(r"site-packages/([^/]+)", path)
    if found:
        top = found.group(1).split(".")[0].split("-")[0]
        return f"python: {top}"
    if "/lib/python3" in path:
        return "python: standard library"
    if re.search(r"/(python3[.\d]*|libpython[^/]*)$", path):
        return "the interpreter"
    if path.startswith("/"):
        return "system libraries and files"
    return path  # [heap], [stack], [vdso]...


def smaps_of(pid: int) -> dict[str, int]:
    """Resident bytes by owner of the mapping (anonymous: "anonymous")."""
    totals: dict[str, int] = defaultdict(int)
    current = "anonymous"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if not head:
                continue
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                current = owner_of(head[5]) if len(head) > 5 else "anonymous"
            elif head[0] == "Rss:":
                totals[current] += int(head[1]) * 1024
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def fill(data_dir: Path, events: int) -> None:
    """A store of ``events`` page views of one project over the last days, loaded through
    the real server (so its parts, rollups and spool are what serving leaves)."""
    srv = SvcServer(data_dir).start()
    try:
        project = srv.create_project("memory")
        key = project["keys"]["secret"]
        rng = random.Random(39)
        now = int(time.time() * 1000)
        sent = 0
        while sent < events:
            batch = [
                {
                    "event": "page_view",
                    "url": f"https://acme.test/p/{rng.randrange(500)}",
                    "sessionId": f"s{rng.randrange(events // 4 + 1)}",
                    "ts": now - rng.randrange(7 * 86_400_000),
                    "userAgent": BROWSER_UA,  # a secret key speaks for its visitors
                }
                for _ in range(min(100, events - sent))
            ]
            status, _ = http("POST", srv.url + "/analytics", key, batch)
            assert status == 200, status
            sent += len(batch)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            _, health = http("GET", srv.url + "/health", None, None)
            if isinstance(health, dict) and health["pipeline"]["backlogEvents"] == 0:
                break
            time.sleep(0.2)
    finally:
        srv.stop()


def external(data_dir: Path, settle: float) -> dict[str, Any]:
    srv = SvcServer(data_dir).start()
    try:
        time.sleep(settle)
        return {"status": status_of(srv.pid), "smaps": smaps_of(srv.pid)}
    finally:
        srv.stop()


def in_process(data_dir: Path, settle: float, trace: bool) -> dict[str, Any]:
    env = {**os.environ, "SETTLE": str(settle), "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-c", STEPS, str(data_dir), "trace" if trace else "plain"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=str(ROOT),
    )
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-3000:])
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    if trace:
        result["packages"] = by_package(result.pop("files"))
    return result


def by_package(files: dict[str, int]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for name, size in files.items():
        found = re.search(r"site-packages/([^/]+)", name)
        if found:
            key = found.group(1).removesuffix(".py").split(".")[0]
        elif "/src/svc/" in name:
            key = "svc." + name.split("/src/svc/", 1)[1].split("/")[0].removesuffix(".py")
        elif "/lib/python3" in name:
            key = "standard library"
        else:
            key = "other (" + Path(name).name + ")"
        totals[key] += size
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def report(name: str, look: dict[str, Any]) -> None:
    ext, steps, traced = look["external"], look["steps"], look["traced"]
    st = ext["status"]
    print(f"\n== {name}")
    print(
        f"svcm serve, idle: VmRSS {st['VmRSS'] / MB:.0f} MB = RssAnon {st['RssAnon'] / MB:.0f}"
        f" + RssFile {st['RssFile'] / MB:.0f} + RssShmem {st['RssShmem'] / MB:.0f}"
    )
    for owner, size in list(ext["smaps"].items())[:14]:
        print(f"  {owner:<40} {size / MB:7.1f} MB")
    print("step by step (VmRSS, its change, RssAnon, RssFile):")
    before = 0
    for step, s in steps["steps"]:
        rss = s["VmRSS"]
        print(
            f"  {step:<56} {rss / MB:6.0f} {(rss - before) / MB:+6.0f}"
            f" {s['RssAnon'] / MB:6.0f} {s['RssFile'] / MB:6.0f}"
        )
        before = rss
    print("chDB's own account:")
    for metric, value in sorted(steps["engine"].items()):
        if value:
            print(f"  {metric:<44} {value / MB:9.1f} MB" if value > 4096 else f"  {metric} {value}")
    print(f"Python's allocations (tracemalloc, {traced['steps'][-1][1]['traced'] / MB:.1f} MB):")
    for package, size in list(traced["packages"].items())[:16]:
        print(f"  {package:<40} {size / MB:7.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000, help="events of the small store")
    parser.add_argument("--settle", type=float, default=5.0, help="idle seconds before a look")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {"taken": datetime.now(UTC).isoformat(timespec="seconds")}
    with tempfile.TemporaryDirectory(prefix="svc-idle-memory-") as tmp:
        empty, small = Path(tmp) / "empty", Path(tmp) / "small"
        empty.mkdir()
        fill(small, args.events)
        for name, data_dir in (("empty data directory", empty), (f"{args.events:,} events", small)):
            look = {
                "external": external(data_dir, args.settle),
                "steps": in_process(data_dir, args.settle, trace=False),
                "traced": in_process(data_dir, args.settle, trace=True),
            }
            results[name] = look
            report(name, look)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M")
    out = args.out or ROOT / "bench" / "runs" / f"{stamp}-idle-memory.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
