"""Load generator for POST /analytics that runs against any svc base URL.

Two engines:

* ``wrk`` (default where the binary is on PATH: Debian's ``apt-get install wrk``): a Lua script
  is generated to a temporary file with a pool of pre-built requests (varied session ids,
  pages, referrers and browser user agents), and its ``done`` hook prints the figures as JSON.
  One wrk process with two threads drives 10k+ req/s while using well under one core.
* ``python``: a pure-Python fallback (no dependency beyond the standard library; uvloop when
  installed): several processes, each an asyncio loop holding its share of the keep-alive
  connections, raw HTTP/1.1 over sockets (TLS too). Slower than wrk, but it runs anywhere.

Every request carries a real browser User-Agent (the bot filter drops anything else) and a
varying ``sessionId`` and ``url``. Figures: requests/s, events/s, latency p50/p90/p99/max and
errors by HTTP status (plus socket errors). Each run is bounded by ``--duration`` and by
``--max-requests``.

Examples::

    # against a running svc, creating a project with the admin token
    python bench/ingest_load.py --url http://127.0.0.1:8080 \\
        --create-project bench --admin-token svc_admin_...
    # with an existing public key, batches of 100, the portable engine
    python bench/ingest_load.py --url https://svc.example.org --key svc_live_... \\
        --batch 100 --engine python --duration 20

The project's monthly quota (100,000 events on the free plan) is soon used up under load: give
the bench project a larger plan (or run the server with ``SVC_MONTHLY_QUOTA`` raised), else
most answers are 429 ``quota_exceeded``; rate limits likewise (``SVC_RATE_LIMIT_*=0``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing as mp
import os
import random
import secrets
import shutil
import ssl
import string
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

BROWSER_UAS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/125.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80",
)
PATHS = (
    "/",
    "/pricing",
    "/blog",
    "/blog/{n}",
    "/docs/getting-started",
    "/docs/api/{n}",
    "/features",
    "/about",
    "/signup",
    "/product/{n}",
)
REFERRERS = (
    "",
    "",
    "",
    "https://www.google.com/",
    "https://www.bing.com/search?q=x",
    "https://news.ycombinator.com/item?id={n}",
    "https://t.co/{n}",
    "https://www.reddit.com/r/webdev/",
)
CUSTOM = ("signup", "click", "download", "outbound_link")


# the requests ------------------------------------------------------------------------------


def make_event(rng: random.Random, site: str, session: str) -> dict[str, Any]:
    n = rng.randint(1, 400)
    path = rng.choice(PATHS).format(n=n)
    query = "?utm_source=newsletter&utm_medium=email" if rng.random() < 0.05 else ""
    event: dict[str, Any] = {
        "event": "page_view" if rng.random() < 0.85 else rng.choice(CUSTOM),
        "url": f"https://{site}{path}{query}",
        "sessionId": session,
    }
    referrer = rng.choice(REFERRERS).format(n=n)
    if referrer:
        event["referrer"] = referrer
    if event["event"] != "page_view":
        event["properties"] = {"plan": rng.choice(("free", "pro")), "n": n}
    return event


def make_bodies(count: int, batch: int, seed: int, site: str = "example.com") -> list[bytes]:
    """``count`` request bodies: one event each (``batch`` 0) or JSON arrays of ``batch``."""
    rng = random.Random(seed)
    bodies = []
    for i in range(count):
        session = f"b{seed}-{i // 3}-{rng.getrandbits(40):x}"
        if batch <= 0:
            doc: Any = make_event(rng, site, session)
        else:
            doc = [make_event(rng, site, f"{session}-{j // 4}") for j in range(batch)]
        bodies.append(json.dumps(doc, separators=(",", ":")).encode())
    return bodies


# results -----------------------------------------------------------------------------------


@dataclass
class Result:
    engine: str
    url: str
    mode: str
    batch: int
    connections: int
    duration_s: float
    requests: int = 0
    ok: int = 0
    req_per_s: float = 0.0
    events_per_s: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    socket_errors: dict[str, int] = field(default_factory=dict)
    capped: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        errors = {k: v for k, v in self.statuses.items() if k != "200"}
        lines = [
            f"{self.engine}: {self.mode} over {self.connections} connections, "
            f"{self.duration_s:.1f} s against {self.url}",
            f"  requests/s {self.req_per_s:,.0f}   events/s {self.events_per_s:,.0f}   "
            f"({self.requests:,} requests, {self.ok:,} ok)",
            f"  latency ms  p50 {self.p50_ms:.2f}  p90 {self.p90_ms:.2f}  "
            f"p99 {self.p99_ms:.2f}  max {self.max_ms:.2f}",
            f"  errors by status {errors or '{}'}   socket errors {self.socket_errors or '{}'}",
        ]
        if self.capped:
            lines.append("  the --max-requests cap was reached: the rate is a lower bound")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


# engine: wrk -------------------------------------------------------------------------------

_LUA = r"""
-- generated by bench/ingest_load.py
local bodies = {BODIES}
local path = {PATH}
local headers = {HEADERS}
local uas = {UAS}
local max_requests = {MAX_PER_THREAD}
local count_status = {COUNT_STATUS}
local pool = {}
local n = 0
local sent = 0
local threads = {}
statuses = {}

