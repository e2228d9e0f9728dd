"""The edge, per runtime: its processing per ingest, the whole request through it, cold start
and bundle size (issue 18; docs/edge.md).

For each runtime of tests/edge (workerd for Cloudflare Workers, edge-runtime for Vercel Edge,
the Lambda@Edge module under the CloudFront stand-in, Bun), in front of a real svc origin on
loopback (fsync on; rate limits and quota off, as every load test from one address needs):

- **cold start**: from starting the runtime's process to its first answer, and the first
  ingest's time through it (the code's first run);
- **edge processing** per ingest, p50 and p99 over ``--requests`` requests (10,000 by
  default): the handler's own ``Server-Timing: edge;dur`` (from the request's arrival in the
  handler to the forward: reading the body, validation, signing), for a valid event (forwarded)
  and an invalid one (answered at the edge). Workers' clock advances only on I/O, so workerd's
  figure is a lower bound; the added latency below is measured from outside for every runtime;
- **whole request** through the edge, p50 and p99 (one keep-alive connection, one request at a
  time), and the same requests sent to the origin directly: the difference (``addedMs``, per
  percentile) is what the edge adds on loopback (its processing, one more HTTP hop, and the
  runtime's HTTP stacks), measured from outside, so the same for every runtime; and a CORS
  preflight answered by the edge (``preflightMs``: the runtime's HTTP cost with next to no
  processing). workerd's clock moves only on I/O and in whole milliseconds (as on
  Cloudflare), so its ``edgeProcessingMs`` reads 0 or 1 and is marked ``"clock"``: read its
  ``addedMs`` and ``answeredLessPreflightMs`` (what answering a bad event at the edge costs
  over a preflight: reading, parsing and validating, measured from outside) instead;
- **bundle size**: each file in src/svc/static/edge/, raw and gzip -9.

Run it only on a quiet machine: ``.venv/bin/python bench/edge_bench.py [--requests 10000]
[--platforms bun,cloudflare-workers] [--json out.json]``. Needs ``make edge-deps``. A runtime
that fails is reported with its error and the others still run (exit status 1). The last
lines are a table per runtime: edge processing p50/p99, added latency p50/p99, cold start.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.edge.support import (
    BIN,
    BUNDLES,
    EDGE,
    PLATFORMS,
    SECRET,
    built,
    start,
    visitor_headers,
)
from tests.support import Server

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BROWSER_UA, percentile

VALID = json.dumps({"event": "page_view", "url": "https://acme.test/pricing"}).encode()
INVALID = json.dumps({"event": "", "url": "https://acme.test/pricing"}).encode()


def timing(header: str, name: str) -> float | None:
    for part in header.split(","):
        key, _, rest = part.strip().partition(";dur=")
        if key == name:
            return float(rest)
    return None


def run(
    client: httpx.Client, url: str, body: bytes, headers: dict[str, str], n: int, status: int
) -> tuple[list[float], list[float]]:
    """Client latencies (ms) and the edge's Server-Timing (ms) of ``n`` requests."""
    wall: list[float] = []
    edge: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.post(url, content=body, headers=headers)
        wall.append((time.perf_counter() - t0) * 1000)
        if r.status_code != status:
            raise RuntimeError(f"{url}: {r.status_code} {r.text[:200]}")
        spent = timing(r.headers.get("server-timing", ""), "edge")
        if spent is not None:
            edge.append(spent)
    return wall, edge


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": round(statistics.median(values), 3),
        "p99": round(percentile(values, 0.99), 3),
        "mean": round(statistics.fmean(values), 3),
    }


def bundle_sizes() -> dict[str, dict[str, int]]:
    out = {}
    for path in sorted(BUNDLES.iterdir()):
        data = path.read_bytes()
        out[path.name] = {"bytes": len(data), "gzip": len(gzip.compress(data, 9, mtime=0))}
    return out


def added(through: list[float], direct: list[float]) -> dict[str, float]:
    """What going through the edge adds, per percentile (p50 and p99 of each, subtracted)."""
    return {
        "p50": round(statistics.median(through) - statistics.median(direct), 3),
        "p99": round(percentile(through, 0.99) - percentile(direct, 0.99), 3),
    }


def preflights(client: httpx.Client, url: str, n: int) -> list[float]:
    """Client latencies (ms) of ``n`` CORS preflights, which the edge answers itself."""
    wall: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.options(url)
        wall.append((time.perf_counter() - t0) * 1000)
        if r.status_code != 204:
            raise RuntimeError(f"OPTIONS {url}: {r.status_code} {r.text[:200]}")
    return wall


def missing_runtimes() -> list[str]:
    """The npm packages of ``make edge-deps`` that are not installed."""
    missing = [name for name in ("workerd", "bun", "esbuild") if not (BIN / name).exists()]
    if not (EDGE / "node_modules" / "edge-runtime").is_dir():
        missing.append("edge-runtime")
    return missing


