"""GET /export of a big project: bytes sent, time to the first byte and in all, and the
server's peak resident memory while it sends, per format.

Uses the project that ``bench/query_bench.py`` generates (run that first; its data directory
holds ``bench-dataset.json``). The server is started on that directory, the exports of the
whole generated range are downloaded one at a time and thrown away, and the server's RSS is
sampled every 0.1 s. Settings of the server come from the environment (``SVC_*``), e.g.
``SVC_EXPORT_PIECE_EVENTS=20000``.

Run: ``.venv/bin/python bench/export_bench.py --data-dir /tmp/svc-bench-10m``
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from datetime import date, datetime, timedelta
from pathlib import Path

import httpx

from _common import SvcServer, rss_bytes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/svc-bench-query"))
    p.add_argument("--format", action="append", choices=["ndjson", "csv", "parquet"])
    args = p.parse_args()
    info = json.loads((args.data_dir / "bench-dataset.json").read_text())
    last = datetime.fromisoformat(info["end"]).date()
    first = last - timedelta(days=int(info["days"]) - 1)
    env = {k: v for k, v in os.environ.items() if k.startswith("SVC_")}
    server = SvcServer(args.data_dir, token=info["admin_token"], env=env)
    server.start()
    try:
        print(f"idle RSS {rss_bytes(server.pid) / 2**20:.0f} MiB")
        for fmt in args.format or ["ndjson", "csv", "parquet"]:
            run(server, info["secret"], fmt, first, last)
    finally:
        server.stop()


def run(server: SvcServer, secret: str, fmt: str, first: date, last: date) -> None:
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.1):
            peak = max(peak, rss_bytes(server.pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    sent, first_byte = 0, 0.0
    params = {"from": first.isoformat(), "to": last.isoformat(), "format": fmt}
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.stream(
        "GET", server.url + "/export", params=params, headers=headers, timeout=3600
    ) as r:
        r.raise_for_status()
        for chunk in r.iter_bytes(1 << 20):
            first_byte = first_byte or time.perf_counter() - started
            sent += len(chunk)
    stop.set()
    sampler.join()
    print(
        f"{fmt:8s} {sent / 1e6:8,.0f} MB  first byte {first_byte:5.1f} s  "
        f"total {time.perf_counter() - started:6.1f} s  peak RSS {peak / 2**20:5.0f} MiB"
    )


if __name__ == "__main__":
    main()
