"""``svcm backup`` (taken by the running service) and ``svcm restore`` (offline)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from svc.cli.common import Context, command, connection_options, output_options
from svc.cli.connection import error_of
from svc.cli.errors import CliError, UsageError

PATH = "/internal/backup"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "backup",
        summary="back up the running service (events, metadata, spool) into a directory",
        description="Ask the service to back itself up into a new directory under --to, "
        "without stopping ingestion:\nthe event store (ClickHouse BACKUP; differential "
        "against the newest full backup there, unless\n--full), the SQLite metadata (without "
        "the daily salts), the spool segments not loaded yet and\nthe admin token's hash, "
        "with a manifest.json of what it holds. --to is a directory on the\nservice's "
        "machine (a relative path is made absolute here). Needs the admin token.\nWith "
        "--data-dir, the service is started in this process for it.",
        examples=[
            "svcm backup --to /var/backups/svc --keep 14",
            "svcm backup --to /var/backups/svc --full   # weekly: a new base",
            "svcm backup --to /var/backups/svc --list",
            "svcm backup --to s3://acme-backups/svc --keep 30",
        ],
        handler=run_backup,
        parents=[connection_options(), output_options()],
    )
    p.add_argument(
        "--to",
        required=True,
        metavar="DIR|S3",
        help="the directory of the backups, or s3://bucket/prefix (the service's "
        "SVC_BACKUP_S3_* settings reach it)",
    )
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="then delete the backups there past the newest N (and the full backups they "
        "are based on are kept)",
    )
    p.add_argument(
        "--full", action="store_true", help="a full backup, not one against the last full one"
    )
    p.add_argument("--list", action="store_true", help="list the backups in --to instead")

    p = command(
        sub,
        "restore",
        summary="restore a backup into a new, empty data directory (offline)",
        description="Rebuild a data directory from a backup made by `svcm backup`: the event "
        "store, the metadata,\nthe spool segments (loaded when the service starts) and the "
        "admin token's hash. The data\ndirectory must be missing or empty; a differential "
        "backup needs its full base next to it.\nThen start the service on it.",
        examples=[
            "svcm restore --from /var/backups/svc/svc-20261124T101500.000Z-1a2b "
            "--data-dir /var/lib/svc-restored",
            "svcm restore --from s3://acme-backups/svc/svc-20261124T101500.000Z-1a2b "
            "--data-dir /var/lib/svc-restored",
        ],
        handler=run_restore,
        parents=[output_options()],
    )
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="DIR|S3",
        help="the backup's directory, or its s3://bucket/prefix/svc-... URL (downloaded "
        "beside --data-dir first; SVC_BACKUP_S3_* reach the bucket)",
    )
    p.add_argument("--data-dir", required=True, metavar="DIR", help="the data directory to create")
    p.add_argument(
        "--meta-url",
        metavar="URL",
        help="for a backup of a PostgreSQL metadata store: the empty database to restore it "
        "into (postgresql+psycopg://...; then run svc with SVC_META_URL set to it)",
    )


def run_backup(ctx: Context) -> int:
    to = str(ctx.opt("to"))
    if not to.startswith("s3://"):
        to = os.path.abspath(os.path.expanduser(to))
    api = ctx.api()
    if ctx.opt("list"):
        resp = api.send("GET", PATH, params={"to": to})
        if resp.status_code >= 400:
            raise error_of(resp)
        doc = resp.json()
        if ctx.json:
            ctx.out.json(doc)
            return 0
        rows = [
            [
                m["name"],
                m["kind"],
                m.get("base") or "",
                m["events"]["events"],
                m["spool"]["events"],
                _size(int(m.get("bytes", 0))),
            ]
            for m in doc["backups"]
        ]
        ctx.out.table(["name", "kind", "base", "events", "spooled", "size"], rows)
        for name in doc["incomplete"]:
            ctx.out.warn(
                f"{name}: incomplete (no manifest.json, or one that names another backup): "
                "a failed or running backup, never pruned"
            )
        return 0
    keep = ctx.opt("keep")
    if keep is not None and keep < 1:
        raise UsageError("--keep must be 1 or more")
    body: dict[str, Any] = {"to": to, "full": bool(ctx.opt("full"))}
    if keep is not None:
        body["keep"] = keep
    ctx.out.note(f"backing up into {to} ...")
    resp = api.send("POST", PATH, body=body, timeout=None)
    if resp.status_code >= 400:
        raise error_of(resp)
    manifest = resp.json()
    if ctx.json:
        ctx.out.json(manifest)
        return 0
    based = f" on {manifest['base']}" if manifest.get("base") else ""
    ctx.out.done(
        f"{manifest['kind']} backup{based}: {manifest['path']} ({manifest['events']['events']} "
        f"events stored, {manifest['spool']['events']} spooled, "
        f"{_size(int(manifest['bytes']))}, {manifest['seconds']} s)"
    )
    for name in manifest.get("removed", []):
        ctx.out.note(f"removed {name} (--keep)")
    return 0


def run_restore(ctx: Context) -> int:
    from svc.backup.restore import RestoreRefused, restore

    given = str(ctx.opt("source"))
    meta_url = ctx.opt("meta_url") or None
    data_dir = Path(str(ctx.opt("data_dir"))).expanduser().absolute()
    try:
        if given.startswith("s3://"):
            from svc.backup.remote import restore_from_s3
            from svc.settings import Settings

            summary = restore_from_s3(given, data_dir, Settings.from_env(), meta_url)
        else:
            summary = restore(Path(given).expanduser().absolute(), data_dir, meta_url)
    except RestoreRefused as exc:
        raise CliError(str(exc)) from exc
    if ctx.json:
        ctx.out.json(summary)
        return 0
    ctx.out.done(
        f"restored {summary['name']} ({summary['takenAt']}) into {data_dir}: "
        f"{summary['events']} events stored, {summary['spoolEvents']} to load at start"
    )
    if not summary["metadata"].get("included"):
        ctx.out.warn(f"the metadata was not in the backup: {summary['metadata'].get('advice')}")
    ctx.out.note(f"start it: svcm serve --data-dir {data_dir}")
    return 0


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
