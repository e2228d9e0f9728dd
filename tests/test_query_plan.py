"""The planner on plans, without a store: what a query reads is decided from the query alone
(svc.queries.plan), the facts the runner reads are digested by pure functions, and the SQL is
built from a plan and its facts without changing either (svc.queries.sql)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from svc.queries import breakdown
from svc.queries.dates import DateRange
from svc.queries.dimensions import dimension
from svc.queries.filters import parse_filters
from svc.queries.plan import (
    Counting,
    Crossing,
    Facts,
    Needs,
    Plan,
    Query,
    Reads,
    Span,
    crossing,
    long_sessions,
    matching_hashes,
    one_section,
    page_by,
    plan,
    reads,
    rolled_days,
)
from svc.queries.sql import breakdowns, goals
from svc.queries.sql import sessions as sql

JAN = DateRange(date(2026, 1, 10), date(2026, 1, 20), "UTC")


def planned(*filters: str, rng: DateRange = JAN) -> Plan:
    return plan(Query("p1", rng, tuple(parse_filters(list(filters)))))


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, minute, tzinfo=UTC)


# the plan -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "counting"),
    [
        ((), Counting.WHOLE),
        (("source:is:google",), Counting.WHOLE),
        (("page:contains:/blog",), Counting.PAGES),
        (("page:is:/a", "country:is:DE"), Counting.PAGES),
        (("event:is_not:signup",), Counting.DROPPED),
        (("prop:plan:is_not:pro",), Counting.DROPPED),
        (("event:is:signup",), Counting.IN_RANGE),
        (("event:matches:.",), Counting.IN_RANGE),
        (("page:is:/a", "event:is:signup"), Counting.IN_RANGE),
    ],
)
def test_how_the_session_rows_count(filters: tuple[str, ...], counting: Counting) -> None:
    assert planned(*filters).counting is counting


def test_a_dropping_filter_binds_its_negation() -> None:
    p = planned("event:is_not:signup")
    assert p.dropped == "toString(name) = {fv0:String}" and p.params["fv0"] == "signup"
    assert p.drops_reported_events and not p.drops_page_views
    assert planned("prop:plan:is_not:pro").drops_page_views
    # with a second filter it still drops reported events, but no rollup can take that away
    both = planned("event:is_not:signup", "source:is:google")
    assert both.counting is Counting.DROPPED and not both.drops_reported_events
    assert not both.may_roll_up(less_dropped=True)


def test_the_days_of_the_session_rows_in_utc_and_in_another_zone() -> None:
    p = planned()
    # bound as naive UTC times, as the store's client binds DateTime64(3, 'UTC')
    assert (p.params["start"], p.params["end"]) == (datetime(2026, 1, 10), datetime(2026, 1, 21))
    assert (p.params["day0"], p.params["day1"]) == (date(2026, 1, 9), date(2026, 1, 21))
    assert (p.params["start_day"], p.params["end_day0"]) == (date(2026, 1, 10), date(2026, 1, 20))
    # a range from a UTC midnight: its first day too (unless a long session crosses it)
    assert p.rollup_span == (date(2026, 1, 10), date(2026, 1, 19))
    # Tokyo: 10 January starts at 15:00 UTC on the 9th
    tokyo = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 10), "Asia/Tokyo"))
    assert tokyo.params["start"] == datetime(2026, 1, 9, 15)
    assert (tokyo.params["day0"], tokyo.params["day1"]) == (date(2026, 1, 8), date(2026, 1, 10))
    assert tokyo.rollup_span is None
    four = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 13), "UTC"))
    assert four.rollup_span == (date(2026, 1, 10), date(2026, 1, 12))


def test_at_a_utc_midnight_the_near_crossings_are_looked_for_on_the_day_before_only() -> None:
    utc = planned()
    assert utc.starts_at_utc_midnight and utc.ends_at_utc_midnight
    near = sql.near_crossing(utc)
    assert "session_day = {day0:Date}" in near and "session_day = {end_day0:Date}" in near
    # a session of the first day (of the day after) that crosses the start (the end) has an
    # event before its own day: long_crossing looks for it there
    long = sql.long_crossing(utc)
    assert "session_day >= {start_day:Date}" in long and "session_day >= {day1:Date}" in long
    tokyo = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 12), "Asia/Tokyo"))
    assert not tokyo.starts_at_utc_midnight and not tokyo.ends_at_utc_midnight
    near = sql.near_crossing(tokyo)
    assert "BETWEEN {day0:Date} AND {start_day:Date}" in near
    assert "BETWEEN {end_day0:Date} AND {day1:Date}" in near


def test_one_value_of_a_session_dimension_may_be_read_from_its_rollup_rows() -> None:
    assert planned("country:is:DE").rolled_value == ("country", "DE")
    assert planned("exit_page:is:/a").rolled_value == ("exit_page", "/a")
    for other in (("country:is:DE|FR",), ("country:is_not:DE",), ("page:is:/a",), ()):
        assert planned(*other).rolled_value is None, other
    assert planned("country:is:DE", "source:is:google").rolled_value is None
    one = planned("country:is:DE")
    assert not one.may_roll_up() and one.may_roll_up(one_value=True)
    assert reads(one, Needs(rollups=True)).rolled == ""
    assert reads(one, Needs(rollups=True, one_value=True)).rolled == "rollups"


def test_one_event_name_may_be_read_from_its_rollup_rows() -> None:
    assert planned("event:is:signup").rolled_event == "signup"
    assert planned("event:is:page_view").rolled_event == "page_view"
    for other in (("event:is:signup|x",), ("event:is_not:signup",), ("event:is:web_vitals",)):
        assert planned(*other).rolled_event is None, other
    assert planned("event:is:signup", "country:is:DE").rolled_event is None
    one = planned("event:is:signup")
    assert one.rolled_value is None and one.counting is Counting.IN_RANGE
    assert reads(one, Needs(rollups=True)).rolled == ""
    assert reads(one, Needs(rollups=True, one_value=True)).rolled == "rollups"


def test_one_dropped_event_name_may_be_taken_from_its_rollup_rows() -> None:
    assert planned("event:is_not:signup").dropped_event == "signup"
    others = (
        ("event:is_not:signup|click",),  # a session of both is dropped whole: no row has it
        ("event:is_not:signup", "country:is:DE"),
        ("event:is:signup",),
        ("event:not_contains:sign",),
        ("prop:plan:is_not:pro",),
        ("event:is_not:page_view",),
    )
    for other in others:
        assert planned(*other).dropped_event is None, other
    one = planned("event:is_not:signup")
    assert one.counting is Counting.DROPPED and one.drops_reported_events


def test_a_plan_does_not_change() -> None:
    p = planned("prop:plan:is:pro")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.counting = Counting.WHOLE  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.params["project"] = "other"  # type: ignore[index]
    before = dict(p.params)
    facts = Facts(long={}, outside=())
    breakdowns.breakdown(p, facts, dimension("source", "k")[0], "session", "-visitors", 10, 20)
    goals.goals(p, facts, [("event", "signup")])
    sql.rollup_sums(p, Facts(rolled=((date(2026, 1, 12), 7),)), ["", "source"])
    assert dict(p.params) == before
    bound = p.bound({"by_key": "plan"})
    assert bound.params["by_key"] == "plan" and "by_key" not in p.params


def test_which_reads_may_take_rolled_days() -> None:
    assert planned().may_roll_up() and not planned().may_read_rolled_sessions
    assert not planned("source:is:google").may_roll_up()
    assert planned("source:is:google").may_read_rolled_sessions
    assert planned("page:contains:/a").may_read_rolled_sessions
    assert not planned("event:is:signup").may_read_rolled_sessions
    assert not planned("event:is_not:signup").may_roll_up()
    assert planned("event:is_not:signup").may_roll_up(less_dropped=True)


@pytest.mark.parametrize(
    ("by", "filters", "kind", "needs"),
    [
        ("source", (), "session", Needs(edges=True, rolled_sessions=True, rollups=True)),
        ("page", (), "page", Needs(page_edges=True, rolled_sessions=True, rollups=True)),
        (
            "page",
            ("country:is:DE",),
            "page",
            Needs(page_edges=True, rolled_sessions=True, rollups=True),
        ),
        ("page", ("event:is:signup",), "events", Needs()),
        ("event", ("page:is:/a",), "event_name", Needs(edges=True, rollups=True)),
        ("hostname", (), "events", Needs(rollups=True)),
        ("prop:plan", (), "events", Needs(rollups=True, property_key="plan")),
        ("event", ("event:is:signup",), "events", Needs()),
    ],
)
def test_where_a_breakdown_reads_from(
    by: str, filters: tuple[str, ...], kind: str, needs: Needs
) -> None:
    p = planned(*filters)
    dim = dimension(by, "by_key")[0]
    assert breakdown.rows_kind(p, dim) == kind
    assert breakdown.needs(p, dim) == needs


@pytest.mark.parametrize(
    ("filters", "needs", "expected"),
    [
        # GET /metrics without filters: crossing sessions (with the long ones), their events
        # outside the range, the rolled days
        (
            (),
            Needs(edges=True, rollups=True, less_dropped=True),
            Reads(True, True, True, False, "rollups"),
        ),
        # counted over the events in the range: the long sessions only, no rollups
        (
            ("event:is:signup",),
            Needs(edges=True, rollups=True, less_dropped=True),
            Reads(long=True),
        ),
        # a dropping filter: corrected, and the rollups less what it drops
        (
            ("event:is_not:signup",),
            Needs(edges=True, rollups=True, less_dropped=True),
            Reads(True, True, True, False, "rollups"),
        ),
        # a page breakdown: crossing sessions and their page views outside, per page
        ((), Needs(page_edges=True, rollups=True), Reads(True, True, False, True, "rollups")),
        # a session breakdown filtered on the page: rolled_sessions
        (
            ("page:is:/a",),
            Needs(edges=True, rolled_sessions=True, rollups=True),
            Reads(True, True, True, False, "rolled_sessions"),
        ),
        # a page breakdown filtered on a session dimension: rolled_sessions too
        (
            ("country:is:DE",),
            Needs(page_edges=True, rolled_sessions=True, rollups=True),
            Reads(True, True, False, True, "rolled_sessions"),
        ),
        # a hostname breakdown with a filter: the events, and nothing to read first
        (("source:is:google",), Needs(rollups=True), Reads()),
        (
            (),
            Needs(rollups=True, property_key="plan"),
            Reads(long=True, rolled="rollups", property_key="plan"),
        ),
    ],
)
def test_what_the_runner_reads_first(
    filters: tuple[str, ...], needs: Needs, expected: Reads
) -> None:
    assert reads(planned(*filters), needs) == expected


def test_no_rolled_days_no_long_sessions_for_them() -> None:
    """A range too short for a rolled day reads no long sessions for the rollups."""
    short = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 10), "UTC"))
    assert reads(short, Needs(rollups=True)) == Reads(rolled="rollups")


# the facts ----------------------------------------------------------------------------------


def test_crossing_sessions_are_read_in_two_groups() -> None:
    """Sessions whose events outside the range are within a day of its ends are read
    between the first and last of them (minutes, as a rule); a longer one between its own,
    by its id, so that it does not widen the others' window to days."""
    p = planned()  # 10 to 20 January, UTC
    long = long_sessions([(date(2026, 1, 2), 12, at(2, 3), at(12, 5), 0)])
    near = [
        (date(2026, 1, 9), 11, at(9, 23, 50), at(10, 0, 20), 1, 0),
        (date(2026, 1, 20), 14, at(20, 22), at(21, 1), 1, 0),
    ]
    c = crossing(p, long, near)
    assert (c.ids, c.long_ids, c.every_id) == ((11, 14), (12,), (11, 12, 14))
    ms = timedelta(milliseconds=1)
    assert (c.since, c.until) == (at(9, 23, 50), at(21, 1) + ms)
    assert (c.long_since, c.long_until) == (at(2, 3), at(21) + ms)
    # none crossing: the windows are the range itself, and nothing is read
    empty = crossing(p, {}, [])
    assert (empty.every_id, empty.since, empty.until) == ((), at(10), at(21) + ms)
    stmt = sql.outside_statement(p, Facts(long=long, crossing=c))
    assert "{crossing:Array(UInt64)}" in stmt.sql and "{long_ids:Array(UInt64)}" in stmt.sql
    assert stmt.params["edge0"] == datetime(2026, 1, 9, 23, 50) and stmt.params["long_ids"] == [12]
    assert sql.outside_events(p, Facts(long={}, crossing=empty)) == "0"


