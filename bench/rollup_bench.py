"""The daily rollup of a big day, and ingestion while it runs.

On a query-bench store (``bench/query_bench.py``: 30 days, ``--events`` of them, so a day of
the 100M store holds about 3.3M events), the server is started with rollup passes every 2 s
and a steady load of single-event POST /analytics requests (``--clients`` closed loops, each
pausing ``--pause-ms`` between requests). After ``--baseline`` seconds, one late event is sent
with a time on a day that is already rolled up (``--days-ago``, within the 7 days a late event
may reach back): the next pass computes that whole day again. The run reports:

- the pass's time (``svc_rollup_last_duration_seconds``) and the time the day's computation
  held the store's write lock (``svc_rollup_last_lock_seconds``: the loader waits that long);
- the ingestion latency (p50, p99, max) before the pass and during it, and the requests that
  failed (every one should be a 200: the spool takes events while the store is locked);
- the loader's backlog at its largest during the pass (what the spool absorbed).

Run: ``.venv/bin/python bench/rollup_bench.py --data-dir /tmp/qb100``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BROWSER_UA, SvcServer, http, percentile

METRICS_TOKEN = "rollup-bench-metrics-token-0123456789"


def metric(server: SvcServer, name: str) -> float:
    """One unlabelled sample of /internal/metrics (0 when absent)."""
    req = urllib.request.Request(
        server.url + "/internal/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


class Load:
    """Closed-loop clients posting one page view each time; latencies kept with their start."""

    def __init__(self, url: str, key: str, clients: int, pause_s: float) -> None:
        self.url, self.key, self.clients, self.pause_s = url, key, clients, pause_s
        self.samples: list[tuple[float, float, int]] = []  # (start, seconds, status)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(clients)]

    def _run(self, n: int) -> None:
        seq = 0
        while not self.stop.is_set():
            seq += 1
            body = json.dumps(
                {"event": "page_view", "url": f"https://bench.test/c{n}/{seq % 50}"}
            ).encode()
            req = urllib.request.Request(
                self.url + "/analytics",
                data=body,
                method="POST",
                headers={
                    "Authorization": f"Bearer {self.key}",
                    "Content-Type": "application/json",
                    "User-Agent": BROWSER_UA,
                    "X-Forwarded-For": f"10.9.{n}.{seq % 250}",
                },
            )
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    status = r.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError:
                status = 0
            with self.lock:
                self.samples.append((started, time.perf_counter() - started, status))
            time.sleep(self.pause_s)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        with self.lock:
            rows = [(s, d, st) for s, d, st in self.samples if t0 <= s < t1]
        ms = [d * 1000 for _, d, _ in rows]
        return {
            "requests": len(rows),
            "failed": sum(1 for *_, st in rows if st != 200),
            "p50_ms": round(statistics.median(ms), 2) if ms else 0.0,
            "p99_ms": round(percentile(ms, 0.99), 2),
            "max_ms": round(max(ms), 2) if ms else 0.0,
            "rate_per_s": round(len(rows) / (t1 - t0), 1) if t1 > t0 else 0.0,
        }


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = json.loads((args.data_dir / "bench-dataset.json").read_text())
    end = datetime.fromisoformat(info["end"])
    day = (datetime.now(UTC) - timedelta(days=args.days_ago)).date()
    if day >= end.date():
        sys.exit(f"{day} is not in the store's 30 days (they end {end:%Y-%m-%d})")
    server = SvcServer(
        args.data_dir,
        token=info["admin_token"],
        env={
            "SVC_ROLLUP_INTERVAL_SECONDS": "2",
            "SVC_INTERNAL_METRICS_TOKEN": METRICS_TOKEN,
            "SVC_TRUSTED_PROXIES": "127.0.0.1/32",
        },
    )
    server.start()
    result: dict[str, Any] = {"day": day.isoformat(), "startup_s": round(server.startup_s, 2)}
    try:
        events_that_day = http(
            "GET",
            server.url + f"/metrics?from={day}&to={day}",
            info["secret"],
        )[1]
        result["events_that_day"] = events_that_day.get("events")
        time.sleep(4)  # a pass or two with nothing to do
        passes0 = metric(server, "svc_rollup_computations_total")
        with Load(server.url, info["secret"], args.clients, args.pause_ms / 1000) as load:
            t0 = time.perf_counter()
            time.sleep(args.baseline)
            t1 = time.perf_counter()
            late = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
            status, doc = http(
                "POST",
                server.url + "/analytics",
                info["secret"],
                {
                    "event": "page_view",
                    "url": "https://bench.test/late",
                    "ts": int(late.timestamp() * 1000),
                },
            )
            if status != 200:
                sys.exit(f"the late event was refused: {status} {doc}")
            backlog = 0
            deadline = time.perf_counter() + args.timeout
            while metric(server, "svc_rollup_computations_total") <= passes0:
                if time.perf_counter() > deadline:
                    sys.exit("no rollup pass computed the day in time")
                health = http("GET", server.url + "/health", None)[1]
                backlog = max(backlog, int(health["pipeline"]["backlogEvents"]))
                time.sleep(0.2)
            t2 = time.perf_counter()
            time.sleep(1.0)
        result["pass_s"] = round(metric(server, "svc_rollup_last_duration_seconds"), 2)
        result["lock_s"] = round(metric(server, "svc_rollup_last_lock_seconds"), 2)
        result["seconds_to_computed"] = round(t2 - t1, 2)
        result["max_backlog_events"] = backlog
        result["ingest_before"] = load.window(t0, t1)
        result["ingest_during"] = load.window(t1, t2)
    finally:
        server.stop()
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/qb100"))
    p.add_argument("--days-ago", type=int, default=3, help="the day rolled up again")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--pause-ms", type=float, default=5.0)
    p.add_argument("--baseline", type=float, default=10.0, help="seconds of load before")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
