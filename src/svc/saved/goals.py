"""Saved goals: a custom event (optionally with a property match) or a page path or pattern.

A goal is ``{id, name, kind: "event"|"page", event?, page?, property?: {key, value}}``:
``kind: "event"`` names the event (``event``), and may ask that one of its properties have a
value (``property``, compared as ``filter=prop:<key>:is:<value>`` compares it, the value
taken whole: a ``|`` in it is no alternative); ``kind: "page"`` names a path or a pattern with
``*`` (``page``). Its goal string, ``goal``, is what GET /metrics/goals takes
(``event:<name>``, ``page:<pattern>``), and :func:`query_conversions` answers for the saved
goals what that route answers for their strings: the same figures (a goal with a property:
those of its string under the property's filter, over the visitors in scope without it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update

from svc.errors import InvalidRequest
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.queries import conversions
from svc.queries.dimensions import dimension
from svc.queries.filters import MAX_VALUE, Filter
from svc.queries.hourly import hours_conversions
from svc.queries.plan import Query
from svc.queries.shape import percent
from svc.saved.common import (
    check_fields,
    check_name,
    insert_row,
    row_of,
)
from svc.schema.limits import MAX_EVENT_NAME
from svc.storage.events import EventStore
from svc.timeutil import iso_ms, now_ms

_t = tables.saved_goals
FIELDS = ("name", "kind", "event", "page", "property")
KINDS = ("event", "page")
#: At most this many characters in a page path or pattern.
MAX_PAGE = 1000


@dataclass(frozen=True)
class Goal:
    id: str
    project_id: str
    name: str
    kind: str  # event, page
    target: str  # the event's name, or the page's path pattern
    prop_key: str | None
    prop_value: str | None
    created_at: int
    updated_at: int

    @property
    def goal(self) -> str:
        """The goal as GET /metrics/goals takes it: ``event:<name>`` or ``page:<pattern>``."""
        return f"{self.kind}:{self.target}"

    def described(self) -> dict[str, Any]:
        """What a goal is, as it is written: name, kind, event or page, property."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, self.kind: self.target}
        if self.prop_key is not None:
            out["property"] = {"key": self.prop_key, "value": self.prop_value}
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.described(),
            "goal": self.goal,
            "createdAt": iso_ms(self.created_at),
            "updatedAt": iso_ms(self.updated_at),
        }

    def property_filter(self) -> Filter | None:
        """The filter of the goal's property match (``prop:<key>:is:<value>``), or None."""
        if self.prop_key is None or self.prop_value is None:
            return None
        dim, params = dimension(f"prop:{self.prop_key}", "goal_prop", "property")
        return Filter(dim, "is", (self.prop_value,), tuple(params.items()))


def check(body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a goal written as ``body`` (every field, as POST takes it); 400 naming
    the field at fault: an unknown one, a missing or bad name, kind, event or page, a
    ``property`` on a page goal or not ``{key, value}`` of non-empty strings."""
    check_fields(body, FIELDS)
    name = check_name(body.get("name"))
    kind = body.get("kind")
    if kind not in KINDS:
        raise InvalidRequest("`kind` must be event or page", field="kind")
    other = "page" if kind == "event" else "event"
    if body.get(other) is not None:
        raise InvalidRequest(f"a goal of kind {kind} has no `{other}`", field=other)
    target = body.get(kind)
    limit = MAX_EVENT_NAME if kind == "event" else MAX_PAGE
    if not isinstance(target, str) or not target or len(target) > limit:
        raise InvalidRequest(
            f"`{kind}` is required with kind {kind}: 1 to {limit} characters", field=kind
        )
    if any(ord(c) < 0x20 for c in target):
        raise InvalidRequest(f"`{kind}` holds a control character", field=kind)
    if kind == "page" and not target.startswith(("/", "*")):
        raise InvalidRequest(
            "`page` is a path (or a pattern with *): /pricing, /blog/*", field=kind
        )
    conversions.parse_goal(f"{kind}:{target}", kind)
    prop_key = prop_value = None
    prop = body.get("property")
    if prop is not None:
        if kind != "event":
            raise InvalidRequest("only an event goal has a `property`", field="property")
        if not isinstance(prop, dict) or set(prop) != {"key", "value"}:
            raise InvalidRequest("`property` is {key, value}", field="property")
        prop_key, prop_value = prop["key"], prop["value"]
        if not isinstance(prop_key, str) or not isinstance(prop_value, str) or not prop_value:
            raise InvalidRequest(
                "`property`'s key and value are non-empty strings", field="property"
            )
        if len(prop_value) > MAX_VALUE:
            raise InvalidRequest(
                f"`property`'s value has at most {MAX_VALUE} characters", field="property"
            )
        dimension(f"prop:{prop_key}", "goal_prop", "property")  # 400 for a bad key
    return {
        "name": name,
        "kind": kind,
        "target": target,
        "prop_key": prop_key,
        "prop_value": prop_value,
    }


def list_goals(meta: MetaStore, project_id: str) -> list[Goal]:
    """The project's goals, oldest first (none for an unknown project)."""
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(_t).where(_t.c.project_id == project_id).order_by(_t.c.created_at, _t.c.id)
        )
        return [_goal(r) for r in rows]


