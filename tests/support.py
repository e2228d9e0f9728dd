"""Test support: the real svc server in a subprocess on a loopback port, and a small client."""

from __future__ import annotations

import json
import os
import secrets
import signal
import string
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
from prometheus_client.parser import text_string_to_metric_families

from svc.storage.events import EventRow, ch_time
from tests import forked
from tests.parallel import free_port as free_port  # re-exported: tests import it from here

ROOT = Path(__file__).resolve().parent.parent

#: argon2id at 1 MiB and 1 pass: the same code at a hundredth of the cost (a hash keeps its
#: parameters, so the code path is the same as with the defaults; 0.26 s of CPU a hash or a
#: sign-in at the defaults, on four lanes, against 1.5 ms)
CHEAP_HASHES = {"SVC_PASSWORD_HASH_MEMORY_KIB": "1024", "SVC_PASSWORD_HASH_ITERATIONS": "1"}

# Browsers send a real user agent; tests that use plain httpx pretend to be one, so the bot
# filter keeps their events.
BROWSER_UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


def browser_bearer(key: str) -> dict[str, str]:
    """The headers of a browser's request with ``key``."""
    return {"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA}


def is_error(r: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """The JSON error of ``r``, checked: its status, its shape and the field it names."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body: dict[str, Any] = r.json()
    assert body["ok"] is False and body["error"]["code"] and body["error"]["message"], body
    if field is not None:
        assert body["error"].get("field") == field, body
    return body


# What `svcm serve --host 127.0.0.1 --port P --data-dir D` runs, without the rest of the CLI
# (whose own tests run the real `svcm`).
SERVE = (
    # SIGUSR1: every thread's stack into the log (Server.thread_stacks)
    "import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "from svc.settings import Settings; from svc.cli.serve import run; "
    "sys.exit(run(Settings.from_env(host='127.0.0.1', port=int(sys.argv[1]), "
    "data_dir=sys.argv[2])))"
)


#: Set while a test module runs svc in server mode (the fixture ``server_mode`` of
#: tests/clickhouse_double): the ``SVC_CLICKHOUSE_URL`` of a server started with the data
#: directory given, unless its ``env`` names one (a database of its own on the double).
SERVER_MODE: list[Callable[[Path], str]] = []


def admin_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "svc_admin_" + "".join(secrets.choice(alphabet) for _ in range(32))


@dataclass
class Server:
    """A running ``svcm serve`` with its own data directory."""

    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    admin_token: str = ""
    proc: forked.ForkedServer | subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    program: str = SERVE  # Python run with the port and the data directory
    #: forked from a process that imported svc already (tests/forked.py); False: started as
    #: the command ``python -c program port data_dir``
    forked: bool = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0, healthy: bool = True) -> Server:
        """Start and wait for /health to answer (200 unless ``healthy`` is False)."""
        if not self.port:
            self.port = free_port()
        if not self.admin_token:
            self.admin_token = admin_token()
        env = {
            **os.environ,
            "SVC_ADMIN_TOKEN": self.admin_token,
            "SVC_SPOOL_FLUSH_INTERVAL_MS": "50",
            "SVC_LOG_LEVEL": "warning",
            # the geo data and user-agent rules load when an event first needs them: ~0.8 s of
            # CPU a start saved (150 starts a run) where a test sends none, or none from a
            # public address
            "SVC_WARM_UP": "false",
        }
        if SERVER_MODE and "SVC_CLICKHOUSE_URL" not in self.env:  # kept for restarts
            self.env["SVC_CLICKHOUSE_URL"] = SERVER_MODE[-1](self.data_dir)
        if SERVER_MODE:  # migrations over HTTP, statement by statement: a slower start
            timeout = max(timeout, 120.0)
        env.update(self.env)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-server.log"
        argv = [str(self.port), str(self.data_dir)]
        if self.forked:
            self.proc = forked.start(self.program, argv, env, str(self.log_path), str(ROOT))
        else:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-c", self.program, *argv],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=str(ROOT),
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"svc exited with {self.proc.returncode}: {self.log()}")
            try:
                status = httpx.get(self.url + "/health", timeout=1).status_code
                if status == 200 or (not healthy and status == 503):
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"svc did not become healthy in {timeout}s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()[-4000:] if self.log_path and self.log_path.exists() else ""

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    # API helpers --------------------------------------------------------------------------

    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def create_project(self, name: str, **fields: Any) -> dict[str, Any]:
        """The POST /projects response: the project record with ``keys`` {public, secret}."""
        r = httpx.post(self.url + "/projects", json={"name": name, **fields}, headers=self.admin())
        assert r.status_code == 201, r.text
        body: dict[str, Any] = r.json()
        body.setdefault("project", {k: v for k, v in body.items() if k != "keys"})
        return body

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(self.url + "/health", timeout=10).json()
        return body

    def wait_loaded(self, timeout: float = 30.0) -> None:
        """Block until every accepted event is in the store (and so in every query)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pipeline = self.health()["pipeline"]
            if pipeline["backlogEvents"] == 0 and not pipeline["loaderError"]:
                return
            time.sleep(0.05)
        raise TimeoutError(
            f"events still waiting after {timeout}s: {self.health()['pipeline']}"
            + self.thread_stacks()
        )

    def thread_stacks(self) -> str:
        """Where each of the server's threads is now (its program's faulthandler dumps them
        into its log on SIGUSR1), for a test that waited on it in vain; "" when it cannot
        tell (a program without the handler would die of the signal: not sent)."""
        path = self.log_path
        if self.proc is None or self.proc.poll() is not None or path is None:
            return ""
        if "faulthandler.register(signal.SIGUSR1" not in self.program:
            return ""
        size = path.stat().st_size if path.exists() else 0
        self.proc.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        with open(path, "rb") as log:
            log.seek(size)
            dump = log.read()[-12_000:].decode(errors="replace")
        return f"\nthe server's threads, from {path}:\n{dump}"

    def send(self, key: str, body: Any, **kw: Any) -> httpx.Response:
        return httpx.post(
            self.url + "/analytics",
            json=body,
            headers={"Authorization": f"Bearer {key}", **kw.pop("headers", {})},
            **kw,
        )

    def metrics(self, key: str, **params: str) -> dict[str, Any]:
        r = httpx.get(
            self.url + "/metrics", params=params, headers={"Authorization": f"Bearer {key}"}
        )
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def events(self, project_id: str, secret_key: str) -> list[dict[str, Any]]:
        """Stored events of a project, oldest first (read straight from the store's export)."""
        r = httpx.get(
            self.url + "/export",
            params={"from": "2000-01-01", "format": "ndjson"},
            headers={"Authorization": f"Bearer {secret_key}"},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        import json

        return [json.loads(line) for line in r.text.splitlines() if line.strip()]


#: The start of a script for :func:`run_store_script`: ``store``, the embedded store of the
#: data directory ``sys.argv[1]`` migrated, with the blocks of stdin (JSON: [token, NDJSON]
#: pairs) inserted in order, and the first inserted again under its token (a replay).
REPLAYED_BLOCKS = """
import json, sys
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings(data_dir=Path(sys.argv[1])))
store.migrate()
blocks = json.load(sys.stdin)
for token, data in blocks:
    store.insert_ndjson(data.encode(), token)
store.insert_ndjson(blocks[0][1].encode(), blocks[0][0])  # a replay: the same token
"""


def run_store_script(
    script: str, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Any:
    """Run ``script`` (Python source) with ``args`` in a process of its own, from the
    repository's root (an embedded store is one chDB engine per process, and locks its data
    directory), and return the JSON its last line of output holds; its stderr is the failure
    message when it fails. ``env`` is added to the environment (a server's ``env``: its
    ``SVC_CLICKHOUSE_URL`` in server mode, for a script that reads ``Settings.from_env``)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, **(env or {})},
        input=stdin,
        text=True,
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def stored_row(
    project_id: str,
    ts: int,
    start: int,
    *,
    name: str,
    session_id: int,
    visitor_id: int,
    path: str,
    **columns: Any,
) -> EventRow:
    """A row as the loader stores it for an event at ``ts`` (ms) of a session that began at
    ``start`` (ms): a page of acme.test seen by a desktop Chrome on Linux, direct, without
    properties; ``columns`` sets any other column (``source``, ``referrer``, ...)."""
    row: dict[str, Any] = {
        "project_id": project_id,
        "ts": ch_time(ts),
        "received_at": ch_time(ts),
        "event_id": "",
        "name": name,
        "session_id": session_id,
        "visitor_id": visitor_id,
        "hostname": "acme.test",
        "path": path,
        "url": f"https://acme.test{path}",
        "referrer": "",
        "referrer_host": "",
        "source": "direct",
        "channel": "direct",
        "utm_source": "",
        "utm_medium": "",
        "utm_campaign": "",
        "utm_content": "",
        "utm_term": "",
        "click_id": "",
        "properties": {},
        "browser": "Chrome",
        "browser_version": "126.0",
        "os": "Linux",
        "os_version": "",
        "device": "desktop",
        "screen_width": 0,
        "country": "",
        "region": "",
        "city": "",
        "session_start": ch_time(start),
    }
    row.update(columns)
    return EventRow(**row)


def inserts_by_day(prefix: str, rows: Iterable[EventRow]) -> list[tuple[str, str]]:
    """One insert per UTC day of the rows' events, the days and rows in the order the rows
    come: (deduplication token ``<prefix>-<day>``, NDJSON of the rows)."""
    by_day: dict[str, list[bytes]] = {}
    for row in rows:
        day = datetime.fromtimestamp(int(row.ts.split(".")[0]), UTC).date().isoformat()
        by_day.setdefault(day, []).append(msgspec.json.encode(row))
    return [(f"{prefix}-{day}", (b"\n".join(r) + b"\n").decode()) for day, r in by_day.items()]


#: GET /internal/metrics' samples: (name, labels) -> value.
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(srv: Server, token: str, **headers: str) -> Samples:
    """GET /internal/metrics of ``srv`` with ``token``, parsed as Prometheus parses it."""
    r = httpx.get(
        srv.url + "/internal/metrics",
        headers={"Authorization": f"Bearer {token}", **headers},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def sample(samples: Samples, name: str, **labels: str) -> float:
    """The value of the sample ``name`` with ``labels`` (0 when there is none)."""
    return samples.get((name, frozenset(labels.items())), 0.0)
