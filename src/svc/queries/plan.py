"""The planner: what a query is about, and which tables serve it, decided without the store.

A report is read in three steps, as Plausible's stats are (query, table decider, SQL builder,
runner):

1. :func:`plan` turns a parsed :class:`Query` (a project, a date range in a time zone,
   filters) into an immutable :class:`Plan`: the filters' conditions and bound values, how
   the session rows count their page views and events (:class:`Counting`), the UTC days they
   are read from, the days the rollups may serve; and :func:`reads`, from the facts about
   the stored data a report needs first (:class:`Needs`), which of them to read
   (:class:`Reads`).
2. :class:`svc.queries.run.Runner` reads those facts (the sessions that cross an end of the
   range, their events outside it, the rolled-up days) with statements of
   :mod:`svc.queries.sql`, and the functions here digest the rows into immutable
   :class:`Facts`: which days the rollups serve, which long sessions the session rows add.
3. :mod:`svc.queries.sql` builds every statement from a plan and its facts, and the runner
   runs them.

Nothing here calls the store or changes once made: a plan and its facts are values, which
``tests/test_query_plan.py`` checks without a store.

Sessions are of any length. The sessions table is keyed by the UTC day of a session's start,
and nearly every session ends within a day of it: the session rows are read from the days of
the range and the day before it, and the sessions that cross its start (its end) are looked
for among those of its first (last) UTC day and the day before. The others, a session longer
than a day or one with a late event from before its day, are in ``long_sessions``
(storage/migrations/012), read whole: those that cross an end are added to the session rows by
their (day, id), the events outside the range of every crossing session are read between the
crossing sessions' own first and last events, and no rolled-up day with one is taken from the
rollups.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType
from typing import Any

from svc.queries.dates import DateRange
from svc.queries.dimensions import Dimension
from svc.queries.filters import Filter
from svc.queries.values import IntArray
from svc.schema.measurements import MEASUREMENTS
from svc.schema.page_by import PAGE_BY_DIMENSIONS, page_by_dimension

#: A crossing session whose events outside the range all lie within this of its ends is read
#: with the others, between their first and last events; a longer one by itself (its id picks
#: its granules out of the days it spans).
SHORT = timedelta(days=1)
_MS = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed read: one project, a date range in a time zone, and filters (all must hold)."""

    project_id: str
    rng: DateRange
    filters: tuple[Filter, ...] = ()
    #: The first UTC day whose raw events the project keeps (svc.retention; None: every day).
    #: The days before it are read from the daily rollups alone (:attr:`Plan.rollup_span`).
    raw_from: date | None = None


class Counting(enum.Enum):
    """How the session rows count a session's page views and events in the range (a session
    is taken whole for everything else: bounce, duration, source, entry and exit pages)."""

    #: No filter on an event dimension: the session's own counts, less the events outside the
    #: range of the few sessions that cross an end of it.
    WHOLE = "whole"
    #: Filters on the page only: from the session pages (one row per session and page), the
    #: sessions that cross an end corrected likewise.
    PAGES = "pages"
    #: One filter that drops only reported events (``event:is_not:signup``): the sessions' own
    #: counts less those of the dropped events in the range, corrected likewise.
    DROPPED = "dropped"
    #: Other event filters: the matching events in the range, grouped by session (from
    #: ``report_events`` when every event they keep is in it), which need no correction.
    IN_RANGE = "in_range"


