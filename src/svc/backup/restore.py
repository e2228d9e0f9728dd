"""Restore a backup into an empty data directory, offline (no service runs on it).

The metadata, the admin token's hash and the spool segments are copied back; the event store
is rebuilt with ``RESTORE DATABASE ... FROM File(...)`` (a differential backup with its full
base, which must still be in the same place as the backup). A service started on the
directory then loads the restored segments as usual. On failure the directory is emptied
again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from svc.backup import catalog, postgres
from svc.backup.take import ADMIN_TOKEN_FILE, EVENTS_DIR, META_FILE, SPOOL_DIR, sql_string
from svc.settings import Settings
from svc.storage.events import connect


class RestoreRefused(Exception):
    """The restore cannot be done as asked (a non-empty directory, a missing base)."""


def restore(source: Path, data_dir: Path, meta_url: str | None = None) -> dict[str, Any]:
    """Restore the backup in ``source`` into ``data_dir`` (missing or empty); a summary.
    A backup of a PostgreSQL metadata store is restored into the empty database at
    ``meta_url`` (required then, refused otherwise)."""
    try:
        manifest = catalog.read_manifest(source)
    except catalog.BackupError as exc:
        raise RestoreRefused(str(exc)) from exc
    metadata = manifest["metadata"]
    pg_dump = metadata.get("kind") == "postgresql" and metadata.get("included")
    if pg_dump and not meta_url:
        raise RestoreRefused(
            "the backup's metadata is a PostgreSQL dump: give --meta-url, an empty PostgreSQL "
            "database to restore it into (then start svc with SVC_META_URL set to it)"
        )
    if meta_url and not pg_dump:
        raise RestoreRefused(
            "--meta-url is for a backup of a PostgreSQL metadata store; this one's metadata "
            f"is {metadata.get('kind')} ({'in' if metadata.get('included') else 'not in'} it)"
        )
    if data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        raise RestoreRefused(
            f"{data_dir} is not empty: restore into a new or empty directory (a backup never "
            "overwrites a data directory)"
        )
    base_events = None
    if manifest.get("base"):
        base = source.parent / str(manifest["base"])
        try:
            catalog.read_manifest(base)
        except catalog.BackupError as exc:
            raise RestoreRefused(
                f"{source.name} is differential and its full base backup is missing: {exc}"
            ) from exc
        base_events = base / EVENTS_DIR
    created = not data_dir.exists()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    try:
        _copy_back(source, data_dir, manifest)
        _restore_store(source / EVENTS_DIR, base_events, data_dir)
        if pg_dump and meta_url:
            try:
                postgres.restore(source / postgres.DUMP_FILE, meta_url)
            except postgres.PostgresError as exc:
                raise RestoreRefused(f"{exc} (the database must be empty)") from exc
    except BaseException:
        for child in data_dir.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        if created:
            data_dir.rmdir()
        raise
    return {
        "from": str(source),
        "dataDir": str(data_dir),
        "name": manifest["name"],
        "takenAt": manifest["takenAt"],
        "kind": manifest["kind"],
        "events": manifest["events"]["events"],
        "spoolEvents": manifest["spool"]["events"],
        "metadata": manifest["metadata"],
    }


def _copy_back(source: Path, data_dir: Path, manifest: dict[str, Any]) -> None:
    if manifest["metadata"].get("kind") == "sqlite" and manifest["metadata"].get("included"):
        shutil.copyfile(source / META_FILE, data_dir / META_FILE)
        os.chmod(data_dir / META_FILE, 0o600)
    if (source / ADMIN_TOKEN_FILE).exists():
        shutil.copyfile(source / ADMIN_TOKEN_FILE, data_dir / ADMIN_TOKEN_FILE)
        os.chmod(data_dir / ADMIN_TOKEN_FILE, 0o600)
    spool = data_dir / SPOOL_DIR
    if (source / SPOOL_DIR).is_dir():
        shutil.copytree(source / SPOOL_DIR, spool)
    spool.mkdir(mode=0o700, exist_ok=True)
    for path in [spool, *spool.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)


def _restore_store(events: Path, base: Path | None, data_dir: Path) -> None:
    """``RESTORE DATABASE`` into a new embedded store in ``data_dir`` (this process's chDB
    engine is opened on it, so this is for a process of its own: ``svcm restore``)."""
    client = connect(Settings(data_dir=data_dir))
    try:
        database = str(client.command("SELECT currentDatabase()"))
        sql = f"RESTORE DATABASE `{database}` FROM File({sql_string(str(events))})"
        if base is not None:
            sql += f" SETTINGS base_backup = File({sql_string(str(base))})"
        result = client.command(sql)
        status = result[1] if isinstance(result, list | tuple) and len(result) > 1 else result
        if status != "RESTORED":
            raise RuntimeError(f"the event store's restore ended as {status!r}")
    finally:
        client.close()
