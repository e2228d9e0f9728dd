"""Several svc nodes on one machine (issue 43): ingest throughput with 1, 2 and 3 nodes, and
the per-event cost of the session state they share in Redis.

**The set-up** (as tests/cluster/ runs it): PostgreSQL for the metadata (the server of
``SVC_TEST_PG_URL``, in a database of the bench's own, ``<its database>_nodes_bench``, made
if missing and emptied before each phase), a redis-server of its own (tests/limits'
``running_redis``) and the ClickHouse double (tests/clickhouse_double: the HTTP interface in
front of chDB in a process of its own; a database of its own on it for each phase). The
nodes are ``svcm serve`` (bench/_common.SvcServer: quota and rate limits off, fsync on, the
read memo off) with ``SVC_CLICKHOUSE_URL``, ``SVC_META_URL``, ``SVC_REDIS_URL`` and
``SVC_NODE_ID``.

**Part 1, nodes** (``--nodes 1,2,3``): for each count N, fresh stores, N nodes, one project;
then for each mode (single events, and batches of ``--batch``), ``--warmup`` seconds then
``--seconds`` of load: ``--threads`` client threads, each with a keep-alive connection to
every node, send POST /analytics with the secret key (each event with an ``eventId``, one of
``--visitors`` visitors by ``ip`` and ``userAgent``, a page) to the nodes in turn
(``--spread round-robin``, each thread from its own first node) or at random
(``--spread random``), each thread one request at a time. Figures: events/s accepted, the
requests' p50/p99 latency, the CPU (cores) of the nodes, the double, Redis and the client over
the timed seconds. When the load ends the nodes load their spools into the double, and the
store is counted: it must hold every acknowledged event exactly once (by ``eventId``), and
nothing else but events of requests that were never answered (a client timeout).

**Part 2, the shared state** (``--no-state`` skips it): one node, the same stores, without
``SVC_REDIS_URL`` (ids and sessions in the process: svc.ingestion.identity.SessionTracker,
svc.ingestion.dedup.EventIdFilter) and with it (a Lua script call per request:
svc.cluster.shared.SharedIdentity; with Redis the quota ledger is in Redis too,
svc.limits.shared), the same load; Redis's own CPU time per call of its scripts (``INFO
commandstats``: ``evalsha``, the identify script and the quota ledger's). Then in this
process, a micro-bench on an ingestion pipeline of tests/cluster's helpers: ``--micro``
requests of 1 and of ``--batch`` events through the in-process steps (``drop_duplicates`` and
``identify``) and through Redis (``identify_all``: the asks, the script call, the answers
applied), and the script call alone, with Redis's own time per call of the script.

**Why it cannot show scaling here**: the machine has two cores and every process runs on
them: the nodes, the double (chDB behind one HTTP server), Redis, PostgreSQL and the client
threads. In the single-node ingestion loads one node's event loop keeps a core busy
(docs/benchmarks.md, "Known limits"); here the client and the double take CPU of their own
as well, and a second and third node can only share the same two cores. The ratio of N nodes
to one is printed with the cores each process used: what it shows is the cost of the
coordination (Redis round trips, more processes on two cores), not what N machines would do.

Example (the full run, on a quiet machine)::

    .venv/bin/python bench/nodes_bench.py --seconds 20 --save

A smoke run: ``--seconds 3 --warmup 1 --micro 200``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ingest_load
from _common import (
    ROOT,
    SvcServer,
    admin_token,
    busy_elsewhere,
    cpu_seconds,
    loadavg,
    machine,
    percentile,
    write_run,
)

# the services the nodes share ---------------------------------------------------------------


@dataclass
class Backing:
    """PostgreSQL (a database of the bench's own), Redis and the ClickHouse double."""

    pg_url: str
    redis_url: str
    redis_pid: int
    double: Any  # tests.clickhouse_double.RunningDouble
    phase: int = 0

    def fresh(self, name: str) -> tuple[str, str]:
        """Empty stores for one phase: (SVC_META_URL, SVC_CLICKHOUSE_URL)."""
        import redis
        from sqlalchemy import text

        from svc.meta.store import MetaStore

        meta = MetaStore(self.pg_url)
        with meta.engine.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        meta.migrate()  # once, before several nodes start at once
        meta.close()
        client = redis.Redis.from_url(self.redis_url)
        client.flushall()
        client.close()
        self.phase += 1
        ch_url = self.double.database_url(f"nodes-bench-{os.getpid()}-{self.phase}-{name}")
        return self.pg_url, ch_url

    def count(self, ch_url: str, project_id: str) -> list[str]:
        """The event ids the double's store holds for ``project_id`` (one per stored row)."""
        database = ch_url.rsplit("/", 1)[1]
        sql = (
            f"SELECT event_id FROM {database}.events WHERE project_id = "
            f"'{project_id}' FORMAT TabSeparated"
        )
        from tests.clickhouse_double.process import PASSWORD, USER

        r = httpx.post(self.double.base_url, content=sql, auth=(USER, PASSWORD), timeout=300)
        r.raise_for_status()
        return r.text.split()


def own_database(url: str) -> str:
    """``url`` with a database of the bench's own on its server (made when missing)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = f"{parsed.database}_nodes_bench"
    engine = create_engine(parsed, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        exists = conn.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
        ).first()
        if not exists:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return parsed.set(database=name).render_as_string(hide_password=False)


def redis_pid(url: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return int(client.info("server")["process_id"])
    finally:
        client.close()


def script_stats(url: str, reset: bool = False) -> dict[str, float]:
    """Redis's own time in its script calls (``evalsha``) since the last reset."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        if reset:
            client.config_resetstat()
            return {}
        stats = client.info("commandstats").get("cmdstat_evalsha", {})
        return {
            "calls": int(stats.get("calls", 0)),
            "usec_per_call": round(float(stats.get("usec_per_call", 0.0)), 1),
        }
    finally:
        client.close()


# the nodes ----------------------------------------------------------------------------------


def start_nodes(
    n: int, root: Path, meta_url: str, ch_url: str, redis_url: str | None, token: str
) -> list[SvcServer]:
    nodes = []
    for i in range(n):
        env = {"SVC_CLICKHOUSE_URL": ch_url, "SVC_META_URL": meta_url, "SVC_NODE_ID": f"node-{i}"}
        if redis_url:
            env["SVC_REDIS_URL"] = redis_url
        data = root / f"n{n}-{'redis' if redis_url else 'local'}-{i}-{uuid.uuid4().hex[:6]}"
        nodes.append(SvcServer(data, env=env, token=token))
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda s: s.start(timeout=240), nodes))
    return nodes


