"""The durable spool between the HTTP handlers and the event store."""
