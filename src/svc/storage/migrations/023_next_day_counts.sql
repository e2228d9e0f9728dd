-- The page views and events of each session of `next_day_sessions` on the day after its start.
-- A session there and not in `long_sessions` has every event on its day or the next, so at
-- the start of a UTC range these are its events in the range (the rest, its outside ones, are
-- its total less them), and at the end its events outside it. A report without filters on
-- events then corrects for the sessions that cross an end of a UTC range from these rows and
-- the sessions table, instead of reading the events of the day before the range for them
-- (svc.queries.sql.sessions.outside_statement: over 30 days of 100M events, the few thousand
-- crossing sessions' ids picked out every granule of the day's 3.3M events, ~60 ms a report).
--
-- Sums, unlike the max kept so far: the table now has the deduplication window of the other
-- tables fed from `events_in` (migrations/014), which drops a replayed block. The rows of the
-- events stored before this migration are written anew (again after a crash: nothing is
-- inserted while the migrations run), keyed by their events' start as the view keys them,
-- as migration 21 did (a store whose sessions were rebuilt from the events gets its rows
-- keyed likewise at its next rebuild: EventStore.rebuild_next_day_sessions).
ALTER TABLE next_day_sessions
    ADD COLUMN IF NOT EXISTS pageviews SimpleAggregateFunction(sum, UInt64),
    ADD COLUMN IF NOT EXISTS events SimpleAggregateFunction(sum, UInt64);

ALTER TABLE next_day_sessions MODIFY SETTING non_replicated_deduplication_window = 100000;

DROP VIEW IF EXISTS next_day_sessions_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS next_day_sessions_mv TO next_day_sessions AS
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    max(ts) AS last_ts,
    countIf(name = 'page_view') AS pageviews,
    count() AS events
FROM events_in
WHERE toDate(ts) = toDate(session_start) + 1 AND name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id;

TRUNCATE TABLE next_day_sessions;

INSERT INTO next_day_sessions (project_id, session_day, session_id, last_ts, pageviews, events)
SELECT project_id, toDate(session_start) AS session_day, session_id, max(ts),
    countIf(name = 'page_view'), count()
FROM events
WHERE toDate(ts) = toDate(session_start) + 1 AND name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id
SETTINGS insert_deduplicate = 0
