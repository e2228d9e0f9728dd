"""Saved funnels: ``{id, name, steps, window?}``, the steps as GET /metrics/funnel takes its
``step`` parameters (2 to 8, each 1 to 10 alternatives separated by ``|``), the window in
seconds (1 to 30 days; absent: the route's default, 1800). GET /metrics/funnel with
``funnel=<id>`` reads a saved funnel (:func:`chosen`) as it reads the same ``step`` list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update

from svc.errors import ApiError, InvalidRequest, NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.queries import conversions
from svc.queries.plan import Query
from svc.saved.common import (
    check_fields,
    check_name,
    insert_row,
    json_list,
    row_of,
)
from svc.storage.events import EventStore
from svc.timeutil import iso_ms, now_ms

_t = tables.saved_funnels
FIELDS = ("name", "steps", "window")
MIN_STEPS, MAX_STEPS = 2, 8
#: GET /metrics/funnel's window (seconds) when neither the request nor the funnel sets one.
DEFAULT_WINDOW = 1800
#: At most this many characters in a step.
MAX_STEP = 2000
MAX_WINDOW = 30 * 86400


@dataclass(frozen=True)
class Funnel:
    id: str
    project_id: str
    name: str
    steps: tuple[str, ...]
    window: int | None  # seconds; None: GET /metrics/funnel's default
    created_at: int
    updated_at: int

    def described(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "steps": list(self.steps)}
        if self.window is not None:
            out["window"] = self.window
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.described(),
            "createdAt": iso_ms(self.created_at),
            "updatedAt": iso_ms(self.updated_at),
        }


def check(body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a funnel written as ``body``; 400 naming the field at fault (``steps``
    for a step GET /metrics/funnel would refuse)."""
    check_fields(body, FIELDS)
    name = check_name(body.get("name"))
    steps = body.get("steps")
    if (
        not isinstance(steps, list)
        or not MIN_STEPS <= len(steps) <= MAX_STEPS
        or not all(isinstance(s, str) and 0 < len(s) <= MAX_STEP for s in steps)
    ):
        raise InvalidRequest(
            f"`steps` is a list of {MIN_STEPS} to {MAX_STEPS} steps (strings as GET "
            "/metrics/funnel takes `step`)",
            field="steps",
        )
    for step in steps:
        try:
            conversions.parse_step(step)
        except ApiError as exc:
            raise InvalidRequest(f"`steps`: {exc.message}", field="steps") from exc
    window = body.get("window")
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_WINDOW
    ):
        raise InvalidRequest(f"`window` is whole seconds, 1 to {MAX_WINDOW}", field="window")
    return {"name": name, "steps": json.dumps(steps), "window_seconds": window}


def list_funnels(meta: MetaStore, project_id: str) -> list[Funnel]:
    """The project's funnels, oldest first."""
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(_t).where(_t.c.project_id == project_id).order_by(_t.c.created_at, _t.c.id)
        )
        return [_funnel(r) for r in rows]


def find(meta: MetaStore, project_id: str, funnel_id: str) -> Funnel | None:
    with meta.engine.connect() as conn:
        row = conn.execute(
            select(_t).where(_t.c.id == funnel_id, _t.c.project_id == project_id)
        ).first()
    return None if row is None else _funnel(row)


def create(meta: MetaStore, project_id: str, body: Mapping[str, Any]) -> Funnel:
    """Save a funnel (:func:`check`); 404 for an unknown project, 409 past the bound."""
    values = check(body)
    return _funnel(insert_row(meta, _t, project_id, "funnel", "funnel", "funnels", values))


def change(meta: MetaStore, project_id: str, funnel_id: str, body: Mapping[str, Any]) -> Funnel:
    """Change some fields of a funnel (``window: null``: back to the default); 404 when the
    project has no such funnel."""
    check_fields(body, FIELDS)
    with meta.engine.begin() as conn:
        current = _funnel(row_of(conn, _t, project_id, funnel_id, "funnel"))
        merged = {**current.described(), **body}
        values = check({k: v for k, v in merged.items() if v is not None})
        conn.execute(update(_t).where(_t.c.id == funnel_id).values(updated_at=now_ms(), **values))
        return _funnel(row_of(conn, _t, project_id, funnel_id, "funnel"))


def remove(meta: MetaStore, project_id: str, funnel_id: str) -> Funnel:
    """Delete a funnel; the deleted funnel (404 when the project has no such funnel)."""
    with meta.engine.begin() as conn:
        funnel = _funnel(row_of(conn, _t, project_id, funnel_id, "funnel"))
        conn.execute(delete(_t).where(_t.c.id == funnel_id))
    return funnel


def chosen(
    meta: MetaStore, project_id: str, funnel_id: str | None, steps: list[str]
) -> Funnel | None:
    """The saved funnel GET /metrics/funnel names with ``funnel`` (None without): 400 naming
    ``funnel`` when ``step`` is sent too, 404 naming it when the project has no such funnel."""
    if funnel_id is None:
        return None
    if steps:
        raise InvalidRequest("send `funnel` or `step`, not both", field="funnel")
    funnel = find(meta, project_id, funnel_id) if len(funnel_id) <= 40 else None
    if funnel is None:
        raise NotFound(f"no funnel {funnel_id!r} in this project", field="funnel")
    return funnel


def query_saved(
    store: EventStore, query: Query, funnel: Funnel, window: int | None = None
) -> dict[str, Any]:
    """GET /metrics/funnel's answer for a saved funnel under ``query``: its steps within
    ``window`` seconds (None: the funnel's own, else :data:`DEFAULT_WINDOW`), and ``funnel``
    ``{id, name}``. The route and the email reports both read a saved funnel through this."""
    chosen_window = window if window is not None else funnel.window or DEFAULT_WINDOW
    body = conversions.query_funnel(store, query, list(funnel.steps), chosen_window)
    body["funnel"] = {"id": funnel.id, "name": funnel.name}
    return body


def _funnel(row: Any) -> Funnel:
    return Funnel(
        id=row.id,
        project_id=row.project_id,
        name=row.name,
        steps=tuple(json_list(row.steps)),
        window=None if row.window_seconds is None else int(row.window_seconds),
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
    )
