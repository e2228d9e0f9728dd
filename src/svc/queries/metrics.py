"""GET /metrics: the seed's aggregate (page views, sessions, bounce rate, traffic sources)
and the fields beside it, for a project and a date range.

Definitions: a page view is an event named ``page_view``; sessions are the sessions with an
event in the range; a bounce is a session with exactly one page view and no other event;
``bounceRate`` is bounces over sessions with a page view; ``trafficSources`` counts sessions by
the source of their first event in the range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries import sql
from svc.queries.dates import DateRange
from svc.storage.events import EventStore


@dataclass
class Metrics:
    pageviews: int = 0
    sessions: int = 0
    bounces: int = 0
    sessions_with_pageview: int = 0
    visitors: int = 0
    events: int = 0
    duration_ms: int = 0
    traffic_sources: dict[str, int] = field(default_factory=dict)

    @property
    def bounce_rate(self) -> str:
        """One decimal and a percent sign; ``"0.0%"`` with no sessions."""
        if not self.sessions_with_pageview:
            return "0.0%"
        return f"{100 * self.bounces / self.sessions_with_pageview:.1f}%"

    def to_json(self) -> dict[str, Any]:
        return {
            "pageviews": self.pageviews,
            "sessions": self.sessions,
            "bounceRate": self.bounce_rate,
            "trafficSources": self.traffic_sources,
            "visitors": self.visitors,
            "events": self.events,
            "bounces": self.bounces,
            "avgSessionDuration": round(self.duration_ms / 1000 / self.sessions, 1)
            if self.sessions
            else 0.0,
            "viewsPerSession": round(self.pageviews / self.sessions, 2) if self.sessions else 0.0,
        }


def query_metrics(store: EventStore, project_id: str, rng: DateRange) -> Metrics:
    stmt = sql.metrics_by_source(project_id, rng)
    result = Metrics()
    for src, pageviews, events, sessions, bounces, with_pv, visitors, duration in store.query(
        stmt.sql, stmt.params
    ):
        if src == "":
            result.pageviews, result.events, result.sessions = (
                int(pageviews),
                int(events),
                int(sessions),
            )
            result.bounces, result.sessions_with_pageview = int(bounces), int(with_pv)
            result.visitors, result.duration_ms = int(visitors), int(duration)
        else:
            result.traffic_sources[src] = int(sessions)
    return result