def test_two_day_sessions_at_the_ends_of_a_utc_range_are_counted_from_their_rows() -> None:
    """A session near an end of a UTC range with every event on its day or the next (the
    rows' sixth column) has its counts outside from next_day_sessions and the sessions
    table; the others' are read from their events, between their own first and last."""
    p = planned()  # 10 to 20 January, UTC
    near = [
        (date(2026, 1, 9), 11, at(9), at(10, 0, 20), 1, 1),  # two days, crosses the start
        (date(2026, 1, 9), 13, at(9, 23, 50), at(10, 1), 1, 0),  # also in long_sessions
        (date(2026, 1, 20), 14, at(20), at(21, 1), 1, 1),  # two days, crosses the end
    ]
    c = crossing(p, {}, near)
    assert (c.two_day_start, c.two_day_end, c.rest_ids) == ((11,), (14,), (13,))
    assert (c.rest_since, c.rest_until) == (at(9, 23, 50), at(21) + timedelta(milliseconds=1))
    stmt = sql.outside_statement(p, Facts(long={}, crossing=c))
    assert "next_day_sessions" in stmt.sql and "{rest_ids:Array(UInt64)}" in stmt.sql
    assert "{crossing:Array(UInt64)}" not in stmt.sql
    assert (stmt.params["two_day_start"], stmt.params["two_day_end"]) == ([11], [14])
    # under a filter on events, every outside count is read from the events
    page = planned("page:is:/a")
    filtered = sql.outside_statement(page, Facts(long={}, crossing=crossing(page, {}, near)))
    assert "next_day_sessions" not in filtered.sql and "{crossing:Array(UInt64)}" in filtered.sql
    # nor is a range of another zone's days counted so
    tokyo = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 20), "Asia/Tokyo"))
    assert crossing(tokyo, {}, near).two_day_start == ()


