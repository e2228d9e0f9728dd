"""The ClickHouse event store: connection, versioned schema migrations, batch inserts, queries.

One schema and one SQL for every deployment: the embedded default is chDB in
``<data dir>/events``; ``SVC_CLICKHOUSE_URL`` points the same code at a server.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, TypeVar

from clickhouse_connect.driver.client import Client

from svc.schema.measurements import COUNTED_SQL
from svc.schema.row import EVENT_COLUMNS as EVENT_COLUMNS
from svc.schema.row import EventRow as EventRow
from svc.settings import Settings
from svc.storage import schema
from svc.storage.exports import Exports
from svc.storage.handles import CHDB_OPTIONS as CHDB_OPTIONS
from svc.storage.handles import EMBEDDED_ALLOCATOR_CONF as EMBEDDED_ALLOCATOR_CONF
from svc.storage.handles import Handles
from svc.storage.handles import connect as connect
from svc.storage.handles import skip_data_frame_libraries as skip_data_frame_libraries
from svc.storage.memo import ReadMemo
from svc.storage.read_handles import ReadHandles
from svc.storage.reads import EMBEDDED_READ_SETTINGS as EMBEDDED_READ_SETTINGS
from svc.storage.reads import READ_SETTINGS as READ_SETTINGS
from svc.storage.reads import QueryTimeout as QueryTimeout
from svc.storage.reads import Read as Read
from svc.storage.reads import ReadCancelled as ReadCancelled
from svc.storage.reads import Reads
from svc.storage.reads import memory_bound as memory_bound
from svc.storage.reads import timeout_error as timeout_error
from svc.storage.release import HEAVY_READ_S as HEAVY_READ_S
from svc.storage.release import READS_IDLE_S as READS_IDLE_S
from svc.storage.release import MemoryRelease
from svc.storage.tables import (
    EVENT_HOURS_TABLE,
    EVENTS_TABLE,
    INGEST_TABLE,
    LONG_SESSIONS_TABLE,
    NEXT_DAY_SESSIONS_TABLE,
    PROJECT_TABLES,
    REPORT_EVENTS_TABLE,
    REPORT_EVENTS_WHERE,
    SESSION_PAGES_TABLE,
    SESSIONS_TABLE,
)

T = TypeVar("T")


def ch_time(ms: int) -> str:
    """Milliseconds since the epoch as ClickHouse DateTime64(3) input text."""
    return f"{ms // 1000}.{ms % 1000:03d}"


def _writes(method: Callable[..., T]) -> Callable[..., T]:
    """An EventStore method that writes to the store: :attr:`EventStore.writes` counts it once
    it has returned (or failed: it may have written part)."""

    @functools.wraps(method)
    def counted(self: EventStore, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        finally:
            self.note_write()

    return counted


class EventStore:
    """Batch inserts and parameterised queries against the events table."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.handles = Handles(settings)
        #: Held by each insert and by each computation derived from the tables the inserts
        #: feed (svc.storage.rollups): an insert reaches the events table before its
        #: materialized views' tables, and a day rolled up in between would lack its
        #: sessions until it is rolled up again. (Between processes sharing a ClickHouse
        #: server, that later recomputation is what makes it right.)
        self.write_lock = threading.Lock()
        #: How many writes of this process reached the store (see :meth:`note_write`).
        self.writes = 0
        #: The facts' reads kept while nothing is written (svc.storage.memo). Embedded only.
        self.memo = ReadMemo(0 if settings.clickhouse_url else settings.read_memo_entries)
        self.reads = Reads(self.handles)
        self.release = MemoryRelease(self.handles)
        self.exports = Exports(self.handles, self.reads)

    def note_write(self) -> None:
        """Count a write to the store that has returned: the runtime's rollup pass is skipped
        while this count stands still (svc.runtime, ``_roll_up``). Every writing method of
        this class counts itself; a caller that writes with :attr:`client` calls this."""
        self.writes += 1

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

    def close(self) -> None:
        self.handles.close()

    def migrate(self, from_schema: bool = True) -> list[int]:
        """Apply the SQL files of ``storage/migrations`` not applied yet, in order; or, to a
        new store (no table, no version recorded), the tables they make at once
        (svc.storage.schema), unless ``from_schema`` is False."""
        client = self.client
        client.command(
            "CREATE TABLE IF NOT EXISTS svc_migrations (version UInt32, name String, "
            "applied_at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY version"
        )
        done = {int(r[0]) for r in client.query("SELECT version FROM svc_migrations").result_rows}
        files = sorted(
            (
                f
                for f in resources.files("svc.storage.migrations").iterdir()
                if f.name.endswith(".sql")
            ),
            key=lambda f: f.name,
        )
        pending = [(int(f.name.split("_", 1)[0]), f) for f in files]
        pending = [(v, f) for v, f in pending if v not in done]
        begun = done == {schema.BEGUN}  # a start that stopped while it created them
        if from_schema and pending and (begun or (not done and schema.is_empty(client))):
            tables = schema.text()
            # a file older than the last migration is passed over (its test says so)
            if schema.version(tables) == pending[-1][0]:
                if not begun:  # recorded first: the tables made from here on are the file's
                    self._record([(schema.BEGUN, schema.file())])
                for statement in _statements(tables):  # IF NOT EXISTS: again after a crash
                    client.command(statement)
                return self._record(pending)
        for _, f in pending:
            for statement in _statements(f.read_text()):
                client.command(statement)  # every statement may run again after a crash
        # The derived tables are rebuilt once every table exists, before the versions are
        # recorded: a crash in between runs the migrations (idempotent) and the rebuild again.
        versions = {v for v, _ in pending}
        if versions & _REBUILD_SESSIONS_AFTER:
            self.rebuild_sessions()  # and the (session, page) rows
        elif versions & _REBUILD_SESSION_PAGES_AFTER:
            # keyed as the materialized views keyed the sessions they fed
            self.rebuild_session_pages(day="toDate(min(session_start))")
        if versions & _REBUILD_EVENT_HOURS_AFTER:
            self.rebuild_event_hours()
        if versions & _REBUILD_REPORT_EVENTS_AFTER:
            self.rebuild_report_events()
        if versions & _RESORT_ROLLED_SESSIONS_AFTER:
            self.resort_rolled_sessions()
        return self._record(pending)

    def _record(self, applied: list[tuple[int, Traversable]]) -> list[int]:
        """Record the migrations ``applied`` (version, file), in one insert."""
        if applied:
            now = datetime.now(UTC)
            self.client.insert(
                "svc_migrations",
                [[version, f.name, now] for version, f in applied],
                column_names=["version", "name", "applied_at"],
            )
        return [version for version, _ in applied]

    @_writes
    def resort_rolled_sessions(self) -> None:
        """Give ``rolled_sessions`` the sorting key of ``rolled_sessions_resorted``
        (migrations/015): copy its rows there and exchange the two tables, unless its key
        has the country already (the exchange was done before a crash, or the table is new).
        Each step may run again after a crash: the copy starts from an empty table."""
        client = self.client
        key = client.query(
            "SELECT sorting_key FROM system.tables "
            "WHERE database = currentDatabase() AND name = 'rolled_sessions'"
        ).result_rows[0][0]
        if "country" not in key:
            client.command("TRUNCATE TABLE rolled_sessions_resorted")
            client.command("INSERT INTO rolled_sessions_resorted SELECT * FROM rolled_sessions")
            client.command("EXCHANGE TABLES rolled_sessions AND rolled_sessions_resorted")
        client.command("DROP TABLE IF EXISTS rolled_sessions_resorted")

    @_writes
    def rebuild_sessions(self, project_id: str | None = None) -> None:
        """Write the sessions table anew from the stored events, of one project or all.

        For events that did not go through the materialized view with a correct
        ``session_start`` (stored before the sessions table existed, or imported): a session
        is keyed by the day of its first event here. Not for use while that project ingests.
        Its (session, page) rows, its long sessions and those that cross into the next day are
        rebuilt too.
        """
        client = self.client
        self._clear("snapshot_days", project_id)  # snapshots of the old rows: never read again
        where, params = self._clear(SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"  # page measurements are no session's events
        entry = ", ".join(f"argMin({c}, ts)" for c in _SESSION_ENTRY_COLUMNS)
        client.command(
            f"INSERT INTO {SESSIONS_TABLE} SELECT project_id, toDate(min(ts)), session_id, "
            "any(visitor_id), min(ts), max(ts), countIf(name = 'page_view'), count(), "
            f"argMin(path, ts), max((ts, path)), {entry} "
            f"FROM {EVENTS_TABLE} WHERE {where} GROUP BY project_id, session_id",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )
        self.rebuild_session_pages(project_id, day="toDate(min(ts))")
        # keyed as the sessions above, by the day of their first event
        where, params = self._clear(LONG_SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        client.command(
            f"INSERT INTO {LONG_SESSIONS_TABLE} SELECT project_id, toDate(min(ts)) AS day, "
            f"session_id, min(ts), max(ts) FROM {EVENTS_TABLE} WHERE {where} "
            "GROUP BY project_id, session_id HAVING toDate(max(ts)) > day + 1",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )
        self.rebuild_next_day_sessions(project_id)

    @_writes
    def rebuild_next_day_sessions(self, project_id: str | None = None) -> None:
        """Write ``next_day_sessions`` anew from the stored events, of one project or all,
        each session keyed by the day of its first event (as :meth:`rebuild_sessions` keys
        it): its last event of the day after, if it has one, and its page views and events
        then (without deduplication: the blocks may equal those of the rows just deleted)."""
        client = self.client
        where, params = self._clear(NEXT_DAY_SESSIONS_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        by_day = (  # per session and day of its events: the last, the page views, the events
            "SELECT project_id, session_id, toDate(ts) AS d, max(ts) AS last, "
            f"countIf(name = 'page_view') AS pv, count() AS ev FROM {EVENTS_TABLE} "
            f"WHERE {where} GROUP BY project_id, session_id, d"
        )
        client.command(
            f"INSERT INTO {NEXT_DAY_SESSIONS_TABLE} "
            "(project_id, session_day, session_id, last_ts, pageviews, events) "
            "SELECT project_id, day, session_id, next[1].2, next[1].3, next[1].4 "
            "FROM (SELECT project_id, session_id, groupArray((d, last, pv, ev)) AS days, "
            "arrayMin(days.1) AS day, arrayFilter(x -> x.1 = day + 1, days) AS next "
            f"FROM ({by_day}) GROUP BY project_id, session_id) WHERE notEmpty(next)",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000, "insert_deduplicate": 0},
        )

    @_writes
    def rebuild_session_pages(self, project_id: str | None = None, *, day: str) -> None:
        """Write the ``session_pages`` table anew from the stored events, of one project or
        all, each session keyed by ``day`` (an aggregate over its events: the expression the
        sessions table was keyed by)."""
        where, params = self._clear(SESSION_PAGES_TABLE, project_id)
        where = f"{where} AND {COUNTED_SQL}"
        self.client.command(
            f"INSERT INTO {SESSION_PAGES_TABLE} SELECT project_id, day, session_id, "
            "page.1, page.2, page.3 FROM (SELECT project_id, session_id, "
            f"{day} AS day, sumMap([path], [toUInt64(name = 'page_view')], [toUInt64(1)]) AS m "
            f"FROM {EVENTS_TABLE} WHERE {where} GROUP BY project_id, session_id) "
            "ARRAY JOIN arrayZip(m.1, m.2, m.3) AS page",
            parameters=params,
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )

    @_writes
    def rebuild_event_hours(self) -> None:
        """Write the ``event_hours`` table anew from the stored events (the materialized view
        keeps it from then on, imports included)."""
        self.client.command(f"TRUNCATE TABLE {EVENT_HOURS_TABLE}")
        self.client.command(
            f"INSERT INTO {EVENT_HOURS_TABLE} SELECT project_id, toStartOfHour(ts) AS hour, "
            "countIf(name = 'page_view'), count(), uniqExactState(visitor_id) "
            f"FROM {EVENTS_TABLE} WHERE {COUNTED_SQL} GROUP BY project_id, hour",
            settings={"max_bytes_before_external_group_by": 500_000_000},
        )

    @_writes
    def rebuild_report_events(self) -> None:
        """Copy the stored events that ``report_events`` holds into it anew."""
        self.client.command(f"TRUNCATE TABLE {REPORT_EVENTS_TABLE}")
        self.client.command(
            f"INSERT INTO {REPORT_EVENTS_TABLE} SELECT * FROM {EVENTS_TABLE} "
            f"WHERE {REPORT_EVENTS_WHERE}"
        )

    def _clear(self, table: str, project_id: str | None) -> tuple[str, dict[str, Any]]:
        """Empty ``table`` of one project or all; the WHERE over events of the same scope."""
        if project_id is None:
            self.client.command(f"TRUNCATE TABLE {table}")
            return "1", {}
        params = {"project": project_id}
        self.client.command(
            f"DELETE FROM {table} WHERE project_id = {{project:String}}", parameters=params
        )
        return "project_id = {project:String}", params

    @_writes
    def insert_ndjson(self, data: bytes, token: str) -> None:
        """Insert JSONEachRow rows (``EVENT_COLUMNS``) idempotently: a retry with the same
        token is dropped by ClickHouse's insert deduplication."""
        with self.write_lock:
            self._insert_ndjson(data, token)

    def _insert_ndjson(self, data: bytes, token: str) -> None:
        self.insert_client.raw_insert(
            INGEST_TABLE,
            list(EVENT_COLUMNS),
            insert_block=data,
            fmt="JSONEachRow",
            settings={
                "insert_deduplication_token": token,
                "insert_deduplicate": 1,
                # every table, fed by its view from INGEST_TABLE, drops a replay on its own
                "deduplicate_blocks_in_dependent_materialized_views": 1,
                # one parsing thread: the same rate here, 15-25 MB less resident memory
                # (docs/benchmarks.md, Memory)
                "input_format_parallel_parsing": 0,
                "input_format_skip_unknown_fields": 1,
                # The views group each block already: no key repeats within a part, so the
                # merge pass at insert is wasted work (12 % of chDB's insert time measured)
                "optimize_on_insert": 0,
            },
        )

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

    @_writes
    def delete_project(self, project_id: str) -> None:
        """Delete every event and session of a project (lightweight DELETEs: gone from queries at
        once)."""
        for table in PROJECT_TABLES:
            self.client.command(
                f"DELETE FROM {table} WHERE project_id = {{project:String}}",
                parameters={"project": project_id},
            )

    def ping_ms(self) -> float:
        return self.handles.ping_ms()


#: Migrations after which a derived table is written from the stored events (the sessions
#: table, the session pages, the event hours, the report events).
_REBUILD_SESSIONS_AFTER = {2}
_REBUILD_SESSION_PAGES_AFTER = {4}
_REBUILD_EVENT_HOURS_AFTER = {5}
_REBUILD_REPORT_EVENTS_AFTER = {6, 8}
#: The migration after which rolled_sessions is sorted anew (EventStore.resort_rolled_sessions).
_RESORT_ROLLED_SESSIONS_AFTER = {15}

#: The sessions table's columns taken from the session's first event, after entry_page and
#: exit (storage/migrations/002_sessions.sql).
_SESSION_ENTRY_COLUMNS = (
    "hostname",
    "source",
    "channel",
    "referrer_host",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "country",
    "region",
    "city",
    "browser",
    "browser_version",
    "os",
    "os_version",
    "device",
)


def _statements(sql: str) -> list[str]:
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