def node_pid(node: SvcServer) -> int:
    doc = httpx.get(node.url + "/health", timeout=30).json()
    pid = doc.get("node", {}).get("pid") if isinstance(doc, dict) else None
    return int(pid) if pid else node.pid


def wait_loaded(nodes: list[SvcServer], timeout: float = 600.0) -> float:
    """Seconds until every node's spool is in the store."""
    started = time.monotonic()
    for node in nodes:
        while True:
            pipeline = httpx.get(node.url + "/health", timeout=30).json()["pipeline"]
            if pipeline["backlogEvents"] == 0 and not pipeline["loaderError"]:
                break
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{node.url}: still waiting: {pipeline}")
            time.sleep(0.1)
    return time.monotonic() - started


# the load -----------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the client threads saw (under a lock)."""

    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    events_ok: int = 0
    acked: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    not_accepted: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def make_body(rng: random.Random, batch: int, visitors: int) -> list[dict[str, Any]]:
    events = []
    for _ in range(max(1, batch)):
        v = rng.randrange(visitors)
        events.append(
            {
                "event": "page_view",
                "url": f"https://nodes.test{rng.choice(ingest_load.PATHS).format(n=v % 97)}",
                "eventId": uuid.uuid4().hex,
                "ip": f"10.{v >> 16 & 255}.{v >> 8 & 255}.{v & 255}",
                "userAgent": ingest_load.BROWSER_UAS[v % len(ingest_load.BROWSER_UAS)],
            }
        )
    return events


