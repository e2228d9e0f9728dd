-- The daily rollups gain the event name and the hostname (svc.storage.rollups,
-- _EVENT_DAY_SQL and _HOSTNAME_DAY_SQL): every day is rolled up again, as migration 4 did for
-- the page; until a day's new version is written, readers take it from the session rows.
TRUNCATE TABLE IF EXISTS rollup_days