def create(meta: MetaStore, project_id: str, body: Mapping[str, Any]) -> Goal:
    """Save a goal (:func:`check`); 404 for an unknown project, 409 past the bound."""
    return _goal(insert_row(meta, _t, project_id, "goal", "goal", "goals", check(body)))


def change(meta: MetaStore, project_id: str, goal_id: str, body: Mapping[str, Any]) -> Goal:
    """Change some fields of a goal (404 when the project has no such goal). A field sent
    ``null`` is removed (``property``); a new ``kind`` takes its own target from ``body``
    (the old one's event, page and property are dropped)."""
    check_fields(body, FIELDS)
    with meta.engine.begin() as conn:
        current = _goal(row_of(conn, _t, project_id, goal_id, "goal"))
        merged = current.described()
        if "kind" in body and body["kind"] != current.kind:
            merged = {"name": current.name}
        merged.update(body)
        values = check({k: v for k, v in merged.items() if v is not None})
        conn.execute(update(_t).where(_t.c.id == goal_id).values(updated_at=now_ms(), **values))
        return _goal(row_of(conn, _t, project_id, goal_id, "goal"))


def remove(meta: MetaStore, project_id: str, goal_id: str) -> Goal:
    """Delete a goal; the deleted goal (404 when the project has no such goal)."""
    with meta.engine.begin() as conn:
        goal = _goal(row_of(conn, _t, project_id, goal_id, "goal"))
        conn.execute(delete(_t).where(_t.c.id == goal_id))
    return goal


def query_conversions(store: EventStore, query: Query, goals: Sequence[Goal]) -> dict[str, Any]:
    """GET /metrics/goals' answer for saved goals: ``visitors`` in scope and per goal (in the
    order given) its ``id``, ``name``, ``goal``, ``kind``, ``property``, ``visitors``,
    ``events`` and ``conversionRate``: the figures GET /metrics/goals gives for its goal
    string (read :data:`~svc.queries.conversions.MAX_GOALS` at a time); for a goal with a
    property, those of its string with the property's filter added to the scope, its rate
    over the visitors in scope without it. ``saved`` is true."""
    found: dict[str, dict[str, Any]] = {}
    total: int | None = None
    plain = [g for g in goals if g.prop_key is None]
    for start in range(0, len(plain), conversions.MAX_GOALS):
        batch = plain[start : start + conversions.MAX_GOALS]
        answer = conversions.query_goals(store, query, [g.goal for g in batch])
        total = int(answer["visitors"])
        found.update((g.id, row) for g, row in zip(batch, answer["goals"], strict=True))
    for g in goals:
        extra = g.property_filter()
        if extra is not None:
            narrowed = dataclasses.replace(query, filters=(*query.filters, extra))
            found[g.id] = conversions.query_goals(store, narrowed, [g.goal])["goals"][0]
    if total is None:  # the visitors in scope, as a goal's answer counts them
        total = int(conversions.query_goals(store, query, ["event:page_view"])["visitors"])
    rows = []
    for g in goals:
        row = found[g.id]
        rows.append(
            {
                "id": g.id,
                "name": g.name,
                "goal": g.goal,
                "kind": g.kind,
                **({"property": g.described()["property"]} if g.prop_key is not None else {}),
                "visitors": int(row["visitors"]),
                "events": int(row["events"]),
                "conversionRate": percent(int(row["visitors"]), total),
            }
        )
    return {"visitors": total, "goals": rows, "saved": True}


def hourly_conversions(
    store: EventStore, project_id: str, goals: Sequence[Goal], hours: list[datetime]
) -> dict[str, dict[datetime, int]]:
    """Per goal's id, its converting visitors in each hour-long span starting at one of
    ``hours`` (aware, distinct): what GET /metrics/goals gives as the goal's ``visitors``
    for a range of that hour (the visitors with a matching event in it; for a goal with a
    property, a matching event that has it), keyed by the datetimes given, 0 when none. One
    statement for every goal and hour (none without goals)."""
    if not goals or not hours:
        return {g.id: {} for g in goals}
    targets = [
        (
            g.kind,
            g.target,
            (g.prop_key, g.prop_value)
            if g.prop_key is not None and g.prop_value is not None
            else None,
        )
        for g in goals
    ]
    found = hours_conversions(store, project_id, hours, targets)
    return {
        g.id: {h: per_hour.get(h, 0) for h in hours}
        for g, per_hour in zip(goals, found, strict=True)
    }


def _goal(row: Any) -> Goal:
    return Goal(
        id=row.id,
        project_id=row.project_id,
        name=row.name,
        kind=row.kind,
        target=row.target,
        prop_key=row.prop_key,
        prop_value=row.prop_value,
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
    )