@dataclass(frozen=True, slots=True)
class Plan:
    """What a query reads, decided from the query alone.

    ``params`` are the values every statement binds (project, range, the UTC days of the
    session rows, the filters' values); ``event_conditions`` and ``session_conditions`` the
    filters' SQL over an event and over a row of the sessions table; ``dropped`` the condition
    of the events the one dropping filter drops (:attr:`Counting.DROPPED`)."""

    query: Query
    params: Mapping[str, Any]
    event_conditions: tuple[str, ...]
    session_conditions: tuple[str, ...]
    counting: Counting
    dropped: str | None = None
    #: whether the dropping filter may drop page views (a property's value; an event name
    #: never names ``page_view`` there: Filter.selects_reported_events)
    drops_page_views: bool = False

    def bound(self, values: Mapping[str, Any]) -> Plan:
        """This plan binding ``values`` too (a breakdown's dimension's own parameters)."""
        return replace(self, params=MappingProxyType({**self.params, **values}))

    @property
    def project_id(self) -> str:
        return self.query.project_id

    @property
    def rng(self) -> DateRange:
        return self.query.rng

    @property
    def filters(self) -> tuple[Filter, ...]:
        return self.query.filters

    @property
    def event_filter(self) -> str:
        """The event filters as one condition ('1' when there are none)."""
        return " AND ".join(f"({c})" for c in self.event_conditions) or "1"

    @property
    def has_session_filters(self) -> bool:
        return bool(self.session_conditions)

    @property
    def pages_only(self) -> bool:
        """Whether every filter on an event dimension is on the page (or there is none)."""
        return all(f.dimension.name == "page" for f in self.filters if f.dimension.level == "event")

    @property
    def drops_reported_events(self) -> bool:
        """Whether the one filter drops only reported events: a report that can take away
        what it drops may still read the rolled days from the rollups."""
        return self.dropped is not None and len(self.filters) == 1

    def reported_events_only(self, dim: Dimension | None = None) -> bool:
        """Whether every event that the event filters keep (and, in a breakdown by ``dim``,
        that has a value of it) is in ``report_events``: every event but a page view without
        properties (storage/migrations/008), a seventh of the events."""
        if dim is not None and dim.name.startswith("prop:"):
            return True
        return any(f.selects_reported_events for f in self.filters)

    def event_table(self, dim: Dimension | None = None) -> str:
        """The table of the events that pass the event filters (and have a value of ``dim``):
        ``report_events`` when all of them are in it, else ``events``."""
        return "report_events" if self.reported_events_only(dim) else "events"

    def may_roll_up(self, less_dropped: bool = False, one_value: bool = False) -> bool:
        """Whether the rolled-up days may be taken from the daily rollups: without filters,
        or (``less_dropped``: the report takes away what it drops) with one filter that drops
        only reported events, or (``one_value``: the report reads the rollup rows of that
        value) with one filter that is one value of a session dimension."""
        return (
            not self.filters
            or (less_dropped and self.drops_reported_events)
            or (one_value and (self.rolled_value is not None or self.rolled_event is not None))
        )

    @property
    def rolled_value(self) -> tuple[str, str] | None:
        """(dimension, value) when the one filter is ``is`` one value of a session dimension:
        the daily rollups hold that value's row (storage/rollups.py rolls up every session
        dimension), whose figures add up over days like the totals', visitors too (a stored
        visitor id belongs to one day). None otherwise, and when the range reaches before the
        project's raw events: a filtered report counts nothing there, as the API's note says
        (svc.retention.notice), rather than the rolled days of the span and not its ends."""
        if len(self.filters) != 1 or self.days_before_raw is not None:
            return None
        f = self.filters[0]
        if f.dimension.level != "session" or f.op != "is" or len(f.values) != 1 or f.params:
            return None
        return f.dimension.name, f.values[0]

    @property
    def rolled_event(self) -> str | None:
        """The name when the one filter is ``event:is`` one event name (not a page
        measurement, which no report counts): the daily rollups hold per day that name's
        ``event`` row, whose figures are those the session rows count (:attr:`Counting.
        IN_RANGE`) for the day's sessions with that event when they are wholly in the range,
        and their sessions per source (``event_source:<name>`` rows; svc.storage.rollups).
        None otherwise, and when the range reaches before the project's raw events (as
        :attr:`rolled_value`)."""
        if len(self.filters) != 1 or self.days_before_raw is not None:
            return None
        f = self.filters[0]
        if f.dimension.name != "event" or f.op != "is" or len(f.values) != 1 or f.params:
            return None
        return None if f.values[0] in MEASUREMENTS else f.values[0]

    @property
    def dropped_event(self) -> str | None:
        """The name when the one filter is ``event:is_not`` one event name (a reported one:
        :attr:`drops_reported_events`): the daily rollups hold per day that name's ``event``
        row (the events it drops) and its ``event_only`` rows (the sessions it drops whole,
        those whose every event has the name; svc.storage.rollups). None otherwise, and when
        the range reaches before the project's raw events (as :attr:`rolled_event`)."""
        if not self.drops_reported_events or self.drops_page_views:
            return None
        if self.days_before_raw is not None:
            return None
        f = self.filters[0]
        if f.dimension.name != "event" or f.op != "is_not" or len(f.values) != 1 or f.params:
            return None
        return None if f.values[0] in MEASUREMENTS else f.values[0]

    @property
    def may_read_rolled_sessions(self) -> bool:
        """Whether the rolled-up days' sessions may be read from ``rolled_sessions``: with
        filters on session dimensions and the page only."""
        return bool(self.filters) and self.pages_only

    @property
    def starts_at_utc_midnight(self) -> bool:
        """Whether the range starts at a UTC midnight (a UTC range does): a session keyed on
        its first day then has an event before the range only if it has one before its own
        day, and so is in ``long_sessions``."""
        return self.rng.start_utc.time() == datetime.min.time()

    @property
    def ends_at_utc_midnight(self) -> bool:
        """Whether the range ends at a UTC midnight: a session keyed on the day after it then
        has an event in the range only if it has one before its own day (``long_sessions``)."""
        return self.rng.end_utc.time() == datetime.min.time()

    @property
    def rollup_span(self) -> tuple[date, date] | None:
        """The UTC days wholly inside the range that the rollups may serve: a session is
        keyed by the day of its start and may run into the next day, so the range's last day
        never is, nor its first unless the range starts at a UTC midnight (in another zone
        that day is partly before the range), nor a day with a long session that crosses an
        end (:func:`rolled_days`; a session of the first day with an event before it is one).
        None when there is none."""
        return self._rollup_span(to_end=False)

    @property
    def rollup_span_to_end(self) -> tuple[date, date] | None:
        """:attr:`rollup_span` and the range's last day, when the range ends at a UTC
        midnight: that day's sessions began in the range, so they count whole as a rolled
        day counts them, but for their page views and events after the end, which the
        sessions that cross it (:attr:`Crossing.end_ids`) have outside the range and a report
        that takes this span takes away (:meth:`Facts.after_end`)."""
        return self._rollup_span(to_end=self.ends_at_utc_midnight)

    def _rollup_span(self, to_end: bool) -> tuple[date, date] | None:
        first = self.rng.start_utc.date()
        if not self.starts_at_utc_midnight:
            first += timedelta(days=1)
        last = self.rng.end_utc.date() - timedelta(days=1 if to_end else 2)
        old = self.days_before_raw
        if old is not None and not self.filters:
            first = old[0]
            last = max(last, old[1])
        return (first, last) if first <= last else None

    @property
    def days_before_raw(self) -> tuple[date, date] | None:
        """The UTC days of the range before the project's raw events begin (``raw_from``),
        which only the rollups answer: those whose noon is in the range (in UTC, the days of
        the range; in another zone, the UTC day that shares most of each day), up to the day
        before ``raw_from``. A rolled day counts its sessions whole (their events on the
        next day too). None when the range reaches no such day."""
        raw_from = self.query.raw_from
        if raw_from is None:
            return None
        noon = timedelta(hours=12)
        first = (self.rng.start_utc - noon).date()
        if datetime.combine(first, datetime.min.time(), UTC) + noon < self.rng.start_utc:
            first += timedelta(days=1)
        last = min((self.rng.end_utc - noon - _MS).date(), raw_from - timedelta(days=1))
        return (first, last) if first <= last else None