def test_a_range_to_a_utc_midnight_may_take_its_last_day_from_the_rollups() -> None:
    """Its last day's sessions began in the range: a rolled day counts them whole, and the
    report takes away the page views and events after the end of those that cross it."""
    p = planned()  # 10 to 20 January, UTC
    assert p.rollup_span == (date(2026, 1, 10), date(2026, 1, 19))
    assert p.rollup_span_to_end == (date(2026, 1, 10), date(2026, 1, 20))
    one_day = planned(rng=DateRange(date(2026, 1, 20), date(2026, 1, 20), "UTC"))
    assert one_day.rollup_span is None
    assert one_day.rollup_span_to_end == (date(2026, 1, 20), date(2026, 1, 20))
    tokyo = planned(rng=DateRange(date(2026, 1, 10), date(2026, 1, 20), "Asia/Tokyo"))
    assert tokyo.rollup_span_to_end == tokyo.rollup_span  # its end is no UTC midnight
    near = [
        (date(2026, 1, 9), 11, at(9, 23, 50), at(10, 0, 20), 1, 0),  # crosses the start
        (date(2026, 1, 20), 14, at(20, 22), at(21, 1), 1, 0),  # the last day's, crosses the end
        (date(2026, 1, 20), 15, at(20, 23), at(20, 23, 59), 1, 0),
    ]
    c = crossing(p, {}, near)
    assert c.end_ids == (14,)
    outside = ((11, 1, 2), (14, 3, 4))
    taken = Facts(crossing=c, outside=outside, rolled=((date(2026, 1, 20), 7),))
    assert taken.after_end(p) == (3, 4)
    assert replace(taken, rolled=((date(2026, 1, 19), 7),)).after_end(p) == (0, 0)


