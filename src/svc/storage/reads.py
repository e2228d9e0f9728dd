"""The store's reads: a request's queries bounded and stoppable together (:class:`Read`), the
settings every read runs with, the store's refusals a request hears as answers, and the
queries themselves (:class:`Reads`: rows, named rows, several side by side).

A query run under a :class:`Read` (in the thread that runs the report, or a copy of its
context) is tagged with the read's comment, bounded by the time it has left and, for a
report's query, by ``SVC_READ_MEMORY_LIMIT_MB``; :meth:`Reads.stop_read` kills it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import Error as ClickHouseError

from svc.errors import ApiError, Busy, InvalidRequest
from svc.storage.handles import Handles

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ClickHouse error codes a request's read answers for itself (see read_errors).
TIMEOUT_EXCEEDED = 159
QUERY_WAS_CANCELLED = 394
CANNOT_COMPILE_REGEXP = 427
MEMORY_LIMIT_EXCEEDED = 241

#: Reads.stop_read: after each kill, how long to wait for the read to end before the next.
_KILL_PAUSES = (0.1, 0.3, 1.0)

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

_RE2_ERROR = re.compile(r"cannot compile re2: (.*), error: (.*?)\.?(?: \(CANNOT_COMPILE|$)", re.S)


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


class QueryTimeout(ApiError):
    """A request's reads ran past ``SVC_QUERY_TIMEOUT_SECONDS``; the store stopped them."""

    status, code = 504, "query_timeout"


class ReadCancelled(Exception):
    """The reads of a request whose client went away were stopped (:meth:`Reads.stop_read`)."""


@dataclass(eq=False)
class Read:
    """The queries of one request (a report, an export), so that the store can bound and
    stop them together. Every query run under it (:meth:`run`, in the thread that runs the
    report) carries the setting ``log_comment`` = :attr:`comment`, by which
    :meth:`Reads.stop_read` finds it in ``system.processes`` to ``KILL QUERY`` it (chDB
    drops a ``query_id``, and the query text there is reformatted, without comments); with
    ``timeout_s``, each query gets ``max_execution_time`` = what is left of that time since
    the read began, and none starts once it is spent."""

    timeout_s: float | None = None
    #: the store handle its queries run on (lent by the store's ``read_handles``); None: the
    #: store's main handle
    handle: Client | None = None
    #: ClickHouse's ``priority`` of its queries (a query waits while one of a smaller
    #: number runs; 0: none) and their threads' nice value (``os_thread_priority``; 0: none)
    priority: int = 0
    nice: int = 0
    #: the most memory (MB) one of its report's queries may take, when less than the store's
    #: ``SVC_READ_MEMORY_LIMIT_MB`` (the memory budget's room: svc.reads.scheduler); None:
    #: that limit
    memory_mb: int | None = None
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


def current_read() -> Read | None:
    """The :class:`Read` whose :meth:`Read.run` the caller is under, if any."""
    return _CURRENT_READ.get()


def timeout_error(read: Read) -> QueryTimeout:
    return QueryTimeout(
        f"the report took longer than {read.timeout_s:g} s (SVC_QUERY_TIMEOUT_SECONDS) and was "
        "stopped; ask for a shorter range or fewer filters"
    )


@contextlib.contextmanager
def read_errors() -> Iterator[None]:
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
        if code == MEMORY_LIMIT_EXCEEDED and "(total)" in str(exc):  # the engine's cap
            raise Busy(
                "the store is at its memory cap (SVC_ENGINE_MEMORY_LIMIT_MB): retry when it "
                "is quieter, or narrow the range or the filters",
                headers={"Retry-After": "5"},
            ) from exc
        if code == MEMORY_LIMIT_EXCEEDED:
            raise Busy(
                "the read needed more memory than one read may take now "
                "(SVC_READ_MEMORY_LIMIT_MB, or less: the room left under SVC_MEMORY_LIMIT_MB "
                "shared by the reads running): narrow the range or the filters, or retry when "
                "the store is quieter",
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


class Reads:
    """Parameterised SELECTs (``{name:Type}`` placeholders, bound server-side) on the current
    :class:`Read`'s handle, else the main one, each with :attr:`read_settings`."""

    def __init__(self, handles: Handles) -> None:
        self.handles = handles
        settings = handles.settings
        #: The settings of every read (see READ_SETTINGS), and its memory bound.
        self.read_settings = {
            **READ_SETTINGS,
            **({} if settings.clickhouse_url else EMBEDDED_READ_SETTINGS),
        }
        #: What bounds the memory of a report's query under a Read (not of an export's, nor
        #: of the service's own reads: a rollup must not fail for its size).
        self.read_memory = memory_bound(settings.read_memory_limit_mb)

    def query(
        self,
        sql: str,
        parameters: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Sequence[Sequence[Any]]:
        """Rows of a parameterised SELECT (``{name:Type}`` placeholders, bound server-side)."""
        sql, all_settings = self.under_read(
            sql, {**self.read_settings, **(settings or {})}, bounded=True
        )
        with read_errors():
            result = self.read_client().query(
                sql, parameters=parameters or {}, settings=all_settings
            )
        return result.result_rows

    def query_named(
        self, sql: str, parameters: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Rows of a parameterised SELECT, each a mapping of column name to value."""
        return self._query_named(self.read_client(), sql, parameters or {}, self.read_settings)

    def read_client(self) -> Client:
        """The handle of the current :class:`Read` (lent to it), else the main one."""
        read = _CURRENT_READ.get()
        return read.handle if read is not None and read.handle is not None else self.handles.client

    def under_read(
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
            bound = self.read_memory if read.memory_mb is None else memory_bound(read.memory_mb)
            settings = {**settings, **bound}
        if read.cancelled:
            raise ReadCancelled(read.id)
        left = read.seconds_left()
        if left is not None:
            if left <= 0:
                raise timeout_error(read)
            settings = {**settings, "max_execution_time": round(max(left, 0.001), 3)}
        settings = {**settings, "log_comment": read.comment}
        if read.priority:
            settings["priority"] = read.priority
        if read.nice:
            settings["os_thread_priority"] = read.nice
        return sql, settings

    def stop_read(self, read: Read) -> bool:
        """Stop the queries of ``read``: none starts from now on, and those under way are
        killed (``KILL QUERY``, on a handle of its own: the read's may be busy with them),
        again after a pause while a call of the read is under way (a query may have been
        starting as the first kill ran). Whether the read is idle after ~1.5 s. Blocking.

        ClickHouse takes a kill, like ``max_execution_time``, between blocks of rows (a
        granule of a table: 8,192 rows): a block whose filter is expensive (a regular
        expression over long paths) is finished first."""
        read.cancelled = True
        handles = self.handles
        client = handles.client if handles.settings.clickhouse_url else handles.own("control")
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
        handle (:meth:`read_client`), the others each on a handle of its own: under a
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
        own = self.handles.own
        clients = [self.handles.client, *(own(f"read-{i}") for i in range(1, len(statements)))]
        return self._together_on(clients, statements)

    def _together_lent(
        self, own: Client, statements: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[list[dict[str, Any]]]:
        """:meth:`query_named_together` on ``own`` and the spare handles free now."""
        pool = self.handles.read_handles
        spares: list[Client] = []
        for _ in statements[1:]:
            spare = pool.try_spare()
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
                    pool.discard(spare, spare=True)
                else:
                    pool.give_back_spare(spare)

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
        sql, settings = self.under_read(sql, settings, bounded=True)
        with read_errors():
            result = client.query(sql, parameters=parameters, settings=settings)
        names = result.column_names
        return [dict(zip(names, row, strict=True)) for row in result.result_rows]
