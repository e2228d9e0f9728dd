-- One row per session, so that session figures (sessions, bounces, sources, entry and exit
-- pages, duration) are read without grouping the events by session at query time.
--
-- Each event carries `session_start`: the time of the first event ingestion saw in its session
-- (it never moves, even when a late event is earlier). The materialized view folds every
-- inserted block of events into partial session rows keyed by (project, UTC day of that start,
-- session); the AggregatingMergeTree folds the partial rows of a session into one as parts
-- merge, and queries read it with FINAL. The entry columns are those of the session's first
-- event (the one whose ts is session_start; every other event contributes '' to their max).
-- The sessions of the events stored before this migration are written by
-- EventStore.rebuild_sessions once it has run. A replayed spool segment is counted once here too: the view's blocks carry tokens derived
-- from the insert's deduplication token, and this table keeps a deduplication window.
ALTER TABLE events ADD COLUMN IF NOT EXISTS session_start DateTime64(3, 'UTC') DEFAULT ts;

CREATE TABLE IF NOT EXISTS sessions
(
    project_id      LowCardinality(String),
    session_day     Date,
    session_id      UInt64,
    visitor_id      SimpleAggregateFunction(any, UInt64),
    first_ts        SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    last_ts         SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    pageviews       SimpleAggregateFunction(sum, UInt64),
    events          SimpleAggregateFunction(sum, UInt64),
    entry_page      SimpleAggregateFunction(max, String),
    exit            SimpleAggregateFunction(max, Tuple(DateTime64(3, 'UTC'), String)),
    hostname        SimpleAggregateFunction(max, LowCardinality(String)),
    source          SimpleAggregateFunction(max, LowCardinality(String)),
    channel         SimpleAggregateFunction(max, LowCardinality(String)),
    referrer_host   SimpleAggregateFunction(max, LowCardinality(String)),
    utm_source      SimpleAggregateFunction(max, LowCardinality(String)),
    utm_medium      SimpleAggregateFunction(max, LowCardinality(String)),
    utm_campaign    SimpleAggregateFunction(max, String),
    utm_content     SimpleAggregateFunction(max, String),
    utm_term        SimpleAggregateFunction(max, String),
    country         SimpleAggregateFunction(max, LowCardinality(String)),
    region          SimpleAggregateFunction(max, LowCardinality(String)),
    city            SimpleAggregateFunction(max, String),
    browser         SimpleAggregateFunction(max, LowCardinality(String)),
    browser_version SimpleAggregateFunction(max, LowCardinality(String)),
    os              SimpleAggregateFunction(max, LowCardinality(String)),
    os_version      SimpleAggregateFunction(max, LowCardinality(String)),
    device          SimpleAggregateFunction(max, LowCardinality(String))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, session_id)
SETTINGS non_replicated_deduplication_window = 100000;

CREATE MATERIALIZED VIEW IF NOT EXISTS sessions_mv TO sessions AS
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    any(visitor_id) AS visitor_id,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    countIf(name = 'page_view') AS pageviews,
    count() AS events,
    maxIf(path, ts = session_start) AS entry_page,
    max((ts, path)) AS exit,
    maxIf(hostname, ts = session_start) AS hostname,
    maxIf(source, ts = session_start) AS source,
    maxIf(channel, ts = session_start) AS channel,
    maxIf(referrer_host, ts = session_start) AS referrer_host,
    maxIf(utm_source, ts = session_start) AS utm_source,
    maxIf(utm_medium, ts = session_start) AS utm_medium,
    maxIf(utm_campaign, ts = session_start) AS utm_campaign,
    maxIf(utm_content, ts = session_start) AS utm_content,
    maxIf(utm_term, ts = session_start) AS utm_term,
    maxIf(country, ts = session_start) AS country,
    maxIf(region, ts = session_start) AS region,
    maxIf(city, ts = session_start) AS city,
    maxIf(browser, ts = session_start) AS browser,
    maxIf(browser_version, ts = session_start) AS browser_version,
    maxIf(os, ts = session_start) AS os,
    maxIf(os_version, ts = session_start) AS os_version,
    maxIf(device, ts = session_start) AS device
FROM events
GROUP BY project_id, session_day, session_id;
