-- One row per (session, page): its page views and events on that path, so that page-level
-- reports (a breakdown by page) take the session figures from the sessions table instead of
-- grouping every event by session at read time. Keyed like the sessions table, by the UTC
-- day of the session's start (`session_start`), and fed the same way: a materialized view
-- folds each inserted block of events, the AggregatingMergeTree folds the partial rows as
-- parts merge, queries read it with FINAL, and a replayed spool segment is dropped here too.
-- The rows of the events stored before this migration are written by
-- EventStore.rebuild_session_pages once it has run.
CREATE TABLE IF NOT EXISTS session_pages
(
    project_id      LowCardinality(String),
    session_day     Date,
    session_id      UInt64,
    path            String,
    pageviews       SimpleAggregateFunction(sum, UInt64),
    events          SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, session_id, path)
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS session_pages_mv TO session_pages AS
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    path,
    countIf(name = 'page_view') AS pageviews,
    count() AS events
FROM events
GROUP BY project_id, session_day, session_id, path;

-- The daily rollups gain the page dimension: every day is rolled up again (readers fall back
-- to the sessions table for a day until its new version is written). Their table is made
-- anew with `version` in its key: as a ReplacingMergeTree keyed without it, a merge could
-- replace a day's current rows with those of a newer computation before `rollup_days` named
-- the newer version, and a reader in between found the day empty. Versions no longer current
-- are deleted by svc.storage.rollups.
TRUNCATE TABLE IF EXISTS rollup_days;

DROP TABLE IF EXISTS session_rollups;

CREATE TABLE session_rollups
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
ENGINE = MergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, dimension, session_day, value, version)
