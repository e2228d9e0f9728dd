"""Recovery after a spool backlog: how long a restarted svc takes to answer /health 200, and
to load everything, with ``--gigabytes`` of framed segments waiting in its spool.

The backlog is made from real rows: a server takes one batch, is killed with the rows in its
open segment, and those rows are copied (with fresh event ids) into 8 MiB segments of
100-row records, as the service writes them. Then the server starts on that data directory.

    python bench/spool_recovery.py --gigabytes 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from svc.spool.frames import frame, scan  # noqa: E402

UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0"
SEGMENT_BYTES = 8 * 1024 * 1024


def _serve(data_dir: Path, port: int, token: str, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "svc", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env={**os.environ, "SVC_ADMIN_TOKEN": token, "SVC_LOG_LEVEL": "warning", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait(url: str, proc: subprocess.Popen[bytes], timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError("svc exited")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise TimeoutError("not healthy")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--gigabytes", type=float, default=1.0)
    p.add_argument("--port", type=int, default=18931)
    p.add_argument(
        "--legacy",
        action="store_true",
        help="write plain JSONEachRow segments, as svc did before framing (to time older code "
        "with PYTHONPATH=<old tree>/src)",
    )
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="svc-recovery-"))
    data = work / "data"
    url = f"http://127.0.0.1:{args.port}"
    token = "svc_admin_" + "r" * 30
    hold = {"SVC_SPOOL_FLUSH_INTERVAL_MS": "600000", "SVC_SPOOL_SEGMENT_BYTES": "67108864"}
    try:
        proc = _serve(data, args.port, token, **hold)
        _wait(url, proc, 60)
        r = httpx.post(
            url + "/projects",
            json={"name": "recovery", "plan": "unlimited"},
            headers={"Authorization": f"Bearer {token}"},
        )
        if r.status_code != 201:
            r = httpx.post(
                url + "/projects",
                json={"name": "recovery"},
                headers={"Authorization": f"Bearer {token}"},
            )
        key = r.json()["keys"]["secret"]
        events = [{"event": "page_view", "url": f"/p{i}", "eventId": f"e{i}"} for i in range(100)]
        httpx.post(
            url + "/analytics",
            json=events,
            headers={"Authorization": f"Bearer {key}", "User-Agent": UA},
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        spool = data / "spool"
        (seed,) = spool.glob("*.log")
        lines = scan(seed.read_bytes()).payload().splitlines(keepends=True)
        seed.unlink()
        total, n_seg, n = int(args.gigabytes * 1024**3), 0, 0
        written = 0
        while written < total:
            n_seg += 1
            chunks, size = [], 0
            while size < SEGMENT_BYTES:
                rows = []
                for line in lines:
                    n += 1
                    rows.append(line.replace(b'"event_id":"e', b'"event_id":"%d-' % n, 1))
                payload = b"".join(rows)
                record = payload if args.legacy else frame(payload, len(rows))
                chunks.append(record)
                size += len(record)
            (spool / f"{1_700_000_000_000 + n_seg:013d}-{n_seg:08d}-bench.ready").write_bytes(
                b"".join(chunks)
            )
            written += size
        print(f"backlog: {written / 1024**3:.2f} GiB in {n_seg} segments, {n:,} events", flush=True)
        started = time.monotonic()
        proc = _serve(data, args.port, token)
        healthy = _wait(url, proc, 1800)
        while True:
            pipeline = httpx.get(url + "/health", timeout=10).json()["pipeline"]
            if pipeline["backlogEvents"] == 0:
                break
            time.sleep(0.2)
        loaded = time.monotonic() - started
        rss = httpx.get(url + "/health").json()["node"]["maxRssBytes"]
        print(
            json.dumps(
                {
                    "gib": round(written / 1024**3, 2),
                    "events": n,
                    "healthy_s": round(healthy, 2),
                    "loaded_s": round(loaded, 2),
                    "events_per_s": round(n / loaded),
                    "max_rss_mb": rss // 2**20,
                }
            )
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