def plan(query: Query) -> Plan:
    """The plan of ``query``: its filters' conditions and values, its counting, its days."""
    start, end = query.rng.start_utc, query.rng.end_utc
    params: dict[str, Any] = {
        "project": query.project_id,
        "start": start.replace(tzinfo=None),
        "end": end.replace(tzinfo=None),
        "tz": query.rng.tz,
        # The session rows are read from the sessions of these UTC days (a session is keyed
        # by the day of its first event seen; an earlier one, a late event, is a few minutes
        # earlier), and those of long_sessions that cross an end.
        "day0": start.date() - timedelta(days=1),
        "day1": end.date(),
        # the sessions that cross the start, the end are looked for on these days
        "start_day": start.date(),
        "end_day0": end.date() - timedelta(days=1),
    }
    events: list[str] = []
    sessions: list[str] = []
    for i, f in enumerate(query.filters):
        params.update(dict(f.params))
        if f.dimension.level == "event":
            sql, values = f.condition(f.dimension.column, f"fv{i}")
            events.append(sql)
        else:
            sql, values = f.condition(f.dimension.session_column(), f"fv{i}")
            sessions.append(sql)
        params.update(values)
    made = Plan(query, MappingProxyType(params), tuple(events), tuple(sessions), Counting.WHOLE)
    event_filters = [f for f in query.filters if f.dimension.level == "event"]
    dropped: str | None = None
    drops_page_views = False
    if len(event_filters) == 1 and not made.reported_events_only():
        negation = event_filters[0].negation()
        if negation is not None and negation.selects_reported_events:
            i = query.filters.index(event_filters[0])
            dropped, values = negation.condition(negation.dimension.column, f"fv{i}")
            drops_page_views = negation.dimension.name != "event"
            params.update(values)
    if dropped is not None:
        counting = Counting.DROPPED
    elif not events:
        counting = Counting.WHOLE
    elif made.pages_only:
        counting = Counting.PAGES
    else:
        counting = Counting.IN_RANGE
    return replace(
        made,
        params=MappingProxyType(params),
        counting=counting,
        dropped=dropped,
        drops_page_views=drops_page_views,
    )


