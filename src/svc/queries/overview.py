"""Every project a caller may read, side by side (GET /overview, /overview/timeseries).

Each project is read in its own time zone over the same local days, exactly as its own
``GET /metrics?compare=previous_period`` and ``GET /metrics/timeseries`` read it (the same
query functions, the same :class:`~svc.queries.plan.Query`), so a row's figures are that
project's. What this module adds is the shape of the answer and its totals:

- a row: ``visitors``, ``visits`` (GET /metrics' ``sessions``), ``pageviews``, ``bounceRate``,
  ``visitDuration`` (``avgSessionDuration``, seconds) and ``change`` against the previous
  period of as many days (:func:`svc.queries.compare.change`: relative in percent, the bounce
  rate in percentage points, null with nothing to relate to);
- the totals: counts summed, visitors too (the visitors of two sites are two people: svc
  counts no one across projects), the bounce rate of all bounces over all sessions with a
  page view, the duration of all the sessions' time over all sessions; their change alike;
- the summed series: per bucket label (the same local days in every zone), the same sums.

Nothing here reads the store but :func:`read_project` and :func:`read_series`, which run in
a read's worker thread, one project each (svc.http.overview admits each as its project).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from svc.errors import InvalidRequest
from svc.queries import timeseries
from svc.queries.compare import change
from svc.queries.dates import FIRST_DAY, LAST_DAY, DateRange, is_known_zone, parse_range
from svc.queries.metrics import Metrics, query_metrics
from svc.queries.plan import Query
from svc.queries.shape import percent
from svc.storage.events import EventStore


class Project(Protocol):
    """What the overview reads of a project (svc.meta.store.Project has it; the read side
    does not import the metadata store)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def timezone(self) -> str: ...


#: The figures of a row, in the order the table shows them.
FIGURES = ("visitors", "visits", "pageviews", "bounceRate", "visitDuration")
#: What ``sort`` takes (``-`` before it: descending).
SORT_KEYS = ("name", *FIGURES)
DEFAULT_SORT = "-visitors"


@dataclass(frozen=True, slots=True)
class Sort:
    key: str
    descending: bool


def parse_sort(value: str | None) -> Sort:
    """``sort``: a figure or ``name``, ``-`` first for descending (default ``-visitors``); a
    400 naming ``sort`` otherwise."""
    raw = value or DEFAULT_SORT
    descending = raw.startswith("-")
    key = raw[1:] if descending else raw
    if key not in SORT_KEYS:
        raise InvalidRequest(
            f"`sort` must be one of {', '.join(SORT_KEYS)}, `-` first for descending",
            field="sort",
        )
    return Sort(key, descending)


def check_days(first: str | None, last: str | None, previous: bool) -> DateRange:
    """The local days ``first``..``last`` (``last`` default: today in UTC; each project's
    own range is :func:`range_of`): 400 naming ``from`` or ``to`` for a bad range, before any
    project is read; with ``previous``, naming ``from`` when the previous period (as many
    days before) leaves the days a range may name."""
    rng = parse_range(first, last, "UTC")
    before = rng.previous_period()
    if previous and not before.within_bounds:
        raise InvalidRequest(
            f"`from`: the previous period ({before.first} to {before.last}) the changes are "
            f"against is not within {FIRST_DAY} to {LAST_DAY}",
            field="from",
        )
    return rng


def zone_of(project: Project) -> str:
    """The zone a project's days are read in: its ``timezone``, or UTC for one saved with a
    zone the store does not know (GET /metrics reads those only with ``tz``)."""
    return project.timezone if is_known_zone(project.timezone) else "UTC"


def range_of(project: Project, first: str | None, last: str | None) -> DateRange:
    """The local days ``first``..``last`` in the project's zone (``last`` default: its today)."""
    return parse_range(first, last, zone_of(project))


@dataclass(frozen=True, slots=True)
class ProjectFigures:
    """One project's figures over the range and over the previous period."""

    project: Project
    rng: DateRange
    now: Metrics
    before: Metrics


def read_project(store: EventStore, project: Project, query: Query) -> ProjectFigures:
    """Reads ``query`` (one project, no filters) and its previous period, as GET /metrics
    with ``compare=previous_period`` does. In a read's worker thread."""
    previous = Query(query.project_id, query.rng.previous_period(), (), query.raw_from)
    now = query_metrics(store, query)
    before = query_metrics(store, previous)
    return ProjectFigures(project, query.rng, now, before)


