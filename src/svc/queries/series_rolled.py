"""A time series under filters on the page and session dimensions, its rolled-up days read
from ``rolled_sessions`` (svc.storage.rollups) instead of the session rows and the events of
every day (issue 40: those series read every event of the range, filtered by the sessions
that pass the filters).

A rolled-up day (a UTC day wholly inside the range, no long session of it crossing an end:
:attr:`svc.queries.plan.Plan.rollup_span`) is taken where that is exact, the rest read as
before, less those days' sessions:

- its sessions, bounces and duration (a session in the bucket of its start, clamped to the
  range) when the day lies in one bucket of the range's zone and no session of it has an
  event before the day (``long_sessions``): every session of it then begins on that day, in
  the range, in that bucket;
- its sessions' page views, events and visitors (by event time) when it lies in one bucket
  and no session of it is a long one: every event of those sessions is then on the day or the
  next, in the range (the rollup span ends two days before the range's end). When the next
  day is in the same bucket, all of them are in it; when it lies in one other bucket (by day,
  or the last day of a week or month), the page views and events there of the day's sessions
  that cross midnight, and their visitors, are read apart from ``next_day_sessions`` (a few
  thousand sessions a day among a million) and moved there; every visitor of the day's
  sessions has an event on the day (its sessions begin then), so the day's bucket keeps them
  all. Under a filter on the page this is not done (``next_day_sessions`` holds no page: a
  session's matching events might all be on the next day). A day's visitors are of that day
  alone (a stored visitor id is mixed with its session's day:
  svc.ingestion.identity.stored_visitor_id), so a bucket's visitors add up.

By the hour no day lies in one bucket. Not before the project's raw events (a filtered report
counts nothing there: svc.retention.notice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from svc.queries.plan import Needs, Plan, as_date
from svc.queries.run import Runner
from svc.queries.sql import series as series_sql

_MS = timedelta(milliseconds=1)


def takes_rolled_sessions(p: Plan, interval: str) -> bool:
    """Whether the series of ``p`` by ``interval`` may read rolled days from
    ``rolled_sessions``: by day, week or month, under filters on the page and session
    dimensions alone, the range not reaching before the project's raw events."""
    return (
        interval in series_sql.ROLLED_DAY_BUCKETS
        and p.may_read_rolled_sessions
        and p.days_before_raw is None
    )


def bucket_of(p: Plan, interval: str, moment: datetime) -> date:
    """The first day of the bucket (``interval``: day, week or month) that holds ``moment``
    in the range's zone: its label."""
    local = moment.astimezone(p.rng.zone).date()
    if interval == "week":
        return local - timedelta(days=local.weekday())
    if interval == "month":
        return local.replace(day=1)
    return local


def one_bucket(p: Plan, interval: str, day: date, days: int) -> date | None:
    """The bucket that holds the ``days`` UTC days from ``day`` whole; None when they span
    two."""
    since = datetime.combine(day, time(0), UTC)
    first = bucket_of(p, interval, since)
    return first if bucket_of(p, interval, since + timedelta(days=days) - _MS) == first else None


@dataclass(frozen=True, slots=True)
class RolledSplit:
    """Which rolled days a filtered series takes from ``rolled_sessions``, and their buckets."""

    #: the days whose sessions (by start) are taken, and the days whose events are
    sessions: tuple[tuple[date, int], ...]
    events: tuple[tuple[date, int], ...]
    #: each taken day's bucket label
    labels: dict[date, str]
    #: of the days whose events are taken, those whose next day is in another bucket: that
    #: bucket's label (their sessions' events there are read apart:
    #: :func:`svc.queries.sql.series.series_next_days`)
    next_labels: dict[date, str]

    @property
    def crossing(self) -> tuple[tuple[date, int], ...]:
        """The days of :attr:`next_labels`, with their versions."""
        return tuple(d for d in self.events if d[0] in self.next_labels)


