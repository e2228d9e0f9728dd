"""Backups into an S3-compatible bucket (svc.backup.remote) against a real S3 server (moto,
started here), taken under load and restored with ``svcm restore --from s3://...``; and
scheduled backups (svc.backup.schedule) that keep N."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from svc.backup.schedule import Schedule, parse_schedule
from tests.s3_server import S3Server, s3_server
from tests.support import BROWSER_UA, ROOT, Server
from tests.test_backup import FROM, event_id

BUCKET = "svc-backups"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        server.bucket(BUCKET)
        yield server


def svcm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "SVCM_"))}
    return subprocess.run(
        [sys.executable, "-m", "svc", *args],
        env={**base, "PYTHONPATH": str(ROOT / "src"), **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )


def test_backup_to_s3_under_load_restores_every_acknowledged_event(
    s3: S3Server, tmp_path: Path
) -> None:
    srv = Server(
        tmp_path / "data", env={"SVC_SPOOL_FLUSH_INTERVAL_MS": "2000", **s3.env("BACKUP")}
    ).start()
    cli_env = {"SVC_CONFIG": str(tmp_path / "svcm.toml"), **s3.env("BACKUP")}
    to = f"s3://{BUCKET}/load"
    try:
        steady = srv.create_project("steady-s3")
        busy = srv.create_project("busy-s3")
        steady_key, busy_key = steady["keys"]["secret"], busy["keys"]["secret"]
        for i in range(30):
            body = {"event": "page_view", "url": f"/p{i % 5}", "sessionId": f"s{i % 7}"}
            assert srv.send(steady_key, body, headers={"User-Agent": BROWSER_UA}).status_code == 200
        srv.wait_loaded()
        proc = svcm(
            "backup",
            "--to",
            to,
            "--json",
            env={**cli_env, "SVC_URL": srv.url, "SVC_TOKEN": srv.admin_token},
        )
        assert proc.returncode == 0, proc.stderr
        first = json.loads(proc.stdout)
        assert first["kind"] == "full" and first["events"]["events"] == 30
        assert first["path"] == f"{to}/{first['name']}"

        acknowledged: list[tuple[float, list[str]]] = []
        stop = threading.Event()

        def client() -> None:
            n = 0
            with httpx.Client(
                headers={"Authorization": f"Bearer {busy_key}", "User-Agent": BROWSER_UA},
                timeout=10,
            ) as http:
                while not stop.is_set():
                    # paced (at most ~500 events/s): a load, not a hog of the cores the
                    # suite shares with its other test processes
                    if stop.wait(0.02):
                        break
                    ids = [f"busy-{n + i}" for i in range(10)]
                    n += 10
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
            start = time.monotonic()
            while (
                sum(len(ids) for _, ids in acknowledged) < 300 or time.monotonic() - start < 2.5
            ) and time.monotonic() < start + 30:
                time.sleep(0.02)
            began = time.monotonic()
            r = httpx.post(
                srv.url + "/internal/backup",
                json={"to": to, "keep": 5},
                headers=srv.admin(),
                timeout=120,
            )
            assert r.status_code == 201, r.text
            second = r.json()
            time.sleep(0.3)
        finally:
            stop.set()
            thread.join()
        before = [e for at, ids in acknowledged if at < began for e in ids]
        assert second["kind"] == "differential" and second["base"] == first["name"]
        assert second["spool"]["events"] > 0
        # differential: the store's backup holds fewer objects than the full one's
        full_objects = s3.keys(BUCKET, f"load/{first['name']}/events/")
        diff_objects = s3.keys(BUCKET, f"load/{second['name']}/events/")
        assert 0 < len(diff_objects) < len(full_objects)
        steady_metrics = srv.metrics(steady_key, **FROM)
        r = httpx.get(srv.url + "/internal/backup", params={"to": to}, headers=srv.admin())
        assert [b["name"] for b in r.json()["backups"]] == [first["name"], second["name"]]
    finally:
        srv.stop()

    restored_dir = tmp_path / "restored"
    proc = svcm(
        "restore",
        "--from",
        second["path"],
        "--data-dir",
        str(restored_dir),
        "--json",
        env=cli_env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == second["name"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".svc-restore-")] == []
    restored = Server(restored_dir, admin_token=srv.admin_token).start()
    try:
        restored.wait_loaded()
        rows = restored.events(busy["id"], busy_key)
        seen = Counter(event_id(r) for r in rows)
        assert not [e for e, n in seen.items() if n > 1], "events restored twice"
        missing = [e for e in before if e not in seen]
        assert not missing, f"{len(missing)} of {len(before)} acknowledged events missing"
        assert restored.metrics(steady_key, **FROM) == steady_metrics
    finally:
        restored.stop()

    proc = svcm(
        "restore",
        "--from",
        f"s3://{BUCKET}/load/svc-20200101T000000.000Z-0000",
        "--data-dir",
        str(tmp_path / "x"),
        env=cli_env,
    )
    assert proc.returncode != 0 and "no complete backup" in proc.stderr, proc.stderr


def test_scheduled_backups_run_and_keep_n(s3: S3Server, tmp_path: Path) -> None:
    env = {
        **s3.env("BACKUP"),
        "SVC_BACKUP_TO": f"s3://{BUCKET}/sched",
        "SVC_BACKUP_SCHEDULE": "0.5s",
        "SVC_BACKUP_KEEP": "2",
        "SVC_BACKUP_FULL_EVERY": "1",  # full, differential, full, ...
    }
    srv = Server(tmp_path / "data", env=env).start()
    try:
        project = srv.create_project("sched")
        srv.send(
            project["keys"]["secret"],
            {"event": "page_view", "url": "/x"},
            headers={"User-Agent": BROWSER_UA},
        )
        deadline = time.monotonic() + 60
        while srv.health()["backups"]["taken"] < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        srv.stop()
    names = sorted({k.split("/")[1] for k in s3.keys(BUCKET, "sched/")})
    manifests = [json.loads(s3.get(BUCKET, f"sched/{n}/manifest.json") or b"{}") for n in names]
    assert all(m.get("name") == n for m, n in zip(manifests, names, strict=True)), names
    newest = manifests[-2:]
    kept = {m["name"] for m in newest} | {m["base"] for m in newest if m.get("base")}
    assert set(names) == kept, (names, kept)
    assert len(names) in (2, 3)
    assert [m["kind"] for m in manifests].count("full") >= 1


def test_the_schedule_setting() -> None:
    assert parse_schedule("daily@03:00") == Schedule(at=(3, 0))
    assert parse_schedule("6h") == Schedule(interval_s=21600)
    assert parse_schedule("90s") == Schedule(interval_s=90)
    for bad in ("daily@25:00", "weekly", "0s", "-5m", ""):
        with pytest.raises(ValueError, match="SVC_BACKUP_SCHEDULE"):
            parse_schedule(bad)
    from datetime import UTC, datetime

    now = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)
    assert Schedule(at=(3, 0)).next_after(now) == datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
    assert Schedule(at=(5, 30)).next_after(now) == datetime(2026, 11, 24, 5, 30, tzinfo=UTC)
