"""The event store: ClickHouse through clickhouse-connect (embedded chDB or a server)."""