# what a report needs to know first -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Needs:
    """The facts a report reads before its statements (:meth:`svc.queries.run.Runner.facts`).

    ``edges``: the sessions that cross an end of the range and their page views and events
    outside it (the session rows; only the long ones when the plan counts the events in the
    range); ``page_edges``: their page views outside it per page (the page rows; a report
    that needs neither looks the long sessions up in its statements); ``rollups``: the
    rolled-up days the daily
    rollups serve (for a breakdown by ``property_key``, not the days it has too many values
    on; with ``less_dropped``, also under one filter that drops only reported events, which
    the report takes away; with ``one_value``, also under one filter that is one value of a
    session dimension or ``event:is`` one name, whose rollup rows the report reads:
    :attr:`Plan.rolled_value`, :attr:`Plan.rolled_event`);
    ``rolled_sessions``: the rolled-up days whose sessions ``rolled_sessions`` serves, and
    the hashes of the paths a page filter matches there. Each only where the plan allows it
    (:meth:`Plan.may_roll_up`, :attr:`Plan.may_read_rolled_sessions`)."""

    edges: bool = False
    page_edges: bool = False
    rollups: bool = False
    property_key: str | None = None
    less_dropped: bool = False
    one_value: bool = False
    rolled_sessions: bool = False
    #: the range's last day from the rollups too (:attr:`Plan.rollup_span_to_end`): the
    #: report takes away what its sessions that cross the end have after it
    last_day: bool = False


@dataclass(frozen=True, slots=True)
class Reads:
    """The statements the runner runs for a plan's :class:`Needs`, in this order: the
    sessions that cross an end of the range (with the long ones, in one statement), the long
    ones alone, the events outside the range of the crossing ones (per session, per page),
    and the rolled-up days of the rollups or of ``rolled_sessions``."""

    crossing: bool = False
    long: bool = False
    outside: bool = False
    page_outside: bool = False
    #: "rollups", "rolled_sessions" or ""
    rolled: str = ""
    property_key: str | None = None
    last_day: bool = False


def reads(plan: Plan, needs: Needs) -> Reads:
    """What the runner reads for ``needs`` under ``plan``: no correction where the plan
    counts the events in the range (only the long sessions then), rolled-up days only where
    the plan may take them (and the long sessions first: no day with one that crosses an end
    is taken)."""
    corrected = needs.page_edges or (needs.edges and plan.counting is not Counting.IN_RANGE)
    if needs.rolled_sessions and plan.may_read_rolled_sessions:
        rolled = "rolled_sessions"
    elif needs.rollups and plan.may_roll_up(needs.less_dropped, needs.one_value):
        rolled = "rollups"
    else:
        rolled = ""
    return Reads(
        crossing=corrected,
        long=needs.edges or bool(rolled and plan.rollup_span is not None),
        outside=needs.edges and corrected,
        page_outside=needs.page_edges,
        rolled=rolled,
        property_key=needs.property_key,
        last_day=needs.last_day and rolled == "rollups" and not plan.filters,
    )


