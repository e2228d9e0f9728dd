"""Micro-benchmark of the in-process limits: µs per check, and per request through the
middleware.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_limits.py [-n 200000] [-r 5] [--keys 10000]``.

Rows (each the best of ``-r`` rounds of ``-n`` calls; CPU time of the process per call, so that
other load on the machine counts less):

* ``bucket check``: one :meth:`TokenBuckets.check` (refill, take, LRU move) over ``--keys``
  distinct keys, as with many client addresses;
* ``ingest check (2 buckets)``: :func:`admit_two` over the per-address+project and
  per-project buckets, all or nothing, as POST /analytics does;
* ``quota reserve+release``: the in-process quota reservation around one event;
* ``middleware, POST /analytics``: a whole request through :class:`LimitsMiddleware` (headers
  scanned, credential looked up in the real authenticator's warm key cache, two buckets,
  quota check, RateLimit headers added) minus the same request straight to the inner app:
  what the limits add to a request. The issue's budget is 5 µs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from svc import credentials
from svc.auth import Authenticator
from svc.http.limits import LimitsMiddleware
from svc.limits.bucket import Rule, TokenBuckets, admit_two
from svc.limits.core import Limits
from svc.limits.plans import parse_plans
from svc.limits.quota import Quotas
from svc.meta.store import MetaStore, Project
from svc.settings import Settings

BUDGET_US = 5.0


class Usage:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def of(self, project_id: str, month: str) -> int:
        return self.counts[(project_id, month)]

    def add(self, project_id: str, month: str, n: int) -> None:
        self.counts[(project_id, month)] += n


def best(fn: Callable[[int], float], n: int, rounds: int) -> float:
    """Best µs per call of ``fn(n)`` (which returns seconds for n calls) over rounds."""
    fn(min(n, 10_000))  # warm up
    return min(fn(n) for _ in range(rounds)) / n * 1e6


def bench_bucket(n: int, keys: int) -> float:
    b = TokenBuckets(Rule("ip", 1e9, 10**9))
    names = [f"10.0.{i // 256}.{i % 256}|svc_proj_bench" for i in range(keys)]
    check, now = b.check, time.monotonic
    started = time.process_time()
    for i in range(n):
        check(names[i % keys], now())
    return time.process_time() - started


def bench_admit_two(n: int, keys: int) -> float:
    ip = TokenBuckets(Rule("ip", 1e9, 10**9))
    project = TokenBuckets(Rule("project", 1e9, 10**9))
    names = [f"10.0.{i // 256}.{i % 256}|p" for i in range(keys)]
    now = time.monotonic
    started = time.process_time()
    for i in range(n):
        admit_two(ip, names[i % keys], project, "p", now())
    return time.process_time() - started


def bench_quota(n: int, _keys: int) -> float:
    quotas = Quotas(parse_plans("", 0), Usage())
    p = Project("svc_proj_bench", "bench", "UTC", (), "free", {})

    async def run() -> float:
        reserve, release = quotas.reserve, quotas.release
        started = time.process_time()
        for _ in range(n):
            left = await reserve(p, "2025-01", 1)
            await release(p.id, "2025-01", left - 1)
        return time.process_time() - started

    return asyncio.run(run())


def _middleware_parts(keys: int) -> tuple[Any, LimitsMiddleware, list[dict[str, Any]]]:
    settings = Settings(
        rate_limit_ingest_per_ip="1000000000:1000000000",
        rate_limit_ingest_per_project="1000000000:1000000000",
    )
    limits = Limits(settings, Usage())
    # the real authenticator, its key cache warm (as for any key used in the last seconds)
    meta = MetaStore("sqlite://")
    meta.migrate()
    _project, clear = meta.create_project("bench")
    auth = Authenticator(meta, credentials.hash_secret(credentials.new_admin_token()), 1e9)
    auth.resolve(clear["public"])
    state = SimpleNamespace(
        runtime=SimpleNamespace(auth=auth),
        proxies=SimpleNamespace(networks=[]),
    )
    authorization = b"Bearer " + clear["public"].encode()
    # as after the project's first event: its quota known, its count far from it
    asyncio.run(limits.quotas.reserve(meta.get_project(_project.id), "2025-01", 1))
    body = b'{"ok":true,"ts":1}'

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    middleware = LimitsMiddleware(inner, limits, state)
    scopes = [
        {
            "type": "http",
            "method": "POST",
            "path": "/analytics",
            "query_string": b"",
            "client": (f"10.1.{i // 256}.{i % 256}", 50000),
            "headers": [
                (b"host", b"svc.example.org"),
                (b"user-agent", b"Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0.0.0"),
                (b"content-type", b"application/json"),
                (b"authorization", authorization),
                (b"content-length", b"42"),
                (b"accept", b"*/*"),
            ],
        }
        for i in range(keys)
    ]
    return inner, middleware, scopes


def bench_middleware(n: int, keys: int) -> tuple[float, float]:
    inner, middleware, scopes = _middleware_parts(keys)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        pass

    async def timed(app: Any) -> float:
        started = time.process_time()
        for i in range(n):
            await app(scopes[i % keys], receive, send)
        return time.process_time() - started

    async def run() -> tuple[float, float]:
        await timed(middleware)
        return await timed(inner), await timed(middleware)

    try:
        import uvloop

        return uvloop.run(run())
    except ImportError:
        return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200_000, help="calls per round")
    parser.add_argument("-r", type=int, default=5, help="rounds (the best counts)")
    parser.add_argument("--keys", type=int, default=10_000, help="distinct addresses")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    n, rounds, keys = args.n, args.r, args.keys
    rows = {
        "bucket check": best(lambda k: bench_bucket(k, keys), n, rounds),
        "ingest check (2 buckets)": best(lambda k: bench_admit_two(k, keys), n, rounds),
        "quota reserve+release": best(lambda k: bench_quota(k, keys), n, rounds),
    }
    pairs = [bench_middleware(n, keys) for _ in range(rounds)]
    bare = min(p[0] for p in pairs) / n * 1e6
    limited = min(p[1] for p in pairs) / n * 1e6
    rows["request, inner app alone"] = bare
    rows["request through the middleware"] = limited
    rows["middleware, POST /analytics (added)"] = limited - bare
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in rows.items()}))
        return
    print(f"{'limits, in process':<40} {'µs/call':>8}   (n={n}, best of {rounds}, {keys} keys)")
    for name, us in rows.items():
        print(f"{name:<40} {us:>8.2f}")
    added = rows["middleware, POST /analytics (added)"]
    verdict = "within" if added <= BUDGET_US else "OVER"
    print(f"\nthe limits add {added:.2f} µs to a request: {verdict} the {BUDGET_US:g} µs budget")


if __name__ == "__main__":
    main()