def drive(
    urls: list[str], key: str, seconds: float, args: argparse.Namespace, batch: int, seed: int
) -> Tally:
    """``args.threads`` threads sending for ``seconds``: every request's figures."""
    tally = Tally()
    deadline = time.perf_counter() + seconds
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def worker(k: int) -> None:
        rng = random.Random(seed * 1000 + k)
        clients = [httpx.Client(base_url=u, timeout=args.timeout, headers=headers) for u in urls]
        turn = k
        try:
            while time.perf_counter() < deadline:
                events = make_body(rng, batch, args.visitors)
                body = json.dumps(events if batch > 1 else events[0])
                if args.spread == "random":
                    client = rng.choice(clients)
                else:
                    client, turn = clients[turn % len(clients)], turn + 1
                ids = [e["eventId"] for e in events]
                started = time.perf_counter()
                try:
                    r = client.post("/analytics", content=body)
                except httpx.HTTPError as exc:
                    with tally.lock:
                        tally.statuses[type(exc).__name__] += 1
                        tally.unanswered.extend(ids)
                    continue
                ms = (time.perf_counter() - started) * 1000
                accepted = 0
                if r.status_code == 200:
                    accepted = r.json().get("accepted", 0) if batch > 1 else 1
                    if batch <= 1 and r.headers.get("x-svc-dropped"):
                        accepted = 0
                with tally.lock:
                    tally.latencies_ms.append(ms)
                    tally.statuses[str(r.status_code)] += 1
                    if accepted == len(ids):
                        tally.events_ok += accepted
                        tally.acked.extend(ids)
                    else:  # dropped or refused: none of its events may be stored ...
                        tally.not_accepted.extend(ids)
                        tally.events_ok += accepted  # ... but a batch's accepted part is
        finally:
            for c in clients:
                c.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally


def prime(urls: list[str], key: str, every: Tally) -> None:
    """One event to each node, answered before any load: what a node does on a project's
    first request (looking it up, its quota) is not timed."""
    rng = random.Random(0)
    for url in urls:
        events = make_body(rng, 1, 1)
        r = httpx.post(
            url + "/analytics",
            json=events[0],
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
        )
        r.raise_for_status()
        every.acked.append(events[0]["eventId"])


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.50), 2),
        "p99": round(percentile(values, 0.99), 2),
        "max": round(max(values), 2),
    }


