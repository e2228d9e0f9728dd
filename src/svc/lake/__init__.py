"""The raw-event lake: each project's events of each finished UTC day as one Parquet file
(GET /export's columns), with a manifest, in a directory or an S3-compatible bucket.

:mod:`.places` (a directory or a bucket, by keys), :mod:`.writer` (one day's file and
manifest), :mod:`.schedule` (the service's background writer: which days are due or stale).
docs/operations.md, "Raw-event lake", says how to use it.
"""
