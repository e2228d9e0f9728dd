"""Every combination of the read API, sampled, timed through HTTP (issue 40, Targets).

The cases are :func:`query_combinations.sample`'s: the reports (GET /metrics with each
``duration``, GET /metrics/timeseries with each interval, GET /metrics/breakdown by each
dimension, each custom property's key and, on a store with the extensions' events, each of
their kinds, in each order), without a filter, with one or with two (each filter dimension
with ``is`` and ``contains``), over ranges ending today and in the past, with and without
``compare``: ``--cases`` of them drawn with ``--seed``. The filters' values are the store's
own (the top value of each dimension, a piece of its second for ``contains``).

The store is ``bench/query_bench.py``'s (made the same way, by its :func:`dataset`, and kept
in ``--data-dir`` for the next run: a 10M store made for that bench serves this one too).
Today's ranges end today by the clock: on a store generated on an earlier day, today and the
days since hold no events (the script says so).

Each case: one warm-up request, then ``--runs`` timed ones, p50 and max. The report lists the
slowest ten, how many cases are over 300 ms and over 1 s (the issue's aims at 10M and at
100M), every answer that is not a 200 (a 4xx is a fault of the sample), and the server's
peak memory; the whole run goes to ``bench/runs/<date>-<time>-combinations-<size>.json``
(``--out`` elsewhere).

Run: ``.venv/bin/python bench/combinations_bench.py --events 10000000 --data-dir
/tmp/svc-bench-10m`` (``--tree /tmp/before``: the server from another source tree).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import urllib.parse
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import query_combinations as combos
from _common import (
    SvcServer,
    busy_elsewhere,
    http,
    loadavg,
    machine,
    peak_rss_bytes,
    rss_bytes,
    size_label,
    write_run,
)
from query_bench import dataset, time_get
from run_all import commit

#: The issue's aims for every case's p50: at 10M events, and at 100M.
AIMS_MS = (300.0, 1000.0)


@dataclass
class CaseTiming:
    index: int
    name: str
    url: str
    status: int
    runs: int
    p50_ms: float = 0.0
    max_ms: float = 0.0
    note: str = ""


def getter(base: str, token: str) -> combos.Get:
    """GET through HTTP as ``token``: the JSON of a 200, an error otherwise."""

    def get(path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        url = f"{base}{path}?{urllib.parse.urlencode(params)}"
        status, body = http("GET", url, token, timeout=300)
        if status != 200 or not isinstance(body, dict):
            raise RuntimeError(f"GET {path}: {status} {body!r:.300}")
        return body

    return get


def summary(timings: list[CaseTiming]) -> dict[str, Any]:
    """The slowest ten, the counts over each aim, the spread of the cases' p50, the failures."""
    timed = sorted((t for t in timings if t.status == 200), key=lambda t: -t.p50_ms)
    p50s = sorted(t.p50_ms for t in timed)
    return {
        "cases": len(timings),
        "answered": len(timed),
        "not_200": [asdict(t) for t in timings if t.status != 200],
        **{f"over_{aim:g}_ms": sum(p > aim for p in p50s) for aim in AIMS_MS},
        "p50_of_p50s_ms": round(statistics.median(p50s), 1) if p50s else 0.0,
        "max_p50_ms": round(p50s[-1], 1) if p50s else 0.0,
        "slowest": [
            {"name": t.name, "url": t.url, "p50_ms": t.p50_ms, "max_ms": t.max_ms}
            for t in timed[:10]
        ],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = dataset(args.data_dir, args.events, args.days, args.regenerate, args.extensions)
    last_day = (datetime.fromisoformat(info["end"]) - timedelta(milliseconds=1)).date()
    first_day = last_day - timedelta(days=info["days"] - 1)
    today = datetime.now(UTC).date()
    if last_day != today:
        print(
            f"note: the store's last day is {last_day}, not today ({today}): the ranges to "
            "today read days it has no events of (--regenerate a store of an earlier day)"
        )
    env = {"PYTHONPATH": str(args.tree.resolve() / "src")} if args.tree else {}
    noise = busy_elsewhere(exclude=[os.getpid()])
    server = SvcServer(args.data_dir, env=env, token=info["admin_token"])
    server.start()
    timings: list[CaseTiming] = []
    try:
        get = getter(server.url, info["secret"])
        keys = combos.property_keys(get, first_day, last_day)
        values = combos.discover(get, first_day, last_day, keys)
        kinds = combos.EXTENSION_KINDS if info.get("extensions") else ()
        cases = combos.sample(args.cases, args.seed, keys, kinds)
        print(f"{len(cases)} cases (seed {args.seed}), {args.runs} timed runs each", flush=True)
        for case in cases:
            url = f"{case.path}?{urllib.parse.urlencode(case.params(values, today))}"
            status, samples, body = time_get(server.url + url, info["secret"], args.runs, 1)
            t = CaseTiming(case.index, case.name, url, status, len(samples))
            if samples:
                t.p50_ms = round(statistics.median(samples), 1)
                t.max_ms = round(max(samples), 1)
            else:
                t.note = f"{body!r}"[:300]
            timings.append(t)
            print(f"  {t.p50_ms:8.1f} ms  {status}  {case.name}", flush=True)
        rss_peak_mb = peak_rss_bytes(server.pid) / 2**20
        rss_after_mb = rss_bytes(server.pid) / 2**20
    finally:
        server.stop()
    return {
        "kind": "combinations",
        "issue": 40,
        "taken": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "busy_elsewhere_cores_before": round(noise, 2),
        "loadavg_after": loadavg(),
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "dataset": info,
        "today": today.isoformat(),
        "values": values,
        "property_keys": keys,
        "startup_s": round(server.startup_s, 2),
        "rss_mb_after": round(rss_after_mb, 1),
        "rss_mb_peak": round(rss_peak_mb, 1),
        "summary": summary(timings),
        "timings": [asdict(t) for t in timings],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/svc-bench-query"))
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--extensions", action="store_true", help="a store with the extensions")
    p.add_argument("--cases", type=int, default=300, help="combinations sampled")
    p.add_argument("--runs", type=int, default=5, help="timed runs per case (after 1 warm)")
    p.add_argument("--seed", type=int, default=combos.SEED, help="the sample's seed")
    p.add_argument("--tree", type=Path, help="run the server from this source tree (A/B)")
    p.add_argument("--label", default="", help="appended to the JSON's name")
    p.add_argument("--out", type=Path, help="the JSON file (default bench/runs/...)")
    args = p.parse_args(argv)
    if args.cases < 1 or args.runs < 1:
        p.error("at least one case and one run")
    doc = run(args)
    s = doc["summary"]
    print(f"\nslowest {len(s['slowest'])} of {s['answered']} answered cases (p50):")
    for row in s["slowest"]:
        print(f"  {row['p50_ms']:8.1f} ms  {row['name']}")
    print(
        f"over 300 ms: {s['over_300_ms']}, over 1 s: {s['over_1000_ms']}; median p50 "
        f"{s['p50_of_p50s_ms']} ms; not 200: {len(s['not_200'])}; server peak RSS "
        f"{doc['rss_mb_peak']:.0f} MB"
    )
    path = write_run(doc, f"combinations-{size_label(args.events)}", args.label, args.out)
    print(f"written: {path}")
    return doc


if __name__ == "__main__":
    main()