# what the runner read, digested ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """A crossing session's first and last events, or times beyond them (a long session's)."""

    first: datetime
    last: datetime


@dataclass(frozen=True, slots=True)
class Crossing:
    """The sessions that cross an end of the range: those whose events outside it are within
    a day of its ends (``ids``) and the span of those events, and the others (``long_ids``),
    each group read between the first and last of its events (see
    :func:`svc.queries.sql.sessions.outside_events`)."""

    ids: tuple[int, ...]
    since: datetime
    until: datetime
    long_ids: tuple[int, ...]
    long_since: datetime
    long_until: datetime
    #: the sessions of the range's last UTC day that cross its end (read near it)
    end_ids: tuple[int, ...] = ()
    #: Of a UTC range, the sessions of ``ids`` of the day before it (that cross its start)
    #: and of its last day (that cross its end) with every event on their day or the next
    #: (in ``next_day_sessions``, not in ``long_sessions``): their counts outside the range
    #: come from those rows (svc.queries.sql.sessions.outside_statement) ...
    two_day_start: tuple[int, ...] = ()
    two_day_end: tuple[int, ...] = ()
    #: ... and the other sessions of ``ids`` from their events, between these
    rest_ids: tuple[int, ...] = ()
    rest_since: datetime | None = None
    rest_until: datetime | None = None

    @property
    def every_id(self) -> tuple[int, ...]:
        return tuple(sorted({*self.ids, *self.long_ids}))


