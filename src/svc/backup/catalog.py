"""The backups in one place (a directory): their names, manifests, and the retention count.

Each backup is a directory ``svc-<UTC time>Z`` there; it is complete once its
``manifest.json`` exists (written last, atomically). A differential backup names the full
backup its event store is based on (``base``): retention keeps the newest ``keep`` complete
backups and every full backup one of them is based on, and deletes the other complete ones.
Directories without a manifest (a backup that failed or is under way) are listed as
incomplete and never deleted by retention.

A manifest is trusted only where it was found: a backup's name must be well-formed
(:func:`is_name`: what :func:`new_name` makes, so it never climbs out of the place) and equal
to the name of the folder that holds it. A folder whose manifest names something else (a
planted or a copied manifest) is listed as incomplete, logged, and never deleted; retention
deletes nothing but the folders it found complete.

Since integrity checks came in, the manifest lists every file of the backup with its size
and sha256 digest (``files``: :func:`digest_files`); ``svcm restore`` checks them
(:func:`check_files`) before it uses a file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
PREFIX = "svc-"
FORMAT = 1
#: what :func:`new_name` makes (the random part may grow, never its alphabet)
NAME = re.compile(r"svc-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{4,32}")
#: the manifest's list of files, their sizes and digests (absent in older backups)
FILES = "files"
_CHUNK = 1 << 20


class BackupError(Exception):
    """A backup cannot be read or used (missing, incomplete, of another format)."""


def new_name(now: datetime | None = None) -> str:
    """A backup's name: its UTC time (sorts in time order), and a few random letters."""
    now = now or datetime.now(UTC)
    return f"{PREFIX}{now:%Y%m%dT%H%M%S}.{now.microsecond // 1000:03d}Z-{secrets.token_hex(2)}"


def is_name(name: object) -> bool:
    """Whether ``name`` is a well-formed backup name (:func:`new_name`): a single path
    component of letters, digits, ``-`` and ``.``, never ``..`` or a separator."""
    return isinstance(name, str) and NAME.fullmatch(name) is not None


def check_name(name: object, what: str) -> str:
    """``name`` when it is a well-formed backup name; BackupError naming ``what`` (e.g. "the
    manifest's base") otherwise."""
    if not is_name(name):
        raise BackupError(f"{what} {name!r} is not a backup's name ({PREFIX}<UTC time>Z-<hex>)")
    assert isinstance(name, str)
    return name


def read_manifest(backup: Path) -> dict[str, Any]:
    """The manifest of the backup in ``backup``; BackupError when it has none or it is not
    one svc can read."""
    path = backup / MANIFEST
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        if backup.is_dir():
            raise BackupError(f"{backup} holds no {MANIFEST}: not a complete backup") from None
        raise BackupError(f"no backup at {backup}") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BackupError(f"{path} is not a manifest of format {FORMAT}")
    return doc


