"""What the HTTP server and the framework cost on a POST /analytics-like handler.

The same handler (bench/_fw_apps.py: key check, body read, JSON decode, two field checks, JSON
answer; no storage) as a raw ASGI callable, a Starlette route and (when FastAPI is importable,
e.g. ``--fastapi-path`` to a ``pip install --target`` directory) a FastAPI route with a pydantic
model, each under uvicorn (httptools + uvloop, no access log) and granian (ASGI, one worker,
one runtime thread, uvloop). Driven by bench/ingest_load.py (wrk) over 32 connections on
loopback; the server's CPU per request comes from /proc.

Run: ``.venv/bin/python bench/framework_overhead.py [--duration 8] [--fastapi-path DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_load
from _common import (
    ROOT,
    VENV_BIN,
    busy_elsewhere,
    children,
    cpu_seconds,
    free_port,
    process,
    rss_bytes,
)

KEY = "svc_live_benchbenchbenchbenchbench12"
BENCH_DIR = Path(__file__).resolve().parent


@dataclass
class Row:
    server: str
    app: str
    req_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_req: float
    rss_mb: float
    errors: int


def server_cmd(server: str, app: str, port: int) -> list[str]:
    target = f"_fw_apps:{app}_app"
    if server == "uvicorn":
        return [
            sys.executable,
            "-m",
            "uvicorn",
            target,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--no-access-log",
            "--log-level",
            "warning",
        ]
    granian = shutil.which("granian", path=str(VENV_BIN)) or "granian"
    return [
        granian,
        "--interface",
        "asgi",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--runtime-threads",
        "1",
        "--loop",
        "uvloop",
        "--no-ws",
        "--log-level",
        "warning",
        target,
    ]


def wait_accepting(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            req = urllib.request.Request(url + "/analytics", data=b"{}", method="POST")
            with urllib.request.urlopen(req, timeout=1):
                return
        except urllib.error.HTTPError:
            return  # any HTTP answer: the server is up
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


def measure(server: str, app: str, duration: float, fastapi_path: str | None) -> Row | None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(BENCH_DIR)}
    if app == "fastapi":
        if not fastapi_path:
            return None
        env["PYTHONPATH"] = f"{fastapi_path}:{BENCH_DIR}"
    url = f"http://127.0.0.1:{port}"
    log = Path("/tmp") / f"svc-fw-{server}-{app}.log"
    with process(server_cmd(server, app, port), env=env, log=log) as proc:
        wait_accepting(url)
        pids = [proc.pid, *children(proc.pid)]
        argv = ["--url", url, "--key", KEY, "--duration", str(duration), "--connections", "32"]
        ingest_load.run([*argv, "--duration", "2"])  # warm-up
        cpu0 = sum(cpu_seconds(p) for p in pids)
        result = ingest_load.run(argv)
        cpu1 = sum(cpu_seconds(p) for p in pids)
        rss = sum(rss_bytes(p) for p in pids)
    errors = result.requests - result.ok
    return Row(
        server,
        app,
        result.req_per_s,
        result.p50_ms,
        result.p99_ms,
        (cpu1 - cpu0) / max(1, result.requests) * 1e6,
        rss / 2**20,
        errors,
    )


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--servers", default="uvicorn,granian")
    parser.add_argument("--apps", default="raw,starlette,fastapi")
    parser.add_argument("--fastapi-path", default=os.environ.get("SVC_BENCH_FASTAPI_PATH"))
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    rows: list[Row] = []
    noise = busy_elsewhere()
    for server in args.servers.split(","):
        if server == "granian" and not shutil.which("granian", path=str(VENV_BIN)):
            print("granian is not installed: skipped (pip install granian)")
            continue
        for app in args.apps.split(","):
            row = measure(server, app, args.duration, args.fastapi_path)
            if row is None:
                print(f"{app}: skipped (FastAPI not importable; --fastapi-path DIR)")
                continue
            rows.append(row)
            print(
                f"{server:8} {app:10} {row.req_per_s:8,.0f} req/s  p50 {row.p50_ms:6.2f} ms  "
                f"p99 {row.p99_ms:6.2f} ms  server CPU {row.cpu_us_per_req:6.1f} µs/req  "
                f"RSS {row.rss_mb:5.0f} MB  errors {row.errors}",
                flush=True,
            )
    print(f"\nother processes used {noise:.2f} cores when the run began")
    print("\n| server | handler | req/s | p50 ms | p99 ms | server CPU µs/req |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.server} | {r.app} | {r.req_per_s:,.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} "
            f"| {r.cpu_us_per_req:.0f} |"
        )
    return rows


if __name__ == "__main__":
    main()
