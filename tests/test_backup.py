"""Backups of a running service under load, and their restore (svc.backup, svcm backup/restore).

The backup's point (svc.backup.take): every event acknowledged before the backup began is in
it exactly once (in the store's backup or in a copied spool segment); events acknowledged
while it runs may be in it (their segment was closed before the copy), never twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import ROOT, Server

FROM = {"from": "2000-01-01"}


def svcm(*args: str, srv: Server | None = None, config: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "SVCM_"))}
    env["SVC_CONFIG"] = str(config)
    env["PYTHONPATH"] = str(ROOT / "src")
    if srv is not None:
        env["SVC_URL"], env["SVC_TOKEN"] = srv.url, srv.admin_token
    return subprocess.run(
        [sys.executable, "-m", "svc", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def event_id(row: dict[str, Any]) -> str:
    return str(row.get("eventId", row.get("event_id", "")))


def test_backup_under_load_restores_every_acknowledged_event_once(
    fresh_server: Server, tmp_path: Path
) -> None:
    # segments stay open for 2 s: at the backup's point many acknowledged events are still
    # in the open segment, which the backup must close and copy
    fresh_server.env["SVC_SPOOL_FLUSH_INTERVAL_MS"] = "2000"
    srv = fresh_server.start()
    config = tmp_path / "svcm.toml"
    steady = srv.create_project("steady")
    busy = srv.create_project("busy")
    steady_key, busy_key = steady["keys"]["secret"], busy["keys"]["secret"]
    # "steady" gets its events before the backups and none after: its /metrics must match
    for i in range(40):
        body = {
            "event": "page_view",
            "url": f"https://steady.example/p{i % 7}",
            "referrer": "https://www.google.com/" if i % 3 else "",
            "sessionId": f"s{i % 9}",
            "eventId": f"steady-{i}",
        }
        assert srv.send(steady_key, body, headers={"User-Agent": BROWSER_UA}).status_code == 200
    srv.wait_loaded()
    backups = tmp_path / "backups"
    first = ok_json(svcm("backup", "--to", str(backups), "--json", srv=srv, config=config))
    assert first["kind"] == "full" and first["events"]["events"] == 40
    assert first["metadata"]["projects"] == 2

    # "busy" gets batches with event ids from a client thread while the second backup runs
    acknowledged: list[tuple[float, list[str]]] = []
    sent: set[str] = set()
    stop = threading.Event()

    def client() -> None:
        n = 0
        with httpx.Client(
            headers={"Authorization": f"Bearer {busy_key}", "User-Agent": BROWSER_UA}, timeout=10
        ) as http:
            while not stop.is_set():
                # paced (at most ~500 events/s): a load, not a hog of the cores the
                # suite shares with its other test processes
                if stop.wait(0.02):
                    break
                ids = [f"busy-{n + i}" for i in range(10)]
                n += 10
                sent.update(ids)
                batch = [{"event": "page_view", "url": "/b", "eventId": e} for e in ids]
                try:
                    r = http.post(srv.url + "/analytics", json=batch)
                except httpx.HTTPError:
                    continue
                if r.status_code == 200:
                    acknowledged.append((time.monotonic(), ids))

    thread = threading.Thread(target=client)
    thread.start()
    try:
        start = time.monotonic()  # past one segment's 2 s: some of busy's events are stored
        while (
            sum(len(ids) for _, ids in acknowledged) < 500 or time.monotonic() - start < 2.5
        ) and time.monotonic() < start + 30:
            time.sleep(0.02)
        began = time.monotonic()  # what svcm backup sends, without its start-up time
        r = httpx.post(
            srv.url + "/internal/backup",
            json={"to": str(backups), "keep": 5},
            headers=srv.admin(),
            timeout=120,
        )
        assert r.status_code == 201, r.text
        second = r.json()
        time.sleep(0.3)  # and on after it
    finally:
        stop.set()
        thread.join()
    before = [e for at, ids in acknowledged if at < began for e in ids]
    assert len(before) >= 500
    assert second["kind"] == "differential" and second["base"] == first["name"]
    assert second["spool"]["events"] > 0, "the point should have caught events in the spool"
    steady_metrics = srv.metrics(steady_key, **FROM)
    srv.stop()

    listed = ok_json(_list(backups, config, srv))
    assert [b["name"] for b in listed["backups"]] == [first["name"], second["name"]]

    restored_dir = tmp_path / "restored"
    summary = ok_json(
        svcm(
            "restore",
            "--from",
            second["path"],
            "--data-dir",
            str(restored_dir),
            "--json",
            config=config,
        )
    )
    assert summary["name"] == second["name"]
    restored = Server(restored_dir, admin_token=srv.admin_token).start()
    try:
        restored.wait_loaded()
        rows = restored.events(busy["id"], busy_key)  # the keys came back with the metadata
        seen = Counter(event_id(r) for r in rows)
        assert not [e for e, n in seen.items() if n > 1], "events restored twice"
        missing = [e for e in before if e not in seen]
        assert not missing, f"{len(missing)} of {len(before)} acknowledged events missing"
        assert set(seen) <= sent
        assert restored.metrics(steady_key, **FROM) == steady_metrics
        assert restored.metrics(busy_key, **FROM)["pageviews"] == len(rows)
    finally:
        restored.stop()


def _list(backups: Path, config: Path, srv: Server) -> subprocess.CompletedProcess[str]:
    """``svcm backup --list`` on the stopped service's data directory (in-process)."""
    return svcm(
        "--data-dir",
        str(srv.data_dir),
        "backup",
        "--to",
        str(backups),
        "--list",
        "--json",
        config=config,
    )


