"""What every query is about: one project, a date range in a time zone, and filters.

:class:`QueryScope` builds the SQL pieces every report shares, with bound parameters only:
the WHERE clause of the range and event filters, and the *sessions table*, one row per session
with an event in the range that passes the filters:

``session_id, visitor, pv, ev`` (page views and events that pass the event filters),
``all_pv, all_ev`` (the session's page views and events in the range, for bounces),
``first_ts, last_ts, dur`` (ms), and any extra session columns asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries.dates import DateRange
from svc.queries.filters import Filter


@dataclass
class QueryScope:
    project_id: str
    rng: DateRange
    filters: list[Filter] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.params.update(
            project=self.project_id,
            start=self.rng.start_utc.replace(tzinfo=None),
            end=self.rng.end_utc.replace(tzinfo=None),
            tz=self.rng.tz,
        )
        self._event_conditions: list[str] = []
        self._session_conditions: list[str] = []
        for i, f in enumerate(self.filters):
            self.params.update(dict(f.params))
            if f.dimension.level == "event":
                sql, values = f.condition(f.dimension.column, f"fv{i}")
                self._event_conditions.append(sql)
            else:
                sql, values = f.condition(f.dimension.session_expr(), f"fv{i}")
                self._session_conditions.append(sql)
            self.params.update(values)

    def bind(self, name: str, value: Any) -> str:
        """Bind ``value`` as parameter ``name``; returns the name."""
        self.params[name] = value
        return name

    @property
    def range_where(self) -> str:
        return (
            "project_id = {project:String} AND ts >= {start:DateTime64(3, 'UTC')} "
            "AND ts < {end:DateTime64(3, 'UTC')}"
        )

    @property
    def event_filter(self) -> str:
        """The event filters as one condition ('1' when there are none)."""
        return " AND ".join(f"({c})" for c in self._event_conditions) or "1"

    @property
    def has_session_filters(self) -> bool:
        return bool(self._session_conditions)

    @property
    def has_filters(self) -> bool:
        return bool(self._session_conditions or self._event_conditions)

    def sessions(self, extra: dict[str, str] | None = None) -> str:
        """The sessions table (see the module docstring); ``extra`` maps alias -> session
        expression."""
        ef = self.event_filter
        cols = [
            "session_id",
            "any(visitor_id) AS visitor",
            f"countIf(name = 'page_view' AND {ef}) AS pv"
            if ef != "1"
            else "countIf(name = 'page_view') AS pv",
            f"countIf({ef}) AS ev" if ef != "1" else "count() AS ev",
            "countIf(name = 'page_view') AS all_pv",
            "count() AS all_ev",
            "min(ts) AS first_ts",
            "max(ts) AS last_ts",
            "dateDiff('millisecond', min(ts), max(ts)) AS dur",
        ]
        cols += [f"{expr} AS {alias}" for alias, expr in (extra or {}).items()]
        having = ["ev > 0", *(f"({c})" for c in self._session_conditions)]
        return (
            f"SELECT {', '.join(cols)} FROM events WHERE {self.range_where} "
            f"GROUP BY session_id HAVING {' AND '.join(having)}"
        )

    def events_where(self) -> str:
        """WHERE for event-level queries: range, event filters, and (with session filters)
        membership in a session that passes them."""
        where = f"{self.range_where} AND {self.event_filter}"
        if self.has_session_filters:
            where += f" AND session_id IN (SELECT session_id FROM ({self.sessions()}))"
        return where


#: Aggregates over the sessions table, shared by every report that shows session metrics.
SESSION_AGGREGATES = (
    "uniqExact(visitor) AS visitors, count() AS sessions, sum(pv) AS pageviews, "
    "sum(ev) AS events, countIf(all_pv = 1 AND all_ev = 1) AS bounces, "
    "countIf(all_pv > 0) AS sessions_with_pv, sum(dur) AS duration_ms"
)


def session_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON metrics of one aggregate row (see :data:`SESSION_AGGREGATES`)."""
    sessions = int(row["sessions"])
    with_pv = int(row["sessions_with_pv"])
    return {
        "visitors": int(row["visitors"]),
        "sessions": sessions,
        "pageviews": int(row["pageviews"]),
        "events": int(row["events"]),
        "bounceRate": percent(int(row["bounces"]), with_pv),
        "avgSessionDuration": round(int(row["duration_ms"]) / 1000 / sessions, 1)
        if sessions
        else 0.0,
    }


def percent(part: int, whole: int) -> str:
    """``"12.3%"``: one decimal and a percent sign; ``"0.0%"`` when ``whole`` is 0."""
    return f"{100 * part / whole:.1f}%" if whole else "0.0%"
