"""The ClickHouse event store: connection, versioned schema migrations, batch inserts, queries.

One schema and one SQL for every deployment: the embedded default is chDB in
``<data dir>/events``; ``SVC_CLICKHOUSE_URL`` points the same code at a server.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, TypeVar

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import Error as ClickHouseError

from svc.errors import ApiError, Busy, InvalidRequest
from svc.schema.measurements import COUNTED_SQL
from svc.schema.row import EVENT_COLUMNS as EVENT_COLUMNS
from svc.schema.row import EventRow as EventRow
from svc.settings import Settings
from svc.storage import schema
from svc.storage.handles import CHDB_OPTIONS as CHDB_OPTIONS
from svc.storage.handles import EMBEDDED_ALLOCATOR_CONF as EMBEDDED_ALLOCATOR_CONF
from svc.storage.handles import Handles
from svc.storage.handles import connect as connect
from svc.storage.handles import skip_data_frame_libraries as skip_data_frame_libraries
from svc.storage.memo import ReadMemo
from svc.storage.read_handles import ReadHandles
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

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ClickHouse error codes a request's read answers for itself (see EventStore._read_call).
TIMEOUT_EXCEEDED = 159
QUERY_WAS_CANCELLED = 394
CANNOT_COMPILE_REGEXP = 427
MEMORY_LIMIT_EXCEEDED = 241


class QueryTimeout(ApiError):
    """A request's reads ran past ``SVC_QUERY_TIMEOUT_SECONDS``; the store stopped them."""

    status, code = 504, "query_timeout"


class ReadCancelled(Exception):
    """The reads of a request whose client went away were stopped
    (:meth:`EventStore.stop_read`)."""


