-- `visitor_steps` sorted by the day's most common step keys first. Each row gets `rank_key`:
-- the ranks on its day of its four most common distinct step keys (0 for the key most of the
-- day's visitors have, by the day's `step_visitors` rows in session_rollups: per step key,
-- its visitors), in ascending order, 16 bits each (a rank past 65,534 counts as 65,535), and
-- the table is sorted by it after the day. The visitors with a funnel's first two steps, when
-- those are common (a home page, a pricing page), then lie in few granules, and reading the
-- step keys first (PREWHERE) skips the times of the others: sorted by visitor they were
-- spread over every granule. Over 30 days of 100M events (29M visitor-days), the statement
-- of the visitors with `/` and `/pricing` and their levels: 1.9-2.0 s -> 0.5-1.0 s; with two
-- keys ranked 10th and 11th 1.37 -> 0.77 s, 100th and 1st 1.28 -> 0.56 s. The ranks as an
-- array in the sorting key cost a day's rollup 1.2 s more (arrays compared while its 1M rows
-- are sorted); packed in one number, the rows' statement 1.0-1.1 s against 0.8-1.0 s.
--
-- The rows are derived: the table is made again, empty, and the days' `visitor_steps`
-- marker rows go with it, so that the first rollup pass after start writes every rolled
-- day's rows anew (svc.storage.rollups.Rollups.fill_added_rows: ~3 s a day of 3.3M events),
-- with their `step_visitors` rows; until a day has them a funnel reads its events.
DROP TABLE IF EXISTS visitor_steps;

CREATE TABLE IF NOT EXISTS visitor_steps
(
    project_id      LowCardinality(String),
    session_day     Date,
    version         UInt64,
    visitor_id      UInt64,
    ts              Array(DateTime('UTC')),
    keys            Array(UInt32),
    rank_key        UInt64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(session_day)
ORDER BY (project_id, session_day, version, rank_key);

DELETE FROM session_rollups WHERE dimension IN ('visitor_steps', 'step_visitors');
