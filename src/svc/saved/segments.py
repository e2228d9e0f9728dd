"""Segments: saved filter sets, ``{id, name, filters, shared, ownerId}``.

``filters`` are filter strings as the read endpoints take ``filter`` (1 to 20, checked by
:func:`svc.queries.filters.parse_filters`: a 400 naming ``filters``). A segment is
**personal** (``shared: false``: its creator's, an account; nobody else sees it, the admin
token included: to anyone else it does not exist, 404) or **shared** with everyone who may
read the project (``ownerId`` is then its creator, an account, or null for a key's or the
admin token's). Who may write what is the handlers' (svc.http.saved); these functions take
the caller's account id (None: not an account) and show it what it may see.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, or_, select, update

from svc.errors import InvalidRequest, NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.queries.filters import MAX_FILTERS, parse_filters
from svc.saved.common import (
    check_fields,
    check_name,
    insert_row,
    json_list,
    row_of,
)
from svc.timeutil import iso_ms, now_ms

_t = tables.segments
FIELDS = ("name", "filters", "shared")


@dataclass(frozen=True)
class Segment:
    id: str
    project_id: str
    name: str
    filters: tuple[str, ...]
    shared: bool
    owner_id: str | None
    created_at: int
    updated_at: int

    def owned_by(self, account_id: str | None) -> bool:
        return account_id is not None and self.owner_id == account_id

    def visible_to(self, account_id: str | None) -> bool:
        """Shared, or the caller's own."""
        return self.shared or self.owned_by(account_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "filters": list(self.filters),
            "shared": self.shared,
            "ownerId": self.owner_id,
            "createdAt": iso_ms(self.created_at),
            "updatedAt": iso_ms(self.updated_at),
        }


def check(body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a segment written as ``body`` (``shared`` must be given); 400 naming
    the field at fault."""
    check_fields(body, FIELDS)
    name = check_name(body.get("name"))
    filters = body.get("filters")
    if (
        not isinstance(filters, list)
        or not 1 <= len(filters) <= MAX_FILTERS
        or not all(isinstance(f, str) for f in filters)
    ):
        raise InvalidRequest(
            f"`filters` is a list of 1 to {MAX_FILTERS} filter strings "
            "(<dimension>:<operator>:<value>)",
            field="filters",
        )
    parse_filters(filters, field="filters")
    shared = body.get("shared")
    if not isinstance(shared, bool):
        raise InvalidRequest("`shared` is true or false", field="shared")
    return {"name": name, "filters": json.dumps(filters), "shared": int(shared)}


def wants_shared(body: Mapping[str, Any], account_id: str | None) -> bool:
    """Whether a new segment of ``body`` is shared: ``shared`` as sent when it is a boolean;
    by default personal for an account, shared for a key or the admin token."""
    shared = body.get("shared")
    return shared if isinstance(shared, bool) else account_id is None


def list_visible(meta: MetaStore, project_id: str, account_id: str | None) -> list[Segment]:
    """The project's segments the caller sees (shared ones, and its own), oldest first."""
    visible = _t.c.shared == 1
    if account_id is not None:
        visible = or_(visible, _t.c.owner_id == account_id)
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(_t)
            .where(_t.c.project_id == project_id, visible)
            .order_by(_t.c.created_at, _t.c.id)
        )
        return [_segment(r) for r in rows]


def find_visible(
    meta: MetaStore, project_id: str, segment_id: str, account_id: str | None
) -> Segment | None:
    """The segment if the caller sees it, else None (another's personal segment too)."""
    with meta.engine.connect() as conn:
        row = conn.execute(
            select(_t).where(_t.c.id == segment_id, _t.c.project_id == project_id)
        ).first()
    segment = None if row is None else _segment(row)
    return segment if segment is not None and segment.visible_to(account_id) else None


def create(
    meta: MetaStore, project_id: str, body: Mapping[str, Any], account_id: str | None
) -> Segment:
    """Save a segment made by ``account_id`` (None: a key or the admin token, which make
    shared segments only: ``shared: false`` is a 400 naming ``shared``). 404 for an unknown
    project, 409 past the bound (personal segments count)."""
    values = check({"shared": wants_shared(body, account_id), **body})
    if not values["shared"] and account_id is None:
        raise InvalidRequest(
            "a personal segment is an account's: only a signed-in person makes one",
            field="shared",
        )
    row = insert_row(
        meta, _t, project_id, "seg", "segment", "segments", {**values, "owner_id": account_id}
    )
    return _segment(row)


def change(
    meta: MetaStore,
    project_id: str,
    segment_id: str,
    body: Mapping[str, Any],
    account_id: str | None,
) -> Segment:
    """Change some fields of a segment the caller sees (404 otherwise). A shared segment
    made personal becomes the caller's (an account's: else 400 naming ``shared``)."""
    check_fields(body, FIELDS)
    with meta.engine.begin() as conn:
        current = _segment(row_of(conn, _t, project_id, segment_id, "segment"))
        if not current.visible_to(account_id):
            raise NotFound(f"no segment {segment_id!r} in this project")
        merged = {
            "name": current.name,
            "filters": list(current.filters),
            "shared": current.shared,
            **body,
        }
        values = check(merged)
        owner = current.owner_id
        if current.shared and not values["shared"]:
            if account_id is None:
                raise InvalidRequest(
                    "a personal segment is an account's: only a signed-in person makes one",
                    field="shared",
                )
            owner = account_id
        conn.execute(
            update(_t)
            .where(_t.c.id == segment_id)
            .values(updated_at=now_ms(), owner_id=owner, **values)
        )
        return _segment(row_of(conn, _t, project_id, segment_id, "segment"))


def remove(meta: MetaStore, project_id: str, segment_id: str, account_id: str | None) -> Segment:
    """Delete a segment the caller sees; the deleted segment (404 otherwise)."""
    with meta.engine.begin() as conn:
        segment = _segment(row_of(conn, _t, project_id, segment_id, "segment"))
        if not segment.visible_to(account_id):
            raise NotFound(f"no segment {segment_id!r} in this project")
        conn.execute(delete(_t).where(_t.c.id == segment_id))
    return segment


def _segment(row: Any) -> Segment:
    return Segment(
        id=row.id,
        project_id=row.project_id,
        name=row.name,
        filters=tuple(json_list(row.filters)),
        shared=bool(row.shared),
        owner_id=row.owner_id,
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
    )