setup = function(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

init = function(args)
  local id = tonumber(wrk.thread:get("id")) or 0
  local k = 0
  for i = 1, #bodies do
    local h = {}
    for name, value in pairs(headers) do h[name] = value end
    h["User-Agent"] = uas[((i + id) % #uas) + 1]
    k = k + 1
    pool[k] = wrk.format("POST", path, h, bodies[((i + id * 7919) % #bodies) + 1])
  end
end

request = function()
  sent = sent + 1
  if max_requests > 0 and sent > max_requests then
    wrk.thread:stop()
  end
  n = n + 1
  if n > #pool then n = 1 end
  return pool[n]
end

if count_status then
  response = function(status, hdrs, body)
    local k = tostring(status)
    statuses[k] = (statuses[k] or 0) + 1
  end
end

done = function(summary, latency, requests)
  local merged = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    if s then
      for k, v in pairs(s) do merged[k] = (merged[k] or 0) + v end
    end
  end
  local parts = {}
  for k, v in pairs(merged) do table.insert(parts, string.format('"%s":%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"timeout":%d,"status_errors":%d,"statuses":{%s}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.timeout, e.status,
    table.concat(parts, ",")))
end
"""


def _lua_string(s: str) -> str:
    return json.dumps(s)  # JSON string escapes are valid Lua escapes for this text


def _lua_list(items: list[str]) -> str:
    return "{" + ",".join(_lua_string(i) for i in items) + "}"


def run_wrk(args: argparse.Namespace, key: str, bodies: list[bytes]) -> Result:
    parts = urlsplit(args.url)
    base_path = parts.path.rstrip("/")
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    max_per_thread = (args.max_requests + args.threads - 1) // args.threads
    script = (
        _LUA.replace("{BODIES}", _lua_list([b.decode() for b in bodies]))
        .replace("{PATH}", _lua_string(base_path + "/analytics"))
        .replace(
            "{HEADERS}",
            "{"
            + ",".join(f"[{_lua_string(k)}]={_lua_string(v)}" for k, v in headers.items())
            + "}",
        )
        .replace("{UAS}", _lua_list(list(BROWSER_UAS)))
        .replace("{MAX_PER_THREAD}", str(max_per_thread))
        .replace("{COUNT_STATUS}", "true" if args.status_detail else "false")
    )
    target = f"{parts.scheme}://{parts.netloc}"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
        script_path = f.name
    try:
        cmd = [
            args.wrk,
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{max(1, round(args.duration))}s",
            f"--timeout={max(1, round(args.timeout))}s",
            "-s",
            script_path,
            target,
        ]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=args.duration + 60, check=False
        )
    finally:
        os.unlink(script_path)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("BENCHJSON ")), None)
    if line is None:
        raise SystemExit(f"wrk failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    doc = json.loads(line[len("BENCHJSON ") :])
    elapsed = doc["duration_us"] / 1e6
    statuses = {k: int(v) for k, v in doc["statuses"].items()}
    requests = int(doc["requests"])
    if not statuses:  # without --status-detail wrk counts only >= 400 answers
        statuses = {"200": requests - doc["status_errors"]}
        if doc["status_errors"]:
            statuses["4xx/5xx"] = int(doc["status_errors"])
    ok = statuses.get("200", 0)
    result = Result(
        engine="wrk",
        url=args.url,
        mode=_mode(args.batch),
        batch=args.batch,
        connections=args.connections,
        duration_s=elapsed,
        requests=requests,
        ok=ok,
        req_per_s=requests / elapsed if elapsed else 0.0,
        events_per_s=ok * max(1, args.batch) / elapsed if elapsed else 0.0,
        p50_ms=doc["p50"] / 1000,
        p90_ms=doc["p90"] / 1000,
        p99_ms=doc["p99"] / 1000,
        max_ms=doc["max"] / 1000,
        statuses=statuses,
        socket_errors={
            k: int(doc[k]) for k in ("connect", "read", "write", "timeout") if int(doc[k])
        },
        capped=args.max_requests > 0 and requests >= args.max_requests,
    )
    return result


# engine: pure Python -----------------------------------------------------------------------


def _build_request(host: str, path: str, key: str, ua: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nUser-Agent: {ua}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """(status, keep-alive) of one response, its body read and dropped."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = -1
    chunked = False
    keep_alive = True
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif name == b"connection" and value.strip().lower() == b"close":
            keep_alive = False
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length > 0:
        await reader.readexactly(length)
    elif length < 0:
        await reader.read()
        keep_alive = False
    return status, keep_alive


async def _py_worker_main(
    url: str,
    requests: list[bytes],
    connections: int,
    duration: float,
    max_requests: int,
    timeout: float,
) -> dict[str, Any]:
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if tls else 80)
    ctx = ssl.create_default_context() if tls else None
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    deadline = time.perf_counter() + duration
    sent = 0

    async def connection(offset: int) -> None:
        nonlocal sent
        i = offset
        reader = writer = None
        while time.perf_counter() < deadline and (max_requests <= 0 or sent < max_requests):
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(host, port, ssl=ctx), timeout
                    )
                assert reader is not None
                sent += 1
                started = time.perf_counter()
                writer.write(requests[i % len(requests)])
                i += 1
                status, keep_alive = await asyncio.wait_for(_read_response(reader), timeout)
                latencies.append(time.perf_counter() - started)
                statuses[str(status)] += 1
                if not keep_alive:
                    writer.close()
                    reader = writer = None
            except TimeoutError:
                errors["timeout"] += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors["connect" if writer is None else "read"] += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
                if isinstance(exc, ConnectionRefusedError):
                    await asyncio.sleep(0.05)
        if writer is not None:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection(k * 101) for k in range(connections)))
    elapsed = time.perf_counter() - started
    return {
        "latencies": latencies,
        "statuses": dict(statuses),
        "errors": dict(errors),
        "elapsed": elapsed,
    }


def _py_worker(conf: dict[str, Any], out: Any) -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    out.put(asyncio.run(_py_worker_main(**conf)))


def run_python(args: argparse.Namespace, key: str, bodies: list[bytes]) -> Result:
    parts = urlsplit(args.url)
    path = parts.path.rstrip("/") + "/analytics"
    host = parts.netloc
    procs = max(1, min(args.processes, args.connections))
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    out = ctx.Queue()
    workers = []
    for w in range(procs):
        share = args.connections // procs + (1 if w < args.connections % procs else 0)
        reqs = [
            _build_request(host, path, key, BROWSER_UAS[(i + w) % len(BROWSER_UAS)], b)
            for i, b in enumerate(bodies[w::procs] or bodies)
        ]
        conf = {
            "url": args.url,
            "requests": reqs,
            "connections": share,
            "duration": float(args.duration),
            "max_requests": (args.max_requests + procs - 1) // procs,
            "timeout": float(args.timeout),
        }
        p = ctx.Process(target=_py_worker, args=(conf, out), daemon=True)
        p.start()
        workers.append(p)
    results = [out.get(timeout=args.duration + 60) for _ in workers]
    for p in workers:
        p.join(timeout=10)
    latencies = sorted(x for r in results for x in r["latencies"])
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for r in results:
        statuses.update(r["statuses"])
        errors.update(r["errors"])
    elapsed = max(r["elapsed"] for r in results)
    requests = len(latencies)
    ok = statuses.get("200", 0)
    return Result(
        engine=f"python x{procs}",
        url=args.url,
        mode=_mode(args.batch),
        batch=args.batch,
        connections=args.connections,
        duration_s=elapsed,
        requests=requests,
        ok=ok,
        req_per_s=requests / elapsed if elapsed else 0.0,
        events_per_s=ok * max(1, args.batch) / elapsed if elapsed else 0.0,
        p50_ms=_percentile(latencies, 50) * 1000,
        p90_ms=_percentile(latencies, 90) * 1000,
        p99_ms=_percentile(latencies, 99) * 1000,
        max_ms=(latencies[-1] if latencies else 0.0) * 1000,
        statuses=dict(statuses),
        socket_errors=dict(errors),
        capped=args.max_requests > 0 and requests >= args.max_requests,
    )


# set-up ------------------------------------------------------------------------------------


def _mode(batch: int) -> str:
    return "single event" if batch <= 0 else f"batches of {batch}"


def http_json(
    method: str, url: str, token: str, body: Any | None = None, timeout: float = 30
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw.decode(errors="replace")


def create_project(url: str, admin_token: str, name: str) -> dict[str, Any]:
    """A new project (``name``, or ``name-<random>`` when taken) with its two keys."""
    candidate = name
    for _ in range(5):
        status, doc = http_json(
            "POST", url.rstrip("/") + "/projects", admin_token, {"name": candidate}
        )
        if status == 201:
            return dict(doc)
        if status != 409:
            raise SystemExit(f"creating project {candidate!r} failed: {status} {doc}")
        suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(6))
        candidate = f"{name[:32]}-{suffix}"
    raise SystemExit("could not find a free project name")


def warm_up(url: str, key: str, body: bytes) -> tuple[int, str]:
    req = urllib.request.Request(url.rstrip("/") + "/analytics", data=body, method="POST")
    req.add_header("Authorization", f"Bearer {key}")
    req.add_header("Content-Type", "application/json")
    req.add_header("User-Agent", BROWSER_UAS[0])
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Load generator for POST /analytics (any svc base URL).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--url", required=True, help="base URL of svc, e.g. http://127.0.0.1:8080")
    p.add_argument("--key", help="a public (or secret) key of the project to send to")
    p.add_argument("--create-project", metavar="NAME", help="create a project (admin token)")
    p.add_argument("--admin-token", default=os.environ.get("SVC_ADMIN_TOKEN", ""))
    p.add_argument("--batch", type=int, default=0, help="events per request; 0: one event")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--duration", type=float, default=10.0, help="seconds")
    p.add_argument(
        "--max-requests", type=int, default=2_000_000, help="stop after this many (0: no cap)"
    )
    p.add_argument("--engine", choices=("auto", "wrk", "python"), default="auto")
    p.add_argument("--wrk", default=shutil.which("wrk") or "wrk", help="wrk binary")
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="python engine")
    p.add_argument("--timeout", type=float, default=10.0, help="per-request timeout, seconds")
    p.add_argument("--pool", type=int, default=2000, help="distinct request bodies")
    p.add_argument(
        "--status-detail",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="wrk: count every status code (a Lua hook per response, ~5%% of wrk's CPU)",
    )
    p.add_argument("--seed", type=int, default=0, help="0: random")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON ('-': stdout)")
    return p


def run(argv: list[str]) -> Result:
    """Run one load test with command-line style arguments; nothing printed."""
    return _run(build_parser().parse_args(argv))


def main(argv: list[str] | None = None) -> Result:
    args = build_parser().parse_args(argv)
    result = _run(args)
    if args.json:
        text = json.dumps(asdict(result), indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    if args.json != "-":
        print(result.summary())
    return result


def _run(args: argparse.Namespace) -> Result:
    if args.connections < 1 or args.duration <= 0:
        raise SystemExit("--connections and --duration must be positive")
    key = args.key
    if not key:
        if not (args.create_project and args.admin_token):
            raise SystemExit("give --key, or --create-project NAME with --admin-token")
        project = create_project(args.url, args.admin_token, args.create_project)
        key = project["keys"]["public"]
        # Best effort: lift the bench project's monthly quota (the free plan's 100,000 events
        # go in seconds under load). Servers without plans just refuse; nothing else changes.
        http_json(
            "PATCH",
            f"{args.url.rstrip('/')}/projects/{project['id']}",
            args.admin_token,
            {"plan": "unlimited"},
        )
    seed = args.seed or random.randrange(1, 1 << 30)
    pool = args.pool if args.batch <= 0 else max(20, args.pool // max(1, args.batch))
    bodies = make_bodies(pool, args.batch, seed)
    status, text = warm_up(args.url, key, bodies[0])
    if status != 200:
        raise SystemExit(f"a first request failed: {status} {text[:300]}")
    engine = args.engine
    if engine == "auto":
        engine = "wrk" if shutil.which(args.wrk) else "python"
    result = run_wrk(args, key, bodies) if engine == "wrk" else run_python(args, key, bodies)
    if any(k.startswith("429") for k in result.statuses):
        result.notes.append("429 answers: raise the project's quota / the rate limits")
    return result


if __name__ == "__main__":
    main()
