"""``svcm serve``: the service, configured by one flag per setting."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from svc.settings import Settings, flag_name
from tests.cli.conftest import Svcm
from tests.cli.support import ROOT, clean_env, svcm
from tests.support import admin_token, free_port


def test_serve_takes_a_flag_per_setting(bare: Svcm) -> None:
    shown = bare("serve", "--help").ok().stdout
    for f in dataclasses.fields(Settings):
        assert flag_name(f.name) in shown
    bad = bare("serve", "--port", "eighty")
    assert bad.status == 2 and bad.stderr.strip() == (
        "svcm: setting SVC_PORT: cannot read 'eighty' as <class 'int'>"
    )


def test_serve_runs_and_its_data_dir_is_free_once_it_stopped(tmp_path: Path) -> None:
    port, token, data = free_port(), admin_token(), tmp_path / "data"
    env = clean_env(tmp_path / "c.toml", SVC_ADMIN_TOKEN=token, SVC_LOG_LEVEL="warning")
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--data-dir", str(data), "--spool-flush-interval-ms", "50"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(ROOT),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "svcm serve did not come up"
            time.sleep(0.1)
        url, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
        assert httpx.post(url + "/projects", json={"name": "up"}, headers=auth).status_code == 201
        event = {"event": "page_view", "url": "/up", "projectId": "svc_proj_up"}
        assert httpx.post(url + "/analytics", json=event, headers=auth).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(60)
    assert status in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after shutting down
    # Stopped: its data directory is free, and the acknowledged event is in it.
    out = svcm("export", "-p", "up", "--from", "today", "--data-dir", str(data), env=env).ok()
    assert [json.loads(line)["url"] for line in out.stdout.splitlines()] == ["/up"]
