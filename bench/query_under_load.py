"""GET /metrics latency while events are loaded: a fresh server and project, a warm-up load,
then GET /metrics for today timed alone and while ``--connections`` connections send batches
of ``--batch`` events for ``--duration`` seconds (requests 0.1 s apart).

Run: ``.venv/bin/python bench/query_under_load.py``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

import ingest_load
from _common import SvcServer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--duration", type=float, default=12.0)
    args = p.parse_args()
    server = SvcServer(Path(tempfile.mkdtemp(prefix="svc-qul-")) / "data")
    server.start()
    try:
        project = server.create_project("bench")
        argv = ["--url", server.url, "--key", project["keys"]["public"]]
        argv += ["--connections", str(args.connections), "--batch", str(args.batch)]
        ingest_load.run([*argv, "--duration", "5"])  # a day with events to count
        headers = {"Authorization": f"Bearer {project['keys']['secret']}"}
        today = datetime.now(UTC).date().isoformat()

        def metrics_ms() -> float:
            started = time.perf_counter()
            r = httpx.get(
                server.url + "/metrics",
                params={"from": today, "to": today},
                headers=headers,
                timeout=60,
            )
            r.raise_for_status()
            return (time.perf_counter() - started) * 1000

        after_load = [metrics_ms() for _ in range(10)]
        done = threading.Event()

        def load() -> None:
            ingest_load.run([*argv, "--duration", str(args.duration)])
            done.set()

        loader = threading.Thread(target=load)
        loader.start()
        time.sleep(1)
        during: list[float] = []
        while not done.is_set():
            during.append(metrics_ms())
            time.sleep(0.1)
        loader.join()
        during.sort()
        print(
            f"GET /metrics right after a load: p50 {statistics.median(after_load):.0f} ms; "
            f"while loading: p50 {statistics.median(during):.0f} ms, "
            f"p90 {during[int(len(during) * 0.9)]:.0f} ms, max {during[-1]:.0f} ms "
            f"({len(during)} requests)"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
