"""The statements of the retention job (svc.retention.job): what each table keeps by which
column, and the reads and deletes that enforce a project's horizons.

Every table holds the rows of every project, partitioned by month (but ``long_sessions`` and
``rollup_days``, which are small and not partitioned). A month that every project with rows
in it has left behind is dropped whole (``DROP PARTITION``: instant, its disk freed at once);
otherwise a project's rows before its horizon are deleted by a mutation that rewrites only
the parts that hold some (``ALTER TABLE ... DELETE``, waited for). Values are bound; the
table names and columns are the constants below, and a partition id is checked to be digits
before it is written into a statement (ClickHouse takes no parameter there).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from svc.queries.sql.statement import Statement


@dataclass(frozen=True, slots=True)
class Kept:
    """A table whose rows a horizon bounds: ``column`` is compared with the horizon's first
    day (a ``Date`` or the time its day begins); ``partitioned``: by the month of it."""

    table: str
    column: str
    partitioned: bool = True


#: The raw rows: every event, and the per-session rows derived from them. Kept
#: ``SVC_RETENTION_MONTHS`` (or the project's ``retentionMonths``).
RAW: tuple[Kept, ...] = (
    Kept("events", "ts"),
    Kept("report_events", "ts"),
    Kept("sessions", "session_day"),
    Kept("session_pages", "session_day"),
    Kept("rolled_sessions", "session_day"),
    Kept("visitor_steps", "session_day"),  # per visitor, their events (storage migration 17)
    Kept("long_sessions", "session_day", partitioned=False),
    Kept("next_day_sessions", "session_day"),  # sessions across midnight (storage migration 21)
    Kept("page_measurements", "ts"),  # the page measurements' rows (storage migration 13)
    Kept("purchases", "ts"),  # the purchase events' rows (storage migration 24)
)

#: The aggregates: the daily rollups and the hourly event figures. Kept
#: ``SVC_ROLLUP_RETENTION_MONTHS`` (never less than the raw rows).
ROLLUPS: tuple[Kept, ...] = (
    Kept("session_rollups", "session_day"),
    Kept("rollup_days", "session_day", partitioned=False),
    Kept("event_hours", "hour"),
)


def _before(kept: Kept) -> str:
    if kept.column in ("ts", "hour"):
        return f"{kept.column} < toDateTime({{before:Date}}, 'UTC')"
    return f"{kept.column} < {{before:Date}}"


def horizons() -> Statement:
    """Per project, its recorded horizons: raw_from, rollups_from (the latest row)."""
    return Statement(
        "SELECT project_id, max(raw_from), max(rollups_from) FROM retention_horizons "
        "GROUP BY project_id"
    )


def record(project_id: str, raw_from: date, rollups_from: date) -> Statement:
    return Statement(
        "INSERT INTO retention_horizons (project_id, raw_from, rollups_from, applied_at) "
        "VALUES ({project:String}, {raw:Date}, {rollups:Date}, now64(3, 'UTC'))",
        {"project": project_id, "raw": raw_from, "rollups": rollups_from},
    )


def stored_projects() -> Statement:
    """The projects with rows in the store (those the metadata store may no longer know get
    the default retention): from the small tables."""
    return Statement(
        "SELECT DISTINCT project_id FROM rollup_days UNION DISTINCT "
        "SELECT DISTINCT project_id FROM sessions"
    )


def days_to_roll_up(project_id: str, before: date) -> Statement:
    """The days before ``before`` that have sessions and no rollups yet: they are rolled up
    before their sessions go."""
    return Statement(
        "SELECT DISTINCT session_day FROM sessions WHERE project_id = {project:String} "
        "AND session_day < {before:Date} AND session_day NOT IN (SELECT session_day "
        "FROM rollup_days WHERE project_id = {project:String}) ORDER BY session_day",
        {"project": project_id, "before": before},
    )


def old_partitions(kept: Kept, before: date) -> Statement:
    """The month partitions of ``kept`` wholly before ``before`` (the first of a month)."""
    return Statement(
        "SELECT DISTINCT partition_id FROM system.parts WHERE database = currentDatabase() "
        "AND table = {table:String} AND active AND toUInt32OrZero(partition_id) > 0 "
        "AND toUInt32OrZero(partition_id) < {month:UInt32} ORDER BY partition_id",
        {"table": kept.table, "month": before.year * 100 + before.month},
    )


def projects_in_partition(kept: Kept, partition_id: str) -> Statement:
    return Statement(
        f"SELECT DISTINCT project_id FROM {kept.table} WHERE _partition_id = {{pid:String}}",
        {"pid": _checked(partition_id)},
    )


def drop_partition(kept: Kept, partition_id: str) -> Statement:
    return Statement(f"ALTER TABLE {kept.table} DROP PARTITION ID '{_checked(partition_id)}'")


def count_before(kept: Kept, project_id: str, before: date) -> Statement:
    """How many rows of the project lie before ``before`` (the key's prefix reads little)."""
    return Statement(
        f"SELECT count() FROM {kept.table} WHERE project_id = {{project:String}} "
        f"AND {_before(kept)}",
        {"project": project_id, "before": before},
    )


def delete_before(kept: Kept, project_id: str, before: date) -> Statement:
    """Delete the project's rows before ``before``: a mutation that rewrites only the parts
    that hold some (their space is freed once the old parts are cleaned up), waited for."""
    return Statement(
        f"ALTER TABLE {kept.table} DELETE WHERE project_id = {{project:String}} "
        f"AND {_before(kept)} SETTINGS mutations_sync = 1",
        {"project": project_id, "before": before},
    )


def _checked(partition_id: str) -> str:
    if not partition_id.isdigit():
        raise ValueError(f"not a month partition id: {partition_id!r}")
    return partition_id
