"""Restore a backup into an empty data directory, offline (no service runs on it).

The metadata, the admin token's hash and the spool segments are copied back; the event store
is rebuilt with ``RESTORE DATABASE ... FROM File(...)`` (a differential backup with its full
base, which must still be in the same place as the backup). A service started on the
directory then loads the restored segments as usual.

Nothing damaged is restored: before a file is used, every file the manifest lists is checked
against its size and sha256 digest (``files``, in the backup's manifest and its base's; an
older manifest without the list skips this step); after the copy, ``PRAGMA integrity_check``
checks the SQLite metadata and the restored store's tables pass ClickHouse's ``CHECK TABLE``
(each part against its ``checksums.txt``); a PostgreSQL dump must list (``pg_restore
--list``). Any damage is a :class:`RestoreRefused` that names the damaged file, and the data
directory is emptied again (removed, when the restore created it): a failed restore leaves
nothing a service could start on.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from svc.backup import catalog, postgres
from svc.backup.take import ADMIN_TOKEN_FILE, EVENTS_DIR, META_FILE, SPOOL_DIR, sql_string
from svc.settings import Settings
from svc.storage.events import connect


class RestoreRefused(Exception):
    """The restore cannot be done as asked (a non-empty directory, a missing base, a damaged
    backup): one plain sentence for the operator."""


def restore(source: Path, data_dir: Path, meta_url: str | None = None) -> dict[str, Any]:
    """Restore the backup in ``source`` into ``data_dir`` (missing or empty); a summary.
    A backup of a PostgreSQL metadata store is restored into the empty database at
    ``meta_url`` (required then, refused otherwise). RestoreRefused, with ``data_dir`` as
    empty as it was found (or missing again), when anything in the backup is damaged."""
    try:
        manifest = catalog.read_manifest(source)
        _check_manifest(source, manifest)
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
    base = _base_of(source, manifest)
    try:  # every file against its manifest, before any is used
        catalog.check_files(source, manifest)
        if base is not None:
            catalog.check_files(base, catalog.read_manifest(base))
    except catalog.BackupError as exc:
        raise RestoreRefused(str(exc)) from exc
    created = not data_dir.exists()
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(data_dir, 0o700)
    except OSError as exc:
        raise RestoreRefused(f"cannot create {data_dir}: {exc.strerror or exc}") from exc
    try:
        _copy_back(source, data_dir, manifest)
        if metadata.get("kind") == "sqlite" and metadata.get("included"):
            _check_sqlite(data_dir / META_FILE, source / META_FILE, metadata)
        _restore_store(source / EVENTS_DIR, base / EVENTS_DIR if base else None, data_dir)
        if pg_dump and meta_url:
            try:
                postgres.check_dump(source / postgres.DUMP_FILE)
                postgres.restore(source / postgres.DUMP_FILE, meta_url)
            except postgres.PostgresError as exc:
                raise RestoreRefused(f"{exc} (the database must be empty)") from exc
    except BaseException as exc:
        _empty(data_dir, created)
        if isinstance(exc, OSError):
            raise RestoreRefused(
                f"cannot restore {source} into {data_dir}: {exc.strerror or exc}"
                + (f" ({exc.filename})" if exc.filename else "")
            ) from exc
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
        "filesChecked": len(manifest.get(catalog.FILES) or {}),
    }


def _check_manifest(source: Path, manifest: dict[str, Any]) -> None:
    """BackupError unless the manifest has a well-formed name and base and the parts a
    restore reads."""
    catalog.check_name(manifest.get("name"), f"the manifest in {source} names the backup")
    if manifest.get("base") is not None:
        catalog.check_name(manifest.get("base"), f"the manifest in {source} names the base")
    for part in ("metadata", "events", "spool"):
        if not isinstance(manifest.get(part), dict):
            raise catalog.BackupError(f"the manifest in {source} is malformed: no `{part}` part")


def _base_of(source: Path, manifest: dict[str, Any]) -> Path | None:
    """The folder of the full backup a differential one is based on: beside ``source``,
    named by the manifest's (well-formed) ``base``, holding a manifest of that name."""
    if manifest.get("base") is None:
        return None
    name = str(manifest["base"])  # well-formed (_check_manifest): one folder beside source
    base = source.parent / name
    try:
        base_manifest = catalog.read_manifest(base)
    except catalog.BackupError as exc:
        raise RestoreRefused(
            f"{source.name} is differential and its full base backup is missing: {exc}"
        ) from exc
    if base_manifest.get("name") != name:
        raise RestoreRefused(
            f"{source.name} is differential and {base} holds another backup's manifest "
            f"({base_manifest.get('name')!r}), not its full base's"
        )
    return base


