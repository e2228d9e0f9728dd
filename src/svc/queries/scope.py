"""What every query is about: one project, a date range in a time zone, and filters.

:class:`QueryScope` builds the SQL pieces every report shares, with bound parameters only:
the WHERE clause of the range and event filters, and the *session rows*, one row per session
with an event in the range that passes the filters:

``session_id, visitor``; ``pv, ev``: the session's page views and events in the range (that
pass the event filters); ``all_pv, all_ev``: the page views and events that decide a bounce;
``first_ts, last_ts, dur`` (ms); and the session dimensions asked for.

Every session row comes from the ``sessions`` table (one row per session, maintained at
ingestion; see ``storage/migrations/002_sessions.sql``): a session is taken whole, its bounce,
duration, source, entry and exit pages are those of the whole session, also when it crosses an
end of the range. Its page views and events are those in the range that pass the event
filters, counted one of three ways:

- **no filter on an event dimension**: the session's own counts, the few sessions that cross
  an end of the range less their events outside it (read from the events between the
  crossing sessions' first and last events: see :meth:`QueryScope.load_edges`);
- **filters on the page only**: from the session pages (one row per session and page), the
  sessions that cross an end corrected likewise;
- **other event filters**: the matching events in the range, grouped by session, from
  ``report_events`` when every event they keep is in it (an event name, a property's value:
  a seventh of the events), else from the events.

No query groups every event by session with its whole-session figures: a GROUP BY that big
held more than the reads may (they spill to disk past 300 MB) and took 4-5 s over 10M events.

Sessions are of any length. The sessions table is keyed by the UTC day of a session's start,
and nearly every session ends within a day of it: the session rows are read from the days of
the range and the day before it, and the sessions that cross its start (its end) are looked
for among those of its first (last) UTC day and the day before. The others, a session longer
than a day or one with a late event from before its day, are in ``long_sessions``, a small
table of the sessions with an event outside the day of their start and the next
(storage/migrations/012), read whole: those that cross an end are added to the session rows
by their (day, id), the events outside the range of every crossing session are read between
the crossing sessions' first and last events, and no rolled-up day with one is taken from the
rollups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from svc.queries.dates import DateRange
from svc.queries.dimensions import Dimension
from svc.queries.filters import Filter

if TYPE_CHECKING:
    from svc.storage.events import EventStore

#: A session's UTC day (the sessions table's key) as the time it begins.
_DAY_START = "toDateTime64({day}, 3, 'UTC')"


def session_key(alias: str = "", day: str | None = None) -> str:
    """One 64-bit number per session, for grouping and joining by session: its id XOR a hash
    of its day (a client's session id may name a session on another day too; this is as
    unique as the ids themselves). One key instead of two: a GROUP BY of 3M sessions that
    holds less than the reads may before spilling (690 -> 400 ms over 10M events), a join
    that probes one number (the /blog report 598 -> 541 ms)."""
    return f"bitXor({alias}session_id, intHash64({day or alias + 'session_day'}))"


#: The events outside the range from ``{first}`` to its start and from its end to ``{last}``.
_OUTSIDE = (
    "((ts >= {{{first}:DateTime64(3, 'UTC')}} AND ts < {{start:DateTime64(3, 'UTC')}}) "
    "OR (ts >= {{end:DateTime64(3, 'UTC')}} AND ts < {{{last}:DateTime64(3, 'UTC')}}))"
)

#: A crossing session whose events outside the range all lie within this of its ends is read
#: with the others, between their first and last events; a longer one by itself (its id picks
#: its granules out of the days it spans: see QueryScope._outside_events).
_SHORT = timedelta(days=1)
_MS = timedelta(milliseconds=1)


@dataclass
class QueryScope:
    project_id: str
    rng: DateRange
    filters: list[Filter] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        start, end = self.rng.start_utc, self.rng.end_utc
        self.params.update(
            project=self.project_id,
            start=start.replace(tzinfo=None),
            end=end.replace(tzinfo=None),
            tz=self.rng.tz,
            # The session rows are read from the sessions of these UTC days (a session is
            # keyed by the day of its first event seen; an earlier one, a late event, is a
            # few minutes earlier), and those of long_sessions that cross an end.
            day0=start.date() - timedelta(days=1),
            day1=end.date(),
            # the sessions that cross the start, the end are looked for on these days
            start_day=start.date(),
            end_day0=end.date() - timedelta(days=1),
        )
        self._event_conditions: list[str] = []
        self._session_row_conditions: list[str] = []  # over a row of the sessions table
        self._edges: Sequence[Sequence[Any]] | None = None  # see load_edges
        self._crossing: list[int] | None = None  # see _load_crossing
        #: The sessions of long_sessions that cross an end of the range: (day, id) -> the
        #: first and last time its events may have (see load_long_sessions)
        self._long: dict[tuple[date, int], tuple[datetime, datetime]] | None = None
        self._page_edges: Sequence[Sequence[Any]] | None = None  # see load_page_edges
        self.rolled_days: list[tuple[date, int]] = []  # see load_rollups
        #: The one event filter whose negation only reported events pass (see counts_in_range),
        #: its negation's condition
        self._dropped: str | None = None
        #: Whether it may drop page views (a property's value; an event name never names
        #: ``page_view`` here: Filter.selects_reported_events)
        self._drops_page_views = False
        for i, f in enumerate(self.filters):
            self.params.update(dict(f.params))
            if f.dimension.level == "event":
                sql, values = f.condition(f.dimension.column, f"fv{i}")
                self._event_conditions.append(sql)
            else:
                sql, values = f.condition(f.dimension.session_column(), f"fv{i}")
                self._session_row_conditions.append(sql)
            self.params.update(values)
        event_filters = [f for f in self.filters if f.dimension.level == "event"]
        if len(event_filters) == 1 and not self.reported_events_only():
            negation = event_filters[0].negation()
            if negation is not None and negation.selects_reported_events:
                i = self.filters.index(event_filters[0])
                self._dropped, values = negation.condition(negation.dimension.column, f"fv{i}")
                self._drops_page_views = negation.dimension.name != "event"
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
        return bool(self._session_row_conditions)

    @property
    def pages_only(self) -> bool:
        """Whether every filter on an event dimension is on the page (or there is none): the
        session pages then say which sessions have a matching page, and how many; otherwise
        the sessions with a matching event are read from the events (:meth:`matching_sessions`),
        counting those in the range."""
        return all(f.dimension.name == "page" for f in self.filters if f.dimension.level == "event")

    @property
    def counts_in_range(self) -> bool:
        """Whether the session rows' page views and events are counted over the events in the
        range (a filter on an event dimension other than the page), rather than taken from the
        sessions table and corrected for the sessions that cross an end of it. Not for one
        filter that drops only reported events (``event:is_not:signup``): the session rows
        then take the sessions' own counts less those of the dropped events in the range."""
        return bool(self._event_conditions) and not self.pages_only and self._dropped is None

    def reported_events_only(self, dim: Dimension | None = None) -> bool:
        """Whether every event that the event filters keep (and, in a breakdown by ``dim``,
        that has a value of it) is in ``report_events``: every event but a page view without
        properties (storage/migrations/008). Then those events are read from that table,
        a seventh of the events, instead of from all of them."""
        if dim is not None and dim.name.startswith("prop:"):
            return True
        return any(f.selects_reported_events for f in self.filters)

    def sessions(self, extra: dict[str, Dimension] | None = None) -> str:
        """The session rows (see the module docstring); ``extra`` maps alias -> session
        dimension."""
        return self._sessions_from_table(extra or {})

    def _near_crossing_sql(self) -> str:
        """The sessions that cross an end of the range among those of its first and last UTC
        days and the days before them: day, id, first and last event, and 1."""
        t0, t1 = "{start:DateTime64(3, 'UTC')}", "{end:DateTime64(3, 'UTC')}"
        return (
            "SELECT session_day, session_id, first_ts, last_ts, 1 AS near FROM sessions FINAL "
            "WHERE project_id = {project:String} AND "
            "(session_day BETWEEN {day0:Date} AND {start_day:Date} "
            "OR session_day BETWEEN {end_day0:Date} AND {day1:Date}) "
            f"AND ((first_ts < {t0} AND last_ts >= {t0}) OR (first_ts < {t1} AND last_ts >= {t1}))"
        )

    def _long_crossing_sql(self) -> str:
        """The sessions of ``long_sessions`` that cross an end of the range where
        :meth:`_near_crossing_sql` does not look (and some where it does): day, id, a time at
        or before its first event and one at or after its last (its events outside its day
        and the next, and those two days), and 0. Each condition is exact: a session on a
        day after the first of the range has an event before its start only if that event is
        before the session's day (and so in this table), one on a day before the day before
        has an event after it only if that event is after the day after its own; likewise at
        the end. (A handful of rows: no index needed.)"""
        t0, t1 = "{start:DateTime64(3, 'UTC')}", "{end:DateTime64(3, 'UTC')}"
        first = f"least(min(first_ts), {_DAY_START.format(day='session_day')})"
        last = f"greatest(max(last_ts), {_DAY_START.format(day='session_day + 2')})"
        return (
            f"SELECT session_day, session_id, {first}, {last}, 0 AS near FROM long_sessions "
            "WHERE project_id = {project:String} GROUP BY session_day, session_id HAVING "
            f"(session_day > {{start_day:Date}} AND min(first_ts) < {t0}) "
            f"OR (session_day < {{day0:Date}} AND max(last_ts) >= {t0}) "
            f"OR (session_day > {{day1:Date}} AND min(first_ts) < {t1}) "
            f"OR (session_day < {{end_day0:Date}} AND max(last_ts) >= {t1})"
        )

    def _take_long(self, rows: Sequence[Sequence[Any]]) -> None:
        """Keep the rows of :meth:`_long_crossing_sql`; bind the (day, id) of those on days
        the session rows do not read otherwise (see :meth:`_days`)."""
        self._long = {(_as_date(r[0]), int(r[1])): (_as_utc(r[2]), _as_utc(r[3])) for r in rows}
        day0, day1 = self.params["day0"], self.params["day1"]
        self.params["far"] = [k for k in self._long if not day0 <= k[0] <= day1]

    def load_long_sessions(self, store: EventStore) -> QueryScope:
        """Read the long sessions that cross an end of the range (one query of a small
        table), for :meth:`_days` and the rolled-up days. Returns self."""
        if self._long is None:
            self._take_long(store.query(self._long_crossing_sql(), self.params))
        return self

    @property
    def long_session_days(self) -> set[date]:
        """The days of the long sessions that cross an end of the range (loaded): the
        rollups count every event of a day's sessions, so these days are never taken from
        them."""
        assert self._long is not None
        return {day for day, _ in self._long}

    def _outside_events(self) -> str:
        """The events outside the range of the sessions that cross an end of it (loaded:
        :meth:`_load_crossing`): those of the sessions whose events outside it are within a
        day of its ends between the first and last of them, those of a longer session between
        its own first and last."""
        parts = []
        if self.params["crossing"]:
            outside = _OUTSIDE.format(first="edge0", last="edge1")
            parts.append(f"({outside} AND session_id IN {{crossing:Array(UInt64)}})")
        if self.params["long_ids"]:
            outside = _OUTSIDE.format(first="long0", last="long1")
            parts.append(f"({outside} AND session_id IN {{long_ids:Array(UInt64)}})")
        return f"({' OR '.join(parts)})" if parts else "0"

    def _outside_sql(self) -> str:
        """Per session that crosses an end of the range: its page views and events outside
        the range (that pass the event filters, but for a dropping filter: see
        counts_in_range)."""
        kept = "1" if self._dropped is not None else self.event_filter
        return (
            "SELECT session_id, countIf(name = 'page_view') AS opv, count() AS oev FROM events "
            f"WHERE project_id = {{project:String}} AND {kept} "
            f"AND {self._outside_events()} GROUP BY session_id"
        )

    def load_edges(self, store: EventStore) -> QueryScope:
        """Read the sessions that cross an end of the range and their events outside it (two
        small queries) so that the session rows correct them by value instead of by a join:
        much cheaper. Counted over the events in the range, the session rows need no
        correction: only the long sessions are read then. Returns self."""
        if self._edges is None:
            crossing = [] if self.counts_in_range else self._load_crossing(store)
            self.load_long_sessions(store)
            rows: Sequence[Sequence[Any]] = []
            if crossing:
                rows = store.query(self._outside_sql(), self.params)
            self._edges = rows
            self.params.update(
                edge_ids=[int(r[0]) for r in rows],
                edge_pv=[int(r[1]) for r in rows],
                edge_ev=[int(r[2]) for r in rows],
            )
        return self

    def _load_crossing(self, store: EventStore) -> list[int]:
        """The ids of the sessions that cross an end of the range (read once, with the long
        sessions if they are not read yet); binds those whose events outside the range are
        within a day of its ends (``crossing``) and the span of those events (``edge0`` to
        the start, the end to ``edge1``), and likewise the others (``long_ids``, ``long0``,
        ``long1``)."""
        if self._crossing is None:
            near_sql = self._near_crossing_sql()
            near: Sequence[Sequence[Any]]
            if self._long is None:
                rows = store.query(f"{near_sql} UNION ALL {self._long_crossing_sql()}", self.params)
                self._take_long([r for r in rows if not int(r[4])])
                near = [r for r in rows if int(r[4])]
            else:
                near = store.query(near_sql, self.params)
            assert self._long is not None
            spans = dict(self._long)
            spans.update(
                ((_as_date(r[0]), int(r[1])), (_as_utc(r[2]), _as_utc(r[3]))) for r in near
            )
            start, end = self.rng.start_utc, self.rng.end_utc
            short = {
                k: v for k, v in spans.items() if v[0] >= start - _SHORT and v[1] < end + _SHORT
            }
            long = {k: v for k, v in spans.items() if k not in short}
            for ids, first, last, group in (
                ("crossing", "edge0", "edge1", short),
                ("long_ids", "long0", "long1", long),
            ):
                self.params[ids] = sorted({sid for _, sid in group})
                since = min((f for f, _ in group.values()), default=start)
                until = max((t for _, t in group.values()), default=end)
                self.params[first] = min(since, start).replace(tzinfo=None)
                self.params[last] = (max(until, end) + _MS).replace(tzinfo=None)
            self._crossing = sorted({sid for _, sid in spans})
        return self._crossing

    def load_page_edges(self, store: EventStore) -> QueryScope:
        """For :meth:`page_rows`: the page views outside the range of the sessions that cross
        an end of it, per (session, page), read like :meth:`load_edges` (the sessions' own
        counts outside the range are not needed there). Returns self."""
        self._load_crossing(store)
        if self._page_edges is None:
            rows: Sequence[Sequence[Any]] = []
            if self._crossing:
                rows = store.query(
                    "SELECT cityHash64(session_id, path) AS k, count() FROM events "
                    "WHERE project_id = {project:String} AND name = 'page_view' "
                    f"AND {self._outside_events()} GROUP BY k",
                    self.params,
                )
            self._page_edges = rows
            self.params.update(
                edge_page_keys=[int(r[0]) for r in rows], edge_page_pv=[int(r[1]) for r in rows]
            )
        return self

    def page_rows(self) -> str:
        """One row per (session, page) with page views in the range that passes the filters:
        ``value`` (the path), ``pv`` and ``ev`` (its page views in the range), and the
        session's ``visitor``, ``all_pv``, ``all_ev`` and ``dur``, the columns
        :data:`SESSION_AGGREGATES` reads. From the (session, page) table, whose rows the page
        filters select, joined to the sessions table's rows that pass the session filters
        (:meth:`_whole_sessions`): no grouping of events by session. Call
        :meth:`load_page_edges` first."""
        assert self.pages_only and self._page_edges is not None
        t0, t1 = "{start:DateTime64(3, 'UTC')}", "{end:DateTime64(3, 'UTC')}"
        outside = (
            f"if(s.first_ts < {t0} OR s.last_ts >= {t1}, transform(cityHash64(p.session_id, "
            "p.path), {edge_page_keys:Array(UInt64)}, {edge_page_pv:Array(UInt64)}, "
            "toUInt64(0)), toUInt64(0))"
            if self._page_edges
            else "toUInt64(0)"
        )
        pages = (
            "SELECT session_day, session_id, path, pageviews FROM session_pages FINAL "
            f"WHERE project_id = {{project:String}} AND {self._days()} AND pageviews > 0 "
            f"AND {self.event_filter}"
        )
        rows = (
            f"SELECT p.path AS value, s.visitor AS visitor, p.pageviews - {outside} AS pv, "
            "s.all_pv AS all_pv, s.all_ev AS all_ev, s.dur AS dur "
            f"FROM ({pages}) AS p INNER JOIN ({self._whole_sessions()}) AS s "
            f"ON {session_key('s.')} = {session_key('p.')}"
        )
        return f"SELECT *, pv AS ev FROM ({rows}) WHERE pv > 0"

    def event_table(self, dim: Dimension | None = None) -> str:
        """The table of the events that pass the event filters (and, in a breakdown by
        ``dim``, have a value of it): ``report_events`` when all of them are in it
        (:meth:`reported_events_only`), else ``events``."""
        return "report_events" if self.reported_events_only(dim) else "events"

    def _counts_by_session(self, table: str, condition: str, value: str | None = None) -> str:
        """Per session (and ``value``, an expression over an event, when given) with events in
        the range in ``table`` that meet ``condition``: its :func:`session_key` ``k`` (and
        ``value``), and those events' page views ``pv`` and count ``ev``."""
        key = session_key(day="toDate(session_start)")
        by = "k" if value is None else "k, value"
        value_col = "" if value is None else f"{value} AS value, "
        return (
            f"SELECT {key} AS k, {value_col}countIf(name = 'page_view') AS pv, count() AS ev "
            f"FROM {table} WHERE {self.range_where} AND {condition} GROUP BY {by}"
        )

    def matching_sessions(self) -> str:
        """Per session with an event in the range that passes the event filters: its
        :func:`session_key` ``k``, and those events' page views ``pv`` and count ``ev``
        (grouped from :meth:`event_table`)."""
        return self._counts_by_session(self.event_table(), self.event_filter)

    def event_rows(self, dim: Dimension, only: str = "1", table: str | None = None) -> str:
        """For a breakdown by the event dimension ``dim``: one row per (session, value) of the
        events in the range that pass the event filters, have a value (``dim.rows``) and meet
        ``only``, with their page views ``pv`` and count ``ev``, and the session's
        ``visitor``, ``all_pv``, ``all_ev`` and ``dur`` (whole, as in :meth:`page_rows`): the
        columns :data:`SESSION_AGGREGATES` reads. From ``table`` (default
        :meth:`event_table`), joined to the sessions table's rows."""
        table = table or self.event_table(dim)
        if self.rolled_days:  # read from the rollups instead (their sessions left out below)
            only = f"({only}) AND toDate(session_start) NOT IN {{rolled_days:Array(Date)}}"
        rows = self._counts_by_session(
            table, f"{self.event_filter} AND ({dim.rows}) AND ({only})", value=dim.column
        )
        return (
            "SELECT p.value AS value, s.visitor AS visitor, p.pv AS pv, p.ev AS ev, "
            "s.all_pv AS all_pv, s.all_ev AS all_ev, s.dur AS dur "
            f"FROM ({self._whole_sessions()}) AS s INNER JOIN ({rows}) AS p "
            f"ON p.k = {session_key('s.')}"
        )

    def event_name_rows(self, dim: Dimension) -> str:
        """For a breakdown by event name (``dim``) with no filters on event dimensions but
        the page: the ``page_view`` row of every session with page views in the range that
        passes the filters (:meth:`sessions`), and the rows of the other events, all in
        ``report_events`` (:meth:`event_rows`). Call :meth:`load_edges` first."""
        views = (
            "SELECT 'page_view' AS value, visitor, toUInt64(pv) AS pv, toUInt64(pv) AS ev, "
            f"all_pv, all_ev, dur FROM ({self.sessions()}) WHERE pv > 0"
        )
        others = self.event_rows(dim, only="name != 'page_view'", table="report_events")
        return f"{views} UNION ALL {others}"

    @property
    def drops_reported_events(self) -> bool:
        """Whether the one filter drops only reported events (``event:is_not:signup``): a
        report that can take away what it drops (:meth:`gone_sessions_sql`,
        :meth:`dropped_events_sql`) may still read the rolled days from the rollups."""
        return self._dropped is not None and len(self.filters) == 1

    def load_rollups(
        self, store: EventStore, property_key: str | None = None, less_dropped: bool = False
    ) -> list[tuple[date, int]]:
        """The rolled-up days (svc.storage.rollups) wholly inside the range, with their
        current versions, for a report without filters (or, with ``less_dropped``, one whose
        filter :attr:`drops_reported_events`); the session rows then leave them
        out. A session is keyed by the day of its start and may run into the next day, so
        the first day of the range and its last two are never taken from the rollups, nor a
        day with a long session that crosses an end of the range (:meth:`_days`). For a
        breakdown by the custom property ``property_key``, the days that had too many values
        of it to roll up are not taken either."""
        filtered = bool(self.filters) and not (less_dropped and self.drops_reported_events)
        if filtered or self.rolled_days:
            return self.rolled_days
        return self._take_rolled_days(self._current_rolled_days(store, property_key))

    def load_rolled_sessions(self, store: EventStore) -> list[tuple[date, int]]:
        """For a report with filters on session dimensions and the page only: the rolled-up
        days wholly inside the range (as :meth:`load_rollups`), whose sessions it then reads
        from ``rolled_sessions`` (:meth:`rolled_session_rows`), the other days from the
        session rows. With a filter on the page, the 32-bit hashes of the matching paths of
        those days are read first; none are taken if one of them is also the hash of a path
        that does not match (the report then reads every day from the session rows)."""
        if not self.filters or not self.pages_only or self.rolled_days:
            return self.rolled_days
        days = self._current_rolled_days(store)
        if days and self._event_conditions:
            paths = (  # the rollups' path rows (svc.storage.rollups)
                "SELECT DISTINCT value AS path FROM session_rollups "
                "WHERE project_id = {project:String} AND dimension = 'path' "
                "AND (session_day, version) IN {days:Array(Tuple(Date, UInt64))}"
            )
            rows = store.query(
                "SELECT xxHash32(path) AS h, max(matches), min(matches) FROM (SELECT path, "
                f"{self.event_filter} AS matches FROM ({paths})) GROUP BY h HAVING max(matches)",
                {**self.params, "days": days},
            )
            if any(not all_match for _, _, all_match in rows):  # a collision
                return []
            self.params["matching_hashes"] = [int(h) for h, _, _ in rows]
        return self._take_rolled_days(days)

    def _current_rolled_days(
        self, store: EventStore, property_key: str | None = None
    ) -> list[tuple[date, int]]:
        """The rolled-up days wholly inside the range and their current versions (see
        :meth:`load_rollups`)."""
        first = self.rng.start_utc.date() + timedelta(days=1)
        last = self.rng.end_utc.date() - timedelta(days=2)
        if last < first:
            return []
        # a day with a session that crosses an end of the range has events outside it
        unsafe = self.load_long_sessions(store).long_session_days
        params = {"project": self.project_id, "r0": first, "r1": last, "key": property_key}
        sql = (
            "SELECT session_day, max(version) AS version FROM rollup_days "
            "WHERE project_id = {project:String} AND session_day BETWEEN {r0:Date} AND {r1:Date} "
            "GROUP BY session_day"
        )
        if property_key is not None:
            sql = (
                f"SELECT session_day, version FROM ({sql}) WHERE (session_day, version) NOT IN "
                "(SELECT session_day, version FROM session_rollups "
                "WHERE project_id = {project:String} AND dimension = 'prop-skipped' "
                "AND session_day BETWEEN {r0:Date} AND {r1:Date} AND value = {key:String})"
            )
        rows = store.query(f"{sql} ORDER BY session_day", params)
        return [(_as_date(d), int(v)) for d, v in rows if _as_date(d) not in unsafe]

    def _take_rolled_days(self, days: list[tuple[date, int]]) -> list[tuple[date, int]]:
        """Leave ``days`` out of the session rows from now on; returns them."""
        self.rolled_days = days
        self.params.update(
            rolled_days=[d for d, _ in self.rolled_days],
            rolled_versions=[v for _, v in self.rolled_days],
        )
        return self.rolled_days

    def _dropped_in_rolled_days(self) -> str:
        """Per session of the rolled days with events the filter drops: its key ``k`` and the
        dropped page views ``pv`` and events ``ev`` (every event of such a session is in the
        range: see :meth:`load_rollups`)."""
        assert self.drops_reported_events and self._dropped is not None and self.rolled_days
        days = "toDate(session_start) IN {rolled_days:Array(Date)}"
        return self._counts_by_session("report_events", f"({self._dropped}) AND {days}")

    def dropped_events_sql(self) -> str:
        """The page views and events the filter drops from the rolled days, to take from
        their rollups."""
        return (
            "SELECT sum(pv) AS pageviews, sum(ev) AS events "
            f"FROM ({self._dropped_in_rolled_days()})"
        )

    def _gone_sessions(self) -> str:
        """The rows of ``sessions AS s`` on the rolled days whose every event the filter
        drops (none with a page view, unless it drops page views: checked first, the
        cheaper test)."""
        no_views = "" if self._drops_page_views else "AND s.pageviews = 0 "
        return (
            "FROM sessions AS s FINAL WHERE s.project_id = {project:String} "
            f"AND s.session_day IN {{rolled_days:Array(Date)}} {no_views}"
            f"AND ({session_key('s.')}, s.events) IN "
            f"(SELECT k, ev FROM ({self._dropped_in_rolled_days()}))"
        )

    def gone_sessions_sql(self, dim: Dimension) -> str:
        """The sessions of the rolled days that the filter drops whole, per value of the
        session dimension ``dim`` and a ROLLUP row (''), with the figures to take from the
        rollups: sessions, bounces, sessions with a page view, duration, and their visitors
        (less those who kept another session: :meth:`kept_visitors_sql`)."""
        return (
            f"SELECT {dim.session_column()} AS value, count() AS sessions, "
            "countIf(s.pageviews = 1 AND s.events = 1) AS bounces, "
            "countIf(s.pageviews > 0) AS sessions_with_pv, "
            "sum(dateDiff('millisecond', s.first_ts, s.last_ts)) AS duration_ms, "
            f"uniqExact(s.visitor_id) AS visitors {self._gone_sessions()} "
            "GROUP BY value WITH ROLLUP"
        )

    def kept_visitors_sql(self) -> str:
        """How many visitors of the sessions the filter drops whole on the rolled days keep
        another session there (they still count)."""
        return (
            "SELECT uniqExact(s.visitor_id) AS visitors FROM sessions AS s FINAL "
            "WHERE s.project_id = {project:String} AND s.session_day IN {rolled_days:Array(Date)} "
            f"AND s.visitor_id IN (SELECT s.visitor_id {self._gone_sessions()}) "
            f"AND ({session_key('s.')}, s.events) NOT IN "
            f"(SELECT k, ev FROM ({self._dropped_in_rolled_days()}))"
        )

    def rollup_sql(self, dimensions: Sequence[str]) -> str:
        """Sums of the current rollups of the rolled days (see :meth:`load_rollups`), per
        dimension and value, for the given rolled-up dimensions ('' for the totals)."""
        self.params["rollup_dimensions"] = list(dimensions)
        return (
            "SELECT dimension, value, sum(sessions) AS sessions, sum(pageviews) AS pageviews, "
            "sum(events) AS events, sum(bounces) AS bounces, "
            "sum(with_pageview) AS sessions_with_pv, sum(duration_ms) AS duration_ms, "
            "sum(visitors) AS visitors FROM session_rollups "
            "WHERE project_id = {project:String} "
            "AND dimension IN {rollup_dimensions:Array(String)} "
            "AND session_day IN {rolled_days:Array(Date)} "
            "AND version = transform(session_day, {rolled_days:Array(Date)}, "
            "{rolled_versions:Array(UInt64)}, toUInt64(0)) "
            "GROUP BY dimension, value"
        )

    def rolled_session_rows(self, extra: dict[str, Dimension]) -> str:
        """The session rows of the rolled days (:meth:`load_rolled_sessions`), from
        ``rolled_sessions``: those that pass the session filters and have an event on a
        matching page, with the columns of :meth:`sessions` (``extra`` maps alias -> session
        dimension) that :data:`ROLLED_SESSION_AGGREGATES` reads, and ``multi``. Every event of
        these sessions is in the range."""
        pv, ev = "pageviews", "events"
        if self._event_conditions:  # the page filters: the page views and events that match
            matching = "h -> h IN {matching_hashes:Array(UInt32)}"
            pv = f"arrayCount({matching}, page_hashes)"
            ev = f"pv + arrayCount({matching}, event_hashes)"
        cols = [
            "visitor_id AS visitor",
            "multi",
            f"{pv} AS pv",
            f"{ev} AS ev",
            "pageviews AS all_pv",
            "events AS all_ev",
            "duration_ms AS dur",
            *(f"{dim.session_column()} AS {alias}" for alias, dim in extra.items()),
        ]
        where = [
            "project_id = {project:String}",
            "session_day IN {rolled_days:Array(Date)}",
            "version = transform(session_day, {rolled_days:Array(Date)}, "
            "{rolled_versions:Array(UInt64)}, toUInt64(0))",
            *(f"({c})" for c in self._session_row_conditions),
        ]
        rows = f"SELECT {', '.join(cols)} FROM rolled_sessions WHERE {' AND '.join(where)}"
        return f"SELECT * FROM ({rows}) WHERE ev > 0"

    def _days(self, alias: str = "") -> str:
        """The rows of a table keyed like the sessions (``alias``: ``s.``) that the session
        rows read: those of the days of the range and the day before, and the long sessions
        on other days that cross an end of it (loaded: :meth:`load_long_sessions`; else
        read here), but on days taken from the rollups."""
        day, sid = f"{alias}session_day", f"{alias}session_id"
        days = f"{day} BETWEEN {{day0:Date}} AND {{day1:Date}}"
        if self._long is None:
            far = (
                "(SELECT session_day, session_id FROM long_sessions "
                "WHERE project_id = {project:String} "
                "AND (session_day < {day0:Date} OR session_day > {day1:Date}))"
            )
            days = f"({days} OR ({day}, {sid}) IN {far})"
        elif self.params["far"]:
            days = f"({days} OR ({day}, {sid}) IN {{far:Array(Tuple(Date, UInt64))}})"
        if self.rolled_days:  # read from the rollups instead
            days += f" AND {day} NOT IN {{rolled_days:Array(Date)}}"
        return days

    def _session_rows_where(self) -> str:
        """The rows of ``sessions AS s`` with an event in the range (give or take the edge
        corrections) that pass the session filters, on days not taken from the rollups."""
        where = [
            "s.project_id = {project:String}",
            self._days("s."),
            "s.last_ts >= {start:DateTime64(3, 'UTC')}",
            "s.first_ts < {end:DateTime64(3, 'UTC')}",
            *(f"({c})" for c in self._session_row_conditions),
        ]
        return " AND ".join(where)

    def _whole_sessions(self) -> str:
        """For :meth:`page_rows` and :meth:`event_rows`: the sessions table's rows in the range
        that pass the session filters, with their whole-session figures. Neither the event
        filters (the rows joined to these carry them) nor the counts outside the range (a row
        with events in the range has them) are applied here: the joined rows decide which
        sessions count."""
        where = self._session_rows_where()
        return (
            "SELECT s.session_id AS session_id, s.session_day AS session_day, "
            "s.visitor_id AS visitor, s.pageviews AS all_pv, s.events AS all_ev, "
            "s.first_ts AS first_ts, s.last_ts AS last_ts, "
            "dateDiff('millisecond', s.first_ts, s.last_ts) AS dur "
            f"FROM sessions AS s FINAL WHERE {where}"
        )

    def _sessions_from_table(self, extra: dict[str, Dimension]) -> str:
        t0, t1 = "{start:DateTime64(3, 'UTC')}", "{end:DateTime64(3, 'UTC')}"
        pv, ev = "s.pageviews", "s.events"
        source = "sessions AS s FINAL"
        in_range = False  # whether pv and ev count the events in the range alone already
        if self.counts_in_range:  # the sessions with a matching event
            source += f" INNER JOIN ({self.matching_sessions()}) AS m ON m.k = {session_key('s.')}"
            pv, ev, in_range = "m.pv", "m.ev", True
        elif self._dropped is not None:  # the sessions' own counts less the dropped events'
            condition = f"({self._dropped})"
            if self.rolled_days:  # their sessions are left out below
                condition += " AND toDate(session_start) NOT IN {rolled_days:Array(Date)}"
            dropped = self._counts_by_session("report_events", condition)
            source += f" LEFT JOIN ({dropped}) AS n ON n.k = {session_key('s.')}"
            pv, ev = "s.pageviews - n.pv", "s.events - n.ev"
        elif self._event_conditions:  # page filters: the sessions with a matching page
            matching = (
                f"SELECT {session_key()} AS k, sum(pageviews) AS pv, sum(events) AS ev "
                f"FROM session_pages FINAL WHERE project_id = {{project:String}} "
                f"AND {self._days()} "
                f"AND {self.event_filter} GROUP BY k"
            )
            source += f" INNER JOIN ({matching}) AS m ON m.k = {session_key('s.')}"
            pv, ev = "m.pv", "m.ev"
        if self._edges is None:
            raise RuntimeError("the session rows need QueryScope.load_edges first")
        if in_range:
            opv = oev = "toUInt64(0)"
        else:
            crosses = f"(s.first_ts < {t0} OR s.last_ts >= {t1})"
            opv, oev = (
                f"if({crosses}, transform(s.session_id, {{edge_ids:Array(UInt64)}}, "
                f"{{{name}:Array(UInt64)}}, toUInt64(0)), toUInt64(0))"
                if self._edges
                else "toUInt64(0)"
                for name in ("edge_pv", "edge_ev")
            )
        cols = [
            "s.session_id AS session_id",
            "s.visitor_id AS visitor",
            f"{pv} - {opv} AS pv",
            f"{ev} - {oev} AS ev",
            "s.pageviews AS all_pv",
            "s.events AS all_ev",
            "s.first_ts AS first_ts",
            "s.last_ts AS last_ts",
            "dateDiff('millisecond', s.first_ts, s.last_ts) AS dur",
            "s.session_day AS session_day",
        ]
        cols += [f"{dim.session_column()} AS {alias}" for alias, dim in extra.items()]
        where = self._session_rows_where()
        rows = f"SELECT {', '.join(cols)} FROM {source} WHERE {where}"
        return f"SELECT * FROM ({rows}) WHERE ev > 0"  # an event in the range

    def events_where(self) -> str:
        """WHERE for event-level queries: range, event filters, and (with session filters)
        membership in a session that passes them (one with an event in the range: the
        event's own condition asks that)."""
        where = f"{self.range_where} AND {self.event_filter}"
        if self.has_session_filters:
            sessions = (
                f"SELECT s.session_id FROM sessions AS s FINAL WHERE {self._session_rows_where()}"
            )
            where += f" AND session_id IN ({sessions})"
        return where


def _as_date(value: object) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _as_utc(value: object) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


#: The figures of :data:`SESSION_AGGREGATES` but the visitors.
_SESSION_FIGURES = (
    "count() AS sessions, sum(pv) AS pageviews, "
    "sum(ev) AS events, countIf(all_pv = 1 AND all_ev = 1) AS bounces, "
    "countIf(all_pv > 0) AS sessions_with_pv, sum(dur) AS duration_ms"
)

#: Aggregates over the sessions table, shared by every report that shows session metrics.
SESSION_AGGREGATES = f"uniqExact(visitor) AS visitors, {_SESSION_FIGURES}"

#: :data:`SESSION_AGGREGATES` over :meth:`QueryScope.rolled_session_rows`: the visitors are
#: the rows whose visitor has no other session that day, and the distinct visitors of the
#: others (the same count; a set of a few visitors instead of all).
ROLLED_SESSION_AGGREGATES = (
    f"countIf(multi = 0) + uniqExactIf(visitor, multi = 1) AS visitors, {_SESSION_FIGURES}"
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
