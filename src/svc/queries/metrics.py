"""GET /metrics: the seed's aggregate (page views, sessions, bounce rate, traffic sources)
and the fields beside it, for a project, a date range and filters.

Definitions: a page view is an event named ``page_view``; sessions are the sessions with an
event in the range (that passes the filters); a bounce is a session with exactly one page view
and no other event; ``bounceRate`` is bounces over sessions with a page view;
``trafficSources`` counts sessions by the source of their first event in the range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from svc.queries.dimensions import DIMENSIONS
from svc.queries.plan import Facts, Needs, Plan, Query, plan
from svc.queries.run import Runner
from svc.queries.shape import percent
from svc.queries.sql import breakdowns as breakdown_sql
from svc.queries.sql import sessions as session_sql
from svc.queries.sql import snapshots as snapshot_sql
from svc.queries.sql.statement import Statement
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
        return percent(self.bounces, self.sessions_with_pageview)

    def add(self, row: dict[str, Any]) -> None:
        """Add the figures of a row of totals (the session rows' ROLLUP row, a rollup's sums:
        ``sessions``, ``pageviews``, ``events``, ``bounces``, ``sessions_with_pv``,
        ``duration_ms`` and ``visitors``, which add up over days)."""
        self.sessions += int(row["sessions"])
        self.pageviews += int(row["pageviews"])
        self.events += int(row["events"])
        self.bounces += int(row["bounces"])
        self.sessions_with_pageview += int(row["sessions_with_pv"])
        self.duration_ms += int(row["duration_ms"])
        self.visitors += int(row["visitors"])

    def take_sessions(self, row: dict[str, Any], visitors: int) -> None:
        """Take away the sessions of a row of totals (``sessions``, ``bounces``,
        ``sessions_with_pv``, ``duration_ms``) and ``visitors`` of theirs: sessions a filter
        drops whole. Their page views and events are taken by the caller."""
        self.sessions -= int(row["sessions"])
        self.bounces -= int(row["bounces"])
        self.sessions_with_pageview -= int(row["sessions_with_pv"])
        self.duration_ms -= int(row["duration_ms"])
        self.visitors -= visitors

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


def query_metrics(store: EventStore, query: Query) -> Metrics:
    p = plan(query)
    runner = Runner(store)
    if p.may_read_rolled_sessions and p.rolled_value is None:
        facts = runner.facts(p, Needs(edges=True, rolled_sessions=True))
        if facts.rolled:
            return _with_rolled_sessions(runner, p, facts)
        return _from_rows(runner.named(breakdown_sql.metrics(p, facts)))
    needs = Needs(edges=True, rollups=True, less_dropped=True, one_value=True, last_day=True)
    facts = runner.facts(p, needs)
    if p.rolled_value is not None and facts.rolled:
        return _with_value_rollups(runner, p, facts)
    if p.rolled_event is not None and facts.rolled:
        rolled = _with_event_rollups(runner, p, facts)
        if rolled is not None:
            return rolled
        facts = runner.facts(p, Needs(edges=True))  # a rolled day lacks its rows yet
    if p.filters and not p.drops_reported_events:
        return _from_rows(runner.named(breakdown_sql.metrics(p, facts)))
    return _with_rollups(runner, p, facts)


def _from_rows(rows: list[dict[str, Any]]) -> Metrics:
    result = Metrics()
    for row in rows:
        src = row["src"]
        if src == "":
            result.add(row)
        else:
            result.traffic_sources[src] = int(row["sessions"])
    return result


def _ranked(sources: dict[str, int]) -> dict[str, int]:
    """Traffic sources, most sessions first (then by name)."""
    return dict(sorted(sources.items(), key=lambda kv: (-kv[1], kv[0])))


def _with_rollups(runner: Runner, p: Plan, facts: Facts) -> Metrics:
    """Without filters, or with one that drops only reported events: the days wholly inside
    the range from the daily rollups (less what the filter drops; without filters, the last
    day too when the range ends at a UTC midnight, less its sessions' events after the end:
    over 100M events the read of that day's ~1M sessions, ~180 ms), and without filters the
    days not rolled up yet from their snapshots (svc.storage.snapshots), the rest from the
    session rows. Every figure adds up over days, visitors too (a stored visitor id belongs to one
    day: svc.ingestion.identity.stored_visitor_id)."""
    result = Metrics()
    sources: dict[str, int] = {}
    summing = []  # rows of sums per dimension ('' the totals, source) and value
    rolled = session_sql.rollup_sums(p, facts, ["", "source"]) if facts.rolled else None
    if facts.snapshots:  # the days not rolled up yet (svc.queries.sql.snapshots)
        summing.append(snapshot_sql.sums(p, facts, rolled))
        if facts.changed:  # sessions events reached since: their rows now, less those kept
            summing.append(snapshot_sql.changes(p, facts))
    elif rolled is not None:
        summing.append(rolled)
    dropping = []  # with a filter that drops reported events: what it drops from rolled days
    if facts.rolled and p.filters:
        dropping = (
            [session_sql.rollup_sums(p, facts, _dropped_dimensions(p.dropped_event))]
            if p.dropped_event is not None
            else _dropped_statements(p, facts)
        )
    # the days neither rolled up nor snapshot from the session rows
    rest, *results = runner.together(breakdown_sql.metrics(p, facts), *summing, *dropping)
    for row in (row for rows in results[: len(summing)] for row in rows):
        if row["dimension"] == snapshot_sql.SEEN:  # visitors the snapshots counted already
            result.visitors -= int(row["visitors"])
        elif row["dimension"] == "":
            result.add(row)
        else:
            sources[row["value"]] = sources.get(row["value"], 0) + int(row["sessions"])
    for row in rest:
        if row["src"] == "":  # the rollup row
            result.add(row)
        else:
            sources[row["src"]] = sources.get(row["src"], 0) + int(row["sessions"])
    if dropping:
        read = results[len(summing) :]
        if p.dropped_event is not None:
            rows = read[0]
            if _take_rolled_dropped(p.dropped_event, len(facts.rolled), result, sources, rows):
                read = []
            else:  # a rolled day lacks its ``event_only`` rows yet
                read = runner.together(*_dropped_statements(p, facts))
        if read:
            gone, dropped = read
            _take_dropped(runner, p, facts, result, sources, gone=gone, dropped=dropped[0])
    if not p.filters:  # the last day may be rolled up: its sessions' events after the end
        pageviews, events = facts.after_end(p)
        result.pageviews -= pageviews
        result.events -= events
    # (a snapshot's source may lose its last session to a change)
    result.traffic_sources = _ranked({k: n for k, n in sources.items() if n > 0})
    return result


def _with_rolled_sessions(runner: Runner, p: Plan, facts: Facts) -> Metrics:
    """Under filters on the page and session dimensions: the rolled days from the rollups'
    section rows when the filters are on the page alone and match one section's paths
    (:attr:`Facts.section`: its totals and its rows by source), else from the sessions of
    ``rolled_sessions`` that pass them; the rest from the session rows. Every figure adds up
    over days, as in :func:`_with_rollups` (30 days of 100M events under
    ``page:contains:/blog``: 30 s from the session rows of every day)."""
    if facts.section is not None:
        rolled = [
            session_sql.section_sums(p, facts, ""),
            session_sql.section_sums(p, facts, "source"),
        ]
    else:
        rolled = [breakdown_sql.rolled_metrics(p, facts)]
    rest, *sums = runner.together(breakdown_sql.metrics(p, facts), *rolled)
    result = _from_rows(rest)
    sources = dict(result.traffic_sources)
    if facts.section is not None:
        totals, by_source = sums
        rows = [*({**r, "src": ""} for r in totals), *({**r, "src": r["value"]} for r in by_source)]
    else:
        rows = sums[0]
    for row in rows:
        if row["src"] == "":
            result.add(row)
        else:
            sources[row["src"]] = sources.get(row["src"], 0) + int(row["sessions"])
    result.traffic_sources = _ranked({k: n for k, n in sources.items() if n > 0})
    return result


def _with_value_rollups(runner: Runner, p: Plan, facts: Facts) -> Metrics:
    """With one filter that is one value of a session dimension (:attr:`Plan.rolled_value`):
    the rolled days from that value's rows of the daily rollups, their traffic sources (when
    the dimension is not the source) from ``rolled_sessions``, the rest from the session
    rows. Every figure adds up over days, as in :func:`_with_rollups`."""
    assert p.rolled_value is not None
    dimension, value = p.rolled_value
    statements = [
        breakdown_sql.metrics(p, facts),
        session_sql.rollup_sums(p, facts, [dimension], value),
    ]
    if dimension != "source":
        statements.append(session_sql.rolled_sources(p, facts))
    rest, sums, *sources_rows = runner.together(*statements)
    result = _from_rows(rest)
    sources = dict(result.traffic_sources)
    for row in sums:
        result.add(row)
        if dimension == "source":
            sources[value] = sources.get(value, 0) + int(row["sessions"])
    for row in sources_rows[0] if sources_rows else ():
        sources[row["value"]] = sources.get(row["value"], 0) + int(row["sessions"])
    result.traffic_sources = _ranked(sources)
    return result


def _with_event_rollups(runner: Runner, p: Plan, facts: Facts) -> Metrics | None:
    """With one filter that is ``event:is`` one name (:attr:`Plan.rolled_event`): the rolled
    days from that name's ``event`` rows of the daily rollups, whose figures are those the
    session rows count for a session wholly in the range, and their traffic sources from its
    ``event_source:<name>`` rows; the rest from the session rows. None when a rolled day lacks
    those rows (rolled up before they existed, until :meth:`svc.storage.rollups.Rollups.
    fill_added_rows` has run): the report then reads every day from the session rows."""
    name = p.rolled_event
    assert name is not None
    by_source = f"event_source:{name}"
    rest, sums = runner.together(
        breakdown_sql.metrics(p, facts),
        session_sql.rollup_sums(p, facts, ["event", by_source, "event_source"]),
    )
    # the marker rows' sessions are 1 each: the rolled days that have the rows by source
    marked = sum(int(r["sessions"]) for r in sums if r["dimension"] == "event_source")
    if marked != len(facts.rolled):
        return None
    result = _from_rows(rest)
    sources = dict(result.traffic_sources)
    for row in sums:
        if row["dimension"] == "event" and row["value"] == name:
            result.add(row)
        elif row["dimension"] == by_source:
            sources[row["value"]] = sources.get(row["value"], 0) + int(row["sessions"])
    result.traffic_sources = _ranked(sources)
    return result


def _dropped_statements(p: Plan, facts: Facts) -> list[Statement]:
    """What the one dropping filter drops from the rolled days, from the session rows and
    the report events: the sessions it drops whole (per source), and its page views and
    events (:func:`_take_dropped`)."""
    return [
        session_sql.gone_sessions(p, facts, DIMENSIONS["source"]),
        session_sql.dropped_events(p, facts),
    ]


def _dropped_dimensions(name: str) -> list[str]:
    """The rollup rows of what ``event:is_not:<name>`` drops from a rolled day: the name's
    ``event`` row (its events), its ``event_only`` row (the sessions of that name's events
    alone, with the visitors who have no other session) and their sources, and the
    ``event_only`` marker row (svc.storage.rollups)."""
    return ["event", "event_only", f"event_only_source:{name}"]


def _take_rolled_dropped(
    name: str,
    rolled_days: int,
    result: Metrics,
    sources: dict[str, int],
    rows: list[dict[str, Any]],
) -> bool:
    """Take from the figures of the rolled days what ``event:is_not:<name>`` drops from them,
    from their rollup rows (:func:`_dropped_dimensions`). False, and nothing taken, when a
    rolled day lacks its ``event_only`` rows (rolled up before they existed, until
    :meth:`svc.storage.rollups.Rollups.fill_added_rows` has run)."""
    marked = sum(
        int(r["sessions"]) for r in rows if (r["dimension"], r["value"]) == ("event_only", "")
    )
    if marked != rolled_days:
        return False
    for row in rows:
        dimension, value = row["dimension"], row["value"]
        if dimension == "event" and value == name:
            result.pageviews -= int(row["pageviews"])
            result.events -= int(row["events"])
        elif dimension == "event_only" and value == name:
            result.take_sessions(row, visitors=int(row["visitors"]))
        elif dimension != "event" and dimension != "event_only":  # the sources
            _take_source(sources, value, int(row["sessions"]))
    return True


def _take_source(sources: dict[str, int], value: str, sessions: int) -> None:
    """``sessions`` fewer of source ``value``; a source left with none goes (a rollup a late
    event has not reached yet may lack the source)."""
    left = sources.get(value, 0) - sessions
    if left > 0:
        sources[value] = left
    else:
        sources.pop(value, None)


def _take_dropped(
    runner: Runner,
    p: Plan,
    facts: Facts,
    result: Metrics,
    sources: dict[str, int],
    gone: list[dict[str, Any]],
    dropped: dict[str, Any],
) -> None:
    """Take from the figures of the rolled days what the filter drops from them: its page
    views and events, and the sessions it drops whole (every event of theirs), with their
    bounces, duration, source and visitors, but those visitors who keep another session."""
    result.pageviews -= int(dropped["pageviews"])
    result.events -= int(dropped["events"])
    for row in gone:
        sessions = int(row["sessions"])
        if row["value"] != "":
            _take_source(sources, row["value"], sessions)
        elif sessions:  # the ROLLUP row
            kept = runner.named(session_sql.kept_visitors(p, facts))[0]["visitors"]
            result.take_sessions(row, visitors=int(row["visitors"]) - int(kept))
