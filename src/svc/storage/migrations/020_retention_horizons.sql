-- How far back each project's data is kept (svc.retention): the first UTC day whose raw rows
-- (events, report events, sessions, session pages, rolled sessions, long sessions) are kept,
-- and the first whose daily rollups (session rollups, rolled-up days, event hours) are. Written
-- by the retention job after it deleted what is older; a horizon only moves forward (readers
-- take the latest row). The reads answer the days before `raw_from` from the rollups alone,
-- and the rollups never compute such a day again (its sessions are gone). Numbered 20, apart
-- from the derived tables' migrations, since it is the retention's own.
CREATE TABLE IF NOT EXISTS retention_horizons
(
    project_id      LowCardinality(String),
    raw_from        Date,
    rollups_from    Date,
    applied_at      DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY project_id