def write_manifest(backup: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json`` atomically and durably: the backup is complete from then on."""
    tmp = backup / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.rename(backup / MANIFEST)
    fsync_dir(backup)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def belongs(manifest: dict[str, Any], folder: str, place: object) -> bool:
    """Whether ``manifest``, found in the folder ``folder`` of ``place``, is that folder's:
    its name well-formed and equal to the folder's, its base (if any) well-formed. A manifest
    that is not is logged (naming ``place``) and is to be ignored: never listed as complete,
    never a base, never deleted."""
    name, base = manifest.get("name"), manifest.get("base")
    if is_name(folder) and name == folder and (base is None or is_name(base)):
        return True
    log.warning(
        "backups: ignoring %s/%s: its manifest names %r (base %r), not this folder",
        place,
        folder,
        name,
        base,
    )
    return False


def scan(root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The manifests of the complete backups in ``root``, oldest first, and the names of
    the incomplete ones (no manifest, or one that is not the folder's: :func:`belongs`).
    Each complete manifest's ``name`` is the name of the folder it is in."""
    complete: list[dict[str, Any]] = []
    incomplete: list[str] = []
    if not root.is_dir():
        return complete, incomplete
    for path in sorted(root.iterdir()):
        if not path.name.startswith(PREFIX) or not path.is_dir():
            continue
        if path.is_symlink():  # not a folder of this place: never trusted, never deleted
            incomplete.append(path.name)
            continue
        try:
            manifest = read_manifest(path)
        except BackupError:
            incomplete.append(path.name)
            continue
        if belongs(manifest, path.name, root):
            manifest.pop(FILES, None)  # for restore only (read_manifest): a listing is short
            complete.append(manifest)
        else:
            incomplete.append(path.name)
    complete.sort(key=lambda m: (str(m.get("takenAt", "")), str(m.get("name", ""))))
    return complete, incomplete


def newest_full(root: Path) -> dict[str, Any] | None:
    """The manifest of the newest complete full backup in ``root``, if any."""
    fulls = [m for m in scan(root)[0] if m.get("kind") == "full"]
    return fulls[-1] if fulls else None


def prune(root: Path, keep: int) -> list[str]:
    """Delete the complete backups past the newest ``keep`` that none of those is based on;
    the names deleted."""
    complete, _ = scan(root)
    kept = complete[-keep:] if keep > 0 else []
    needed = {str(m["name"]) for m in kept} | {str(m["base"]) for m in kept if m.get("base")}
    removed: list[str] = []
    for manifest in complete:
        name = str(manifest["name"])  # the folder's own name (scan): one component under root
        if name in needed:
            continue
        path = root / name
        if not is_name(name) or path.parent != root or path.is_symlink():
            continue  # scan lets no such name through: never delete outside root
        # the manifest goes first: a deletion cut short leaves an incomplete backup, never a
        # complete one with missing parts
        (path / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def digest_files(backup: Path) -> dict[str, dict[str, Any]]:
    """Every file under ``backup`` but its manifest, by path relative to it (``/``
    separated): its size in bytes and sha256 digest (for the manifest's ``files``)."""
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(backup.rglob("*")):
        if not path.is_file() or (path.parent == backup and path.name.startswith(MANIFEST)):
            continue
        files[path.relative_to(backup).as_posix()] = digest_file(path)
    return files


def digest_file(path: Path) -> dict[str, Any]:
    """``{"bytes": size, "sha256": hex digest}`` of the file at ``path``."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def check_files(backup: Path, manifest: dict[str, Any]) -> int:
    """Check every file the manifest of the backup in ``backup`` lists (``files``): present,
    of its size and sha256 digest; the number checked (0 for an older manifest without the
    list). BackupError naming the first damaged or missing file otherwise."""
    files = manifest.get(FILES)
    if files is None:
        return 0
    if not isinstance(files, dict):
        raise BackupError(f"the manifest in {backup} has a malformed list of files")
    for rel, want in sorted(files.items()):
        path = backup / rel
        parts = Path(rel).parts
        if not isinstance(want, dict) or not parts or ".." in parts or Path(rel).is_absolute():
            raise BackupError(f"the manifest in {backup} lists a malformed file entry {rel!r}")
        try:
            size = path.stat().st_size
        except OSError:
            raise BackupError(
                f"the backup is damaged: {path} is missing (its manifest lists it)"
            ) from None
        if size != want.get("bytes"):
            raise BackupError(
                f"the backup is damaged: {path} has {size} bytes where its manifest says "
                f"{want.get('bytes')}"
            )
        try:
            got = digest_file(path)["sha256"]
        except OSError as exc:
            raise BackupError(f"the backup is damaged: {path} cannot be read ({exc})") from exc
        if got != want.get("sha256"):
            raise BackupError(
                f"the backup is damaged: {path} does not match the sha256 digest in its manifest"
            )
    return len(files)


def size_of(path: Path) -> int:
    """The bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
