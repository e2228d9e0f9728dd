"""The store's connection and its handles: the main client, the handles of its own a part of
the service runs on (inserts, exports, control), the read-handle pool's wiring
(svc.storage.read_handles), and the write generation every handle's writing calls move.

One schema and one SQL for every deployment: the embedded default is chDB in
``<data dir>/events``; ``SVC_CLICKHOUSE_URL`` points the same code at a server.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import clickhouse_connect
from clickhouse_connect.driver.client import Client

from svc.settings import Settings
from svc.storage.read_handles import ReadHandles

#: The embedded engine's allocator (jemalloc, configured by ``JE_MALLOC_CONF`` when chDB is
#: loaded; an operator's own value is kept): pages a read freed go back to the system after
#: ~1 s instead of ClickHouse's 5 s, so reads one after another (a dashboard's) do not each
#: start on top of what the last one left. 29 query kinds over 100M events, each kind's peak
#: resident memory 10-120 MB lower, in the same times (alternating runs); 0 s (at once) was
#: 100-250 MB lower but 30-60 % slower (every reused page faulted in again).
EMBEDDED_ALLOCATOR_CONF = "dirty_decay_ms:1000"

#: The embedded engine's start-up options: ``BACKUP ... TO File(path)`` and ``RESTORE`` may
#: name any path (svc.backup; only svc's own statements reach the engine).
CHDB_OPTIONS = {"backups.allowed_path": "/"}

#: The least the engine is capped at (MB), whatever the setting: room for its inserts.
LEAST_ENGINE_CAP_MB = 128


def engine_memory_cap_mb(settings: Settings) -> int:
    """The cap on the memory the embedded engine tracks (``max_server_memory_usage``),
    ``SVC_ENGINE_MEMORY_LIMIT_MB`` (at least :data:`LEAST_ENGINE_CAP_MB`); 0 (no cap of
    ours: ClickHouse's own, 90 % of the machine's memory) when unset or with a ClickHouse
    server (whose memory is its operator's). The engine tracks its own allocations only: its
    library's pages and the Python side are outside it (docs/benchmarks.md, Memory)."""
    if settings.clickhouse_url or settings.engine_memory_limit_mb <= 0:
        return 0
    return max(LEAST_ENGINE_CAP_MB, settings.engine_memory_limit_mb)


def chdb_options(settings: Settings) -> dict[str, str]:
    """The embedded engine's start-up options (:data:`CHDB_OPTIONS`) and its memory cap. The
    first connection of a process starts the engine: its options hold for the others."""
    cap = engine_memory_cap_mb(settings)
    if not cap:
        return dict(CHDB_OPTIONS)
    return {**CHDB_OPTIONS, "max_server_memory_usage": str(cap * 1024 * 1024)}


#: The start of SQL that writes nothing to the tables (a command or query whose SQL starts
#: otherwise may write).
_READ_SQL = re.compile(
    r"\s*\(*\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXPLAIN|EXISTS|SYSTEM\s+JEMALLOC|KILL\s+QUERY)\b",
    re.IGNORECASE,
)


def skip_data_frame_libraries(*, chdb: bool) -> None:
    """Keep pandas, pyarrow and numpy out of the process unless something else imports them.

    clickhouse-connect imports pandas at the first insert to ask whether the rows are a data
    frame, and chDB imports pyarrow when it opens a connection, for its Arrow results. svc
    hands both rows, bytes and text only, so the server does not load them: ~40 MB of their
    libraries mapped into memory and ~40 MB of their objects (docs/benchmarks.md, Memory).
    Both libraries treat a missing package as "no data-frame support", which is what this
    declares. A process that has already imported them keeps them, and one may import them
    later for itself (`svcm export` reads a Parquet file's row count with pyarrow).
    """
    from clickhouse_connect.driver import options

    for name in ("np", "pd", "pd_time_test", "arrow", "pl"):
        if name not in vars(options):
            setattr(options, name, None)
    if not chdb or "chdb.state" in sys.modules or "pyarrow" in sys.modules:
        return
    sys.modules["pyarrow"] = None  # type: ignore[assignment]  # "not installed", for chDB
    try:
        importlib.import_module("chdb.state")
    finally:
        del sys.modules["pyarrow"]


def connect(settings: Settings) -> Client:
    """A clickhouse-connect client for the configured store (chDB unless a URL is set)."""
    if not settings.clickhouse_url:
        # read once, when chDB is loaded (the first connection): see EMBEDDED_ALLOCATOR_CONF
        os.environ.setdefault("JE_MALLOC_CONF", EMBEDDED_ALLOCATOR_CONF)
    skip_data_frame_libraries(chdb=not settings.clickhouse_url)
    if settings.clickhouse_url:
        return clickhouse_connect.get_client(
            dsn=settings.clickhouse_url, autogenerate_session_id=False
        )
    settings.chdb_path.mkdir(parents=True, exist_ok=True)
    return clickhouse_connect.get_client(
        dsn=f"chdb://{settings.chdb_path.resolve()}", chdb_options=chdb_options(settings)
    )


class SharedCount(Protocol):
    """A count of writes shared by several processes (svc.cluster.shared.SharedGeneration)."""

    def current(self) -> int | None: ...

    def bump(self) -> None: ...


class Handles:
    """The store's clients, each opened when first needed and closed by :meth:`close`;
    every one *watched*: its calls that may write move :attr:`generation`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: Client | None = None
        self._handles: dict[str, Client] = {}  # see own
        self._connect_lock = threading.Lock()
        #: Moves once every call that may write (a command, an insert) on any handle of this
        #: store has returned, whoever made it (the loader, rollups, snapshots, retention,
        #: migrations; the store's ``writes`` leaves out the rollups' and snapshots' own): the
        #: rows kept in the store's ``memo`` serve only while it stands still.
        self.generation = 0
        self._generation_lock = threading.Lock()
        #: The count of every node's writes (svc.cluster.shared.SharedGeneration), set by the
        #: runtime when several nodes share a ClickHouse server and Redis: each write of
        #: this process moves it too, and the memo keys rows on both counts.
        self.shared_generation: SharedCount | None = None
        #: The handles of the reads admitted by the read scheduler (svc.reads.scheduler).
        self.read_handles = ReadHandles(
            settings.read_lanes_slots,
            self._read_handle,
            own_handles=not settings.clickhouse_url,
        )

    @property
    def client(self) -> Client:
        """The main client: migrations, rebuilds, the service's own reads and writes."""
        if self._client is None:
            with self._connect_lock:
                if self._client is None:
                    self._client = self._watched(connect(self.settings))
        return self._client

    @property
    def insert_client(self) -> Client:
        """The client of the loader's inserts: see :meth:`own`. A query then waits for no
        insert, nor an insert for a query: GET /metrics while batches of 100 were loaded,
        p50 144-158 -> 81-86 ms, p90 193-211 -> 114-117 ms (docs/benchmarks.md, Queries)."""
        return self.own("insert")

    @property
    def export_client(self) -> Client:
        """The client of exports: see :meth:`own`. A Parquet file of 10M events takes ~17 s
        to write, and on the main client it held every query and insert until done."""
        return self.own("export")

    def own(self, purpose: str) -> Client:
        """Embedded, a chDB handle of its own on the same engine, for ``purpose``: a client
        runs one call at a time, handles run side by side. With a ClickHouse server, the main
        client (its HTTP pool already serves calls side by side)."""
        if self.settings.clickhouse_url:
            return self.client
        client = self._handles.get(purpose)
        if client is None:
            _ = self.client  # the engine is opened (and the data-frame libraries skipped) once
            with self._connect_lock:
                client = self._handles.get(purpose)
                if client is None:
                    client = self._handles[purpose] = self._watched(connect(self.settings))
        return client

    def _read_handle(self) -> Client:
        """A new handle for :attr:`read_handles` (with a ClickHouse server: the main client,
        whose HTTP pool serves calls side by side)."""
        if self.settings.clickhouse_url:
            return self.client
        _ = self.client  # the engine is opened (and the data-frame libraries skipped) once
        return self._watched(connect(self.settings))

    def _watched(self, client: Client) -> Client:
        """``client``, its calls that may write counted in :attr:`generation` once returned
        (or failed: they may have written part): every insert, and every command or query
        whose SQL does not begin as one that writes nothing (a read, the allocator's purge
        after reads, a ``KILL QUERY``): ``INSERT ... SELECT`` through ``query`` counts."""

        def watched(call: Callable[..., Any], inserts: bool) -> Callable[..., Any]:
            def counted(*args: Any, **kwargs: Any) -> Any:
                try:
                    return call(*args, **kwargs)
                finally:
                    sql = args[0] if args else kwargs.get("query")
                    if inserts or not _READ_SQL.match(str(sql)):
                        with self._generation_lock:
                            self.generation += 1
                        if self.shared_generation is not None:
                            self.shared_generation.bump()

            return counted

        inserts = ("insert", "raw_insert", "data_insert")
        for name in (*inserts, "command", "query", "raw_query", "raw_stream"):
            setattr(client, name, watched(getattr(client, name), name in inserts))
        return client

    def close(self) -> None:
        """Close every handle opened (a later call opens them again)."""
        for client in [*self._handles.values(), *self.read_handles.handles(), self._client]:
            if client is not None and client is not self._client:
                client.close()
        if self._client is not None:
            self._client.close()
        self._handles.clear()
        self._client = None

    def ping_ms(self) -> float:
        """The time a ``SELECT 1`` on the main client takes, in milliseconds."""
        started = time.perf_counter()
        self.client.query("SELECT 1")
        return (time.perf_counter() - started) * 1000
