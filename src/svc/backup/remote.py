"""Backups in an S3-compatible bucket (``s3://bucket/prefix``): the same backup as in a
directory, with the same names, manifest and retention, each under ``<prefix>/<name>/``.

The event store goes straight to the bucket: ClickHouse's ``BACKUP DATABASE ... TO S3(...)``,
differential (``base_backup = S3(...)``) against the newest full backup there, so a
differential backup uploads only the parts that are new since it (measured with the tests'
S3 server: a 1M-event store, 105 objects, 5.2 MB, then 29 objects, 85 KB after one more
insert). The other parts (metadata, spool segments, the admin token's hash) are written into a
staging directory in the data directory and uploaded, then ``manifest.json`` last: a prefix
without it is an incomplete backup. The bucket's credentials come from the
``SVC_BACKUP_S3_*`` settings (they are written into the store's statement, which stays in
this process: the embedded store logs no queries).

A restore downloads the backup (and its full base) into a directory beside the new data
directory and restores from there as from a local backup, then deletes the download.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from svc.backup import catalog
from svc.backup.take import EVENTS_DIR, busy_lock, sql_string, take_parts
from svc.errors import InvalidRequest
from svc.lake.places import PlaceError, S3Access, S3Place, open_place
from svc.runtime import Runtime
from svc.settings import Settings

log = logging.getLogger(__name__)

STAGING_DIR = "backup-staging"


def access_of(settings: Settings) -> S3Access:
    """The backups' bucket access, from settings."""
    return S3Access(
        endpoint=settings.backup_s3_endpoint,
        key_id=settings.backup_s3_key_id,
        secret=settings.backup_s3_secret,
        region=settings.backup_s3_region,
    )


def place_of(url: str, settings: Settings) -> S3Place:
    """The bucket prefix of ``url`` (400 naming ``to`` when it is not ``s3://bucket/...``)."""
    try:
        place = open_place(url, access_of(settings))
    except PlaceError as exc:
        raise InvalidRequest(f"`to`: {exc}", field="to") from exc
    assert isinstance(place, S3Place)
    return place


def s3_engine(place: S3Place, key: str) -> str:
    """The ClickHouse backup destination of ``key`` in ``place``: ``S3('url'[, id, secret])``."""
    args = [sql_string(place.object_url(key))]
    if place.access.key_id:
        args += [sql_string(place.access.key_id), sql_string(place.access.secret)]
    return f"S3({', '.join(args)})"


def scan(place: S3Place) -> tuple[list[dict[str, Any]], list[str]]:
    """The manifests of the complete backups in the bucket prefix, oldest first, and the
    names of the incomplete ones."""
    complete: list[dict[str, Any]] = []
    incomplete: list[str] = []
    for name in place.children(""):
        if not name.startswith(catalog.PREFIX):
            continue
        data = place.get_bytes(f"{name}/{catalog.MANIFEST}")
        try:
            doc = json.loads(data) if data is not None else None
        except ValueError:
            doc = None
        if (
            isinstance(doc, dict)
            and doc.get("format") == catalog.FORMAT
            and catalog.belongs(doc, name, place.url)  # found under its own name only
        ):
            doc.pop(catalog.FILES, None)  # for restore only: a listing is short
            complete.append(doc)
        else:
            incomplete.append(name)
    complete.sort(key=lambda m: (str(m.get("takenAt", "")), str(m.get("name", ""))))
    return complete, incomplete


def prune(place: S3Place, keep: int) -> list[str]:
    """As :func:`svc.backup.catalog.prune`, in the bucket (each manifest deleted first)."""
    complete, _ = scan(place)
    kept = complete[-keep:] if keep > 0 else []
    needed = {str(m["name"]) for m in kept} | {str(m["base"]) for m in kept if m.get("base")}
    removed: list[str] = []
    for manifest in complete:
        name = str(manifest["name"])  # the prefix it was found under (scan)
        if name in needed or not catalog.is_name(name):
            continue
        place.delete_prefix(f"{name}/{catalog.MANIFEST}")
        place.delete_prefix(f"{name}/")
        removed.append(name)
    return removed


async def take_to_s3(runtime: Runtime, url: str, *, keep: int | None, full: bool) -> Any:
    """:func:`svc.backup.take.take` into the bucket prefix of ``url``."""
    busy = busy_lock(runtime)
    place = place_of(url, runtime.settings)
    async with busy:
        return await _take_to_s3(runtime, place, keep=keep, full=full)


