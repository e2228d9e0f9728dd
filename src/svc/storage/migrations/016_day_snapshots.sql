-- Snapshots of the days not rolled up yet (today, and yesterday for an hour): svc.storage.
-- snapshots. A day's rollup waits until its sessions have ended, so a range that ends today
-- read the whole day from the sessions table (FINAL over up to a million sessions of many
-- small parts: over 100M events, GET /metrics 260 ms instead of 115). Every few minutes the
-- day's sessions are copied as they stand into `snapshot_sessions`, and their sums into
-- `snapshot_sums` (as the rollups hold them: dimension '' the totals, `source` per source),
-- under a version: the time through which every event received was in the store. A report
-- takes the sums and corrects them with the sessions that events received since changed or
-- began (svc.queries.sql.snapshots): their rows now, less their rows in the snapshot.
--
-- The three tables are partitioned by version, so that a snapshot no longer current goes at
-- the cost of dropping a partition (a day's snapshot is taken again every few minutes all day).
-- `snapshot_days` names the current version of each day, once its rows are written: a
-- snapshot cut short by a crash is never read, and its partition is dropped later.
CREATE TABLE IF NOT EXISTS snapshot_sessions
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64,
    session_id      UInt64,
    visitor_id      UInt64,
    pageviews       UInt64,
    events          UInt64,
    duration_ms     UInt64,
    source          LowCardinality(String)
)
ENGINE = MergeTree
PARTITION BY version
ORDER BY (project_id, session_day, session_id);

CREATE TABLE IF NOT EXISTS snapshot_sums
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64,
    dimension       LowCardinality(String),
    value           String,
    sessions        UInt64,
    pageviews       UInt64,
    events          UInt64,
    bounces         UInt64,
    with_pageview   UInt64,
    duration_ms     UInt64,
    visitors        UInt64
)
ENGINE = MergeTree
PARTITION BY version
ORDER BY (project_id, session_day, dimension, value);

CREATE TABLE IF NOT EXISTS snapshot_days
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64
)
ENGINE = MergeTree
PARTITION BY version
ORDER BY (project_id, session_day);
