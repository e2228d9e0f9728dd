"""SQL of ``svcm import``'s server-side path (``svc.imports.store.StoreSink``), bound parameters
only, like every statement of :mod:`svc.queries.sql`."""

from __future__ import annotations

from datetime import UTC, datetime

from svc.queries.sql import Statement


def stored_event_ids(project_id: str, lo_ms: int, hi_ms: int, event_ids: list[str]) -> Statement:
    """The ``event_ids`` a project has stored already with ``ts`` in ``[lo_ms, hi_ms]``."""
    sql = (
        "SELECT DISTINCT event_id FROM events WHERE project_id = {project:String} "
        "AND ts >= {lo:DateTime64(3, 'UTC')} AND ts <= {hi:DateTime64(3, 'UTC')} "
        "AND event_id IN {ids:Array(String)}"
    )
    params = {"project": project_id, "lo": _utc(lo_ms), "hi": _utc(hi_ms), "ids": event_ids}
    return Statement(sql, params)


def _utc(ms: int) -> datetime:
    """A naive UTC datetime, as the store's client binds ``DateTime64(3, 'UTC')``."""
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)
