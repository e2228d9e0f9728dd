"""What the saved resources share: ids, names, the bound per project, unknown fields, rows."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, Table, func, insert, select

from svc.errors import Conflict, InvalidRequest, NotFound
from svc.meta.store import MetaStore
from svc.timeutil import now_ms

#: At most this many of each resource per project (a 409 past it).
MAX_PER_PROJECT = 100
#: At most this many characters in a name.
MAX_NAME = 100


def new_id(prefix: str) -> str:
    """A random id, ``<prefix>_`` and 20 hex digits."""
    return f"{prefix}_{secrets.token_hex(10)}"


def check_fields(body: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """400 naming the first unknown field of ``body`` (in sorted order)."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidRequest(f"unknown field {unknown[0]!r}", field=unknown[0])


def check_name(value: Any, field: str = "name") -> str:
    """A name: a string of 1 to :data:`MAX_NAME` characters once trimmed, else 400."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"`{field}` is required: a non-empty string", field=field)
    name = value.strip()
    if len(name) > MAX_NAME:
        raise InvalidRequest(f"`{field}` has at most {MAX_NAME} characters", field=field)
    return name


def check_room(conn: Connection, table: Table, project_id: str, what: str) -> None:
    """409 when the project has :data:`MAX_PER_PROJECT` rows in ``table`` already."""
    count = conn.scalar(
        select(func.count()).select_from(table).where(table.c.project_id == project_id)
    )
    if int(count or 0) >= MAX_PER_PROJECT:
        raise Conflict(f"a project has at most {MAX_PER_PROJECT} {what}")


def check_project(meta: MetaStore, project_id: str) -> None:
    """404 when the project does not exist."""
    meta.get_project(project_id)


def row_of(conn: Connection, table: Table, project_id: str, item_id: str, what: str) -> Any:
    """The row ``item_id`` of the project in ``table``; 404 naming ``what`` when it has none."""
    row = conn.execute(
        select(table).where(table.c.id == item_id, table.c.project_id == project_id)
    ).first()
    if row is None:
        raise NotFound(f"no {what} {item_id!r} in this project")
    return row


def insert_row(
    meta: MetaStore,
    table: Table,
    project_id: str,
    prefix: str,
    what: str,
    plural: str,
    values: Mapping[str, Any],
) -> Any:
    """Save a new row of the project in ``table`` with ``values`` (a new ``<prefix>_`` id and
    its times) and read it back; 404 for an unknown project, 409 past
    :data:`MAX_PER_PROJECT` (``plural`` names the rows in its message)."""
    check_project(meta, project_id)
    now = now_ms()
    item_id = new_id(prefix)
    with meta.engine.begin() as conn:
        check_room(conn, table, project_id, plural)
        conn.execute(
            insert(table).values(
                id=item_id, project_id=project_id, created_at=now, updated_at=now, **values
            )
        )
        return row_of(conn, table, project_id, item_id, what)


def json_list(text: str) -> list[str]:
    """A JSON list of strings as stored."""
    value = json.loads(text)
    return [str(v) for v in value]
