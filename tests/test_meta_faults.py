"""The metadata store under faults: a real SQLite lock held by another process, a meta.db
deleted under a running server, the modes of the data directory (issue 16, items 5, 10, 11)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from svc.meta.store import MetadataUnavailable, MetaStore
from svc.runtime import Runtime
from svc.settings import Settings
from tests.conftest import BROWSER_UA
from tests.support import Server
from tests.test_meta_store import postgres_url

# Holds BEGIN EXCLUSIVE on a SQLite file until its stdin closes: another process's lock, as an
# operator's `sqlite3 meta.db` or a backup tool would take it.
_LOCKER = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n"
    "c.execute('BEGIN EXCLUSIVE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
    "c.execute('ROLLBACK')\n"
)


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == b"locked"
        yield
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()


def _event(i: int) -> dict[str, object]:
    return {"event": "page_view", "url": f"/locked/{i}"}


def _post(srv: Server, key: str, i: int, timeout: float = 40.0) -> tuple[int, float]:
    started = time.monotonic()
    r = httpx.post(
        srv.url + "/analytics",
        json=_event(i),
        headers={"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA},
        timeout=timeout,
    )
    return r.status_code, time.monotonic() - started


def test_a_locked_metadata_store_stalls_neither_ingestion_nor_health(tmp_path: Path) -> None:
    srv = Server(
        tmp_path / "data",
        env={"SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.3", "SVC_KEY_CACHE_SECONDS": "60"},
    ).start()
    try:
        keys = srv.create_project("locked")["keys"]
        key = keys["public"]
        assert _post(srv, key, 0)[0] == 200  # verified and cached; its use is to be recorded
        with exclusive_lock(srv.data_dir / "meta.db"):
            slowest = 0.0
            deadline = time.monotonic() + float(
                os.environ.get("LOCK_S", "3")
            )  # ten housekeeping ticks, each with key use
            i = 1
            while time.monotonic() < deadline:
                status, took = _post(srv, key, i)
                assert status == 200
                slowest = max(slowest, took)
                i += 1
                time.sleep(0.05)
            assert slowest < 1.0, f"an ingestion request took {slowest:.2f} s"
            started = time.monotonic()
            r = httpx.get(srv.url + "/health", timeout=40)
            took = time.monotonic() - started
            assert took < 3.0, f"/health took {took:.2f} s"
            meta = r.json()["metadata"]
            assert meta["reachable"] is False, meta
            assert isinstance(meta["latencyMs"], float) and meta["latencyMs"] > 0
            assert "locked" in meta["error"]
        # the lock gone, the store is back and the events sent meanwhile are all there
        deadline = time.monotonic() + 10
        while srv.health()["metadata"]["reachable"] is not True:
            assert time.monotonic() < deadline, srv.health()["metadata"]
            time.sleep(0.1)
        assert httpx.get(srv.url + "/health").status_code == 200
        srv.wait_loaded()
        assert len(srv.events("svc_proj_locked", keys["secret"])) == i
    finally:
        srv.stop()


def test_metadata_writes_fail_fast_with_503_and_the_probe_is_bounded(tmp_path: Path) -> None:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}", busy_timeout_s=0.5)
    store.migrate()
    project, _ = store.create_project("busy")
    try:
        with exclusive_lock(tmp_path / "meta.db"):
            assert store.find_project(project.id) is not None  # reads go on (WAL)
            started = time.monotonic()
            with pytest.raises(MetadataUnavailable) as caught:
                store.touch_keys({"key_x": 1})
            assert time.monotonic() - started < 3
            assert caught.value.status == 503 and "locked" in caught.value.message
            started = time.monotonic()
            report = store.probe()
            assert time.monotonic() - started < 2.5
            assert report["reachable"] is False and report["latencyMs"] >= 900
        report = store.probe()
        assert report["reachable"] is True and report["error"] is None
    finally:
        store.close()


def test_a_postgresql_connection_cut_is_reconnected_not_503(tmp_path: Path) -> None:
    """Database errors become 503 metadata_unavailable, but not the pool's pre-ping: a pooled
    PostgreSQL connection the server cut is replaced, and the call succeeds."""
    url = postgres_url()
    store, other = MetaStore(url), MetaStore(url)
    try:
        store.migrate()
        with store.engine.connect() as conn:  # the one pooled connection, back in the pool after
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with other.engine.begin() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        assert isinstance(store.list_projects(), list)
        assert store.probe()["reachable"] is True
    finally:
        store.close()
        other.close()


def test_salts_are_fetched_ahead_of_midnight(tmp_path: Path) -> None:
    """The first event after midnight asks for the new day's salt on the event loop: it is
    there already, so a locked metadata store at that moment stalls nothing."""
    runtime = Runtime(Settings(data_dir=tmp_path / "data"))
    runtime.meta.migrate()
    midnight = (int(time.time() * 1000) // 86_400_000 + 1) * 86_400_000
    try:
        runtime._refresh_salts(midnight - 20_000)  # a housekeeping tick 20 s before midnight
        today = runtime.salts.today(midnight - 20_000)
        assert len(runtime.meta.salt_days()) == 3  # yesterday, today and tomorrow
        with exclusive_lock(tmp_path / "data" / "meta.db"):
            started = time.monotonic()
            tomorrow = runtime.salts.today(midnight + 1)
            assert time.monotonic() - started < 0.1
            assert runtime.salts.yesterday(midnight + 1) == today and tomorrow != today
        runtime._refresh_salts(midnight + 10_000)  # the next tick destroys the oldest
        assert len(runtime.meta.salt_days()) == 2
        assert runtime.salts.today(midnight + 10_000) == tomorrow
    finally:
        runtime.meta.close()


# a deleted metadata store (item 10) ------------------------------------------------------------


def _remove_meta(data_dir: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        (data_dir / f"meta.db{suffix}").unlink(missing_ok=True)


def test_a_deleted_meta_db_is_noticed_and_writes_are_refused(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data", env={"SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.2"}).start()
    try:
        keys = srv.create_project("vanish")["keys"]
        assert _post(srv, keys["public"], 0)[0] == 200
        _remove_meta(srv.data_dir)
        deadline = time.monotonic() + 10
        while (r := httpx.get(srv.url + "/health", timeout=10)).status_code != 503:
            assert time.monotonic() < deadline, r.text
            time.sleep(0.1)
        meta = r.json()["metadata"]
        assert meta["reachable"] is False and meta["lost"] is True
        assert "was deleted" in meta["error"]
        r = httpx.post(srv.url + "/projects", json={"name": "after"}, headers=srv.admin())
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "metadata_unavailable"
        assert not (srv.data_dir / "meta.db").exists()  # never re-created empty
        assert "was deleted while svc was running" in srv.log()
    finally:
        srv.stop()


def test_a_replaced_meta_db_is_noticed(tmp_path: Path) -> None:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.migrate()
    assert store.check_file() is None
    other = MetaStore(f"sqlite:///{tmp_path / 'other.db'}")
    other.migrate()
    other.close()
    os.replace(tmp_path / "other.db", tmp_path / "meta.db")
    with pytest.raises(MetadataUnavailable):
        store.create_project("late")
    assert store.lost is not None and "replaced" in store.lost
    assert store.probe()["reachable"] is False
    store.close()


def test_start_up_refuses_a_data_dir_whose_meta_db_vanished(tmp_path: Path) -> None:
    data = tmp_path / "data"
    srv = Server(data).start()
    try:
        keys = srv.create_project("gone")["keys"]
        assert _post(srv, keys["public"], 0)[0] == 200
        srv.wait_loaded()
    finally:
        srv.stop()
    _remove_meta(data)
    again = Server(data, admin_token=srv.admin_token)
    try:
        with pytest.raises(RuntimeError) as caught:
            again.start(timeout=60)
        assert "SVC_META_START_FRESH" in str(caught.value)
        assert not (data / "meta.db").exists()
        again.env["SVC_META_START_FRESH"] = "true"
        again.start(timeout=60)
        r = httpx.get(again.url + "/projects", headers=again.admin())
        assert r.status_code == 200 and r.json()["projects"] == []
        assert "starting with an empty metadata store" in again.log()
    finally:
        again.stop()


# modes (item 11) -------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_dir_and_meta_db_are_private(tmp_path: Path) -> None:
    store = MetaStore(f"sqlite:///{tmp_path / 'new' / 'meta.db'}")
    store.migrate()
    store.create_project("private")
    assert _mode(tmp_path / "new") == 0o700
    for name in ("meta.db", "meta.db-wal", "meta.db-shm"):
        assert _mode(tmp_path / "new" / name) == 0o600, name
    store.close()
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)  # an existing, world-readable data directory
    srv = Server(data).start()
    try:
        assert _mode(data) == 0o700
        assert _mode(data / "meta.db") == 0o600
        srv.create_project("modes")
        assert _mode(data / "meta.db-wal") == 0o600
    finally:
        srv.stop()
