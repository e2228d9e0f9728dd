"""The names of the store's tables that the store's own code writes or empties.

Only names: the tables themselves are made by ``storage/migrations`` (or ``schema.sql``).
"""

from __future__ import annotations

from svc.schema.measurements import COUNTED_SQL

EVENTS_TABLE = "events"
#: Where inserts go: a Null table whose materialized views write every stored table, events
#: too, each deduplicating a replayed block on its own (migrations/014).
INGEST_TABLE = "events_in"
SESSIONS_TABLE = "sessions"  # fed from events by a materialized view (migrations/002)
SESSION_PAGES_TABLE = "session_pages"  # the same, per (session, path) (migrations/004)
EVENT_HOURS_TABLE = "event_hours"  # per project and hour, by event time (migrations/005)
#: Every event but a page view without properties (migrations 006 and 008).
REPORT_EVENTS_TABLE = "report_events"
#: The events copied into REPORT_EVENTS_TABLE (as in its materialized view).
REPORT_EVENTS_WHERE = f"(name != 'page_view' OR notEmpty(properties)) AND {COUNTED_SQL}"
#: The sessions with an event outside the day of their start and the next (migrations/012).
LONG_SESSIONS_TABLE = "long_sessions"
#: The sessions with an event on the day after the day of their start (migrations/021).
NEXT_DAY_SESSIONS_TABLE = "next_day_sessions"
#: One row per page measurement (engagement, web_vitals) with typed figures (migrations/013).
PAGE_MEASUREMENTS_TABLE = "page_measurements"
#: One row per purchase event with its revenue, currency and items typed (migrations/024).
PURCHASES_TABLE = "purchases"
#: Every table that holds rows of a project (the rollups' tables: svc.storage.rollups).
PROJECT_TABLES = (
    EVENTS_TABLE,
    SESSIONS_TABLE,
    SESSION_PAGES_TABLE,
    EVENT_HOURS_TABLE,
    REPORT_EVENTS_TABLE,
    LONG_SESSIONS_TABLE,
    NEXT_DAY_SESSIONS_TABLE,
    PAGE_MEASUREMENTS_TABLE,
    PURCHASES_TABLE,
    "session_rollups",
    "rolled_sessions",
    "visitor_steps",
    "rollup_days",
    "retention_horizons",  # svc.retention (migrations/020)
    "snapshot_days",  # svc.storage.snapshots (migrations/016): its rows name the others'
    "usage_months",  # the events received per month, the quota's (migrations/022)
)
