"""Take a backup of the running service, without stopping ingestion.

The backup's point: the loader is held (``Loader.hold``: the segment it is loading, if any, is
finished first, and none starts), the spool's open segment is closed (``Spool.seal``), and
then, while nothing moves between the spool and the store, the ready segments are copied and
the event store is backed up (under the store's write lock, so no rollup writes meanwhile).
Every event acknowledged before the backup began is then in exactly one of the two: in the
store's backup or in a copied segment; events acknowledged while it runs go to new segments
(ingestion never waits) and are in it only if their segment was closed before the copy.
The loader resumes once the store's backup is done. The metadata (SQLite, online backup API)
and the admin token's hash are copied after that.

The daily salts are left out of the metadata's copy: svc promises to destroy a salt two days
after its day, and a backup kept longer would keep it. A restored service makes new salts, so a
visitor of the day of the restore is counted as a new one once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sqlite3
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from svc import __version__
from svc.backup import catalog, postgres
from svc.errors import ApiError, Conflict, InvalidRequest
from svc.meta import files as meta_files
from svc.runtime import Runtime
from svc.spool.log import Segment
from svc.storage.events import EventStore

log = logging.getLogger(__name__)

EVENTS_DIR = "events"
META_FILE = "meta.db"
SPOOL_DIR = "spool"
ADMIN_TOKEN_FILE = "admin_token.sha256"

_busy: weakref.WeakKeyDictionary[Runtime, asyncio.Lock] = weakref.WeakKeyDictionary()


class NotSupported(ApiError):
    status, code = 409, "not_supported"


def check_target(to: Path, data_dir: Path) -> None:
    """Refuse a place the backup cannot go (400 naming ``to``)."""
    if not to.is_absolute():
        raise InvalidRequest("`to` must be an absolute directory path", field="to")
    resolved, data = to.resolve(), data_dir.resolve()
    if resolved == data or data in resolved.parents or resolved in data.parents:
        raise InvalidRequest(
            f"`to` must be outside the data directory {data_dir}: a backup in it would be "
            "lost with it",
            field="to",
        )
    if to.exists() and not to.is_dir():
        raise InvalidRequest(f"`to`: {to} exists and is not a directory", field="to")


def busy_lock(runtime: Runtime) -> asyncio.Lock:
    """The lock one backup of the service holds at a time (refused, not queued: Conflict);
    NotSupported on a ClickHouse server."""
    if runtime.settings.clickhouse_url:
        raise NotSupported(
            "backups of a ClickHouse server are the server's own: use BACKUP DATABASE ... TO "
            "Disk/S3 on it (svcm backup covers the embedded store)"
        )
    busy = _busy.setdefault(runtime, asyncio.Lock())
    if busy.locked():
        raise Conflict("a backup is under way; try again when it is done")
    return busy


async def take(runtime: Runtime, to: Path, *, keep: int | None = None, full: bool = False) -> Any:
    """Back the service up into a new directory under ``to``; its manifest (and, with
    ``keep``, the names of the backups retention removed, ``removed``). Into a bucket:
    :func:`svc.backup.remote.take_to_s3`; either: :func:`svc.backup.service.backup`."""
    settings = runtime.settings
    busy = busy_lock(runtime)
    check_target(to, settings.data_dir)
    async with busy:
        try:
            await asyncio.to_thread(to.mkdir, mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidRequest(f"`to`: cannot create {to}: {exc}", field="to") from exc
        base = None if full else await asyncio.to_thread(catalog.newest_full, to)
        name = catalog.new_name()
        target = to / name
        started = time.monotonic()
        await asyncio.to_thread(target.mkdir, mode=0o700)
        try:
            events_to = f"File({sql_string(str(target / EVENTS_DIR))})"
            base_sql = (
                f"File({sql_string(str(to / str(base['name']) / EVENTS_DIR))})" if base else None
            )
            manifest = await take_parts(runtime, target, name, base, events_to, base_sql)
            # every file's size and sha256, for svcm restore to check (read back once)
            files = await asyncio.to_thread(catalog.digest_files, target)
            manifest[catalog.FILES] = files
            manifest["seconds"] = round(time.monotonic() - started, 3)
            manifest["bytes"] = sum(int(f["bytes"]) for f in files.values())
            await asyncio.to_thread(catalog.write_manifest, target, manifest)
        except BaseException:
            await asyncio.to_thread(shutil.rmtree, target, True)
            raise
        removed = await asyncio.to_thread(catalog.prune, to, keep) if keep else []
        log.info("backup %s taken in %.1f s", name, manifest["seconds"])
        shown = {k: v for k, v in manifest.items() if k != catalog.FILES}  # kept in the file
        return {**shown, "path": str(target), "removed": removed}


async def take_parts(
    runtime: Runtime,
    target: Path,
    name: str,
    base: dict[str, Any] | None,
    events_to: str,
    events_base: str | None,
) -> dict[str, Any]:
    """Take every part but the manifest: the event store into ``events_to`` (a ClickHouse
    backup destination, ``File(...)`` or ``S3(...)``, against ``events_base``), the rest
    into ``target``; the manifest to write."""
    settings = runtime.settings
    async with runtime.loader.hold:  # nothing moves from the spool to the store meanwhile
        began = datetime.now(UTC)
        await runtime.spool.seal()  # every event acknowledged before is in a ready segment
        segments = [s for s in runtime.spool.ready if not s.inserted]
        spool = await asyncio.to_thread(
            _copy_segments, segments, runtime.spool.directory, target / SPOOL_DIR
        )
        events = await asyncio.to_thread(_backup_store, runtime.store, events_to, events_base)
    metadata = await asyncio.to_thread(_backup_meta, settings.effective_meta_url, target)
    token_hash = settings.data_dir / ADMIN_TOKEN_FILE
    has_hash = await asyncio.to_thread(_copy_private, token_hash, target / ADMIN_TOKEN_FILE)
    return {
        "format": catalog.FORMAT,
        "name": name,
        "svcVersion": __version__,
        "takenAt": began.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "kind": "differential" if base else "full",
        "base": str(base["name"]) if base else None,
        "point": "every event acknowledged before takenAt, and those of the spool segments "
        "closed when it began; each in the store or in the spool, never both",
        "events": events,
        "spool": spool,
        "metadata": metadata,
        "adminTokenHash": has_hash
        or "not in the data directory (SVC_ADMIN_TOKEN is set): keep that token",
        "salts": "not included: a restored service makes new ones",
    }


def _copy_private(source: Path, dest: Path) -> bool:
    """Copy ``source`` (if it exists) to ``dest``, mode 0600; whether it existed."""
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return False
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return True


def _copy_segments(segments: list[Segment], spool_dir: Path, dest: Path) -> dict[str, Any]:
    """Copy the ready segments (whole files: framed and checksummed; a segment cut short by a
    failed write is copied up to its limit) and the quarantine."""
    dest.mkdir(mode=0o700)
    events = size = 0
    for segment in segments:
        data = segment.path.read_bytes()
        if segment.limit is not None:
            data = data[: segment.limit]
        out = dest / segment.path.name
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        events += segment.events
        size += len(data)
    quarantined = 0
    quarantine = spool_dir / "quarantine"
    if quarantine.is_dir():
        shutil.copytree(quarantine, dest / "quarantine")
        quarantined = sum(1 for p in (dest / "quarantine").rglob("*") if p.is_file())
    catalog.fsync_dir(dest)
    return {
        "path": SPOOL_DIR,
        "segments": len(segments),
        "events": events,
        "bytes": size,
        "quarantineFiles": quarantined,
    }


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _backup_store(store: EventStore, dest: str, base: str | None) -> dict[str, Any]:
    """``BACKUP DATABASE`` of the embedded store to ``dest`` (against ``base``; both
    ClickHouse backup destinations), under the store's write lock; its tables' row counts at
    that moment."""
    client = store.export_client  # a handle of its own: queries go on meanwhile
    with store.write_lock:
        database = str(client.command("SELECT currentDatabase()"))
        rows = client.query(
            "SELECT name, total_rows FROM system.tables WHERE database = {db:String} "
            "AND engine LIKE '%MergeTree' ORDER BY name",
            parameters={"db": database},
        ).result_rows
        sql = f"BACKUP DATABASE `{database}` TO {dest}"
        if base is not None:
            sql += f" SETTINGS base_backup = {base}"
        result = client.command(sql)
    status = result[1] if isinstance(result, list | tuple) and len(result) > 1 else result
    if status != "BACKUP_CREATED":
        raise RuntimeError(f"the event store's backup ended as {status!r}")
    tables = {str(t): int(n or 0) for t, n in rows}
    return {
        "engine": "chdb",
        "path": EVENTS_DIR,
        "database": database,
        "differential": base is not None,
        "tables": tables,
        "events": tables.get("events", 0),
    }


def _backup_meta(url: str, target: Path) -> dict[str, Any]:
    """A copy of the SQLite metadata store by SQLite's online backup API (writers wait only
    for each step), without the salts; PostgreSQL: :func:`svc.backup.postgres.dump`."""
    path = meta_files.sqlite_path(url)
    if path is None:
        if url.startswith("postgresql"):
            return postgres.dump(url, target)
        return {
            "kind": url.split(":", 1)[0],
            "included": False,
            "advice": "back the metadata database up with its own tools, at about the same "
            "time as this backup",
        }
    dest = target / META_FILE
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    source = sqlite3.connect(meta_files.rw_uri(path), uri=True, timeout=30)
    copy = sqlite3.connect(dest)
    try:
        source.backup(copy, pages=256)
        copy.execute("DELETE FROM salts")
        copy.commit()
        copy.execute("PRAGMA journal_mode=DELETE")
        copy.execute("VACUUM")  # the salts' pages are gone from the file, not only unlinked
        counts = {
            "projects": int(copy.execute("SELECT count(*) FROM projects").fetchone()[0]),
            "keys": int(copy.execute("SELECT count(*) FROM api_keys").fetchone()[0]),
        }
    finally:
        copy.close()
        source.close()
    return {"kind": "sqlite", "included": True, "path": META_FILE, **counts}
