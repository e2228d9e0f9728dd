"""Where a report's time goes: each statement it runs, timed, on a store made by
``query_bench.py``, in process (the app of ``create_app`` and Starlette's test client).

For each report asked for (``--only``: the query bench's names that contain it; by default
every kind), after ``--warm`` requests, ``--runs`` requests are timed; for the median one it
prints the request's time and every statement in the order run: its time, whether it ran
side by side with others (``||``), and the start of its SQL. The time not in statements is the
plan, the shaping and the HTTP layer. Nothing is written to the store; the runtime's rollups
and snapshots are off while it runs, as in ``today_bench.py``.

Run: ``.venv/bin/python bench/query_profile.py --data-dir /tmp/qb100 --only funnel``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from starlette.testclient import TestClient

from _common import cold_reads
from query_bench import MARKER, endpoints
from svc.app import create_app
from svc.settings import Settings
from svc.storage.reads import Reads


@dataclass
class Step:
    """One statement: when it began and ended (s, from the request's start), its SQL."""

    began: float
    ended: float
    sql: str
    together: bool


class Recorder:
    """Records the statements the store runs (the store's query methods, patched)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()

    def reset(self) -> None:
        self.steps = []
        self.t0 = time.perf_counter()

    def add(self, began: float, sql: str, together: bool) -> None:
        step = Step(began - self.t0, time.perf_counter() - self.t0, sql, together)
        with self.lock:
            self.steps.append(step)


@contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """The store's query, query_named and query_named_together (svc.storage.reads.Reads),
    timed into ``recorder``."""
    originals: dict[str, Callable[..., Any]] = {
        name: getattr(Reads, name) for name in ("query", "query_named", "_query_named")
    }
    inside_together = threading.local()

    def query(self: Reads, sql: str, *a: Any, **k: Any) -> Any:
        began = time.perf_counter()
        try:
            return originals["query"](self, sql, *a, **k)
        finally:
            recorder.add(began, sql, False)

    def query_named(self: Reads, sql: str, *a: Any, **k: Any) -> Any:
        inside_together.plain = True
        began = time.perf_counter()
        try:
            return originals["query_named"](self, sql, *a, **k)
        finally:
            inside_together.plain = False
            recorder.add(began, sql, False)

    def _query_named(self: Reads, client: Any, sql: str, *a: Any, **k: Any) -> Any:
        plain = getattr(inside_together, "plain", False)
        began = time.perf_counter()
        try:
            return originals["_query_named"](self, client, sql, *a, **k)
        finally:
            if not plain:
                recorder.add(began, sql, True)

    Reads.query = query  # type: ignore[method-assign]
    Reads.query_named = query_named  # type: ignore[method-assign]
    Reads._query_named = _query_named  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(Reads, name, fn)


def one_line(sql: str, width: int) -> str:
    return " ".join(sql.split())[:width]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--only", default="", help="the reports whose name has this")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warm", type=int, default=2)
    p.add_argument("--width", type=int, default=150, help="characters of SQL shown")
    p.add_argument("--tz", default="", help="read every report in this time zone (tz=)")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    dataset = json.loads((args.data_dir / MARKER).read_text())
    end = datetime.fromisoformat(dataset["end"])
    last = (end - timedelta(milliseconds=1)).date()
    first = last - timedelta(days=dataset["days"] - 1)
    settings = Settings(
        data_dir=args.data_dir,
        rollup_interval_seconds=86_400,
        snapshot_interval_seconds=0,
        **cold_reads(),
    )
    app = create_app(settings)
    recorder = Recorder()
    out: dict[str, Any] = {"dataset": dataset, "reports": []}
    headers = {"Authorization": f"Bearer {dataset['secret']}"}
    with TestClient(app) as client, recording(recorder):
        for name, path in endpoints(dataset["days"], last.isoformat(), first.isoformat()):
            if args.only and args.only not in name:
                continue
            if "hour" in name:
                path = path.replace(f"from={first}", f"from={last - timedelta(days=6)}")
            if args.tz:
                path += ("&" if "?" in path else "?") + urllib.parse.urlencode({"tz": args.tz})
            runs: list[tuple[float, list[Step]]] = []
            for i in range(args.warm + args.runs):
                recorder.reset()
                started = time.perf_counter()
                r = client.get(path, headers=headers)
                elapsed = time.perf_counter() - started
                assert r.status_code == 200, (path, r.status_code, r.text[:300])
                if i >= args.warm:
                    runs.append((elapsed, sorted(recorder.steps, key=lambda s: s.began)))
            runs.sort(key=lambda run: run[0])
            elapsed, steps = runs[len(runs) // 2]
            p50 = statistics.median(e for e, _ in runs) * 1000
            print(f"\n{name}: p50 {p50:.1f} ms ({args.runs} runs); the median run:")
            for s in steps:
                mark = "||" if s.together else "  "
                print(
                    f"  {s.began * 1000:7.1f} +{(s.ended - s.began) * 1000:7.1f} ms {mark} "
                    f"{one_line(s.sql, args.width)}"
                )
            in_sql = sum(s.ended - s.began for s in steps if not s.together)
            print(f"  (plain statements {in_sql * 1000:.1f} ms of {elapsed * 1000:.1f})")
            out["reports"].append(
                {
                    "name": name,
                    "path": path,
                    "p50_ms": round(p50, 1),
                    "steps": [
                        {
                            "began_ms": round(s.began * 1000, 1),
                            "ms": round((s.ended - s.began) * 1000, 1),
                            "together": s.together,
                            "sql": one_line(s.sql, 400),
                        }
                        for s in steps
                    ],
                }
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
