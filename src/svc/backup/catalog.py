"""The backups in one place (a directory): their names, manifests, and the retention count.

Each backup is a directory ``svc-<UTC time>Z`` there; it is complete once its
``manifest.json`` exists (written last, atomically). A differential backup names the full
backup its event store is based on (``base``): retention keeps the newest ``keep`` complete
backups and every full backup one of them is based on, and deletes the other complete ones.
Directories without a manifest (a backup that failed or is under way) are listed as
incomplete and never deleted by retention.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
PREFIX = "svc-"
FORMAT = 1


class BackupError(Exception):
    """A backup cannot be read or used (missing, incomplete, of another format)."""


def new_name(now: datetime | None = None) -> str:
    """A backup's name: its UTC time (sorts in time order), and a few random letters."""
    now = now or datetime.now(UTC)
    return f"{PREFIX}{now:%Y%m%dT%H%M%S}.{now.microsecond // 1000:03d}Z-{secrets.token_hex(2)}"


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


def scan(root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The manifests of the complete backups in ``root``, oldest first, and the names of
    the incomplete ones."""
    complete: list[dict[str, Any]] = []
    incomplete: list[str] = []
    if not root.is_dir():
        return complete, incomplete
    for path in sorted(root.iterdir()):
        if not path.is_dir() or not path.name.startswith(PREFIX):
            continue
        try:
            complete.append(read_manifest(path))
        except BackupError:
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
        name = str(manifest["name"])
        if name in needed:
            continue
        path = root / name
        # the manifest goes first: a deletion cut short leaves an incomplete backup, never a
        # complete one with missing parts
        (path / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def size_of(path: Path) -> int:
    """The bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
