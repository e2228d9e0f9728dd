-- The daily rollups gain the custom properties (svc.storage.rollups, _PROPERTY_DAY_SQL): a row
-- per key and value under the dimension 'prop:<key>', and a 'prop-skipped' row naming each
-- key with too many values that day to roll up. Every day is rolled up again, as migration 9
-- did; until a day's new version is written, readers take it from the session rows.
TRUNCATE TABLE IF EXISTS rollup_days
