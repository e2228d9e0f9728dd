"""Rows of reads kept while the store they came from is unchanged.

A report first reads what it needs to know about its range (the sessions that cross its
ends, the days rolled up, the snapshots: svc.queries.run, ``Runner.facts``); a dashboard
asks for a dozen reports of one range, and each read those again. On a small store a
statement's time is mostly ClickHouse parsing and planning it (~85 % of it), whatever it
reads, so those statements were half of each report's time there.

An entry holds the rows of one statement (its SQL and values) and the store's *generation*
when its read began (:attr:`svc.storage.events.EventStore.generation`: every write of the
process moves it once it has returned). It serves only while the generation stands still:
rows read while a write was under way were as true as a read without the memo, and no
entry outlives the write. With a ClickHouse server, entries are kept only when the nodes
count their writes in Redis (svc.cluster.shared.SharedGeneration): the generation is then
this process's and that count together, read before the read began, so a write of any node
that has returned makes every entry read before it unused."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

Rows = tuple[Any, ...]

#: Rows kept for one statement at most: the facts of 30 days of 100M events are a few
#: thousand rows; a statement with more is read again rather than held.
MAX_ROWS = 20_000


def statement_key(sql: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of a statement's rows: its SQL and its values, each with its type (an array of
    ids by its integers, not their text; a value that cannot be hashed, a list, by its
    ``repr``, which tells such values apart: numbers, strings, dates)."""
    values = []
    for name, value in sorted(params.items()):
        try:
            hash(value)
        except TypeError:
            value = repr(value)
        values.append((name, type(value).__name__, value))
    return sql, tuple(values)


class ReadMemo:
    """Up to ``entries`` statements' rows, the least recently used dropped first; 0 keeps
    none. Thread-safe."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._rows: OrderedDict[Any, tuple[Hashable, Rows]] = OrderedDict()
        self._lock = threading.Lock()
        #: reads served from here, and reads that were not
        self.hits = 0
        self.misses = 0

    def get(self, key: Any, generation: Hashable) -> Rows | None:
        """The rows kept under ``key`` if they were read at ``generation``, else None."""
        if not self.entries:
            return None
        with self._lock:
            kept = self._rows.get(key)
            if kept is None or kept[0] != generation:
                self.misses += 1
                return None
            self._rows.move_to_end(key)
            self.hits += 1
            return kept[1]

    def put(self, key: Any, generation: Hashable, rows: Sequence[Any]) -> Rows:
        """Keep ``rows`` (each a tuple or a mapping, never changed after), read from a store
        at ``generation`` (taken before the read began), unless there are more than
        :data:`MAX_ROWS`. The rows, as kept."""
        kept: Rows = tuple(rows)
        if not self.entries or len(kept) > MAX_ROWS:
            return kept
        with self._lock:
            self._rows[key] = (generation, kept)
            self._rows.move_to_end(key)
            while len(self._rows) > self.entries:
                self._rows.popitem(last=False)
        return kept
