-- The sessions with an event outside the UTC day of their start and the day after: a session
-- longer than a day (a visitor active for days, a client that names one session for days) or
-- one with a late event from before its day. The reads find the sessions that cross an end of
-- a range near that end (the sessions table is keyed by the day of a session's start, and
-- nearly every session ends within a day of it); these are the others, a handful among
-- millions, found here without reading every session (svc.queries.plan).
--
-- One row per such session, keyed like the sessions table: `first_ts` and `last_ts` are the
-- times of its first and last event outside those two days (or of its first and last event
-- at all, for sessions rebuilt from imported events: EventStore.rebuild_sessions). Fed by a
-- materialized view that keeps only those events of each inserted block, so nearly every
-- insert writes nothing here; partial rows fold by min and max, which a replay or a second
-- run of this migration leaves as they are.
CREATE TABLE IF NOT EXISTS long_sessions
(
    project_id      LowCardinality(String),
    session_day     Date,
    session_id      UInt64,
    first_ts        SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    last_ts         SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (project_id, session_day, session_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS long_sessions_mv TO long_sessions AS
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    min(ts) AS first_ts,
    max(ts) AS last_ts
FROM events
WHERE toDate(ts) < toDate(session_start) OR toDate(ts) > toDate(session_start) + 1
GROUP BY project_id, session_day, session_id;

-- The sessions of the events stored before this migration.
INSERT INTO long_sessions
SELECT project_id, toDate(session_start) AS session_day, session_id, min(ts), max(ts)
FROM events
WHERE toDate(ts) < toDate(session_start) OR toDate(ts) > toDate(session_start) + 1
GROUP BY project_id, session_day, session_id