def run_phase(
    name: str,
    n: int,
    redis_on: bool,
    backing: Backing,
    root: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """N nodes on fresh stores, each mode's load, then the store counted."""
    meta_url, ch_url = backing.fresh(name)
    token = admin_token()
    print(f"\n[{name}] starting {n} node(s), Redis {'on' if redis_on else 'off'} ...", flush=True)
    nodes = start_nodes(n, root, meta_url, ch_url, backing.redis_url if redis_on else None, token)
    out: dict[str, Any] = {"name": name, "nodes": n, "redis": redis_on, "modes": {}}
    try:
        project = nodes[0].create_project("nodes-bench")
        key, project_id = project["keys"]["secret"], project["id"]
        pids = {f"node-{i}": node_pid(s) for i, s in enumerate(nodes)}
        pids["double"] = backing.double.proc.pid
        pids["redis"] = backing.redis_pid
        urls = [s.url for s in nodes]
        every = Tally()
        prime(urls, key, every)  # each node's first request (the project, its quota) untimed
        for mode, batch in (("single", 1), (f"batch{args.batch}", args.batch)):
            noise = busy_elsewhere(exclude=[*pids.values(), os.getpid()], seconds=0.5)
            warm = drive(urls, key, args.warmup, args, batch, seed=1)
            if redis_on:
                script_stats(backing.redis_url, reset=True)
            cpu0 = {k: cpu_seconds(p) for k, p in {**pids, "client": os.getpid()}.items()}
            t0 = time.perf_counter()
            tally = drive(urls, key, args.seconds, args, batch, seed=2)
            elapsed = time.perf_counter() - t0
            cores = {
                k: round((cpu_seconds(p) - cpu0[k]) / elapsed, 2)
                for k, p in {**pids, "client": os.getpid()}.items()
            }
            for t in (warm, tally):
                every.acked += t.acked
                every.unanswered += t.unanswered
                every.not_accepted += t.not_accepted
            lat = summary(tally.latencies_ms)
            row = {
                "batch": batch,
                "seconds": round(elapsed, 2),
                "events_per_s": round(tally.events_ok / elapsed, 1),
                "requests_per_s": round(len(tally.latencies_ms) / elapsed, 1),
                "latency_ms": lat,
                "statuses": dict(tally.statuses),
                "cores": cores,
                "cores_all_nodes": round(sum(v for k, v in cores.items() if "node" in k), 2),
                "busy_elsewhere_cores_before": round(noise, 2),
            }
            if redis_on:
                row["redis_scripts"] = script_stats(backing.redis_url)
            out["modes"][mode] = row
            print(
                f"  {mode:8} {row['events_per_s']:9,.0f} events/s  p50 {lat.get('p50', 0):6.1f} "
                f"ms  p99 {lat.get('p99', 0):7.1f} ms  statuses {dict(tally.statuses)}  cores "
                f"{cores}",
                flush=True,
            )
        out["load_s"] = round(wait_loaded(nodes), 2)
        out["check"] = check_store(backing.count(ch_url, project_id), every)
        print(f"  store: {out['check']}", flush=True)
    finally:
        for s in nodes:
            s.stop()
    return out


def check_store(stored: list[str], every: Tally) -> dict[str, Any]:
    """The store against the acknowledged events: each once, nothing unexplained."""
    counts = Counter(stored)
    acked = set(every.acked)
    return {
        "acknowledged": len(every.acked),
        "stored": len(stored),
        "acknowledged_missing": sum(1 for e in acked if counts[e] == 0),
        "stored_twice": sum(1 for n in counts.values() if n > 1),
        "stored_unacknowledged": sum(1 for e in counts if e not in acked),
        "unanswered_requests_events": len(every.unanswered),
        "stored_not_accepted": sum(1 for e in every.not_accepted if counts[e]),
        "exact": len(stored) == len(acked) == len(every.acked)
        and all(counts[e] == 1 for e in acked),
    }


# the micro-bench ----------------------------------------------------------------------------


def micro(redis_url: str, root: Path, requests: int, batch: int) -> dict[str, Any]:
    """In this process: the in-process steps vs the Redis script, per request of 1 and of
    ``batch`` events (µs of wall time, one request at a time)."""
    import asyncio

    from tests.cluster.helpers import PROJECT, Node

    from svc.cluster.shared import Link, SharedIdentity
    from svc.ingestion.identity import CLIENT_SESSION_MEMORY_MS
    from svc.ingestion.pipeline import RequestContext
    from svc.ingestion.shared_identity import ask_of, identify_all
    from svc.ingestion.wire import validate_event

    node = Node(root / "micro", None)
    pipeline = node.service.pipeline
    rng = random.Random(3)

    def drafts(size: int) -> list[Any]:
        now = int(time.time() * 1000)
        out = []
        for e in make_body(rng, size, 5000):
            ctx = RequestContext(PROJECT, "secret", "127.0.0.1", "", None, now)
            d = pipeline.draft(validate_event(e, now), ctx)
            pipeline.run_local(d)
            out.append(d)
        return out

    async def timed(size: int) -> dict[str, Any]:
        link = Link(redis_url)
        shared = SharedIdentity(
            link,
            pipeline.sessions.timeout_ms,
            pipeline.event_ids.window_ms,
            CLIENT_SESSION_MEMORY_MS,
        )
        reqs = [drafts(size) for _ in range(requests)]
        local: list[float] = []
        for ds in reqs:
            t = time.perf_counter()
            for d in ds:
                if pipeline.drop_duplicates(d) is None:
                    pipeline.identify(d)
            local.append((time.perf_counter() - t) * 1e6)
        reqs = [drafts(size) for _ in range(requests)]
        script_stats(redis_url, reset=True)
        shared_us: list[float] = []
        for ds in reqs:
            t = time.perf_counter()
            await identify_all(pipeline, shared, ds)
            shared_us.append((time.perf_counter() - t) * 1e6)
        whole_redis = script_stats(redis_url)
        asks = [[ask_of(pipeline, d) for d in drafts(size)] for _ in range(requests)]
        script_stats(redis_url, reset=True)
        call_us: list[float] = []
        for a in asks:
            t = time.perf_counter()
            await shared.assign(a)
            call_us.append((time.perf_counter() - t) * 1e6)
        alone_redis = script_stats(redis_url)
        await link.close()
        return {
            "events_per_request": size,
            "in_process_us": summary(local),
            "redis_identify_all_us": summary(shared_us),
            "redis_script_call_us": summary(call_us),
            "redis_own_us_per_call": alone_redis.get("usec_per_call", 0.0),
            "redis_own_us_per_call_identify_all": whole_redis.get("usec_per_call", 0.0),
            "fallbacks": link.fallbacks,
        }

    rows = [asyncio.run(timed(size)) for size in (1, batch)]
    asyncio.run(node.spool.close())
    return {"requests": requests, "rows": rows}


# the report ---------------------------------------------------------------------------------


def commit() -> str:
    def git(*a: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def ratios(phases: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Events/s of N nodes over one node's, by mode."""
    base = next((p for p in phases if p["nodes"] == 1), None)
    out: dict[str, dict[str, float]] = {}
    if base is None:
        return out
    for p in phases:
        for mode, row in p["modes"].items():
            one = base["modes"][mode]["events_per_s"]
            out.setdefault(mode, {})[str(p["nodes"])] = (
                round(row["events_per_s"] / one, 2) if one else 0.0
            )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", default="1,2,3", help="node counts, comma-separated")
    p.add_argument("--seconds", type=float, default=20.0, help="timed load per mode")
    p.add_argument("--warmup", type=float, default=2.0, help="untimed load before each mode")
    p.add_argument("--threads", type=int, default=12, help="client threads")
    p.add_argument("--batch", type=int, default=20, help="events per request in batch mode")
    p.add_argument("--visitors", type=int, default=5000, help="distinct visitors (ip, UA)")
    p.add_argument("--spread", choices=("round-robin", "random"), default="round-robin")
    p.add_argument("--timeout", type=float, default=30.0, help="a request's client timeout")
    p.add_argument("--micro", type=int, default=2000, help="requests of the micro-bench")
    p.add_argument("--no-state", action="store_true", help="skip part 2 (the shared state)")
    p.add_argument("--label", default="", help="appended to the JSON's name")
    p.add_argument("--save", action="store_true", help="write bench/runs/<date>-nodes-*.json")
    p.add_argument("--out", type=Path, help="write the JSON here")
    args = p.parse_args(argv)
    counts = [int(x) for x in args.nodes.split(",") if x.strip()]
    if not counts or min(counts) < 1 or args.threads < 1 or args.batch < 2:
        p.error("node counts >= 1, at least one thread, a batch of at least 2")
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed (scripts/test-services.sh installs it)")

    from tests.clickhouse_double.process import RunningDouble
    from tests.limits.conftest import running_redis
    from tests.test_meta_store import postgres_url

    noise = busy_elsewhere(exclude=[os.getpid()])
    print(f"other processes use {noise:.2f} cores of {os.cpu_count()} (load {loadavg():.2f})")
    started = datetime.now(UTC)
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="svc-nodes-bench-")))
        redis_url = stack.enter_context(running_redis(root))
        double = RunningDouble(root / "double").start(timeout=120)
        stack.callback(double.stop)
        backing = Backing(own_database(postgres_url()), redis_url, redis_pid(redis_url), double)
        phases = [run_phase(f"{n}-nodes", n, True, backing, root, args) for n in counts]
        state: dict[str, Any] = {}
        if not args.no_state:
            state["local"] = run_phase("1-node-local", 1, False, backing, root, args)
            state["redis"] = run_phase("1-node-redis", 1, True, backing, root, args)
            print("\n[micro] the in-process steps vs the Redis script ...", flush=True)
            state["micro"] = micro(redis_url, root, args.micro, args.batch)
            for row in state["micro"]["rows"]:
                print(
                    f"  {row['events_per_request']:3} event(s): in-process p50 "
                    f"{row['in_process_us'].get('p50', 0):.0f} µs, identify_all p50 "
                    f"{row['redis_identify_all_us'].get('p50', 0):.0f} µs (p99 "
                    f"{row['redis_identify_all_us'].get('p99', 0):.0f}), the script call p50 "
                    f"{row['redis_script_call_us'].get('p50', 0):.0f} µs; Redis's own time "
                    f"{row['redis_own_us_per_call']} µs a call",
                    flush=True,
                )
    doc = {
        "kind": "nodes",
        "issue": 43,
        "label": args.label,
        "taken": started.isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "busy_elsewhere_cores_before": round(noise, 2),
        "loadavg_after": loadavg(),
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "why_no_scaling": (
            "every node, the ClickHouse double, Redis, PostgreSQL and the client share this "
            "machine's two cores: N nodes have no more CPU than one, so the ratio shows what "
            "the coordination costs when the CPU is the limit (on a quiet machine; on a busy "
            "one, mostly the noise), not the scaling N machines would give"
        ),
        "phases": phases,
        "ratio_to_one_node": ratios(phases),
        "shared_state": state,
    }
    print(f"\nevents/s of N nodes over one node's: {doc['ratio_to_one_node']}")
    print(f"({doc['why_no_scaling']})")
    if args.save or args.out:
        path = write_run(doc, f"nodes-{args.seconds:g}s", args.label, args.out, started)
        print(f"written: {path}")
    return doc


if __name__ == "__main__":
    main()