@dataclass(frozen=True, slots=True)
class Facts:
    """What the runner read about the stored data for a plan (None: not read)."""

    #: the long sessions that cross an end of the range: (day, id) -> span
    long: Mapping[tuple[date, int], Span] | None = None
    crossing: Crossing | None = None
    #: per crossing session: id, page views and events outside the range
    outside: tuple[tuple[int, int, int], ...] | None = None
    #: per (crossing session, page): cityHash64(id, path) and page views outside the range
    page_outside: tuple[tuple[int, int], ...] | None = None
    #: the rolled-up days the reads take from the rollups (or rolled_sessions), and versions
    rolled: tuple[tuple[date, int], ...] = ()
    #: with a page filter over rolled_sessions: the hashes of the matching paths
    matching_hashes: tuple[int, ...] | None = None
    #: with page filters alone over rolled_sessions: the section whose paths, all of them,
    #: are those they match on the rolled days, each with its ``section`` rows (read there
    #: instead: :func:`one_section`)
    section: str | None = None
    #: with one filter that is one value of a session dimension, for the page breakdown: the
    #: rollups' dimension of that value's page rows when every rolled day has them (or has no
    #: session of that value): :func:`page_by`
    page_by: str | None = None
    #: the days of the rollup span not rolled up yet that a snapshot serves, and its
    #: version (svc.storage.snapshots; read with ``Needs(last_day=True)``)
    snapshots: tuple[tuple[date, int], ...] = ()
    #: the sessions of those days that events received at or after their day's snapshot
    #: reached (read with the snapshots): the only ones whose rows differ from it
    changed: tuple[int, ...] = ()

    def far(self, plan: Plan) -> list[tuple[date, int]]:
        """The long sessions on days the session rows do not read otherwise."""
        day0, day1 = plan.params["day0"], plan.params["day1"]
        return [k for k in self.long or () if not day0 <= k[0] <= day1]

    def after_end(self, plan: Plan) -> tuple[int, int]:
        """When the range's last day is taken from the rollups or a snapshot (:attr:`Plan.
        rollup_span_to_end`): the page views and events after the end of the range of that
        day's sessions that cross it (:attr:`Crossing.end_ids`; needs ``Needs(edges=True)``),
        which its rollups count. Else none."""
        last_day = (plan.rng.end_utc - _MS).date()
        taken = plan.ends_at_utc_midnight and any(
            day == last_day for day, _ in (*self.rolled, *self.snapshots)
        )
        if not taken or self.crossing is None or self.outside is None:
            return 0, 0
        ids = set(self.crossing.end_ids)
        rows = [r for r in self.outside if r[0] in ids]
        return sum(r[1] for r in rows), sum(r[2] for r in rows)

    @property
    def long_days(self) -> set[date]:
        """The days of the long sessions that cross an end of the range: the rollups count
        every event of a day's sessions, so these days are never taken from them."""
        return {day for day, _ in self.long or ()}

    def params(self, plan: Plan) -> dict[str, Any]:
        """The values the statements of this plan and these facts bind."""
        out: dict[str, Any] = {}
        if self.long is not None:
            out["far"] = self.far(plan)
        if self.crossing is not None:
            c = self.crossing
            out.update(
                crossing=IntArray(c.ids),
                edge0=c.since.replace(tzinfo=None),
                edge1=c.until.replace(tzinfo=None),
                long_ids=IntArray(c.long_ids),
                long0=c.long_since.replace(tzinfo=None),
                long1=c.long_until.replace(tzinfo=None),
                two_day_start=IntArray(c.two_day_start),
                two_day_end=IntArray(c.two_day_end),
                rest_ids=IntArray(c.rest_ids),
            )
            if c.rest_since is not None and c.rest_until is not None:
                out.update(
                    rest0=c.rest_since.replace(tzinfo=None), rest1=c.rest_until.replace(tzinfo=None)
                )
        if self.outside is not None:
            out.update(
                edge_ids=IntArray(r[0] for r in self.outside),
                edge_pv=IntArray(r[1] for r in self.outside),
                edge_ev=IntArray(r[2] for r in self.outside),
            )
        if self.page_outside is not None:
            out.update(
                edge_page_keys=IntArray(r[0] for r in self.page_outside),
                edge_page_pv=IntArray(r[1] for r in self.page_outside),
            )
        if self.rolled:
            days = {d for d, _ in self.rolled}
            out.update(
                rolled_days=[d for d, _ in self.rolled],
                rolled_versions=[v for _, v in self.rolled],
                # the rolled days whose day before is rolled too: an event on one of them is
                # of a rolled day's session, or of a long one (sql.sessions.of_unrolled_days)
                inner_rolled_days=sorted(d for d in days if d - timedelta(days=1) in days),
            )
        if self.rolled or self.snapshots:  # the days the session rows read (sql.sessions.days)
            taken = {d for d, _ in (*self.rolled, *self.snapshots)}
            first, last = plan.params["day0"], plan.params["day1"]
            every = (first + timedelta(days=i) for i in range((last - first).days + 1))
            out["session_days"] = [d for d in every if d not in taken]
        if self.matching_hashes is not None:
            out["matching_hashes"] = IntArray(self.matching_hashes)
        if self.snapshots:
            snapshot_days = [d for d, _ in self.snapshots]
            out.update(
                snapshots=list(self.snapshots),
                snapshot_days=snapshot_days,
                snapshot_versions=[v for _, v in self.snapshots],
                snapshot_first=min(snapshot_days),
                snapshot_oldest=min(v for _, v in self.snapshots),
                changed=IntArray(self.changed),
            )
        return out


def long_sessions(rows: Sequence[Sequence[Any]]) -> dict[tuple[date, int], Span]:
    """The rows of :func:`svc.queries.sql.sessions.long_crossing` (day, id, a time at or
    before its first event, one at or after its last), by (day, id)."""
    return {(as_date(r[0]), int(r[1])): Span(as_utc(r[2]), as_utc(r[3])) for r in rows}


