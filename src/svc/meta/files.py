"""The files of the metadata store and the data directory that holds them.

- The data directory is private to the service's user (0700; an existing one is tightened at
  start-up) and a SQLite meta.db is created 0600 (SQLite gives its -wal and -shm files the
  database's mode): keys' hashes, salts and usage are nobody else's business.
- meta.db is opened read-write without creation once it exists (SQLite's ``mode=rw``): a file
  deleted under a running server is then never silently re-created empty by a new connection.
- At start-up, a data directory that holds an event store, a spool or the admin token's hash
  but no meta.db has lost its metadata store (every project and key): svc refuses to start
  unless ``SVC_META_START_FRESH`` says to begin with an empty one (docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")


class MetaStoreMissing(RuntimeError):
    """meta.db is missing from a data directory that shows it had one."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (``sqlite:///relative`` or ``sqlite:////absolute``); None for
    another database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[1] if "///" in url else ""
    path = path.split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


def rw_uri(path: Path) -> str:
    """The SQLite URI that opens ``path`` read-write and never creates it."""
    return f"file:{quote(str(path.resolve()))}?mode=rw"


def private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) 0700, or tighten it to 0700 when group or others
    may read it."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        os.chmod(path, mode & ~0o077 | DIR_MODE)
        log.warning(
            "tightened %s from %o to %o: it holds keys' hashes and salts",
            path,
            mode,
            mode & ~0o077 | DIR_MODE,
        )


def create_private(path: Path) -> None:
    """Create the database file ``path`` empty and 0600 when missing (its directory 0700 when
    missing); tighten an existing one and its side files to 0600."""
    if not path.parent.exists():
        private_dir(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    for candidate in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        try:
            mode = stat.S_IMODE(candidate.stat().st_mode)
            if mode & 0o077:
                os.chmod(candidate, FILE_MODE)
        except FileNotFoundError:
            continue


def identity(path: Path) -> tuple[int, int]:
    """(device, inode) of a file: another file put in its place has another."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def check_present(
    data_dir: Path, meta_url: str, *, embedded_store: bool, start_fresh: bool
) -> None:
    """Refuse to start on a data directory whose SQLite metadata store vanished.

    Evidence that there was one: the admin token's hash, an embedded event store with
    content, or spooled segments; the metadata database is created before any of them on a
    first start. Raises :class:`MetaStoreMissing` unless ``start_fresh``.
    """
    path = sqlite_path(meta_url)
    if path is None or path.exists():
        return
    evidence = []
    if (data_dir / "admin_token.sha256").exists():
        evidence.append("the admin token's hash")
    if embedded_store and _has_entries(data_dir / "events"):
        evidence.append("an event store (events/)")
    if _has_entries(data_dir / "spool"):
        evidence.append("a spool (spool/)")
    if not evidence:
        return
    if start_fresh:
        log.warning(
            "%s is missing but %s holds %s: starting with an empty metadata store "
            "(SVC_META_START_FRESH); every earlier project and key is gone",
            path,
            data_dir,
            ", ".join(evidence),
        )
        return
    raise MetaStoreMissing(
        f"the metadata database {path} is missing, but {data_dir} holds "
        f"{', '.join(evidence)}: the projects and keys it held have vanished. Restore meta.db "
        "(and meta.db-wal if any) from a backup, or set SVC_META_START_FRESH=true "
        "(--meta-start-fresh true) to start with an empty metadata store"
    )


def _has_entries(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False