def _empty(data_dir: Path, created: bool) -> None:
    """Remove what a failed restore wrote: ``data_dir`` as it was found (empty or missing)."""
    if not data_dir.is_dir():
        return
    for child in data_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if created:
        with contextlib.suppress(OSError):
            data_dir.rmdir()


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


def _check_sqlite(copy: Path, original: Path, metadata: dict[str, Any]) -> None:
    """RestoreRefused naming ``original`` (the backup's file) unless its copy passes SQLite's
    ``PRAGMA integrity_check`` and holds the projects and keys the manifest counted."""
    uri = f"file:{copy}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            result = [str(r[0]) for r in db.execute("PRAGMA integrity_check").fetchall()]
            if result != ["ok"]:
                raise RestoreRefused(
                    f"the backup is damaged: {original} fails SQLite's integrity check "
                    f"({'; '.join(result[:3])[:200]})"
                )
            counts = {
                "projects": int(db.execute("SELECT count(*) FROM projects").fetchone()[0]),
                "keys": int(db.execute("SELECT count(*) FROM api_keys").fetchone()[0]),
            }
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise RestoreRefused(
            f"the backup is damaged: {original} is not a sound SQLite database of svc ({exc})"
        ) from exc
    for what, n in counts.items():
        if isinstance(metadata.get(what), int) and metadata[what] != n:
            raise RestoreRefused(
                f"the backup is damaged: {original} holds {n} {what} where its manifest says "
                f"{metadata[what]}"
            )


def _restore_store(events: Path, base: Path | None, data_dir: Path) -> None:
    """``RESTORE DATABASE`` into a new embedded store in ``data_dir`` (this process's chDB
    engine is opened on it, so this is for a process of its own: ``svcm restore``), then
    ``CHECK TABLE`` of every table of it; RestoreRefused, naming what is damaged, when
    ClickHouse refuses the backup or a restored part fails its checksums."""
    client = connect(Settings(data_dir=data_dir))
    try:
        database = str(client.command("SELECT currentDatabase()"))
        sql = f"RESTORE DATABASE `{database}` FROM File({sql_string(str(events))})"
        if base is not None:
            sql += f" SETTINGS base_backup = File({sql_string(str(base))})"
        try:
            result = client.command(sql)
        except Exception as exc:  # ClickHouse's refusal (a truncated part, a bad file, ...)
            raise RestoreRefused(
                f"the backup is damaged: the event store in {events} cannot be restored "
                f"({clickhouse_reason(exc)})"
            ) from exc
        status = result[1] if isinstance(result, list | tuple) and len(result) > 1 else result
        if status != "RESTORED":
            raise RestoreRefused(f"the event store's restore from {events} ended as {status!r}")
        _check_tables(client, database, events)
    finally:
        client.close()


def _check_tables(client: Any, database: str, events: Path) -> None:
    """ClickHouse's own check of every restored MergeTree table: each part's files against
    its ``checksums.txt`` (sizes and hashes, compressed and not)."""
    tables = client.query(
        "SELECT name FROM system.tables WHERE database = {db:String} "
        "AND engine LIKE '%MergeTree' ORDER BY name",
        parameters={"db": database},
    ).result_rows
    for (table,) in tables:
        raw = client.raw_query(
            f"CHECK TABLE `{database}`.`{table}` SETTINGS check_query_single_value_result = 0",
            fmt="TabSeparated",
        )
        for line in bytes(raw).decode("utf-8", "replace").splitlines():
            part, passed, message = ([*line.split("\t", 2), "", ""])[:3]
            if passed.strip() != "1":
                reason = clickhouse_reason(message)
                if part not in reason:  # a restored part's name (the backup's may differ)
                    reason = f"restored part {part}: {reason}"
                raise RestoreRefused(
                    f"the backup is damaged: table {table} of the event store in {events} "
                    f"fails ClickHouse's checksums after its restore ({reason})"
                )


_CODE = re.compile(r"^(?:Code: \d+\. )?(?:DB::Exception: )?")
_TAIL = re.compile(r"\s*(?:\((?:[A-Z_]+|version [^)]*)\)\s*)+\.?$")
_TMP_PART = re.compile(r"store/[0-9a-f]{3}/[0-9a-f-]{36}/tmp_restore_([^/\s]+?)-[0-9a-f-]{36}/")


def clickhouse_reason(error: object) -> str:
    """ClickHouse's message of ``error``, shortened to a clause of one line: without its
    code, stack and version, a restore's temporary part path as the part's name."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    text = _CODE.sub("", text)
    text = _TMP_PART.sub(lambda m: f"part {m.group(1)}, file ", text)
    text = _TAIL.sub("", text)
    cut = text.find(": columns:")  # the part's whole column list follows: not for a reader
    if cut > 0:
        text = text[:cut]
    if len(text) > 240:
        text = text[:240].rsplit(" ", 1)[0] + " ..."
    return text.rstrip(" .:")
