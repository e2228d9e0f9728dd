"""A backup of a service whose metadata is in PostgreSQL: pg_dump into the backup (without
the salts' rows), and ``svcm restore --meta-url`` restores it with pg_restore into an empty
database (svc.backup.postgres). Each test database is its own, made and dropped here."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.support import BROWSER_UA, Server
from tests.test_backup import FROM, svcm
from tests.test_meta_store import postgres_url


@pytest.fixture
def databases() -> Iterator[tuple[str, str]]:
    """Two new, empty databases (source, target) on the test PostgreSQL server."""
    url = make_url(postgres_url())
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    names = [f"svc_backup_src_{os.getpid()}", f"svc_backup_dst_{os.getpid()}"]
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    yield tuple(url.set(database=n).render_as_string(hide_password=False) for n in names)  # type: ignore[misc]
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_postgresql_metadata_store_is_dumped_and_restored(
    databases: tuple[str, str], tmp_path: Path
) -> None:
    source, target = databases
    srv = Server(tmp_path / "data", env={"SVC_META_URL": source}).start()
    config = tmp_path / "svcm.toml"
    try:
        project = srv.create_project("pg-backup")
        secret = project["keys"]["secret"]
        for i in range(5):
            body = {"event": "page_view", "url": f"/p{i}", "sessionId": f"s{i % 2}"}
            assert srv.send(secret, body, headers={"User-Agent": BROWSER_UA}).status_code == 200
        srv.wait_loaded()
        metrics = srv.metrics(secret, **FROM)
        proc = svcm("backup", "--to", str(tmp_path / "b"), "--json", srv=srv, config=config)
        assert proc.returncode == 0, proc.stderr
        manifest = json.loads(proc.stdout)
    finally:
        srv.stop()
    meta = manifest["metadata"]
    assert meta["kind"] == "postgresql" and meta["included"] and meta["projects"] == 1, meta
    assert (Path(manifest["path"]) / "meta.pgdump").stat().st_size > 0

    restored_dir = tmp_path / "restored"
    proc = svcm(
        "restore", "--from", manifest["path"], "--data-dir", str(restored_dir), config=config
    )
    assert proc.returncode != 0 and "--meta-url" in proc.stderr, proc.stderr
    proc = svcm(
        "restore",
        "--from",
        manifest["path"],
        "--data-dir",
        str(restored_dir),
        "--meta-url",
        target,
        config=config,
    )
    assert proc.returncode == 0, proc.stderr
    plain = make_url(target).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as conn:
        row = conn.execute("SELECT count(*) FROM salts").fetchone()
        assert row is not None and row[0] == 0, "the salts' rows must not be in a backup"
    restored = Server(restored_dir, admin_token=srv.admin_token, env={"SVC_META_URL": target})
    restored.start()
    try:
        assert restored.metrics(secret, **FROM) == metrics  # the key came back with it
    finally:
        restored.stop()