def crossing(
    plan: Plan, long: Mapping[tuple[date, int], Span], near: Sequence[Sequence[Any]]
) -> Crossing:
    """The sessions that cross an end of the range: the long ones and those read near its
    ends (rows of :func:`svc.queries.sql.sessions.near_crossing`, whose spans are exact),
    in two groups by how far beyond the ends their events go; and of a UTC range, those
    near its ends with every event on their day or the next (the rows' sixth column).

    The near rows' times are compared as the store gives them, naive UTC: a few thousand
    rows before every report over 100M events, whose conversion to aware times took ~10 ms."""
    start, end = plan.rng.start_utc, plan.rng.end_utc
    spans = {k: (_naive(s.first), _naive(s.last)) for k, s in long.items()}
    keys = [(as_date(r[0]), int(r[1])) for r in near]
    near_spans = {k: (_naive(r[2]), _naive(r[3])) for k, r in zip(keys, near, strict=True)}
    spans.update(near_spans)
    lo, hi = _naive(start - SHORT), _naive(end + SHORT)
    short = {k for k, (first, last) in spans.items() if first >= lo and last < hi}

    def group(keys: set[tuple[date, int]]) -> tuple[tuple[int, ...], datetime, datetime]:
        since = min((spans[k][0] for k in keys), default=None)
        until = max((spans[k][1] for k in keys), default=None)
        ids = tuple(sorted({sid for _, sid in keys}))
        since_utc = start if since is None else min(since.replace(tzinfo=UTC), start)
        until_utc = end if until is None else max(until.replace(tzinfo=UTC), end)
        return ids, since_utc, until_utc + _MS

    ids, since, until = group(short)
    long_ids, long_since, long_until = group(set(spans) - short)
    last_day, end_naive = (end - _MS).date(), _naive(end)
    end_ids = tuple(
        sorted(
            {
                sid
                for (d, sid), (_, last) in near_spans.items()
                if d == last_day and last >= end_naive
            }
        )
    )
    two_day: set[tuple[date, int]] = set()
    if plan.starts_at_utc_midnight and plan.ends_at_utc_midnight:
        two_day = {k for k, r in zip(keys, near, strict=True) if int(r[5])} & short
        two_day -= set(long)
    day0 = plan.params["day0"]
    rest_ids, rest_since, rest_until = group(short - two_day)
    return Crossing(
        ids,
        since,
        until,
        long_ids,
        long_since,
        long_until,
        end_ids,
        two_day_start=tuple(sorted(sid for day, sid in two_day if day == day0)),
        two_day_end=tuple(sorted(sid for day, sid in two_day if day == last_day)),
        rest_ids=rest_ids,
        rest_since=rest_since,
        rest_until=rest_until,
    )


def _naive(value: object) -> datetime:
    """A time as a naive UTC datetime (the store's DateTime64 in UTC comes so)."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value
    return as_utc(value).astimezone(UTC).replace(tzinfo=None)


def rolled_days(
    plan: Plan, rows: Sequence[Sequence[Any]], long_days: set[date]
) -> tuple[tuple[date, int], ...]:
    """The rolled-up days (rows of :func:`svc.queries.sql.sessions.current_rolled_days`: day,
    version) that the rollups serve: not a day with a long session that crosses an end of the
    range (its sessions have events outside it)."""
    return tuple((d, v) for d, v in day_versions(rows) if d not in long_days)


def snapshot_wanted(plan: Plan, facts: Facts) -> list[date]:
    """The days of :attr:`Plan.rollup_span_to_end` that the rollups do not serve and a
    snapshot may (svc.storage.snapshots): not rolled up, no long session that crosses an end
    of the range (as for :func:`rolled_days`)."""
    span = plan.rollup_span_to_end
    if span is None:
        return []
    rolled = {d for d, _ in facts.rolled}
    out, day = [], span[0]
    while day <= span[1]:
        if day not in rolled and day not in facts.long_days:
            out.append(day)
        day += timedelta(days=1)
    return out


def day_versions(rows: Sequence[Sequence[Any]]) -> tuple[tuple[date, int], ...]:
    """Rows of (day, version) as the store returns them: the rolled-up days, the snapshots
    (:func:`svc.queries.sql.snapshots.current`), a funnel's days with visitor steps."""
    return tuple((as_date(d), int(v)) for d, v in rows)


def matching_hashes(rows: Sequence[Sequence[Any]]) -> tuple[int, ...] | None:
    """The 32-bit hashes of the paths a page filter matches on the rolled days (rows of
    :func:`svc.queries.sql.sessions.path_hashes`: hash, whether some path with it matches,
    whether all do); None when one of them is also a path's that does not match (a
    collision: the report then reads every day from the session rows)."""
    if any(not all_match for _, _, all_match in rows):
        return None
    return tuple(int(h) for h, _, _ in rows)


