"""Retention: how long each project's raw events and daily rollups are kept (``policy``), the
job that deletes the rest (``job``), and what a report says of the days it reaches before
the raw events (``notice``)."""
