"""The metadata repository: every read and write of projects, keys, salts and usage.

All methods are synchronous (SQLAlchemy Core) and are called in worker threads, never on the
event loop. A database that does not answer (SQLite locked by another process past
``busy_timeout_s``, PostgreSQL down) raises :class:`MetadataUnavailable` (503
``metadata_unavailable``). A SQLite file deleted or replaced under the running process is
noticed (:meth:`MetaStore.check_file`: on every write, on every database error and on the
housekeeping tick); from then on every write is refused, since it would go to a file that is
no longer there, and /health reports the store as lost (see :mod:`svc.meta.files`).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Engine,
    bindparam,
    cast,
    create_engine,
    delete,
    event,
    exists,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.pool import StaticPool

from svc import credentials
from svc.errors import Conflict, NotFound, Unavailable
from svc.meta import files, tables
from svc.meta.migrations import migrate
from svc.timeutil import iso_ms, now_ms

PUBLIC_SCOPES = ("ingest",)
SECRET_SCOPES = ("ingest", "read", "manage")
SHARE_SCOPES = ("read",)
SCOPES_BY_KIND = {"public": PUBLIC_SCOPES, "secret": SECRET_SCOPES, "share": SHARE_SCOPES}

#: How long a SQLite statement waits for another process's lock before it gives up (s).
BUSY_TIMEOUT_S = 5.0
#: How long the /health probe waits for the write lock, and for any answer at all (s).
PROBE_LOCK_TIMEOUT_S = 1.0
PROBE_TIMEOUT_S = 2.0

log = logging.getLogger(__name__)


class MetadataUnavailable(Unavailable):
    """The metadata store does not answer, or its file vanished: 503."""

    code = "metadata_unavailable"


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    timezone: str
    domains: tuple[str, ...]
    plan: str
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    created_at: int = 0
    updated_at: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "timezone": self.timezone,
            "domains": list(self.domains),
            "plan": self.plan,
            "options": self.options,
            "createdAt": iso_ms(self.created_at),
            "updatedAt": iso_ms(self.updated_at),
        }


@dataclass(frozen=True)
class ApiKey:
    id: str
    project_id: str
    kind: str
    scopes: tuple[str, ...]
    hint: str
    name: str
    created_at: int
    last_used_at: int | None
    revoked_at: int | None
    expires_at: int | None

    @property
    def active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now_ms()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "scopes": list(self.scopes),
            "hint": self.hint,
            "name": self.name,
            "createdAt": iso_ms(self.created_at),
            "lastUsedAt": iso_ms(self.last_used_at),
            "revokedAt": iso_ms(self.revoked_at),
            "expiresAt": iso_ms(self.expires_at),
        }


def project_id_for(name: str) -> str:
    return "svc_proj_" + name


def make_engine(url: str, busy_timeout_s: float = BUSY_TIMEOUT_S) -> Engine:
    """An engine for a SQLite path or a PostgreSQL URL, tuned for a small metadata load.

    A SQLite file is opened read-write and never created here (:meth:`MetaStore.migrate`
    creates it, private): a connection opened after the file was deleted fails instead of
    starting an empty store."""
    if url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url[len("postgres://") :]
    elif url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    if url.startswith("sqlite"):
        path = files.sqlite_path(url)
        if path is None:
            engine = create_engine(
                url,
                connect_args={"check_same_thread": False, "timeout": busy_timeout_s},
                poolclass=StaticPool,
            )
        else:
            uri = files.rw_uri(path)

            def connect() -> sqlite3.Connection:
                return sqlite3.connect(
                    uri, uri=True, timeout=busy_timeout_s, check_same_thread=False
                )

            engine = create_engine(url, creator=connect)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=5,
        max_overflow=5,
        pool_timeout=busy_timeout_s,
        connect_args={"connect_timeout": max(1, round(busy_timeout_s))},
    )


class MetaStore:
    """Projects, keys, salts and usage over one SQLAlchemy engine."""

    def __init__(self, url: str, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.url = url
        self.path = files.sqlite_path(url)
        self.engine = make_engine(url, busy_timeout_s)
        #: Why the store is lost (its file deleted or replaced), once it is; never cleared.
        self.lost: str | None = None
        self._identity: tuple[int, int] | None = None
        self._probe_pool = concurrent.futures.ThreadPoolExecutor(1, "meta-probe")
        self._probe_job: concurrent.futures.Future[float] | None = None
        self._probe_lock = threading.Lock()
        event.listen(self.engine, "handle_error", self._on_error)

    def create_file(self) -> None:
        """Create the SQLite file (0600, in a 0700 directory) when missing; tighten it."""
        if self.path is not None:
            files.create_private(self.path)

    def migrate(self) -> list[int]:
        self.create_file()
        applied = migrate(self.engine)
        if self.path is not None:
            self._identity = files.identity(self.path)
        return applied

    def close(self) -> None:
        self.engine.dispose()
        self._probe_pool.shutdown(wait=False, cancel_futures=True)

    def ping_ms(self) -> float:
        started = time.perf_counter()
        with self.engine.connect() as conn:
            conn.execute(select(1))
        return (time.perf_counter() - started) * 1000

    # faults -------------------------------------------------------------------------------

    def check_file(self) -> str | None:
        """Why the SQLite file is lost (deleted, or another file in its place since
        :meth:`migrate`), or None. Logs an error the first time."""
        if self.lost is not None or self.path is None or self._identity is None:
            return self.lost
        try:
            now = files.identity(self.path)
        except FileNotFoundError:
            reason = f"the metadata database {self.path} was deleted while svc was running"
        else:
            if now == self._identity:
                return None
            reason = f"the metadata database {self.path} was replaced while svc was running"
        self.lost = (
            reason + "; metadata writes are refused (they would be lost). Restore the file from "
            "a backup and restart svc"
        )
        log.error("%s", self.lost)
        return self.lost

    def _writable(self) -> None:
        lost = self.check_file()
        if lost is not None:
            raise MetadataUnavailable(lost)

    def _on_error(self, context: ExceptionContext) -> None:
        """Every database error: look at the file, and turn "cannot reach or lock the
        database" into 503 rather than an internal error. Not the pool's pre-ping of a
        PostgreSQL connection: a failed ping is the pool's cue to reconnect."""
        if context.is_pre_ping:
            return
        lost = self.check_file()
        if lost is not None:
            raise MetadataUnavailable(lost) from context.original_exception
        error = context.sqlalchemy_exception
        if isinstance(error, OperationalError) or (
            isinstance(error, DBAPIError) and context.is_disconnect
        ):
            raise MetadataUnavailable(
                f"the metadata store did not answer: {context.original_exception}"
            ) from context.original_exception

    def probe(self, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
        """/health's view of the store: ``reachable``, ``latencyMs``, ``error``. Bounded: it
        waits at most ``timeout_s`` (one probe at a time runs, in a thread of its own). A
        SQLite store is reachable when its write lock can be had within a second."""
        started = time.perf_counter()
        lost = self.check_file()
        if lost is not None:
            return {"reachable": False, "latencyMs": 0.0, "error": lost, "lost": True}
        with self._probe_lock:
            job = self._probe_job
            if job is None or job.done():
                job = self._probe_job = self._probe_pool.submit(self._probe_once)
        try:
            latency = job.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            took = (time.perf_counter() - started) * 1000
            error = f"no answer within {timeout_s:g} s"
            return {"reachable": False, "latencyMs": round(took, 2), "error": error, "lost": False}
        except Exception as exc:
            took = (time.perf_counter() - started) * 1000
            detail = (
                exc.__cause__ if isinstance(exc, MetadataUnavailable) and exc.__cause__ else exc
            )
            error = f"{type(detail).__name__}: {detail}"[:300]
            return {"reachable": False, "latencyMs": round(took, 2), "error": error, "lost": False}
        return {"reachable": True, "latencyMs": round(latency, 2), "error": None, "lost": False}

    def _probe_once(self) -> float:
        started = time.perf_counter()
        if self.path is None:
            with self.engine.connect() as conn:
                conn.execute(select(1))
        else:  # not a pooled connection: it must not wait behind our own work
            raw = sqlite3.connect(
                files.rw_uri(self.path),
                uri=True,
                timeout=PROBE_LOCK_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                raw.execute("BEGIN IMMEDIATE")  # the write lock: what a locked store refuses
                raw.execute("ROLLBACK")
            finally:
                raw.close()
        return (time.perf_counter() - started) * 1000

    # projects -----------------------------------------------------------------------------

    def create_project(
        self, name: str, timezone: str = "UTC", domains: list[str] | None = None
    ) -> tuple[Project, dict[str, str]]:
        """Create a project and its public and secret keys; the clear keys are returned once."""
        self._writable()
        now = now_ms()
        pid = project_id_for(name)
        public_key, secret_key = credentials.new_api_key(), credentials.new_api_key()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(tables.projects).values(
                        id=pid,
                        name=name,
                        timezone=timezone,
                        domains=json.dumps(domains or []),
                        plan="free",
                        options="{}",
                        created_at=now,
                        updated_at=now,
                    )
                )
                self._insert_key(conn, pid, "public", public_key, now)
                self._insert_key(conn, pid, "secret", secret_key, now)
        except IntegrityError as exc:
            raise Conflict(f"a project named {name!r} exists already") from exc
        project = self.get_project(pid)
        return project, {"public": public_key, "secret": secret_key}

    def list_projects(self) -> list[Project]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(tables.projects).order_by(tables.projects.c.name))
            return [_project(r._mapping) for r in rows]

    def find_project(self, project_id: str) -> Project | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(tables.projects).where(tables.projects.c.id == project_id)
            ).first()
        return _project(row._mapping) if row else None

    def get_project(self, project_id: str) -> Project:
        project = self.find_project(project_id)
        if project is None:
            raise NotFound(f"no project {project_id!r}")
        return project

    def update_project(self, project_id: str, changes: dict[str, Any]) -> Project:
        self._writable()
        values: dict[str, Any] = {"updated_at": now_ms()}
        for key in ("timezone", "plan"):
            if key in changes:
                values[key] = changes[key]
        if "domains" in changes:
            values["domains"] = json.dumps(changes["domains"])
        if "options" in changes:
            values["options"] = json.dumps(changes["options"])
        with self.engine.begin() as conn:
            result = conn.execute(
                update(tables.projects).where(tables.projects.c.id == project_id).values(values)
            )
            if result.rowcount == 0:
                raise NotFound(f"no project {project_id!r}")
        return self.get_project(project_id)

    def delete_project(self, project_id: str) -> None:
        self._writable()
        with self.engine.begin() as conn:
            conn.execute(delete(tables.api_keys).where(tables.api_keys.c.project_id == project_id))
            conn.execute(delete(tables.usage).where(tables.usage.c.project_id == project_id))
            for dropped in (tables.dropped_counts, tables.dropped_samples):  # svc.meta.dropped
                conn.execute(delete(dropped).where(dropped.c.project_id == project_id))
            conn.execute(  # its edge secrets (svc.meta.edge_secrets)
                delete(tables.edge_secrets).where(tables.edge_secrets.c.project_id == project_id)
            )
            result = conn.execute(delete(tables.projects).where(tables.projects.c.id == project_id))
            if result.rowcount == 0:
                raise NotFound(f"no project {project_id!r}")

    # keys ---------------------------------------------------------------------------------

    def _insert_key(self, conn: Any, project_id: str, kind: str, clear: str, now: int) -> str:
        key_id = "key_" + credentials.random_base62(16)
        conn.execute(
            insert(tables.api_keys).values(
                id=key_id,
                project_id=project_id,
                kind=kind,
                scopes=",".join(SCOPES_BY_KIND[kind]),
                hash=credentials.hash_secret(clear),
                hint=credentials.hint(clear),
                name="",
                created_at=now,
            )
        )
        return key_id

    def create_key(self, project_id: str, kind: str) -> tuple[ApiKey, str]:
        """A new key of ``kind`` (public, secret or share); the clear key is returned once."""
        self._writable()
        self.get_project(project_id)
        clear = credentials.new_share_token() if kind == "share" else credentials.new_api_key()
        with self.engine.begin() as conn:
            key_id = self._insert_key(conn, project_id, kind, clear, now_ms())
        return self.get_key(project_id, key_id), clear

    def list_keys(self, project_id: str) -> list[ApiKey]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(tables.api_keys)
                .where(tables.api_keys.c.project_id == project_id)
                .order_by(tables.api_keys.c.created_at, tables.api_keys.c.id)
            )
            return [_key(r._mapping) for r in rows]

    def get_key(self, project_id: str, key_id: str) -> ApiKey:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(tables.api_keys).where(
                    tables.api_keys.c.id == key_id, tables.api_keys.c.project_id == project_id
                )
            ).first()
        if row is None:
            raise NotFound(f"no key {key_id!r} in project {project_id!r}")
        return _key(row._mapping)

    def revoke_key(self, project_id: str, key_id: str) -> ApiKey:
        self._writable()
        key = self.get_key(project_id, key_id)
        if key.revoked_at is None:
            with self.engine.begin() as conn:
                conn.execute(
                    update(tables.api_keys)
                    .where(tables.api_keys.c.id == key_id)
                    .values(revoked_at=now_ms())
                )
        return self.get_key(project_id, key_id)

    def rotate_key(self, project_id: str, key_id: str) -> tuple[ApiKey, str, ApiKey]:
        """Revoke a key and create one of the same kind: (new key, its clear value, old key)."""
        self._writable()
        old = self.get_key(project_id, key_id)
        if old.revoked_at is not None:
            raise Conflict(f"key {key_id!r} is revoked already")
        clear = credentials.new_api_key() if old.kind != "share" else credentials.new_share_token()
        now = now_ms()
        with self.engine.begin() as conn:
            new_id = self._insert_key(conn, project_id, old.kind, clear, now)
            conn.execute(
                update(tables.api_keys).where(tables.api_keys.c.id == key_id).values(revoked_at=now)
            )
        return self.get_key(project_id, new_id), clear, self.get_key(project_id, key_id)

    def find_key_by_hash(self, key_hash: str) -> ApiKey | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(tables.api_keys).where(tables.api_keys.c.hash == key_hash)
            ).first()
        return _key(row._mapping) if row else None

    def touch_keys(self, last_used: dict[str, int]) -> None:
        if not last_used:
            return
        self._writable()
        with self.engine.begin() as conn:
            for key_id, ts in last_used.items():
                conn.execute(
                    update(tables.api_keys)
                    .where(tables.api_keys.c.id == key_id)
                    .values(last_used_at=ts)
                )

    # salts --------------------------------------------------------------------------------

    def salts_for(self, days: list[str]) -> dict[str, bytes]:
        """The salt of each day, created where missing; salts of days before the first are
        destroyed (a later day's, made ahead of midnight, is kept)."""
        self._writable()
        with self.engine.begin() as conn:
            conn.execute(delete(tables.salts).where(tables.salts.c.day < min(days)))
            have = {
                r.day: bytes(r.salt)
                for r in conn.execute(select(tables.salts).where(tables.salts.c.day.in_(days)))
            }
        for day in days:
            if day in have:
                continue
            try:
                with self.engine.begin() as conn:
                    conn.execute(
                        insert(tables.salts).values(
                            day=day, salt=secrets.token_bytes(32), created_at=now_ms()
                        )
                    )
            except IntegrityError:
                pass  # another process made it first; read it below
            with self.engine.connect() as conn:
                have[day] = bytes(
                    conn.execute(
                        select(tables.salts.c.salt).where(tables.salts.c.day == day)
                    ).scalar_one()
                )
        return have

    def salt_days(self) -> list[str]:
        with self.engine.connect() as conn:
            return sorted(conn.scalars(select(tables.salts.c.day)))

    # usage --------------------------------------------------------------------------------

    def record_usage(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Record the events counted per (project, month) as absolute counts.

        A count replaces the recorded one only when it is larger: recording the same counts
        again (a retried or replayed flush) changes nothing, and several processes recording
        the same month never lower it. Counts of projects that do not exist (deleted) are
        not recorded. One statement for all rows (executemany).
        """
        rows = [
            {"p": project_id, "m": month, "n": int(n)}
            for (project_id, month), n in counts.items()
            if n > 0
        ]
        if not rows:
            return
        self._writable()
        with self.engine.begin() as conn:
            conn.execute(_record_usage_statement(self.engine.dialect.name), rows)

    def usage_of(self, project_id: str, month: str) -> int:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(tables.usage.c.events).where(
                    tables.usage.c.project_id == project_id, tables.usage.c.month == month
                )
            ).scalar()
        return int(value or 0)


def _record_usage_statement(dialect: str) -> Any:
    """INSERT the (project, month, events) of bound ``p``, ``m``, ``n`` if the project exists;
    on an existing row keep the larger count. SQLite and PostgreSQL spell the upsert alike."""
    upsert: Any = sqlite_insert if dialect == "sqlite" else pg_insert
    usage, projects = tables.usage, tables.projects
    project_id = cast(bindparam("p"), usage.c.project_id.type)
    source = select(
        project_id,
        cast(bindparam("m"), usage.c.month.type),
        cast(bindparam("n"), usage.c.events.type),
    ).where(exists().where(projects.c.id == project_id))
    stmt = upsert(usage).from_select(["project_id", "month", "events"], source)
    return stmt.on_conflict_do_update(
        index_elements=[usage.c.project_id, usage.c.month],
        set_={"events": stmt.excluded.events},
        where=usage.c.events < stmt.excluded.events,
    )


def _project(row: Any) -> Project:
    return Project(
        id=row["id"],
        name=row["name"],
        timezone=row["timezone"],
        domains=tuple(json.loads(row["domains"] or "[]")),
        plan=row["plan"],
        options=json.loads(row["options"] or "{}"),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _key(row: Any) -> ApiKey:
    return ApiKey(
        id=row["id"],
        project_id=row["project_id"],
        kind=row["kind"],
        scopes=tuple(s for s in row["scopes"].split(",") if s),
        hint=row["hint"],
        name=row["name"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        expires_at=row["expires_at"],
    )
