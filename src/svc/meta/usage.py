"""The durable record of monthly usage: the in-memory counts, written into the ``usage`` table.

Quotas are checked against counts in memory (``svc.ingestion.service.Usage``, or the Redis
ledger); the runtime's housekeeping hands them here every few seconds and at stop, and
:meth:`UsageRecorder.flush` writes the counts that changed since its last successful write, as
absolute counts per (project, month) (:meth:`MetaStore.record_usage`): a write repeated after
a failure or a crash cannot count an event twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from svc.meta.store import MetaStore

Slot = tuple[str, str]  # (project id, month "YYYY-MM")


class UsageRecorder:
    """Writes one process's monthly counts into the metadata store, only what changed."""

    def __init__(self, meta: MetaStore) -> None:
        self.meta = meta
        self.recorded: dict[Slot, int] = {}

    @staticmethod
    def snapshot(slots: Iterable[Slot], count_of: Callable[[str, str], int]) -> dict[Slot, int]:
        """The count of each slot now. Call it on the event loop (the counts change there),
        then :meth:`flush` the result in a worker thread."""
        return {slot: count_of(*slot) for slot in list(slots)}

    def flush(self, counts: dict[Slot, int]) -> int:
        """Record the counts that differ from the last recorded ones; how many were written."""
        changed = {s: n for s, n in counts.items() if n > 0 and self.recorded.get(s) != n}
        if changed:
            self.meta.record_usage(changed)
            self.recorded.update(changed)
        return len(changed)
