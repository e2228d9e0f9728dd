"""The PostgreSQL metadata store in a backup: ``pg_dump`` (custom format, without the salts'
rows, without owners and grants) into ``meta.pgdump``, restored with ``pg_restore`` into an
empty database that ``svcm restore --meta-url`` names.

pg_dump is PostgreSQL's own consistent snapshot (one transaction, writers never wait) and its
custom format restores into any newer server; a dump of svc's tables made by hand would need
its own restore and schema contract. So pg_dump it is; where it is not installed the backup
says so in its manifest (``metadata.included: false``) and the metadata is to be backed up
with the database's own tools. pg_dump must be of the server's major version or newer.
The password goes to pg_dump in its environment (``PGPASSWORD``), never on its command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

DUMP_FILE = "meta.pgdump"


class PostgresError(Exception):
    """pg_dump or pg_restore failed (its message)."""


def _libpq(url: str) -> tuple[list[str], dict[str, str]]:
    """The connection flags of pg_dump/pg_restore for a SQLAlchemy URL, and the environment
    that carries the password."""
    u = make_url(url)
    args = []
    host = u.host or str(u.query.get("host", "") or "")
    if host:
        args += ["--host", host]
    if u.port:
        args += ["--port", str(u.port)]
    if u.username:
        args += ["--username", u.username]
    env = {**os.environ}
    if u.password:
        env["PGPASSWORD"] = str(u.password)
    return [*args, "--dbname", str(u.database or "")], env


def dump(url: str, target: Path) -> dict[str, Any]:
    """Dump the metadata database at ``url`` into ``target/meta.pgdump``; the manifest's
    ``metadata`` part."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return {
            "kind": "postgresql",
            "included": False,
            "advice": "pg_dump is not installed where svc runs: install it (Debian: "
            "postgresql-client), or back the metadata database up with its own tools at about "
            "the same time as this backup",
        }
    conn_args, env = _libpq(url)
    dest = target / DUMP_FILE
    cmd = [
        pg_dump,
        "--format=custom",
        "--no-owner",
        "--no-privileges",
        "--exclude-table-data=salts",
        "--file",
        str(dest),
        *conn_args,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise PostgresError(f"pg_dump failed: {proc.stderr.strip()[-500:]}")
    os.chmod(dest, 0o600)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            projects = int(conn.execute(text("SELECT count(*) FROM projects")).scalar() or 0)
            keys = int(conn.execute(text("SELECT count(*) FROM api_keys")).scalar() or 0)
    finally:
        engine.dispose()
    return {
        "kind": "postgresql",
        "included": True,
        "path": DUMP_FILE,
        "tool": "pg_dump --format=custom (restore: svcm restore --meta-url, or pg_restore)",
        "projects": projects,
        "keys": keys,
    }


def check_dump(dump_file: Path) -> None:
    """PostgresError naming ``dump_file`` unless ``pg_restore --list`` reads its table of
    contents (a damaged or truncated custom-format dump does not list; the rows themselves
    are checked by the manifest's digest and by ``pg_restore --exit-on-error``)."""
    pg_restore = shutil.which("pg_restore")
    if pg_restore is None:
        raise PostgresError("pg_restore is not installed (Debian: postgresql-client)")
    proc = subprocess.run(
        [pg_restore, "--list", str(dump_file)], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        reason = " ".join(proc.stderr.split())[:300]
        raise PostgresError(f"the backup is damaged: {dump_file} is not a readable dump: {reason}")


def restore(dump_file: Path, url: str) -> None:
    """``pg_restore`` the dump into the (empty) database at ``url``."""
    pg_restore = shutil.which("pg_restore")
    if pg_restore is None:
        raise PostgresError("pg_restore is not installed (Debian: postgresql-client)")
    conn_args, env = _libpq(url)
    cmd = [pg_restore, "--exit-on-error", "--no-owner", "--no-privileges", *conn_args]
    proc = subprocess.run(
        [*cmd, str(dump_file)], env=env, capture_output=True, text=True, timeout=3600
    )
    if proc.returncode != 0:
        raise PostgresError(f"pg_restore failed: {proc.stderr.strip()[-500:]}")