def test_long_sessions_join_the_session_rows_on_days_they_would_not_read() -> None:
    p = planned()
    facts = Facts(
        long={
            (date(2026, 1, 2), 12): Span(at(2), at(12)),  # before the day before: far
            (date(2026, 1, 15), 13): Span(at(5), at(16)),  # inside: read anyway
        },
        outside=(),
    )
    assert facts.far(p) == [(date(2026, 1, 2), 12)]
    assert facts.long_days == {date(2026, 1, 2), date(2026, 1, 15)}
    rows = sql.session_rows(p, facts)
    assert "(s.session_day, s.session_id) IN {far:Array(Tuple(Date, UInt64))}" in rows
    # none: the session rows read the days of the range and the day before, as ever
    assert "{far:" not in sql.session_rows(p, Facts(long={}, outside=()))
    # not read (an event report): the long sessions are looked up in the statement itself
    assert "FROM long_sessions" in sql.events_where(planned("source:is:google"), Facts())
    assert "sessions" not in sql.events_where(p, Facts())  # no session filter, no lookup


def test_the_session_rows_need_the_crossing_sessions_read_first() -> None:
    with pytest.raises(RuntimeError, match="Needs"):
        sql.session_rows(planned(), Facts(long={}))
    # counted over the events in the range, they need no correction
    p = planned("event:is:signup")
    rows = sql.session_rows(p, Facts(long={}, outside=()))
    assert "edge_ids" not in rows and "report_events" in rows


