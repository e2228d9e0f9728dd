"""Shared helpers of the benchmarks: start a server process, wait for it, read /proc."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import string
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Where the runs of record are written (docs/benchmarks.md cites them).
RUNS = ROOT / "bench" / "runs"
VENV_BIN = Path(sys.executable).parent
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def write_run(
    doc: dict[str, Any],
    name: str,
    label: str = "",
    out: Path | None = None,
    taken: datetime | None = None,
) -> Path:
    """Write ``doc`` as a run: to ``out``, else to ``bench/runs/<date>-<time>-<name>[-<label>]
    .json`` (``taken``, default now, UTC); the path written."""
    stamp = (taken or datetime.now(UTC)).strftime("%Y-%m-%d-%H%M")
    path = out or RUNS / (f"{stamp}-{name}" + (f"-{label}" if label else "") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def admin_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "svc_admin_" + "".join(secrets.choice(alphabet) for _ in range(32))


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (and, for a supervisor, not its children)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


#: A desktop Chrome's User-Agent, for load that ingestion must not take for a bot.
BROWSER_UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (0 <= q <= 1), nearest rank below; 0.0 for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def size_label(events: int) -> str:
    """A count of events as a run file's name says it: ``10m``, ``200k``, ``1500``."""
    for unit, suffix in ((1_000_000, "m"), (1_000, "k")):
        if events % unit == 0:
            return f"{events // unit}{suffix}"
    return str(events)


def peak_rss_bytes(pid: int) -> int:
    """The most resident memory a process has had so far (VmHWM), 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except OSError:
        return 0.0


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) * 1024
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": round(mem / 2**30, 1),
        "python": sys.version.split()[0],
        "kernel": os.uname().release,
    }


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def busy_elsewhere(exclude: Sequence[int] = (), seconds: float = 1.0) -> float:
    """CPU (in cores) used by every process except ``exclude`` over ``seconds``: how noisy
    the shared machine is right now."""

    def total() -> float:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
        return (sum(parts[:3]) + sum(parts[5:8])) / TICKS

    before = total() - sum(cpu_seconds(p) for p in exclude)
    time.sleep(seconds)
    after = total() - sum(cpu_seconds(p) for p in exclude)
    return max(0.0, (after - before) / seconds)


class Sampler:
    """Samples a process's RSS (max) and CPU time while a load runs."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.max_rss = 0
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.cpu_start = 0.0
        self.cpu_end = 0.0
        self.t_start = 0.0
        self.t_end = 0.0

    def __enter__(self) -> Sampler:
        self.cpu_start = cpu_seconds(self.pid)
        self.t_start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_end = cpu_seconds(self.pid)
        self.t_end = time.perf_counter()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            rss = rss_bytes(self.pid)
            self.samples.append(rss)
            self.max_rss = max(self.max_rss, rss)

    @property
    def cpu_used(self) -> float:
        return self.cpu_end - self.cpu_start

    @property
    def cores(self) -> float:
        elapsed = self.t_end - self.t_start
        return self.cpu_used / elapsed if elapsed else 0.0


def http(
    method: str,
    url: str,
    token: str | None = None,
    body: Any | None = None,
    timeout: float = 60.0,
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


@dataclass
class SvcServer:
    """``svcm serve`` in a subprocess on a loopback port, with its own data directory."""

    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    token: str = ""
    proc: subprocess.Popen[bytes] | None = None
    startup_s: float = 0.0
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> SvcServer:
        """Start and time the way to the first 200 from /health."""
        self.port = self.port or free_port()
        self.token = self.token or admin_token()
        env = {
            **os.environ,
            "SVC_ADMIN_TOKEN": self.token,
            "SVC_LOG_LEVEL": "warning",
            # Load tests: no quota or rate limit in the way (names of issue 7's settings).
            "SVC_MONTHLY_QUOTA": "1000000000000",
            "SVC_RATE_LIMIT_INGEST_PER_IP": "0",
            "SVC_RATE_LIMIT_INGEST_PER_PROJECT": "0",
            "SVC_RATE_LIMIT_READ_PER_KEY": "0",
            # Every read timed cold: the memo of the facts (svc.storage.memo) would serve a
            # report's repeated reads of one range from memory, nothing being written.
            "SVC_READ_MEMO_ENTRIES": "0",
            **self.env,
        }
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-server.log"
        svcm = VENV_BIN / "svcm"
        cmd = [str(svcm)] if svcm.exists() else [sys.executable, "-m", "svc"]
        cmd += ["serve", "--host", "127.0.0.1", "--port", str(self.port)]
        cmd += ["--data-dir", str(self.data_dir)]
        started = time.perf_counter()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.startup_s = wait_healthy(self.url + "/health", self.proc, started, timeout)
        return self

    def stop(self, timeout: float = 120.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def create_project(self, name: str) -> dict[str, Any]:
        status, doc = http("POST", self.url + "/projects", self.token, {"name": name})
        if status != 201:
            raise RuntimeError(f"POST /projects: {status} {doc}")
        return dict(doc)

    def __enter__(self) -> SvcServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_healthy(url: str, proc: subprocess.Popen[bytes], started: float, timeout: float) -> float:
    """Seconds from ``started`` to the first 200 of ``url`` (polled every 10 ms)."""
    deadline = started + timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} during start-up")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return time.perf_counter() - started
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.01)
    raise RuntimeError(f"{url} not healthy after {timeout} s")


@contextlib.contextmanager
def process(
    cmd: Sequence[str], env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(list(cmd), env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]


def cold_reads() -> dict[str, Any]:
    """Settings of an in-process app whose reads are all timed cold (see SvcServer.start):
    none with a source tree older than the memo of the facts."""
    from svc.settings import Settings

    return {"read_memo_entries": 0} if "read_memo_entries" in Settings.__dataclass_fields__ else {}
