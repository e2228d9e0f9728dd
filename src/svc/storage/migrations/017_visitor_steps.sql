-- Per rolled-up day and version, one row per visitor of the day's sessions (a stored visitor
-- id belongs to one day): the time (seconds) and the step key (svc.schema.steps) of each of
-- their counted events, in no order. A funnel without filters reads the rolled days from
-- here (svc.queries.conversions): ClickHouse's windowFunnel per row (arrayReduce), for the
-- visitors with a first step and a later one, instead of grouping every matching event by
-- visitor (over 30 days of 100M events: ~17M visitors' states, 4.3 s in five passes).
-- Written with the day's rollups and under their version (svc.storage.rollups); the days
-- rolled up before this table get their rows at the first pass after start, with a
-- `visitor_steps` marker row in session_rollups (as `start_hour` rows got theirs).
CREATE TABLE IF NOT EXISTS visitor_steps
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64,
    visitor_id      UInt64,
    ts              Array(DateTime('UTC')),
    keys            Array(UInt32)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, version, visitor_id);
