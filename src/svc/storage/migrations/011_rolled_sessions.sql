-- The sessions of each rolled-up day, as the reports with filters read them (svc.storage.rollups,
-- _SESSIONS_DAY_SQL; svc.queries.sql.sessions.rolled_session_rows). The daily rollups
-- answer the reports without filters; a filter needs the sessions one by one, and for a
-- filter on the page the sessions table must be joined to its (session, page) rows: 536 ms
-- for a source breakdown filtered by `page:contains:/blog` over 10M events. Here a closed day
-- is written once, under the version of its rollups, in the shape such a report reads:
--
-- * the columns of the sessions table a filter or a breakdown names, under the same names
--   (`exit` is the exit page in a tuple, as there);
-- * `duration_ms` instead of the first and last times (the day is wholly inside the range);
-- * `multi`: whether the visitor has another session that day. A visitor is a person on one
--   day (svc.ingestion.identity.stored_visitor_id), so the visitors of some of these rows are
--   the rows with `multi = 0` plus the distinct visitors of the others: an exact count without
--   a set of every visitor;
-- * `page_hashes` and `event_hashes`: a 32-bit hash of the path of each page view and of each
--   other event, so that a filter on the page counts a session's matching page views and
--   events without a join (the hashes of the matching paths are worked out from the paths
--   first, and a collision between a matching and a non-matching path sends the report to
--   the sessions table instead).
--
-- Every day is rolled up again (readers take a day from the sessions table until it is).
CREATE TABLE IF NOT EXISTS rolled_sessions
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64,
    visitor_id      UInt64,
    multi           UInt8,
    pageviews       UInt32,
    events          UInt32,
    duration_ms     UInt64,
    entry_page      LowCardinality(String),
    exit_page       LowCardinality(String),
    exit            Tuple(DateTime64(3, 'UTC'), String) ALIAS tuple(toDateTime64(0, 3, 'UTC'), toString(exit_page)),
    hostname        LowCardinality(String),
    source          LowCardinality(String),
    channel         LowCardinality(String),
    referrer_host   LowCardinality(String),
    utm_source      LowCardinality(String),
    utm_medium      LowCardinality(String),
    utm_campaign    String,
    utm_content     String,
    utm_term        String,
    country         LowCardinality(String),
    region          LowCardinality(String),
    city            String,
    browser         LowCardinality(String),
    browser_version LowCardinality(String),
    os              LowCardinality(String),
    os_version      LowCardinality(String),
    device          LowCardinality(String),
    page_hashes     Array(UInt32),
    event_hashes    Array(UInt32)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, version);

TRUNCATE TABLE IF EXISTS rollup_days
