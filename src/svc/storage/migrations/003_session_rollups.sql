-- Daily rollups of the sessions table, for the reports that need no filter: per project, UTC
-- day of the sessions' start (session_day), dimension ('' for the totals, then every session
-- dimension: 'source', 'entry_page', 'country', ...) and value: sessions, page views, events,
-- bounces, sessions with a page view, duration, and visitors. Every figure adds up over days,
-- visitors too: a stored visitor id is mixed with the day its session began
-- (svc.ingestion.identity.stored_visitor_id), so no id is on two days. Written by svc.storage.rollups for days that are over,
-- again when late events change one; each computation of a day is a new `version`, and
-- `rollup_days` names the current version of each day: queries read only that one.
CREATE TABLE IF NOT EXISTS session_rollups
(
    project_id      LowCardinality(String),
    dimension       LowCardinality(String),
    session_day     Date,
    value           String,
    sessions        UInt64,
    pageviews       UInt64,
    events          UInt64,
    bounces         UInt64,
    with_pageview   UInt64,
    duration_ms     UInt64,
    visitors        UInt64,
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, dimension, session_day, value);

CREATE TABLE IF NOT EXISTS rollup_days
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, session_day);

-- Finding the days that late events changed reads only the recently received events.
ALTER TABLE events ADD INDEX IF NOT EXISTS received_at_minmax received_at TYPE minmax GRANULARITY 1;

ALTER TABLE events MATERIALIZE INDEX received_at_minmax;
