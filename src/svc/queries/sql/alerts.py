"""The statements of traffic and goal alerts (svc.mail.alerts, svc.mail.goal_alerts): visitors
of given hours, in total or by one of a few columns, and the saved goals' converting visitors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from svc.queries.dimensions import dimension
from svc.queries.filters import Filter
from svc.queries.sql.goals import goal_condition
from svc.queries.sql.statement import Statement
from svc.schema.measurements import COUNTED_SQL

#: What an alert breaks the change down by: a name and its column of ``events``.
HOURLY_COLUMNS = {"total": "''", "source": "source", "page": "path", "country": "country"}


def hourly_visitors(project_id: str, hours: list[datetime], by: str) -> Statement:
    """Visitors in each of ``hours`` (aware starts of hour-long spans, any offset; at least
    one), by ``by`` (a key of :data:`HOURLY_COLUMNS`): rows (slot, value, visitors), ``slot``
    the 1-based index of the hour in ``hours`` (hours without events have no row)."""
    column = HOURLY_COLUMNS[by]
    starts = [int(h.timestamp()) for h in hours]
    first = min(hours).astimezone(UTC).replace(tzinfo=None)
    last = (max(hours) + timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    sql = (
        "SELECT arrayFirstIndex(s -> s <= toInt64(toUnixTimestamp(ts)) "
        "AND toInt64(toUnixTimestamp(ts)) < s + 3600, {starts:Array(Int64)}) AS slot, "
        f"{column} AS value, uniqExact(visitor_id) AS visitors "
        "FROM events WHERE project_id = {project:String} "
        "AND ts >= {start:DateTime64(3, 'UTC')} AND ts < {end:DateTime64(3, 'UTC')} "
        "AND slot > 0 GROUP BY slot, value"
    )
    return Statement(sql, {"project": project_id, "starts": starts, "start": first, "end": last})


#: A saved goal as :func:`hourly_goals` counts it: (kind, target) as GET /metrics/goals takes
#: it (svc.queries.conversions.parse_goal), and the property it asks for ((key, value) or None).
GoalTarget = tuple[str, str, tuple[str, str] | None]


def hourly_goals(project_id: str, hours: list[datetime], goals: Sequence[GoalTarget]) -> Statement:
    """Converting visitors of each goal in each of ``hours`` (as :func:`hourly_visitors`), in
    one statement: rows (slot, v0, v1, ...), ``v<i>`` the visitors with an event that counts
    (:data:`~svc.schema.measurements.COUNTED_SQL`) meeting goal ``i``'s condition
    (:func:`~svc.queries.sql.goals.goal_condition`, and for a property the condition of
    ``filter=prop:<key>:is:<value>``): GET /metrics/goals' count over that hour."""
    own: dict[str, Any] = {}
    cols = []
    for i, (kind, target, prop) in enumerate(goals):
        condition, values = goal_condition(kind, target, f"g{i}")
        own.update(values)
        if prop is not None:
            dim, params = dimension(f"prop:{prop[0]}", f"gk{i}", "property")
            sql, values = Filter(dim, "is", (prop[1],), tuple(params.items())).condition(
                dim.column, f"gv{i}"
            )
            own.update(params)
            own.update(values)
            condition = f"({condition}) AND {sql}"
        cols.append(f"uniqExactIf(visitor_id, {condition}) AS v{i}")
    starts = [int(h.timestamp()) for h in hours]
    first = min(hours).astimezone(UTC).replace(tzinfo=None)
    last = (max(hours) + timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    sql = (
        "SELECT arrayFirstIndex(s -> s <= toInt64(toUnixTimestamp(ts)) "
        "AND toInt64(toUnixTimestamp(ts)) < s + 3600, {starts:Array(Int64)}) AS slot, "
        f"{', '.join(cols)} FROM events WHERE project_id = {{project:String}} "
        "AND ts >= {start:DateTime64(3, 'UTC')} AND ts < {end:DateTime64(3, 'UTC')} "
        f"AND {COUNTED_SQL} AND slot > 0 GROUP BY slot"
    )
    return Statement(
        sql, {"project": project_id, "starts": starts, "start": first, "end": last, **own}
    )
