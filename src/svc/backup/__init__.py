"""Backups of a running service and their restore into an empty data directory.

A backup is a directory ``<to>/<name>/`` (``catalog``), taken by the server itself, which
holds the embedded store's lock (``take``): the event store through ClickHouse's ``BACKUP
DATABASE ... TO File(...)`` (a differential one, ``base_backup``, against the newest full
backup in the same place), the SQLite metadata through SQLite's online backup API (without the
daily salts), the spool segments not loaded yet (copied: they are framed and checksummed), the
admin token's hash, and ``manifest.json`` with what it holds and its counts, written last.
``restore`` rebuilds a data directory from one, offline. docs/operations.md says how to use
them.
"""