def one_section(matching: Sequence[Sequence[Any]], marked: Sequence[Sequence[Any]]) -> str | None:
    """The section (svc.schema.sections) of the rollups' ``section`` rows that serve a
    filter on the page over the rolled days: from ``matching``, rows of
    :func:`svc.queries.sql.sessions.path_sections` (day, section, paths matched, paths), and
    ``marked``, rows of :func:`svc.queries.sql.sessions.section_days` (day, whether it has
    the rows, the sections that have them). The paths the filter matches on each day must
    be all those of one section, the same every day, and each day with one must have that
    section's rows; a day without a match adds nothing. Else None."""
    sections = {str(section) for _, section, _, _ in matching}
    if len(sections) != 1 or any(int(m) != int(n) for _, _, m, n in matching):
        return None
    (section,) = sections
    having = {as_date(day) for day, is_marked, names in marked if is_marked and section in names}
    return section if all(as_date(day) in having for day, *_ in matching) else None


def page_by(plan: Plan, rows: Sequence[Sequence[Any]], days: int) -> str | None:
    """The rollups' dimension of the page rows of the sessions of the plan's one value
    (:attr:`Plan.rolled_value`, svc.schema.page_by) that serve the ``days`` rolled days, from
    rows of :func:`svc.queries.sql.sessions.page_by_days` (day, whether it has the rows,
    whether the value has page rows of its own, whether it has sessions): every day must have
    the rows, and the value its own where it has sessions. Else None."""
    if plan.rolled_value is None or plan.rolled_value[0] not in PAGE_BY_DIMENSIONS:
        return None
    ready = [
        bool(marked) and (bool(rolled) or not bool(present)) for _, marked, rolled, present in rows
    ]
    if len(ready) != days or not all(ready):
        return None
    return page_by_dimension(*plan.rolled_value)


def as_date(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def as_utc(value: object) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# a funnel in passes -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FunnelPass:
    """One pass of a funnel read in passes: the visitors whose sessions began from
    ``first_day`` to ``last_day`` (UTC; None: no bound), whose events are all between
    ``since`` and ``until``. A stored visitor id is mixed with the day its session began
    (svc.ingestion.identity.stored_visitor_id), so each visitor is in one pass, whole."""

    first_day: date | None
    last_day: date | None
    since: datetime
    until: datetime


def funnel_passes(
    plan: Plan, visitors: int, per_pass: int, long_spans: Sequence[Sequence[Any]]
) -> tuple[FunnelPass, ...]:
    """The passes of a funnel over about ``visitors`` visitors, about ``per_pass`` each
    (none when one statement holds them all): the session days from the day before the
    range to its end's day in runs of equal length, the first open below and the last open
    above (the long sessions of other days with events in the range). A session's events are
    on its day and the next unless it is long (``long_spans``: rows of day, first and last of
    the long sessions' events outside those two days, per day), so each pass reads the events
    from its first day to the day after its last, widened to its long sessions' events."""
    day0, day1 = plan.params["day0"], plan.params["day1"]
    days = [day0 + timedelta(days=i) for i in range((day1 - day0).days + 1)]
    count = min(-(-visitors // max(per_pass, 1)), len(days))
    if count <= 1:
        return ()
    start, end = plan.rng.start_utc, plan.rng.end_utc
    spans = [(as_date(d), as_utc(f), as_utc(t)) for d, f, t in long_spans]
    passes = []
    for i in range(count):
        run = days[len(days) * i // count : len(days) * (i + 1) // count]
        first = None if i == 0 else run[0]
        last = None if i == count - 1 else run[-1]
        since = datetime.combine(run[0], datetime.min.time(), UTC)
        until = datetime.combine(run[-1] + timedelta(days=2), datetime.min.time(), UTC)
        for day, f, t in spans:
            if (first is None or day >= first) and (last is None or day <= last):
                since, until = min(since, f), max(until, t + _MS)
        passes.append(FunnelPass(first, last, max(since, start), min(until, end)))
    return tuple(passes)