async def _take_to_s3(runtime: Runtime, place: S3Place, *, keep: int | None, full: bool) -> Any:
    try:
        complete = (await asyncio.to_thread(scan, place))[0]
    except PlaceError as exc:
        raise InvalidRequest(f"`to`: {exc}", field="to") from exc
    fulls = [m for m in complete if m.get("kind") == "full"]
    base = None if full or not fulls else fulls[-1]
    name = catalog.new_name()
    staging = runtime.settings.data_dir / STAGING_DIR / name
    started = time.monotonic()
    await asyncio.to_thread(staging.mkdir, mode=0o700, parents=True)
    try:
        events_base = s3_engine(place, f"{base['name']}/{EVENTS_DIR}") if base else None
        events_to = s3_engine(place, f"{name}/{EVENTS_DIR}")
        manifest = await take_parts(runtime, staging, name, base, events_to, events_base)
        files = await asyncio.to_thread(catalog.digest_files, staging)
        await asyncio.to_thread(_upload, place, staging, name)
        # the store's files went straight to the bucket: read back once for their digests
        files |= await asyncio.to_thread(_digest_objects, place, name, EVENTS_DIR)
        manifest[catalog.FILES] = dict(sorted(files.items()))
        manifest["seconds"] = round(time.monotonic() - started, 3)
        manifest["bytes"] = sum(int(f["bytes"]) for f in files.values())
        manifest["location"] = f"{place.url.rstrip('/')}/{name}"
        data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        await asyncio.to_thread(place.put_bytes, f"{name}/{catalog.MANIFEST}", data)
    except BaseException:
        try:
            await asyncio.to_thread(place.delete_prefix, f"{name}/")
        except Exception:
            log.warning("could not delete the incomplete backup %s/%s", place.url, name)
        raise
    finally:
        await asyncio.to_thread(shutil.rmtree, staging, True)
    removed = await asyncio.to_thread(prune, place, keep) if keep else []
    log.info("backup %s/%s taken in %.1f s", place.url, name, manifest["seconds"])
    shown = {k: v for k, v in manifest.items() if k != catalog.FILES}  # kept in the object
    return {**shown, "path": manifest["location"], "removed": removed}


def _digest_objects(place: S3Place, name: str, folder: str) -> dict[str, dict[str, Any]]:
    """The size and sha256 of every object under ``<name>/<folder>/`` in the bucket, by path
    relative to ``<name>/`` (as :func:`svc.backup.catalog.digest_files`), streamed."""
    files: dict[str, dict[str, Any]] = {}
    for key in place.keys(f"{name}/{folder}/"):
        resp = place._call(
            f"read {key} back",
            place.client.get_object,
            Bucket=place.bucket,
            Key=place._key(key),
        )
        digest, size = hashlib.sha256(), 0
        for chunk in resp["Body"].iter_chunks(1 << 20):
            digest.update(chunk)
            size += len(chunk)
        files[key[len(name) + 1 :]] = {"bytes": size, "sha256": digest.hexdigest()}
    return files


def _upload(place: S3Place, staging: Path, name: str) -> None:
    for path in sorted(staging.rglob("*")):
        if path.is_file():
            place.put_file(f"{name}/{path.relative_to(staging)}", path)


def download(url: str, settings: Settings, into: Path) -> Path:
    """Download the backup at ``url`` (``s3://bucket/prefix/<name>``), and its full base if
    it is differential, into ``into``; the local backup's directory (``into/<name>``)."""
    parent, _, name = url.rstrip("/").rpartition("/")
    if not catalog.is_name(name) or parent == "s3:/":
        raise catalog.BackupError(
            f"{url}: not a backup's URL (s3://bucket/prefix/{catalog.PREFIX}<UTC time>Z-<hex>)"
        )
    place = open_place(parent, access_of(settings))
    assert isinstance(place, S3Place)  # parent is s3://...
    manifest = _manifest_of(place, name)
    if manifest is None:
        raise catalog.BackupError(f"no complete backup at {url} (no {catalog.MANIFEST})")
    names = [name]
    if manifest.get("base") is not None:
        names.append(catalog.check_name(manifest.get("base"), f"{url}: the manifest's base"))
        if _manifest_of(place, names[1]) is None:
            raise catalog.BackupError(f"{url}: its full base {names[1]} is not in {parent}")
    for each in names:  # well-formed names only: each download stays under into/
        place.download(f"{each}/", into / each)
    return into / name


def _manifest_of(place: S3Place, name: str) -> dict[str, Any] | None:
    """The manifest under ``<name>/`` (None: there is none); BackupError when it is not
    readable or names another backup than ``name``."""
    data = place.get_bytes(f"{name}/{catalog.MANIFEST}")
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != catalog.FORMAT:
        raise catalog.BackupError(
            f"{place.url}/{name}/{catalog.MANIFEST} is not a manifest of format {catalog.FORMAT}"
        )
    if doc.get("name") != name:
        raise catalog.BackupError(
            f"{place.url}/{name}/{catalog.MANIFEST} names another backup ({doc.get('name')!r}): "
            "it is not this backup's manifest"
        )
    return doc


def restore_from_s3(
    url: str, data_dir: Path, settings: Settings, meta_url: str | None = None
) -> dict[str, Any]:
    """Restore the backup at ``url`` into ``data_dir`` (missing or empty), through a download
    beside it that is deleted afterwards."""
    from svc.backup.restore import RestoreRefused, restore

    if data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        raise RestoreRefused(
            f"{data_dir} is not empty: restore into a new or empty directory (a backup never "
            "overwrites a data directory)"
        )
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".svc-restore-", dir=data_dir.parent))
    try:
        try:
            local = download(url, settings, work)
        except (catalog.BackupError, PlaceError) as exc:
            raise RestoreRefused(str(exc)) from exc
        try:
            summary = restore(local, data_dir, meta_url)
        except RestoreRefused as exc:  # name the bucket's object, not the deleted download
            parent = url.rstrip("/").rpartition("/")[0]
            raise RestoreRefused(str(exc).replace(f"{work}/", f"{parent}/")) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**summary, "from": url}
