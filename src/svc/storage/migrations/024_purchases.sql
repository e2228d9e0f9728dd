-- One row per `purchase` event, with its revenue, currency and items in typed columns, for
-- GET /metrics/revenue (svc.queries.commerce). The report read them from `report_events`, and
-- there the `properties` map of every reported event: over 30 days of 100M events (10.5M
-- reported events, 2.1M purchases) 0.9-1.0 s for each of its two statements. Here it reads
-- the purchases alone, and no map.
--
-- The event's columns are those of `events` (the filters of every report apply as they are),
-- ordered as there; a column added to `events` must be added here too (as to report_events
-- and page_measurements). The typed columns are the report's own expressions over the
-- properties, so it answers as before:
--   currency        upper(properties['currency'])
--   order_value     toFloat64OrZero(properties['value'])
--   item_ids        each item's JSONExtractString(item, 'item_id')
--   item_quantities each item's `quantity` (1 when it has none)
--   item_prices     each item's JSONExtractFloat(item, 'price')
CREATE TABLE IF NOT EXISTS purchases AS events;

ALTER TABLE purchases ADD COLUMN IF NOT EXISTS currency LowCardinality(String);
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS order_value Float64;
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS item_ids Array(String);
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS item_quantities Array(Float64);
ALTER TABLE purchases ADD COLUMN IF NOT EXISTS item_prices Array(Float64);

-- Fed from `events_in` as every stored table is (migrations/014); `CREATE TABLE ... AS
-- events` gave it the deduplication window that drops a replayed block.
CREATE MATERIALIZED VIEW IF NOT EXISTS purchases_mv TO purchases AS
SELECT *,
    upper(properties['currency']) AS currency,
    toFloat64OrZero(properties['value']) AS order_value,
    arrayMap(i -> JSONExtractString(i, 'item_id'), JSONExtractArrayRaw(properties['items']))
        AS item_ids,
    arrayMap(i -> if(JSONHas(i, 'quantity'), JSONExtractFloat(i, 'quantity'), 1),
        JSONExtractArrayRaw(properties['items'])) AS item_quantities,
    arrayMap(i -> JSONExtractFloat(i, 'price'), JSONExtractArrayRaw(properties['items']))
        AS item_prices
FROM events_in
WHERE name = 'purchase';

-- The purchases stored before (emptied first: a crash before this migration is recorded runs
-- it again; nothing is inserted while the migrations run). Written in blocks of at most 100,000
-- rows or 32 MiB: with ClickHouse's defaults (1M rows, 256 MiB) the copy of the 100M bench
-- store's 2.1M purchases peaked at 1.16 GB resident, with these at 0.53 GB (13.5 s, not 19).
TRUNCATE TABLE purchases;

INSERT INTO purchases
SELECT *,
    upper(properties['currency']),
    toFloat64OrZero(properties['value']),
    arrayMap(i -> JSONExtractString(i, 'item_id'), JSONExtractArrayRaw(properties['items'])),
    arrayMap(i -> if(JSONHas(i, 'quantity'), JSONExtractFloat(i, 'quantity'), 1),
        JSONExtractArrayRaw(properties['items'])),
    arrayMap(i -> JSONExtractFloat(i, 'price'), JSONExtractArrayRaw(properties['items']))
FROM events
WHERE name = 'purchase'
SETTINGS insert_deduplicate = 0, min_insert_block_size_rows = 100000,
    min_insert_block_size_bytes = 33554432
