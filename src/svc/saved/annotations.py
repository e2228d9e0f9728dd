"""Annotations: dated notes of a project, ``{id, date, day, text, createdBy, createdAt}``.

``date`` is a day (``YYYY-MM-DD``: that day of the project's time zone) or a moment (an ISO
8601 timestamp with ``Z`` or an offset; without one it is UTC), answered as written for a day
and for a moment as every time of the API (UTC, ``2026-03-02T03:30:00Z``); ``day`` is its
day in the project's time zone (the day itself for a day), the day the charts draw it on and
``from``/``to`` select by. ``text`` is 1 to :data:`MAX_TEXT` characters. ``createdBy`` is
who wrote it: an account's id, a key's id, or ``admin`` (the admin token).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import delete, select, update

from svc.errors import InvalidRequest
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.queries.dates import FIRST_DAY, LAST_DAY
from svc.saved.common import check_fields, insert_row, row_of
from svc.timeutil import iso_ms, now_ms

_t = tables.saved_annotations
FIELDS = ("date", "text")
#: At most this many characters in an annotation's text.
MAX_TEXT = 500


@dataclass(frozen=True)
class Annotation:
    id: str
    project_id: str
    day: str | None  # YYYY-MM-DD: a whole day
    at_ms: int | None  # a moment (ms, UTC)
    text: str
    created_by: str
    created_at: int
    updated_at: int

    @property
    def date(self) -> str:
        """As written: the day, or the moment in UTC as the API writes times."""
        return self.day if self.day is not None else str(iso_ms(self.at_ms))

    def local_day(self, tz: str) -> str:
        """Its day in the time zone ``tz`` (a day is its own)."""
        if self.day is not None:
            return self.day
        assert self.at_ms is not None
        return datetime.fromtimestamp(self.at_ms / 1000, _zone(tz)).date().isoformat()

    def to_json(self, tz: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "date": self.date,
            "day": self.local_day(tz),
            "text": self.text,
            "createdBy": self.created_by,
            "createdAt": iso_ms(self.created_at),
            "updatedAt": iso_ms(self.updated_at),
        }


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def parse_when(value: Any, field: str = "date") -> tuple[str | None, int | None]:
    """(day, None) for ``YYYY-MM-DD``, (None, ms) for a timestamp; 400 naming ``field``
    for anything else or a time outside 1990-2099."""
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        raise InvalidRequest(f"`{field}` is YYYY-MM-DD or an ISO 8601 timestamp", field=field)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = None
        else:
            moment = datetime.fromisoformat(value.replace("z", "Z"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            day = moment.astimezone(UTC).date()
    except ValueError:
        raise InvalidRequest(
            f"`{field}` is YYYY-MM-DD or an ISO 8601 timestamp, got {value[:40]!r}", field=field
        ) from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise InvalidRequest(f"`{field}` is between {FIRST_DAY} and {LAST_DAY}", field=field)
    if moment is None:
        return day.isoformat(), None
    return None, int(moment.timestamp() * 1000)


def parse_day(value: str | None, field: str) -> str | None:
    """A ``from``/``to`` of the list: YYYY-MM-DD, or None when absent; 400 naming it."""
    if not value:
        return None
    try:
        return date.fromisoformat(value).isoformat() if len(value) == 10 else _bad(field)
    except ValueError:
        return _bad(field)


def _bad(field: str) -> str:
    raise InvalidRequest(f"`{field}` is a day, YYYY-MM-DD", field=field)


def check(body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of an annotation written as ``body``; 400 naming the field at fault."""
    check_fields(body, FIELDS)
    day, at_ms = parse_when(body.get("date"))
    text = body.get("text")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise InvalidRequest(f"`text` is 1 to {MAX_TEXT} characters", field="text")
    return {"day": day, "at_ms": at_ms, "text": text.strip()}


def list_annotations(
    meta: MetaStore,
    project_id: str,
    tz: str,
    first: str | None = None,
    last: str | None = None,
) -> list[Annotation]:
    """The project's annotations whose day in ``tz`` is from ``first`` to ``last`` (each
    YYYY-MM-DD or None: unbounded on that side), by day, then by time of writing."""
    with meta.engine.connect() as conn:
        rows = conn.execute(select(_t).where(_t.c.project_id == project_id))
        found = [_annotation(r) for r in rows]
    out = [
        a
        for a in found
        if (first is None or a.local_day(tz) >= first) and (last is None or a.local_day(tz) <= last)
    ]
    return sorted(out, key=lambda a: (a.local_day(tz), a.at_ms or 0, a.created_at, a.id))


def create(
    meta: MetaStore, project_id: str, body: Mapping[str, Any], created_by: str
) -> Annotation:
    """Save an annotation written by ``created_by``; 404 for an unknown project, 409 past
    the bound."""
    values = {**check(body), "created_by": created_by[:64]}
    row = insert_row(meta, _t, project_id, "ann", "annotation", "annotations", values)
    return _annotation(row)


def change(
    meta: MetaStore, project_id: str, annotation_id: str, body: Mapping[str, Any]
) -> Annotation:
    """Change the date or text of an annotation; 404 when the project has no such one."""
    check_fields(body, FIELDS)
    with meta.engine.begin() as conn:
        current = _annotation(row_of(conn, _t, project_id, annotation_id, "annotation"))
        values = check({"date": current.date, "text": current.text, **body})
        conn.execute(
            update(_t).where(_t.c.id == annotation_id).values(updated_at=now_ms(), **values)
        )
        return _annotation(row_of(conn, _t, project_id, annotation_id, "annotation"))


def remove(meta: MetaStore, project_id: str, annotation_id: str) -> Annotation:
    """Delete an annotation; the deleted one (404 when the project has no such one)."""
    with meta.engine.begin() as conn:
        annotation = _annotation(row_of(conn, _t, project_id, annotation_id, "annotation"))
        conn.execute(delete(_t).where(_t.c.id == annotation_id))
    return annotation


def _annotation(row: Any) -> Annotation:
    return Annotation(
        id=row.id,
        project_id=row.project_id,
        day=row.day,
        at_ms=None if row.at_ms is None else int(row.at_ms),
        text=row.text,
        created_by=row.created_by,
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
    )
