"""The double in a process of its own, on a loopback port: :class:`RunningDouble`."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.parallel import free_port

ROOT = Path(__file__).resolve().parents[2]

#: The user, password and database of every double the tests start.
USER, PASSWORD, DATABASE = "svc", "double-secret", "svc"


@dataclass
class RunningDouble:
    """A double started by :meth:`start` (``python -m tests.clickhouse_double``)."""

    data_dir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    extra_args: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, without credentials."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """What ``SVC_CLICKHOUSE_URL`` takes: the user, password and database in it."""
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"

    def database_url(self, key: str) -> str:
        """:attr:`url` with a database of its own for ``key`` (made if it is missing), for one
        svc node's (or one cluster's) store: several share the double as they would share a
        server, each with its own tables."""
        name = "svc_" + hashlib.sha256(key.encode()).hexdigest()[:16]
        r = httpx.post(
            self.base_url,
            content=f"CREATE DATABASE IF NOT EXISTS {name}",
            auth=(USER, PASSWORD),
            timeout=30,
        )
        assert r.status_code == 200, r.text
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{name}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "double.log"

    def start(self, timeout: float = 30.0) -> RunningDouble:
        """Start it and wait until ``/ping`` answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        argv = [
            sys.executable,
            "-m",
            "tests.clickhouse_double",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.port),
            "--user",
            USER,
            "--password",
            PASSWORD,
            "--database",
            DATABASE,
            *self.extra_args,
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the double exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(self.base_url + "/ping", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the double did not answer /ping in {timeout}s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()[-4000:] if self.log_path.exists() else ""

    def statements(self) -> list[dict[str, Any]]:
        """Every statement it received so far: ``{"sql": ..., "parses": bool}``."""
        path = self.data_dir / "statements.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
