"""A statement: SQL text and the values it binds (never written into the text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries.plan import Facts, Plan

#: A project's events in the range (``{project}``, ``{start}``, ``{end}``).
RANGE_WHERE = (
    "project_id = {project:String} AND ts >= {start:DateTime64(3, 'UTC')} "
    "AND ts < {end:DateTime64(3, 'UTC')}"
)


@dataclass
class Statement:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)


def bound(plan: Plan, facts: Facts, **own: Any) -> dict[str, Any]:
    """The values a statement of ``plan`` and ``facts`` binds, and its ``own``."""
    return {**plan.params, **facts.params(plan), **own}


def statement(sql: str, plan: Plan, facts: Facts, **own: Any) -> Statement:
    return Statement(sql, bound(plan, facts, **own))
