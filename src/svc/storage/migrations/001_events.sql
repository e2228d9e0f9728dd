-- Every accepted event, one row each. Partitioned by month, ordered for per-project
-- time-range queries. Batches are inserted with a deduplication token, so the
-- non-replicated deduplication window must be on.
CREATE TABLE IF NOT EXISTS events
(
    project_id      LowCardinality(String),
    ts              DateTime64(3, 'UTC'),
    received_at     DateTime64(3, 'UTC'),
    event_id        String,
    name            LowCardinality(String),
    session_id      UInt64,
    visitor_id      UInt64,
    hostname        LowCardinality(String),
    path            String,
    url             String,
    referrer        String,
    referrer_host   LowCardinality(String),
    source          LowCardinality(String),
    channel         LowCardinality(String),
    utm_source      LowCardinality(String),
    utm_medium      LowCardinality(String),
    utm_campaign    String,
    utm_content     String,
    utm_term        String,
    click_id        String,
    properties      Map(String, String),
    browser         LowCardinality(String),
    browser_version LowCardinality(String),
    os              LowCardinality(String),
    os_version      LowCardinality(String),
    device          LowCardinality(String),
    screen_width    UInt16,
    country         LowCardinality(String),
    region          LowCardinality(String),
    city            String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (project_id, toDate(ts), session_id, ts)
SETTINGS non_replicated_deduplication_window = 100000, index_granularity = 8192
