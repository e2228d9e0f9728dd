-- The sessions with an event on the UTC day after the day of their start, and the time of the
-- last such event: the sessions that cross a UTC midnight, a few thousand a day among a
-- million. A report over a range whose ends are UTC midnights corrects for the sessions that
-- cross an end (svc.queries.sql.sessions.near_crossing); it found them in the sessions table,
-- reading the last event of every session of the day before each end (over 30 days of 100M
-- events, 37-53 ms before every report). Here they are a read of a few rows; with
-- `long_sessions` (the events after the next day, and before the session's own) they give
-- each crossing session's span.
--
-- Keyed like the sessions table; partial rows fold by max, which a replayed block, a second
-- run of this migration or the rebuild of a project's sessions (EventStore.rebuild_sessions)
-- leaves as it is. Fed from `events_in` as every stored table is (migrations/014); the page
-- measurements are no session's events, as in the sessions table.
CREATE TABLE IF NOT EXISTS next_day_sessions
(
    project_id      LowCardinality(String),
    session_day     Date,
    session_id      UInt64,
    last_ts         SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, session_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS next_day_sessions_mv TO next_day_sessions AS
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    max(ts) AS last_ts
FROM events_in
WHERE toDate(ts) = toDate(session_start) + 1 AND name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id;

-- The sessions of the events stored before this migration, keyed by their events' start as
-- the view keys them. A store whose sessions were rebuilt from the events (imports, and the
-- benchmarks' generated stores: keyed by the day of their first event) gets these rows
-- keyed likewise at its next rebuild (EventStore.rebuild_next_day_sessions).
INSERT INTO next_day_sessions
SELECT project_id, toDate(session_start) AS session_day, session_id, max(ts)
FROM events
WHERE toDate(ts) = toDate(session_start) + 1 AND name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id
