"""The suite's servers are forks of a process that imported svc (tests/forked.py): such a
server loads the same libraries as one started as a command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support import ROOT, SERVE, Server, free_port


def _libraries(pid: int) -> set[str]:
    """The shared objects of installed packages a process has mapped."""
    with open(f"/proc/{pid}/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    return {Path(p).name for p in paths if "site-packages" in p and ".so" in p}


def _healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the started server exited with {process.returncode}"
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError("the started server did not become healthy")


def test_a_forked_server_loads_what_a_started_one_does(tmp_path: Path) -> None:
    forked = Server(tmp_path / "forked").start()
    port = free_port()
    env = {**os.environ, "SVC_ADMIN_TOKEN": forked.admin_token, "SVC_WARM_UP": "false"}
    started = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(port), str(tmp_path / "started")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=str(ROOT),
    )
    try:
        _healthy(f"http://127.0.0.1:{port}", started)
        assert forked.proc is not None
        libraries = _libraries(started.pid)
        assert any("chdb" in name for name in libraries)  # the store's engine, loaded
        assert _libraries(forked.proc.pid) == libraries
    finally:
        started.terminate()
        started.wait(30)
        forked.stop()