def test_rolled_days_with_a_long_crossing_session_are_left_out() -> None:
    p = planned()
    rows = [(date(2026, 1, d), 100 + d) for d in range(11, 16)]
    kept = rolled_days(p, rows, {date(2026, 1, 13)})
    assert [d.day for d, _ in kept] == [11, 12, 14, 15]
    facts = Facts(long={}, outside=(), rolled=kept)
    assert facts.params(p)["rolled_versions"] == [111, 112, 114, 115]
    # the session rows read the days left, by name: the range's and the day before, less
    # the rolled ones (day 13 is read: its long session crosses an end)
    assert "session_day IN {session_days:Array(Date)}" in sql.session_rows(p, facts)
    left = [d.day for d in facts.params(p)["session_days"]]
    assert 13 in left and not {11, 12, 14, 15} & set(left)
    assert left == sorted(left) and len(left) == (p.params["day1"] - p.params["day0"]).days + 1 - 4


def test_a_hash_collision_sends_the_report_to_the_session_rows() -> None:
    assert matching_hashes([(7, 1, 1), (8, 1, 1)]) == (7, 8)
    assert matching_hashes([(7, 1, 1), (8, 1, 0)]) is None
    assert matching_hashes([]) == ()
    # an empty set of matching paths is still bound (the rows then match nothing)
    assert Facts(matching_hashes=()).params(planned())["matching_hashes"] == []


def test_one_whole_section_of_the_matching_paths_serves_the_filter() -> None:
    d1, d2, d3 = date(2026, 5, 1), date(2026, 5, 2), date(2026, 5, 3)
    marked = [(d1, 1, ["/blog", "/"]), (d2, 1, ["/blog"]), (d3, 0, [])]
    # every path of /blog on d1 and d2, nothing on d3 (which lacks the rows: needs none)
    assert one_section([(d1, "/blog", 3, 3), (d2, "/blog", 2, 2)], marked) == "/blog"
    assert one_section([(d1, "/blog", 2, 3), (d2, "/blog", 2, 2)], marked) is None  # not all
    assert one_section([(d1, "/blog", 3, 3), (d2, "/", 1, 1)], marked) is None  # two
    assert one_section([(d1, "/", 1, 1), (d2, "/", 1, 1)], marked) is None  # d2 lacks /
    assert one_section([(d3, "/blog", 1, 1)], marked) is None  # d3 lacks its rows
    assert one_section([], marked) is None  # no match: rolled_sessions reads nothing


def test_one_value_s_page_rows_serve_the_page_breakdown() -> None:
    d1, d2 = date(2026, 5, 1), date(2026, 5, 2)
    de = planned("country:is:DE")
    assert page_by(de, [(d1, 1, 1, 1), (d2, 1, 1, 1)], 2) == "page|country:DE"
    assert page_by(de, [(d1, 1, 1, 1), (d2, 1, 0, 0)], 2) == "page|country:DE"  # none on d2
    assert page_by(de, [(d1, 1, 1, 1), (d2, 1, 0, 1)], 2) is None  # not among d2's busiest
    assert page_by(de, [(d1, 1, 1, 1), (d2, 0, 0, 0)], 2) is None  # d2 lacks the rows
    assert page_by(de, [(d1, 1, 1, 1)], 2) is None  # d2 has no row at all
    rows = [(d1, 1, 1, 1)]
    assert page_by(planned("entry_page:is:/"), rows, 1) is None  # not a dimension of them
    assert page_by(planned("country:is:DE", "device:is:desktop"), rows, 1) is None  # two
    assert page_by(planned("country:is_not:DE"), rows, 1) is None


def test_facts_bind_only_what_was_read() -> None:
    p = planned()
    assert Facts().params(p) == {}
    c = Crossing((1,), at(9), at(21), (), at(10), at(21))
    params = Facts(long={}, crossing=c, outside=((1, 2, 3),)).params(p)
    assert params["far"] == [] and params["crossing"] == [1]
    assert (params["edge_ids"], params["edge_pv"], params["edge_ev"]) == ([1], [2], [3])
    assert "rolled_days" not in params and "edge_page_keys" not in params
