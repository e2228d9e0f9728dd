"""The per-request cost of the state several nodes share in Redis (issue 43): this tree's
svc.cluster.shared.SharedIdentity against the same class at another commit (``--before``),
in one run, on one redis-server of the bench's own (tests/limits' ``running_redis``).

Each request is ``--batch`` events with an ``eventId`` each, sent the way the ingestion path
sends them: ``assign`` (the identify script: the ids reserved, the sessions found or started)
then ``confirm`` (the ids marked stored once the spool has the events), one request at a time.
Two shapes: ``visitors``, every event a visitor drawn from ``--visitors`` (the load of
bench/nodes_bench.py), and ``one``, a request of one visitor's events (a browser's batch).
The two versions run in alternating rounds (``--rounds``), each on its own project's keys,
so that both meet the same machine and a Redis of the same size. Figures: µs of wall time per
request (p50 and mean) for ``assign``, ``confirm`` and both; the CPU time of the
redis-server per request (``INFO cpu``: its commands, scripts and network I/O). The machine
may be shared: compare the two columns of one run, not figures of different runs.

Example::

    .venv/bin/python bench/shared_state_bench.py --requests 4000
    .venv/bin/python bench/shared_state_bench.py --requests 200 --rounds 2   # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

#: The last commit with the identify script of one Redis argument per field of each event, and
#: the event ids confirmed by a pipeline of SETs.
BEFORE = "538f7d8"
TIMEOUT_MS = 30 * 60_000
WINDOW_MS = 48 * 3_600_000
CLIENT_MEMORY_MS = 24 * 3_600_000


def module_at(rev: str, tmp: Path) -> ModuleType:
    """svc/cluster/shared.py as it was at ``rev``, imported under a name of its own."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:src/svc/cluster/shared.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = tmp / f"shared_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"shared_{rev}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def requests_of(
    shape: str, n: int, batch: int, visitors: int, seed: int
) -> list[list[tuple[int, int, str]]]:
    """``n`` requests: each event's (visitor today, visitor yesterday, event id)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        one = rng.randrange(visitors)
        events = []
        for _ in range(batch):
            v = one if shape == "one" else rng.randrange(visitors)
            events.append((1_000_003 * v + 17, 2_000_029 * v + 5, uuid.uuid4().hex))
        out.append(events)
    return out


class Version:
    """One version of the class, on its own project's keys."""

    def __init__(self, name: str, module: ModuleType, redis_url: str) -> None:
        self.name = name
        self.module = module
        self.link = module.Link(redis_url)
        self.shared = module.SharedIdentity(self.link, TIMEOUT_MS, WINDOW_MS, CLIENT_MEMORY_MS)
        self.project = f"svc_proj_bench-{name}"
        self.assign_us: list[float] = []
        self.confirm_us: list[float] = []
        self.redis_us = 0.0

    async def send(self, events: list[tuple[int, int, str]]) -> None:
        now = int(time.time() * 1000)
        ask = self.module.Ask
        asks = [ask("d", e, self.project, v, b, now - 50, now) for v, b, e in events]
        t0 = time.perf_counter()
        answers = await self.shared.assign(asks)
        t1 = time.perf_counter()
        await self.shared.confirm(self.project, [e for _, _, e in events])
        t2 = time.perf_counter()
        assert answers is not None and len(answers) == len(events), "Redis did not answer"
        self.assign_us.append((t1 - t0) * 1e6)
        self.confirm_us.append((t2 - t1) * 1e6)


def redis_cpu_us(url: str) -> float:
    """The CPU time the redis-server has used so far (µs): its commands, scripts and I/O."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        cpu = client.info("cpu")
        return (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])) * 1e6
    finally:
        client.close()


def figures(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 1),
        "mean": round(statistics.fmean(values), 1),
    }


async def run_shape(shape: str, versions: list[Version], args: argparse.Namespace) -> None:
    per_round = max(1, args.requests // args.rounds)
    for v in versions:  # warm up: the scripts loaded, the connections open
        for events in requests_of(shape, 20, args.batch, args.visitors, 1):
            await v.send(events)
        v.assign_us.clear()
        v.confirm_us.clear()
        v.redis_us = 0.0
    for r in range(args.rounds):
        order = versions if r % 2 == 0 else versions[::-1]
        for v in order:
            reqs = requests_of(shape, per_round, args.batch, args.visitors, 100 + r)
            before = redis_cpu_us(args.redis_url)
            for events in reqs:
                await v.send(events)
            v.redis_us += redis_cpu_us(args.redis_url) - before


async def main_async(args: argparse.Namespace, modules: dict[str, ModuleType]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "batch": args.batch,
        "requests": args.requests,
        "rounds": args.rounds,
        "shapes": {},
    }
    for shape in ("visitors", "one"):
        versions = [Version(name, m, args.redis_url) for name, m in modules.items()]
        await run_shape(shape, versions, args)
        rows = {}
        for v in versions:
            both = [a + c for a, c in zip(v.assign_us, v.confirm_us, strict=True)]
            rows[v.name] = {
                "assign_us": figures(v.assign_us),
                "confirm_us": figures(v.confirm_us),
                "request_us": figures(both),
                "redis_cpu_us_per_request": round(v.redis_us / len(both), 1),
                "fallbacks": v.link.fallbacks,
            }
            await v.link.close()
        report["shapes"][shape] = rows
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tests.limits.conftest import running_redis

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--requests", type=int, default=4000, help="requests per shape and version")
    p.add_argument("--batch", type=int, default=20, help="events per request")
    p.add_argument("--rounds", type=int, default=8, help="alternating rounds")
    p.add_argument("--visitors", type=int, default=5000, help="visitors of the `visitors` shape")
    p.add_argument("--before", default=BEFORE, help="the commit to compare with")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    import svc.cluster.shared as now_module

    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp)) as url:
        args.redis_url = url
        modules = {"before": module_at(args.before, Path(tmp)), "after": now_module}
        report = asyncio.run(main_async(args, modules))
    report["before"] = args.before
    if args.json:
        print(json.dumps(report, indent=2))
        return report
    print(f"{args.batch} events a request, {args.requests} requests a version and shape")
    print(
        f"{'shape':<9} {'version':<7} {'assign':>14} {'confirm':>14} {'request':>14} {'redis':>7}"
    )
    for shape, rows in report["shapes"].items():
        for name, row in rows.items():
            cells = [
                f"{row[k]['p50']:>6} / {row[k]['mean']:<6}"
                for k in ("assign_us", "confirm_us", "request_us")
            ]
            print(f"{shape:<9} {name:<7} {' '.join(cells)} {row['redis_cpu_us_per_request']:>7}")
    print("µs per request: p50 / mean; redis: the redis-server's CPU µs per request")
    return report


if __name__ == "__main__":
    main()
