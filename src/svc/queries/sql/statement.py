"""A statement: SQL text and the values it binds (never written into the text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries.plan import Facts, Plan
from svc.schema.measurements import COUNTED_SQL

#: A project's events in the range (``{project}``, ``{start}``, ``{end}``).
RANGE_WHERE = (
    "project_id = {project:String} AND ts >= {start:DateTime64(3, 'UTC')} "
    "AND ts < {end:DateTime64(3, 'UTC')}"
)
#: A project's events in the range that count: not page measurements (engagement,
#: web_vitals: svc.schema.measurements), which no count of events or sessions reads. Every
#: report over ``events`` reads these; the export reads :data:`RANGE_WHERE`.
COUNTED_WHERE = f"{RANGE_WHERE} AND {COUNTED_SQL}"


@dataclass
class Statement:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)


def bound(plan: Plan, facts: Facts, **own: Any) -> dict[str, Any]:
    """The values a statement of ``plan`` and ``facts`` binds, and its ``own``."""
    return {**plan.params, **facts.params(plan), **own}


def statement(sql: str, plan: Plan, facts: Facts, **own: Any) -> Statement:
    return Statement(sql, bound(plan, facts, **own))