def figures(m: Metrics) -> dict[str, Any]:
    """A row's figures of ``m``, as GET /metrics rounds them."""
    body = m.to_json()
    return {
        "visitors": m.visitors,
        "visits": m.sessions,
        "pageviews": m.pageviews,
        "bounceRate": body["bounceRate"],
        "visitDuration": body["avgSessionDuration"],
    }


def _changed(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    return {k: change(now[k], before[k]) for k in FIGURES}


def _sum(items: Iterable[Metrics]) -> Metrics:
    total = Metrics()
    for m in items:
        total.visitors += m.visitors
        total.sessions += m.sessions
        total.pageviews += m.pageviews
        total.bounces += m.bounces
        total.sessions_with_pageview += m.sessions_with_pageview
        total.duration_ms += m.duration_ms
        total.events += m.events
    return total


def _sort_value(row: dict[str, Any], key: str) -> Any:
    value = row[key]
    if key == "bounceRate":
        return float(value[:-1])
    if key == "name":
        return str(value)
    return value


def table(read: Sequence[ProjectFigures], sort: Sort) -> dict[str, Any]:
    """The answer of GET /overview: a row per project (``id``, ``name``, ``timezone``, its
    ``from`` and ``to``, the figures, ``change``, ``previous``: the previous period's
    figures), ordered by ``sort`` (ties by name, then id), and the ``totals`` with their
    ``change`` and ``previous``."""
    rows = []
    for f in read:
        now, before = figures(f.now), figures(f.before)
        rows.append(
            {
                "id": f.project.id,
                "name": f.project.name,
                "timezone": f.rng.tz,
                "from": f.rng.first.isoformat(),
                "to": f.rng.last.isoformat(),
                **now,
                "previous": before,
                "change": _changed(now, before),
            }
        )
    rows.sort(key=lambda r: (r["name"], r["id"]))
    rows.sort(key=lambda r: _sort_value(r, sort.key), reverse=sort.descending)
    now = figures(_sum(f.now for f in read))
    before = figures(_sum(f.before for f in read))
    totals = {**now, "previous": before, "change": _changed(now, before)}
    return {"sort": ("-" if sort.descending else "") + sort.key, "projects": rows, "totals": totals}


def read_series(store: EventStore, query: Query, interval: str) -> dict[str, Any]:
    """One project's series (GET /metrics/timeseries of ``query``), with the sums its
    shares are made of. In a read's worker thread."""
    return timeseries.query_timeseries(store, query, interval, sums=True)


def _point(time: str, p: dict[str, Any]) -> dict[str, Any]:
    return {
        "time": time,
        "visitors": p["visitors"],
        "visits": p["sessions"],
        "pageviews": p["pageviews"],
        "bounceRate": percent(p["bounces"], p["withPageview"]),
        "visitDuration": round(p["durationMs"] / 1000 / p["sessions"], 1) if p["sessions"] else 0.0,
    }


_SUMMED = ("visitors", "sessions", "pageviews", "bounces", "withPageview", "durationMs")


def series(
    projects: Sequence[tuple[Project, dict[str, Any]]], rng: DateRange, interval: str
) -> dict[str, Any]:
    """The answer of GET /overview/timeseries: each project's points (``projects``, by name)
    and the summed ``points``, bucket by bucket label (every label of ``rng`` by
    ``interval``, zero-filled; a project's labels are the same local days)."""
    sums: dict[str, dict[str, int]] = {
        label: dict.fromkeys(_SUMMED, 0) for label in timeseries.buckets(rng, interval)
    }
    out = []
    for project, answer in sorted(projects, key=lambda pa: (pa[0].name, pa[0].id)):
        for p in answer["points"]:
            bucket = sums.setdefault(p["time"], dict.fromkeys(_SUMMED, 0))
            for name in _SUMMED:
                bucket[name] += int(p[name])
        out.append(
            {
                "id": project.id,
                "name": project.name,
                "timezone": answer["timezone"],
                "points": [_point(p["time"], p) for p in answer["points"]],
            }
        )
    points = [_point(label, sums[label]) for label in sorted(sums)]
    return {"interval": interval, "projects": out, "points": points}
