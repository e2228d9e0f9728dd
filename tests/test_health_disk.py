"""/health finds out by itself that a full disk has room again (issue 16, item 8), on a real
tmpfs: it stayed 503 until some ingest request arrived, which a load balancer routing on
/health never sends."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server

UA = {"User-Agent": BROWSER_UA}


def top_up(filler: Path) -> None:
    """Fill the filesystem of ``filler`` to the last byte."""
    with open(filler, "ab", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)


def test_health_rechecks_the_disk_by_itself(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spool = data / "spool"
    spool.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(spool)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        message = f"cannot mount a tmpfs for a full-disk test: {mounted.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    srv = Server(data)
    try:
        srv.start()
        project = srv.create_project("full-disk")
        key = project["keys"]["public"]
        event = {"event": "page_view", "url": "/a", "sessionId": "s"}
        assert srv.send(key, event, headers=UA).status_code == 200
        filler = spool / "filler"
        top_up(filler)
        # the open segment's last page may take a little more: send until the disk refuses
        big = {**event, "properties": {f"k{i}": "v" * 2000 for i in range(20)}}
        for _ in range(20):
            r = srv.send(key, big, headers=UA)
            if r.status_code != 200:
                break
        assert r.status_code == 503, r.text
        assert httpx.get(srv.url + "/health").status_code == 503
        filler.unlink()
        # no ingest request from now on: /health must find out by itself
        deadline = time.monotonic() + 5
        status = 503
        while time.monotonic() < deadline and status != 200:
            time.sleep(0.2)
            status = httpx.get(srv.url + "/health").status_code
        assert status == 200, srv.health()["pipeline"]
        assert srv.health()["pipeline"]["spoolError"] is None
        assert srv.send(key, event, headers=UA).status_code == 200
        # and a disk that fills up again is seen before any request fails
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and status != 503:
            top_up(filler)  # (the loader frees the space of what it loaded)
            time.sleep(0.2)
            status = httpx.get(srv.url + "/health").status_code
        assert status == 503
        filler.unlink()
    finally:
        srv.stop()
        subprocess.run(["umount", "-l", str(spool)], check=False)