def test_keep_removes_old_backups_but_not_a_base_still_needed(
    fresh_server: Server, tmp_path: Path
) -> None:
    srv = fresh_server.start()
    config = tmp_path / "svcm.toml"
    to = str(tmp_path / "b")
    names = []
    for flags in ([], [], ["--full"], []):
        doc = ok_json(
            svcm("backup", "--to", to, "--keep", "2", *flags, "--json", srv=srv, config=config)
        )
        names.append(doc["name"])
    # b0 full, b1 on b0 (b0 kept while b1 is), b2 full (b0, b1 go), b3 on b2
    listed = ok_json(svcm("backup", "--to", to, "--list", "--json", srv=srv, config=config))
    assert [b["name"] for b in listed["backups"]] == names[2:]
    assert sorted(os.listdir(to)) == sorted(names[2:])


def test_restore_refuses_a_non_empty_data_directory(fresh_server: Server, tmp_path: Path) -> None:
    srv = fresh_server.start()
    config = tmp_path / "svcm.toml"
    doc = ok_json(svcm("backup", "--to", str(tmp_path / "b"), "--json", srv=srv, config=config))
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep-me").write_text("x")
    proc = svcm("restore", "--from", doc["path"], "--data-dir", str(target), config=config)
    assert proc.returncode != 0 and "is not empty" in proc.stderr, proc.stderr
    assert os.listdir(target) == ["keep-me"]
    proc = svcm(
        "restore",
        "--from",
        str(tmp_path / "nothing"),
        "--data-dir",
        str(tmp_path / "new"),
        config=config,
    )
    assert proc.returncode != 0 and "no backup at" in proc.stderr, proc.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "to"),
        ({"to": "relative/dir"}, "to"),
        ({"to": "s3://"}, "to"),
        ({"to": "ftp://host/dir"}, "to"),
        ({"to": "/tmp/x", "keep": 0}, "keep"),
        ({"to": "/tmp/x", "keep": "3"}, "keep"),
        ({"to": "/tmp/x", "full": "yes"}, "full"),
        ({"to": "/tmp/x", "colour": "red"}, "colour"),
    ],
)
def test_bad_backup_requests_are_400_naming_the_field(
    server: Server, body: dict[str, Any], field: str
) -> None:
    r = httpx.post(server.url + "/internal/backup", json=body, headers=server.admin())
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert r.json()["error"]["field"] == field


def test_backup_into_the_data_directory_is_refused(server: Server) -> None:
    r = httpx.post(
        server.url + "/internal/backup",
        json={"to": str(server.data_dir / "backups")},
        headers=server.admin(),
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "to", r.text


def test_only_the_admin_token_may_back_up(server: Server) -> None:
    project = server.create_project("not-admin-backup")
    secret = project["keys"]["secret"]
    r = httpx.post(
        server.url + "/internal/backup",
        json={"to": "/tmp/nope"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
    r = httpx.get(server.url + "/internal/backup", params={"to": "/tmp/nope"})
    assert r.status_code == 401, r.text
