"""The ClickHouse event store, one object composed of its parts, each a module of its own:

- :mod:`svc.storage.handles`: the connection, the handles of its own a part runs on, the
  read-handle pool (:mod:`svc.storage.read_handles`), the write generation;
- :mod:`svc.storage.migrate`: the schema migrations (``storage/migrations``, a side effect
  beside the migration that has one);
- :mod:`svc.storage.rebuilds`: the derived tables written anew from the stored events;
- :mod:`svc.storage.writes`: the loader's inserts and the count of writes;
- :mod:`svc.storage.reads`: a request's reads bounded and stopped together, the queries;
- :mod:`svc.storage.release`: the engine's freed memory handed back after reads;
- :mod:`svc.storage.exports`: export queries on the export handle;
- :mod:`svc.storage.deletion`: a project's rows deleted;
- :mod:`svc.storage.tables`: the names of the tables the store writes.

:class:`EventStore` holds one of each and passes every call to the part that owns it, so that
the rest of the service holds one store. One schema and one SQL for every deployment: the
embedded default is chDB in ``<data dir>/events``; ``SVC_CLICKHOUSE_URL`` points the same
code at a server.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from clickhouse_connect.driver.client import Client

from svc.schema.row import EVENT_COLUMNS as EVENT_COLUMNS
from svc.schema.row import EventRow as EventRow
from svc.settings import Settings
from svc.storage.deletion import Deletion
from svc.storage.exports import Exports
from svc.storage.handles import CHDB_OPTIONS as CHDB_OPTIONS
from svc.storage.handles import EMBEDDED_ALLOCATOR_CONF as EMBEDDED_ALLOCATOR_CONF
from svc.storage.handles import Handles
from svc.storage.handles import SharedCount as SharedCount
from svc.storage.handles import connect as connect
from svc.storage.handles import skip_data_frame_libraries as skip_data_frame_libraries
from svc.storage.memo import ReadMemo
from svc.storage.migrate import Migrations
from svc.storage.read_handles import ReadHandles
from svc.storage.reads import EMBEDDED_READ_SETTINGS as EMBEDDED_READ_SETTINGS
from svc.storage.reads import READ_SETTINGS as READ_SETTINGS
from svc.storage.reads import QueryTimeout as QueryTimeout
from svc.storage.reads import Read as Read
from svc.storage.reads import ReadCancelled as ReadCancelled
from svc.storage.reads import Reads
from svc.storage.reads import memory_bound as memory_bound
from svc.storage.reads import timeout_error as timeout_error
from svc.storage.rebuilds import Rebuilds
from svc.storage.release import HEAVY_READ_S as HEAVY_READ_S
from svc.storage.release import READS_IDLE_S as READS_IDLE_S
from svc.storage.release import MemoryRelease
from svc.storage.writes import Writes
from svc.storage.writes import ch_time as ch_time


class EventStore:
    """The store: batch inserts, parameterised queries, exports, migrations, rebuilds and
    deletion against the events and the tables derived from them, each done by its part."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.handles = Handles(settings)
        self.writer = Writes(self.handles)
        self.reads = Reads(self.handles)
        self.release = MemoryRelease(self.handles)
        self.exports = Exports(self.handles, self.reads)
        self.rebuilds = Rebuilds(self.handles, self.writer)
        self.deletion = Deletion(self.handles, self.writer)
        self.migrations = Migrations(self.handles, self.rebuilds)
        #: The facts' reads kept while nothing is written (svc.storage.memo). Embedded, or
        #: with a ClickHouse server when the nodes count their writes in Redis.
        self.memo = ReadMemo(0 if settings.clickhouse_url else settings.read_memo_entries)

    # handles --------------------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The main client (:attr:`Handles.client`)."""
        return self.handles.client

    @property
    def insert_client(self) -> Client:
        """The loader's client (:attr:`Handles.insert_client`)."""
        return self.handles.insert_client

    @property
    def export_client(self) -> Client:
        """The exports' client (:attr:`Handles.export_client`)."""
        return self.handles.export_client

    @property
    def read_handles(self) -> ReadHandles:
        """The handles of the reads admitted by the read scheduler (svc.reads.scheduler)."""
        return self.handles.read_handles

    @property
    def generation(self) -> int:
        """Moves once every call that may write on any handle of this store has returned
        (:attr:`Handles.generation`): the rows kept in :attr:`memo` serve only while it
        stands still."""
        return self.handles.generation

    @property
    def shared_generation(self) -> SharedCount | None:
        """The count of every node's writes (:attr:`Handles.shared_generation`)."""
        return self.handles.shared_generation

    @shared_generation.setter
    def shared_generation(self, count: SharedCount | None) -> None:
        self.handles.shared_generation = count

    def read_generation(self) -> Hashable | None:
        """What the memo keys rows on, taken before a read begins: this process's
        :attr:`generation`, and with several nodes the count of all their writes too; None
        when that count cannot be read (the memo then keeps nothing)."""
        shared = self.handles.shared_generation
        if shared is None:
            return self.generation
        local = self.generation
        count = shared.current()
        return None if count is None else (local, count)

    def close(self) -> None:
        self.handles.close()

    def ping_ms(self) -> float:
        return self.handles.ping_ms()

    # writes ---------------------------------------------------------------------------------

    @property
    def write_lock(self) -> threading.Lock:
        """Held by each insert and each rollup computation (:attr:`Writes.write_lock`)."""
        return self.writer.write_lock

    @property
    def writes(self) -> int:
        """How many writes of this process reached the store (see :meth:`note_write`)."""
        return self.writer.writes

    def note_write(self) -> None:
        """Count a write to the store that has returned (:meth:`Writes.note_write`): every
        writing method of the store counts itself; a caller that writes with :attr:`client`
        calls this."""
        self.writer.note_write()

    def insert_ndjson(self, data: bytes, token: str) -> None:
        self.writer.insert_ndjson(data, token)

    # migrations and rebuilds ----------------------------------------------------------------

    def migrate(self, from_schema: bool = True) -> list[int]:
        return self.migrations.migrate(from_schema)

    def rebuild_sessions(self, project_id: str | None = None) -> None:
        self.rebuilds.rebuild_sessions(project_id)

    def rebuild_next_day_sessions(self, project_id: str | None = None) -> None:
        self.rebuilds.rebuild_next_day_sessions(project_id)

    def rebuild_session_pages(self, project_id: str | None = None, *, day: str) -> None:
        self.rebuilds.rebuild_session_pages(project_id, day=day)

    def rebuild_event_hours(self) -> None:
        self.rebuilds.rebuild_event_hours()

    def rebuild_report_events(self) -> None:
        self.rebuilds.rebuild_report_events()

    # reads ----------------------------------------------------------------------------------

    @property
    def read_settings(self) -> dict[str, Any]:
        """The settings of every read (:attr:`Reads.read_settings`)."""
        return self.reads.read_settings

    @property
    def read_memory(self) -> dict[str, Any]:
        """What bounds the memory of a report's query (:attr:`Reads.read_memory`)."""
        return self.reads.read_memory

    def query(
        self,
        sql: str,
        parameters: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Sequence[Sequence[Any]]:
        return self.reads.query(sql, parameters, settings)

    def query_named(
        self, sql: str, parameters: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return self.reads.query_named(sql, parameters)

    def query_named_together(
        self, *statements: tuple[str, dict[str, Any]]
    ) -> list[list[dict[str, Any]]]:
        return self.reads.query_named_together(*statements)

    def stop_read(self, read: Read) -> bool:
        return self.reads.stop_read(read)

    def stop_read_soon(self, read: Read) -> None:
        self.reads.stop_read_soon(read)

    def release_memory(self) -> None:
        self.release.release_memory()

    def release_memory_after_read(self, elapsed_s: float) -> None:
        self.release.release_memory_after_read(elapsed_s)

    # exports --------------------------------------------------------------------------------

    @property
    def streams_results(self) -> bool:
        return self.exports.streams_results

    def stream_raw(self, sql: str, parameters: dict[str, Any], fmt: str) -> Iterator[bytes]:
        return self.exports.stream_raw(sql, parameters, fmt)

    def export_command(self, sql: str, parameters: dict[str, Any]) -> None:
        self.exports.export_command(sql, parameters)

    def raw_query(self, sql: str, parameters: dict[str, Any], fmt: str) -> bytes:
        return self.exports.raw_query(sql, parameters, fmt)

    # deletion -------------------------------------------------------------------------------

    def delete_project(self, project_id: str) -> None:
        self.deletion.delete_project(project_id)
