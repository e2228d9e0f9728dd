-- Page measurements (issue 20): the `engagement` and `web_vitals` events of the browser
-- script's extensions (svc.schema.measurements). They stay in `events` (export, import, the
-- lake and retention read them there) but are not interactions: every table that counts
-- sessions, page views or events leaves them out, so a page view followed by its
-- `engagement` is still a bounce, and its visit lasts no longer. (Such events stored before
-- this migration, by the extensions' builds of the same unreleased version, stay counted in
-- the derived tables; `svcm import` rebuilds a project's without them.)
ALTER TABLE sessions_mv MODIFY QUERY
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    any(visitor_id) AS visitor_id,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    countIf(name = 'page_view') AS pageviews,
    count() AS events,
    maxIf(path, ts = session_start) AS entry_page,
    max((ts, path)) AS exit,
    maxIf(hostname, ts = session_start) AS hostname,
    maxIf(source, ts = session_start) AS source,
    maxIf(channel, ts = session_start) AS channel,
    maxIf(referrer_host, ts = session_start) AS referrer_host,
    maxIf(utm_source, ts = session_start) AS utm_source,
    maxIf(utm_medium, ts = session_start) AS utm_medium,
    maxIf(utm_campaign, ts = session_start) AS utm_campaign,
    maxIf(utm_content, ts = session_start) AS utm_content,
    maxIf(utm_term, ts = session_start) AS utm_term,
    maxIf(country, ts = session_start) AS country,
    maxIf(region, ts = session_start) AS region,
    maxIf(city, ts = session_start) AS city,
    maxIf(browser, ts = session_start) AS browser,
    maxIf(browser_version, ts = session_start) AS browser_version,
    maxIf(os, ts = session_start) AS os,
    maxIf(os_version, ts = session_start) AS os_version,
    maxIf(device, ts = session_start) AS device
FROM events
WHERE name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id;

ALTER TABLE session_pages_mv MODIFY QUERY
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    path,
    countIf(name = 'page_view') AS pageviews,
    count() AS events
FROM events
WHERE name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id, path;

ALTER TABLE event_hours_mv MODIFY QUERY
SELECT
    project_id,
    toStartOfHour(ts) AS hour,
    countIf(name = 'page_view') AS pageviews,
    count() AS events,
    uniqExactState(visitor_id) AS visitors
FROM events
WHERE name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, hour;

ALTER TABLE report_events_mv MODIFY QUERY
SELECT * FROM events
WHERE (name != 'page_view' OR notEmpty(properties)) AND name NOT IN ('engagement', 'web_vitals');

ALTER TABLE long_sessions_mv MODIFY QUERY
SELECT
    project_id,
    toDate(session_start) AS session_day,
    session_id,
    min(ts) AS first_ts,
    max(ts) AS last_ts
FROM events
WHERE (toDate(ts) < toDate(session_start) OR toDate(ts) > toDate(session_start) + 1)
    AND name NOT IN ('engagement', 'web_vitals')
GROUP BY project_id, session_day, session_id;

-- One row per page measurement, with its figures in typed columns, for the per-page reports
-- (svc.queries.measurements): they read these rows alone, never every event. The event's
-- columns are those of `events` (the filters of every report apply as they are), ordered
-- as there; a column added to `events` must be added here too (as to report_events).
-- A figure the event does not carry is NULL (ClickHouse's aggregates skip it).
CREATE TABLE IF NOT EXISTS page_measurements AS events;

ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS engaged_ms Nullable(UInt32);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS scroll_pct Nullable(UInt8);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS ttfb Nullable(UInt32);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS fcp Nullable(UInt32);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS lcp Nullable(UInt32);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS inp Nullable(UInt32);
ALTER TABLE page_measurements ADD COLUMN IF NOT EXISTS cls Nullable(Float32);

CREATE MATERIALIZED VIEW IF NOT EXISTS page_measurements_mv TO page_measurements AS
SELECT *,
    toUInt32OrNull(properties['engaged_ms']) AS engaged_ms,
    toUInt8OrNull(properties['scroll_pct']) AS scroll_pct,
    toUInt32OrNull(properties['ttfb']) AS ttfb,
    toUInt32OrNull(properties['fcp']) AS fcp,
    toUInt32OrNull(properties['lcp']) AS lcp,
    toUInt32OrNull(properties['inp']) AS inp,
    toFloat32OrNull(properties['cls']) AS cls
FROM events
WHERE name IN ('engagement', 'web_vitals');

-- The page measurements stored before (emptied first: a crash before this migration is
-- recorded runs it again).
TRUNCATE TABLE page_measurements;

INSERT INTO page_measurements
SELECT *,
    toUInt32OrNull(properties['engaged_ms']),
    toUInt8OrNull(properties['scroll_pct']),
    toUInt32OrNull(properties['ttfb']),
    toUInt32OrNull(properties['fcp']),
    toUInt32OrNull(properties['lcp']),
    toUInt32OrNull(properties['inp']),
    toFloat32OrNull(properties['cls'])
FROM events
WHERE name IN ('engagement', 'web_vitals')