@dataclass(eq=False)
class Read:
    """The queries of one request (a report, an export), so that the store can bound and
    stop them together. Every query run under it (:meth:`run`, in the thread that runs the
    report) carries the setting ``log_comment`` = :attr:`comment`, by which
    :meth:`EventStore.stop_read` finds it in ``system.processes`` to ``KILL QUERY`` it (chDB
    drops a ``query_id``, and the query text there is reformatted, without comments); with
    ``timeout_s``, each query gets ``max_execution_time`` = what is left of that time since
    the read began, and none starts once it is spent."""

    timeout_s: float | None = None
    #: the store handle its queries run on (lent by :attr:`EventStore.read_handles`); None:
    #: the store's main handle
    handle: Client | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: float = field(default_factory=time.monotonic)
    cancelled: bool = False
    _running: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _idle: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._idle = threading.Condition(self._lock)

    @property
    def comment(self) -> str:
        """The ``log_comment`` of every query of this read (hex digits: safe in SQL); also
        in ``system.query_log`` of a ClickHouse server."""
        return f"svc-read {self.id}"

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` with this read current (its queries tagged, bounded, stoppable)."""
        token = _CURRENT_READ.set(self)
        with self._lock:
            self._running += 1
        try:
            return fn(*args)
        finally:
            _CURRENT_READ.reset(token)
            with self._lock:
                self._running -= 1
                self._idle.notify_all()

    def seconds_left(self) -> float | None:
        if self.timeout_s is None:
            return None
        return self.timeout_s - (time.monotonic() - self.started)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no call of :meth:`run` is under way (at most ``timeout`` s)."""
        with self._lock:
            return self._idle.wait_for(lambda: self._running == 0, timeout)


_CURRENT_READ: contextvars.ContextVar[Read | None] = contextvars.ContextVar(
    "svc_read", default=None
)

_RE2_ERROR = re.compile(r"cannot compile re2: (.*), error: (.*?)\.?(?: \(CANNOT_COMPILE|$)", re.S)


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
        self._last_read_end = 0.0  # see release_memory_after_read
        self._release_pending = False
        self._release_lock = threading.Lock()
        #: How many writes of this process reached the store (see :meth:`note_write`).
        self.writes = 0
        #: The facts' reads kept while nothing is written (svc.storage.memo). Embedded only.
        self.memo = ReadMemo(0 if settings.clickhouse_url else settings.read_memo_entries)
        #: The settings of every read (see READ_SETTINGS), and its memory bound.
        self.read_settings = {
            **READ_SETTINGS,
            **({} if settings.clickhouse_url else EMBEDDED_READ_SETTINGS),
        }
        #: What bounds the memory of a report's query under a Read (not of an export's, nor
        #: of the service's own reads: a rollup must not fail for its size).
        self.read_memory = memory_bound(settings.read_memory_limit_mb)

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

    def release_memory(self) -> None:
        """Hand the memory the embedded engine freed back to the system (its allocator keeps
        freed pages for reuse: ~150 MB after a few inserts of 8 MiB segments). A no-op with
        a ClickHouse server, which manages its own memory."""
        if not self.settings.clickhouse_url:
            self.client.command("SYSTEM JEMALLOC PURGE")

    def release_memory_after_read(self, elapsed_s: float) -> None:
        """After a read that took ``elapsed_s``: when it was a heavy one (HEAVY_READ_S or
        more), hand the memory the engine freed back to the system once no read has ended for
        READS_IDLE_S, in the background (embedded; not when ``store_memory_release_seconds``
        is 0). A report over 10M events leaves the engine's allocator holding ~550 MB (a
        breakdown by event name: RSS 847 -> 289 MB after the purge, which takes ~23 ms); a
        report right after a purge takes ~4 % longer, so reads in a burst (a dashboard's)
        are left to reuse it and the purge waits for the pause after them."""
        now = time.monotonic()
        self._last_read_end = now
        if self.settings.clickhouse_url or not self.settings.store_memory_release_seconds:
            return
        if elapsed_s < HEAVY_READ_S:
            return
        with self._release_lock:
            if self._release_pending:
                return
            self._release_pending = True
        threading.Thread(target=self._release_when_idle, name="svc-release", daemon=True).start()

    def _release_when_idle(self) -> None:
        try:
            while (wait := self._last_read_end + READS_IDLE_S - time.monotonic()) > 0:
                time.sleep(wait)
            self._release_quietly()
        finally:
            self._release_pending = False

    def _release_quietly(self) -> None:
        try:
            self.release_memory()
        except Exception as exc:  # only memory: never fail for it
            log.debug("could not release the store's memory: %s", exc)

    def query(
        self,
        sql: str,
        parameters: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Sequence[Sequence[Any]]:
        """Rows of a parameterised SELECT (``{name:Type}`` placeholders, bound server-side)."""
        sql, all_settings = self._under_read(
            sql, {**self.read_settings, **(settings or {})}, bounded=True
        )
        with _read_errors():
            result = self._read_client().query(
                sql, parameters=parameters or {}, settings=all_settings
            )
        return result.result_rows

    def query_named(
        self, sql: str, parameters: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return self._query_named(self._read_client(), sql, parameters or {}, self.read_settings)

    def _read_client(self) -> Client:
        """The handle of the current :class:`Read` (lent to it), else the main one."""
        read = _CURRENT_READ.get()
        return read.handle if read is not None and read.handle is not None else self.client

    def _under_read(
        self, sql: str, settings: dict[str, Any], bounded: bool = False
    ) -> tuple[str, dict[str, Any]]:
        """``sql`` and ``settings`` of a query run under the current :class:`Read`, if any:
        tagged with its comment, bounded by the time it has left and, when ``bounded`` (a
        report's query, not an export's), by :attr:`read_memory`. Raises ReadCancelled once
        it was stopped, QueryTimeout once its time is spent."""
        read = _CURRENT_READ.get()
        if read is None:
            return sql, settings
        if bounded:
            settings = {**settings, **self.read_memory}
        if read.cancelled:
            raise ReadCancelled(read.id)
        left = read.seconds_left()
        if left is not None:
            if left <= 0:
                raise timeout_error(read)
            settings = {**settings, "max_execution_time": round(max(left, 0.001), 3)}
        return sql, {**settings, "log_comment": read.comment}

    def stop_read(self, read: Read) -> bool:
        """Stop the queries of ``read``: none starts from now on, and those under way are
        killed (``KILL QUERY``, on a handle of its own: the read's may be busy with them),
        again after a pause while a call of the read is under way (a query may have been
        starting as the first kill ran). Whether the read is idle after ~1.5 s. Blocking.

        ClickHouse takes a kill, like ``max_execution_time``, between blocks of rows (a
        granule of a table: 8,192 rows): a block whose filter is expensive (a regular
        expression over long paths) is finished first."""
        read.cancelled = True
        client = self.client if self.settings.clickhouse_url else self.handles.own("control")
        where = f"Settings['log_comment'] = '{read.comment}'"
        for pause in _KILL_PAUSES:
            try:
                client.command(f"KILL QUERY WHERE {where} ASYNC")
            except Exception as exc:  # the read then ends on its own
                log.warning("could not stop the queries of read %s: %s", read.id, exc)
                return False
            if read.wait_idle(pause):
                return True
        return False

    def stop_read_soon(self, read: Read) -> None:
        """:meth:`stop_read` in a thread of its own (not a worker of the event loop's pool,
        which the read itself may be holding with others)."""

        def stop() -> None:
            try:
                self.stop_read(read)
            except Exception:
                log.exception("stopping read %s failed", read.id)

        threading.Thread(target=stop, name="svc-stop-read", daemon=True).start()

    def query_named_together(
        self, *statements: tuple[str, dict[str, Any]]
    ) -> list[list[dict[str, Any]]]:
        """The rows of several independent reads, run side by side: the first on the read's
        handle (:meth:`_read_client`), the others each on a handle of its own: under a
        :class:`Read` with a lent handle, the read pool's spares while one is free (the rest
        then one after another on the read's handle); otherwise the store's own ``read-<i>``
        handles (see :meth:`Handles.own`). A report made of two queries (a time series, GET
        /metrics over rolled-up days) then takes about the longer of them instead of their
        sum when one alone leaves a core idle."""
        if len(statements) == 1:
            return [self.query_named(*statements[0])]
        read = _CURRENT_READ.get()
        if read is not None and read.handle is not None:
            return self._together_lent(read.handle, statements)
        clients = [self.client, *(self.handles.own(f"read-{i}") for i in range(1, len(statements)))]
        return self._together_on(clients, statements)

    def _together_lent(
        self, own: Client, statements: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[list[dict[str, Any]]]:
        """:meth:`query_named_together` on ``own`` and the spare handles free now."""
        spares: list[Client] = []
        for _ in statements[1:]:
            spare = self.read_handles.try_spare()
            if spare is None:
                break
            spares.append(spare)
        failed = False
        try:
            if not spares:
                return [self._query_named(own, *st, self.read_settings) for st in statements]
            # the statements the spares cannot take run after the first, on the read's handle
            side = len(spares)
            together = self._together_on([own, *spares], statements[: side + 1])
            rest = [
                self._query_named(own, *st, self.read_settings) for st in statements[side + 1 :]
            ]
            return [*together, *rest]
        except BaseException:
            failed = True
            raise
        finally:
            for spare in spares:
                if failed:  # a query cut off may have left its rest on the handle
                    self.read_handles.discard(spare, spare=True)
                else:
                    self.read_handles.give_back_spare(spare)

    def _together_on(
        self, clients: Sequence[Client], statements: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[list[dict[str, Any]]]:
        """Statement i on client i, the first in this thread, the others side by side."""
        with ThreadPoolExecutor(max_workers=len(statements) - 1) as pool:
            others = [  # each in a copy of this context: the same Read
                pool.submit(
                    contextvars.copy_context().run,
                    self._query_named,
                    client,
                    sql,
                    params,
                    self.read_settings,
                )
                for client, (sql, params) in zip(clients[1:], statements[1:], strict=True)
            ]
            first = self._query_named(clients[0], *statements[0], self.read_settings)
            return [first, *(future.result() for future in others)]

    def _query_named(
        self, client: Client, sql: str, parameters: dict[str, Any], settings: dict[str, Any]
    ) -> list[dict[str, Any]]:
        sql, settings = self._under_read(sql, settings, bounded=True)
        with _read_errors():
            result = client.query(sql, parameters=parameters, settings=settings)
        names = result.column_names
        return [dict(zip(names, row, strict=True)) for row in result.result_rows]

    @property
    def streams_results(self) -> bool:
        """Whether :meth:`stream_raw` streams (a ClickHouse server) or answers in one piece
        (chDB: a streamed result would hold its connection, and every other query and insert,
        until the reader has taken it all)."""
        return bool(self.settings.clickhouse_url)

    def stream_raw(self, sql: str, parameters: dict[str, Any], fmt: str) -> Iterator[bytes]:
        """The result of an export query in a ClickHouse output format, in chunks."""
        if self.streams_results:
            sql, settings = self._under_read(sql, {})
            with _read_errors():
                yield from self.export_client.raw_stream(
                    sql, parameters=parameters, settings=settings, fmt=fmt
                )
        else:
            yield self.raw_query(sql, parameters, fmt)

    def export_command(self, sql: str, parameters: dict[str, Any]) -> None:
        """Run an export statement that returns nothing (``INTO OUTFILE``)."""
        sql, settings = self._under_read(sql, {})
        with _read_errors():
            self.export_client.command(sql, parameters=parameters, settings=settings)

    def raw_query(self, sql: str, parameters: dict[str, Any], fmt: str) -> bytes:
        """The whole result of an export query in a ClickHouse output format."""
        sql, settings = self._under_read(sql, {})
        with _read_errors():
            return self.export_client.raw_query(
                sql, parameters=parameters, settings=settings, fmt=fmt
            )

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


#: EventStore.stop_read: after each kill, how long to wait for the read to end before the next.
_KILL_PAUSES = (0.1, 0.3, 1.0)

#: A read that takes this long or longer is followed by a release of memory (embedded), once
#: no read has ended for READS_IDLE_S (EventStore.release_memory_after_read).
HEAVY_READ_S = 0.2
READS_IDLE_S = 1.0

#: Reads that would hold more than this in a GROUP BY or a sort spill to disk instead: the
#: service shares its memory with ingestion (docs/benchmarks.md, Memory).
READ_SETTINGS: dict[str, Any] = {
    "max_bytes_before_external_group_by": 300_000_000,
    "max_bytes_before_external_sort": 300_000_000,
}
#: On the embedded store (2 cores measured): a GROUP BY is not split into 256 buckets because
#: its states pass 50 MB (ClickHouse's default), only because it has many keys (over 100,000).
#: A report with few rows but exact visitor sets over millions of sessions (sources of the
#: sessions with a page matching a filter: 311 rows, 2.2M visitors) took 835 ms in buckets,
#: 644 ms without; the other reports the same within the noise. It still spills to disk
#: past max_bytes_before_external_group_by (in buckets then).
EMBEDDED_READ_SETTINGS: dict[str, Any] = {"group_by_two_level_threshold_bytes": 0}


def memory_bound(limit_mb: int) -> dict[str, Any]:
    """The settings that bound one read's memory to ``limit_mb`` (0: none): the store stops
    it past that (``max_memory_usage``; answered 503 busy), and a GROUP BY or sort goes on
    disk past half of it (or past READ_SETTINGS' bound, the lower)."""
    if limit_mb <= 0:
        return {}
    limit = limit_mb * 1024 * 1024
    spill = min(limit // 2, READ_SETTINGS["max_bytes_before_external_group_by"])
    return {
        "max_memory_usage": limit,
        "max_bytes_before_external_group_by": spill,
        "max_bytes_before_external_sort": spill,
    }


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


def timeout_error(read: Read) -> QueryTimeout:
    return QueryTimeout(
        f"the report took longer than {read.timeout_s:g} s (SVC_QUERY_TIMEOUT_SECONDS) and was "
        "stopped; ask for a shorter range or fewer filters"
    )


@contextlib.contextmanager
def _read_errors() -> Iterator[None]:
    """Under a :class:`Read`, the store's refusals that are the request's to hear, as
    answers: past its time, a 504 ``query_timeout``; stopped (its client went away),
    ReadCancelled; a regular expression RE2 cannot compile (only the ``matches`` filters
    send one), a 400 naming ``filter``. Anything else stays an error of the service."""
    try:
        yield
    except ClickHouseError as exc:
        read = _CURRENT_READ.get()
        if read is None:
            raise
        code = getattr(exc, "code", None)
        if code == TIMEOUT_EXCEEDED:
            raise timeout_error(read) from exc
        if code == QUERY_WAS_CANCELLED and read.cancelled:
            raise ReadCancelled(read.id) from exc
        if code == MEMORY_LIMIT_EXCEEDED:
            raise Busy(
                "the read needed more memory than one read may take (SVC_READ_MEMORY_LIMIT_MB): "
                "narrow the range or the filters, or retry when the store is quieter",
                headers={"Retry-After": "5"},
            ) from exc
        if code == CANNOT_COMPILE_REGEXP:
            found = _RE2_ERROR.search(str(exc))
            why = f"{found.group(1)!r}: {found.group(2)}" if found else "refused"
            raise InvalidRequest(
                f"`filter`: not a regular expression the store (RE2) accepts: {why}",
                field="filter",
            ) from exc
        raise


def _statements(sql: str) -> list[str]:
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
