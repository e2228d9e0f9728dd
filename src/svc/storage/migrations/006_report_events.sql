-- The events of the revenue and error reports (`purchase` and `exception`) again, in a table of
-- their own with the same columns, key and settings: those reports read their properties from
-- it instead of the properties column of every event (purchases are spread over every granule
-- of the events table, so it was read nearly whole). Fed by a materialized view, deduplicated
-- on a replayed spool segment like the other derived tables; the events stored before this
-- migration are copied by EventStore.rebuild_report_events once it has run. A column added to
-- `events` later must be added here too.
CREATE TABLE IF NOT EXISTS report_events AS events;

CREATE MATERIALIZED VIEW IF NOT EXISTS report_events_mv TO report_events AS
SELECT * FROM events WHERE name IN ('purchase', 'exception')
