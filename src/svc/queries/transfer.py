"""The SQL of ``svcm import``'s server-side path (``svc.imports.store.StoreSink``), built in
:mod:`svc.queries.sql` like every statement of the query side."""

from __future__ import annotations

from svc.queries.sql import stored_event_ids

__all__ = ["stored_event_ids"]