def split(
    p: Plan, interval: str, rolled: Sequence[tuple[date, int]], long_rows: Sequence[Sequence[Any]]
) -> RolledSplit:
    """The days of ``rolled`` taken for the sessions and for the events (see the module
    docstring), from ``long_rows``: rows of :func:`svc.queries.sql.series.long_session_days`
    (day, whether a session of it has an event before it). A day whose next day is in another
    bucket has its events taken only without filters on the page (``next_day_sessions``
    holds no page)."""
    long = {as_date(r[0]): bool(int(r[1])) for r in long_rows}
    sessions, events = [], []
    labels: dict[date, str] = {}
    next_labels: dict[date, str] = {}
    for day, version in rolled:
        whole = one_bucket(p, interval, day, 1)
        if whole is None:
            continue
        labels[day] = whole.isoformat()
        if not long.get(day, False):
            sessions.append((day, version))
        if day in long:
            continue
        if one_bucket(p, interval, day, 2) == whole:
            events.append((day, version))
            continue
        after = one_bucket(p, interval, day + timedelta(days=1), 1)
        if after is not None and not p.event_conditions:
            events.append((day, version))
            next_labels[day] = after.isoformat()
    return RolledSplit(tuple(sessions), tuple(events), labels, next_labels)


def rolled_series(
    runner: Runner, p: Plan, interval: str
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]] | None:
    """The rows of a filtered series (:func:`takes_rolled_sessions`) with its rolled days
    from ``rolled_sessions``: the event figures per bucket (``time``, ``pageviews``,
    ``events``, ``visitors``) and the session figures' answers (``time``, ``sessions``,
    ``bounces``, ``with_pv``, ``duration_ms``; summed by bucket by the caller), those of
    :func:`svc.queries.sql.series.series_events` and ``series_sessions``. None when no
    rolled day serves (or a page filter's paths cannot be told apart by their hashes): the
    caller reads every day as before."""
    facts = runner.facts(p, Needs(edges=True, rolled_sessions=True))
    if not facts.rolled or (p.event_conditions and facts.matching_hashes is None):
        return None
    days = [d for d, _ in facts.rolled]
    long_rows = runner.remembered_rows(series_sql.long_session_days(p, days))
    taken = split(p, interval, facts.rolled, long_rows)
    if not taken.sessions and not taken.events:
        return None
    both = tuple(sorted({*taken.sessions, *taken.events}))
    statements = [
        series_sql.series_events(p, replace(facts, rolled=taken.events), interval, unrolled=True),
        series_sql.series_sessions(p, replace(facts, rolled=taken.sessions), interval),
        series_sql.series_rolled_session_days(p, replace(facts, rolled=both)),
    ]
    if taken.crossing:
        statements.append(series_sql.series_next_days(p, replace(facts, rolled=taken.crossing)))
    event_rows, session_rows, day_rows, *next_rows = runner.together(*statements)
    events = _events_with(event_rows, day_rows, next_rows[0] if next_rows else [], taken)
    return events, [session_rows, _sessions_of(day_rows, taken)]


_EVENT_FIGURES = ("pageviews", "events", "visitors")


def _events_with(
    event_rows: list[dict[str, Any]],
    day_rows: list[dict[str, Any]],
    next_rows: list[dict[str, Any]],
    taken: RolledSplit,
) -> list[dict[str, Any]]:
    """``event_rows`` with the page views, events and visitors of the days whose events are
    taken (``day_rows``) added to their buckets; of a day whose next day is in another bucket,
    those of its sessions there (``next_rows``) moved to that bucket. Every session of such a
    day (none has an event before it) has an event on it, so its visitors stay whole."""
    by_label = {r["time"]: {**r} for r in event_rows}

    def add(label: str, row: dict[str, Any], sign: int, figures: Sequence[str]) -> None:
        into = by_label.setdefault(label, {"time": label, "pageviews": 0, "events": 0})
        for name in figures:
            into[name] = int(into.get(name, 0)) + sign * int(row[name])

    event_days = {d for d, _ in taken.events}
    for row in day_rows:
        day = as_date(row["day"])
        if day in event_days:
            add(taken.labels[day], row, 1, _EVENT_FIGURES)
    for row in next_rows:
        day = as_date(row["day"])
        add(taken.labels[day], row, -1, _EVENT_FIGURES[:2])
        add(taken.next_labels[day], row, 1, _EVENT_FIGURES)
    return list(by_label.values())


def _sessions_of(day_rows: list[dict[str, Any]], taken: RolledSplit) -> list[dict[str, Any]]:
    """The session figures of the days whose sessions are taken, a row each in the columns of
    :func:`svc.queries.sql.series.series_sessions` (the caller sums them by bucket)."""
    session_days = {d for d, _ in taken.sessions}
    return [
        {
            "time": taken.labels[as_date(r["day"])],
            "sessions": int(r["sessions"]),
            "bounces": int(r["bounces"]),
            "with_pv": int(r["sessions_with_pv"]),
            "duration_ms": int(r["duration_ms"]),
        }
        for r in day_rows
        if as_date(r["day"]) in session_days
    ]
