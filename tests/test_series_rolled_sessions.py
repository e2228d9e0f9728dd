"""Which rolled-up days a time series under filters on the page and session dimensions takes
from ``rolled_sessions`` (svc.queries.series_rolled.split), without a store: only days that lie
in one bucket of the range's zone, their events only when their sessions' next day is in that
bucket or (without a page filter) in one other, and no day with a long session's events or a
late event from before it. The series these days make, against the events path, are checked
on a store in tests/test_timeseries_rollups.py."""

from __future__ import annotations

from datetime import date

from svc.queries.dates import DateRange
from svc.queries.filters import parse_filters
from svc.queries.plan import Query, plan
from svc.queries.series_rolled import split, takes_rolled_sessions

PROJECT = "series-rolled"


def _query(first: date, last: date, tz: str, raw: str = "browser:is:Firefox") -> Query:
    return Query(PROJECT, DateRange(first, last, tz), tuple(parse_filters([raw])))


def test_the_days_taken_lie_in_one_bucket() -> None:
    # 2026-11-01 to 11-30 in Berlin by week: a UTC Sunday holds the start of a Berlin week
    # (23:00 UTC), so neither its sessions nor its events are taken; a Saturday's sessions
    # are, its events not (its sessions' next day is that Sunday)
    p = plan(_query(date(2026, 11, 1), date(2026, 11, 30), "Europe/Berlin"))
    assert takes_rolled_sessions(p, "week") and not takes_rolled_sessions(p, "hour")
    rolled = [(date(2026, 11, 20 + i), 1) for i in range(5)]  # Friday to Tuesday
    taken = split(p, "week", rolled, [])
    sessions = [d for d, _ in taken.sessions]
    events = [d for d, _ in taken.events]
    assert date(2026, 11, 22) not in sessions and date(2026, 11, 22) not in events
    assert date(2026, 11, 21) in sessions and date(2026, 11, 21) not in events
    assert taken.labels[date(2026, 11, 23)] == "2026-11-23"
    assert not taken.next_labels
    # by day in UTC: every day's events, its sessions across midnight moved to the next day;
    # a day with a long session keeps its sessions but not its events, one with a late event
    # from before it neither
    utc = plan(_query(date(2026, 11, 1), date(2026, 11, 30), "UTC"))
    taken = split(utc, "day", rolled, [(date(2026, 11, 21), 0), (date(2026, 11, 23), 1)])
    assert [d for d, _ in taken.sessions] == [date(2026, 11, d) for d in (20, 21, 22, 24)]
    assert [d for d, _ in taken.events] == [date(2026, 11, d) for d in (20, 22, 24)]
    assert taken.next_labels[date(2026, 11, 20)] == "2026-11-21"
    # under a page filter, no day whose next day is another bucket gives its events
    paged = plan(_query(date(2026, 11, 1), date(2026, 11, 30), "UTC", "page:is:/"))
    assert not split(paged, "day", rolled, []).events
    # in a zone of half hours, no UTC day is one local day
    kolkata = plan(_query(date(2026, 11, 1), date(2026, 11, 30), "Asia/Kolkata"))
    assert not split(kolkata, "day", rolled, []).sessions