def measure(
    platform: str, origin: Server, tmp: Path, base: dict[str, str], direct: list[float], args: Any
) -> dict[str, Any]:
    """One runtime's figures, in front of ``origin``."""
    config = {
        "SVC_ORIGIN": origin.url,
        "SVC_EDGE_SECRET": SECRET,
        "SVC_EDGE_TRUSTED_PROXIES": "127.0.0.1/32",
    }
    bundle = built(platform, tmp, config)
    t0 = time.perf_counter()
    edge = start(platform, bundle, tmp / platform, config)
    cold = (time.perf_counter() - t0) * 1000
    headers = {**base, **visitor_headers(platform, "81.2.69.160", "DE", "BE", "Berlin")}
    try:
        with httpx.Client(timeout=30) as client:
            url = edge.url + "/analytics"
            t1 = time.perf_counter()
            client.post(url, content=VALID, headers=headers).raise_for_status()
            first = (time.perf_counter() - t1) * 1000
            run(client, url, VALID, headers, args.warmup, 200)
            wall, spent = run(client, url, VALID, headers, args.requests, 200)
            bad_wall, bad_spent = run(client, url, INVALID, headers, args.requests, 400)
            options = preflights(client, url, args.requests)
    finally:
        edge.stop()
    row: dict[str, Any] = {
        "coldStartMs": round(cold, 1),
        "firstIngestMs": round(first, 2),
        "edgeProcessingMs": summary(spent),
        "edgeAnsweredProcessingMs": summary(bad_spent),
        "wholeRequestMs": summary(wall),
        "answeredAtEdgeMs": summary(bad_wall),
        "preflightMs": summary(options),
        "addedMs": added(wall, direct),
        "answeredLessPreflightMs": added(bad_wall, options),
        "addedP50Ms": round(statistics.median(wall) - statistics.median(direct), 3),
    }
    if spent and all(v == int(v) for v in spent):
        row["clock"] = "whole ms, moving only on I/O: edgeProcessingMs is not a measure"
    return row


def table(runtimes: dict[str, dict[str, Any]]) -> str:
    """The per-runtime figures as a few lines of text."""
    lines = [
        f"{'runtime':<20} {'edge p50':>9} {'edge p99':>9} {'added p50':>10} {'added p99':>10} "
        f"{'cold ms':>8}"
    ]
    for platform, row in runtimes.items():
        if "error" in row:
            lines.append(f"{platform:<20} error: {row['error']}")
            continue
        edge, add = row["edgeProcessingMs"], row["addedMs"]
        mark = "*" if "clock" in row else ""
        p50, p99 = (f"{edge.get(p, 0):.3f}{mark}" for p in ("p50", "p99"))
        lines.append(
            f"{platform:<20} {p50:>9} {p99:>9} {add['p50']:>10.3f} {add['p99']:>10.3f} "
            f"{row['coldStartMs']:>8.1f}"
        )
    if any("clock" in row for row in runtimes.values()):
        lines.append(
            "* the runtime's clock moves only on I/O, in whole ms (workerd, as on Cloudflare): "
            "read its added latency and answeredLessPreflightMs"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--platforms", default=",".join(PLATFORMS))
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()
    missing = missing_runtimes()
    if missing:
        print(
            f"edge runtimes not installed ({', '.join(missing)}): make edge-deps", file=sys.stderr
        )
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="edge-bench-"))
    origin = Server(
        tmp / "data",
        env={
            "SVC_EDGE_SECRET": SECRET,
            "SVC_RATE_LIMIT_INGEST_PER_IP": "0",
            "SVC_RATE_LIMIT_INGEST_PER_PROJECT": "0",
            "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP": "0",
            "SVC_MONTHLY_QUOTA": "0",
        },
    ).start()
    results: dict[str, Any] = {"requests": args.requests, "bundles": bundle_sizes(), "runtimes": {}}
    failed = False
    try:
        key = origin.create_project("bench")["keys"]["public"]
        base = {
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "user-agent": BROWSER_UA,
        }
        with httpx.Client(timeout=30) as client:
            direct, _ = run(client, origin.url + "/analytics", VALID, base, args.warmup, 200)
            direct, _ = run(client, origin.url + "/analytics", VALID, base, args.requests, 200)
        results["direct"] = summary(direct)
        for platform in args.platforms.split(","):
            try:
                row = measure(platform, origin, tmp, base, direct, args)
            except Exception as exc:  # one runtime's failure: reported, the others go on
                row = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                failed = True
            results["runtimes"][platform] = row
            print(platform, json.dumps(row), flush=True)
    finally:
        origin.stop()
    print(json.dumps(results, indent=2))
    print(table(results["runtimes"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
