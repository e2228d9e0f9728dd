"""A/B ingestion: the same load against servers run from two source trees, alternately, in one
run on one host (absolute figures differ between hosts; the comparison holds).

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/ingest_ab.py --a /tmp/before --b . --rounds 3 --duration 10

Each round starts a fresh server from tree A, then one from tree B (``PYTHONPATH=<tree>/src``),
sends POST /analytics with wrk (single events and batches of 100, 32 connections, fsync on),
and records events/s, latency p50/p99 and the server's CPU time per event (the figure to
trust when the host has other load). Prints the medians per tree and the ratio B/A.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_load
from _common import SvcServer, busy_elsewhere, cpu_seconds, machine


def one_round(tree: Path, workdir: Path, batch: int, duration: float) -> dict[str, float]:
    server = SvcServer(workdir, env={"PYTHONPATH": str(tree.resolve() / "src")}).start()
    try:
        key = ingest_load.create_project(server.url, server.token, "ab")["keys"]["public"]
        argv = ["--url", server.url, "--key", key, "--connections", "32"]
        argv += ["--batch", str(batch if batch > 1 else 0)]
        ingest_load.run([*argv, "--duration", "2"])  # warm-up
        cpu_before = cpu_seconds(server.pid)
        result = ingest_load.run([*argv, "--duration", str(duration)])
        cpu = cpu_seconds(server.pid) - cpu_before
    finally:
        server.stop()
    events = result.events_per_s * result.duration_s
    return {
        "events_per_s": result.events_per_s,
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        # the server's CPU per event: far less sensitive than rates to other load on the host
        "cpu_us_per_event": cpu / events * 1e6 if events else 0.0,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--a", type=Path, required=True, help="source tree A (before)")
    p.add_argument("--b", type=Path, required=True, help="source tree B (after)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--batches", default="1,100", help="events per request, comma-separated")
    p.add_argument("--json", help="also write every figure to this file")
    args = p.parse_args()
    if busy := busy_elsewhere():
        print(f"warning: the machine is busy ({busy}); figures are not comparable", flush=True)
    out: dict[str, Any] = {"machine": machine(), "runs": {}}
    for batch in (int(b) for b in args.batches.split(",")):
        runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
        for _ in range(args.rounds):
            for name, tree in (("A", args.a), ("B", args.b)):
                with tempfile.TemporaryDirectory(prefix="svc-ab-") as tmp:
                    figures = one_round(tree, Path(tmp) / "data", batch, args.duration)
                runs[name].append(figures)
                print(f"batch {batch} {name}: {json.dumps(figures)}", flush=True)
        summary = {
            name: {k: statistics.median(f[k] for f in fs) for k in fs[0]}
            for name, fs in runs.items()
        }
        ratio = summary["B"]["events_per_s"] / summary["A"]["events_per_s"]
        print(f"batch {batch} medians: {json.dumps(summary)} B/A events/s {ratio:.3f}", flush=True)
        out["runs"][str(batch)] = {"rounds": runs, "medians": summary, "b_over_a": ratio}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
