"""Migration 015's side effect: ``rolled_sessions`` given the sorting key of
``rolled_sessions_resorted``, which the migration makes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.storage.migrations import After

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


def resort_rolled_sessions(rebuilds: Rebuilds) -> None:
    """Copy the rows of ``rolled_sessions`` into ``rolled_sessions_resorted`` and exchange the
    two tables, unless its key has the country already (the exchange was done before a
    crash, or the table is new). Each step may run again after a crash: the copy starts from
    an empty table. Counts as a write."""
    client = rebuilds.handles.client
    try:
        key = client.query(
            "SELECT sorting_key FROM system.tables "
            "WHERE database = currentDatabase() AND name = 'rolled_sessions'"
        ).result_rows[0][0]
        if "country" not in key:
            client.command("TRUNCATE TABLE rolled_sessions_resorted")
            client.command("INSERT INTO rolled_sessions_resorted SELECT * FROM rolled_sessions")
            client.command("EXCHANGE TABLES rolled_sessions AND rolled_sessions_resorted")
        client.command("DROP TABLE IF EXISTS rolled_sessions_resorted")
    finally:
        rebuilds.writes.note_write()


AFTER = After("rolled_sessions_sort", resort_rolled_sessions)
