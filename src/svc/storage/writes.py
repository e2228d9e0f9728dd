"""The store's writes: the loader's inserts, the lock that orders them against the rollups,
and the count of writes that returned (:meth:`Writes.note_write`), which the runtime's rollup
pass reads (svc.runtime, ``_roll_up``). Every part of the store that writes counts itself
(:func:`counted_write`)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from svc.schema.row import EVENT_COLUMNS
from svc.storage.handles import Handles
from svc.storage.tables import INGEST_TABLE

T = TypeVar("T")


class Writes:
    """The loader's inserts and the count of the store's writes."""

    def __init__(self, handles: Handles) -> None:
        self.handles = handles
        #: Held by each insert and by each computation derived from the tables the inserts
        #: feed (svc.storage.rollups): an insert reaches the events table before its
        #: materialized views' tables, and a day rolled up in between would lack its
        #: sessions until it is rolled up again. (Between processes sharing a ClickHouse
        #: server, that later recomputation is what makes it right.)
        self.write_lock = threading.Lock()
        #: How many writes of this process reached the store (see :meth:`note_write`).
        self.writes = 0

    def note_write(self) -> None:
        """Count a write to the store that has returned: the runtime's rollup pass is skipped
        while this count stands still (svc.runtime, ``_roll_up``). Every writing method of
        the store counts itself; a caller that writes with the store's ``client`` calls
        this."""
        self.writes += 1

    def insert_ndjson(self, data: bytes, token: str) -> None:
        """Insert JSONEachRow rows (``EVENT_COLUMNS``) idempotently: a retry with the same
        token is dropped by ClickHouse's insert deduplication."""
        try:
            with self.write_lock:
                self._insert_ndjson(data, token)
        finally:
            self.note_write()

    def _insert_ndjson(self, data: bytes, token: str) -> None:
        self.handles.insert_client.raw_insert(
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


class Writer:
    """A part of the store whose methods marked :func:`counted_write` write to it."""

    def __init__(self, handles: Handles, writes: Writes) -> None:
        self.handles = handles
        self.writes = writes


def counted_write(method: Callable[..., T]) -> Callable[..., T]:
    """A :class:`Writer`'s method that writes to the store: :attr:`Writes.writes` counts it
    once it has returned (or failed: it may have written part)."""

    @functools.wraps(method)
    def counted(self: Writer, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        finally:
            self.writes.note_write()

    return counted


def ch_time(ms: int) -> str:
    """Milliseconds since the epoch as ClickHouse DateTime64(3) input text."""
    return f"{ms // 1000}.{ms % 1000:03d}"
