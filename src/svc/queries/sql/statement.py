"""A statement: SQL text and the values it binds (never written into the text)."""

from __future__ import annotations

import re
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


#: A value's name in SQL text (``{name:Type}``).
_PARAMETER = re.compile(r"\{(\w+):")


def statement(sql: str, plan: Plan, facts: Facts, **own: Any) -> Statement:
    """``sql`` with the values of ``plan``, ``facts`` and ``own`` it names, and no others:
    the client formats every value it is given, in Python (the facts of GET /metrics over
    100M events, ~4,000 ids of crossing sessions: 4 ms a statement, even unused)."""
    named = set(_PARAMETER.findall(sql))
    return Statement(sql, {k: v for k, v in bound(plan, facts, **own).items() if k in named})
