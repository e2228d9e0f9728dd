"""Metadata: projects, hashed keys, daily salts and usage, in SQLite or PostgreSQL."""
