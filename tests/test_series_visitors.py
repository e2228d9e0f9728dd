"""The arithmetic of svc.queries.series_visitors against a count of the ids themselves: random
worlds of visitor ids (each of one session day, with events on it, maybe the next, and for a
long session on days around), random rolled-up days (some rolled before the ``next_day`` row
existed), every span of days: the visitors it gives equal the distinct ids with an event in
the span. No store: the store's side is tests/test_timeseries_rollups.py."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

import pytest

from svc.queries.series_visitors import LongSpan, RolledDay, bucket_visitors

DAY0 = date(2026, 3, 1)
DAYS = 16


@dataclass(frozen=True)
class Id:
    day: int  # the session day k
    events: frozenset[int]  # the days it has an event on (k among them)


def world(rng: random.Random) -> tuple[list[Id], dict[int, RolledDay], list[LongSpan]]:
    ids: list[Id] = []
    long: list[LongSpan] = []
    for _ in range(rng.randrange(20, 60)):
        k = rng.randrange(DAYS)
        events = {k}
        if rng.random() < 0.4:  # across midnight
            events.add(k + 1)
        if rng.random() < 0.08:  # a long session: days before its day, or well after it
            outside = {k + rng.choice((-2, -1, 2, 3, 5)) for _ in range(rng.randrange(1, 3))}
            events |= outside
            long.append(LongSpan(DAY0 + timedelta(k), *_span(outside)))
        ids.append(Id(k, frozenset(events)))
    rolled = {}
    for d in range(-1, DAYS):
        if rng.random() < 0.8:
            v = sum(1 for i in ids if i.day == d)
            n = sum(1 for i in ids if i.day == d and d + 1 in i.events)
            rolled[d] = RolledDay(v, None if rng.random() < 0.15 else n)
    return ids, rolled, long


def _span(days: set[int]) -> tuple[date, date]:
    return DAY0 + timedelta(min(days)), DAY0 + timedelta(max(days))


def seen(ids: list[Id], first: int, last: int) -> int:
    return sum(1 for i in ids if any(first <= d <= last for d in i.events))


@pytest.mark.parametrize("seed", range(40))
def test_every_span_counts_the_distinct_ids(seed: int) -> None:
    rng = random.Random(seed)
    ids, rolled, long = world(rng)
    by_date = {DAY0 + timedelta(d): r for d, r in rolled.items()}
    for first in range(DAYS):
        for last in range(first, min(DAYS, first + 31)):
            got = bucket_visitors(DAY0 + timedelta(first), DAY0 + timedelta(last), by_date, long)
            merged = {s: seen(ids, (s[0] - DAY0).days, (s[1] - DAY0).days) for s in got.segments}
            assert got.total(merged) == seen(ids, first, last), (seed, first, last, got)


def test_a_rolled_up_span_merges_nothing() -> None:
    rolled = {DAY0 + timedelta(d): RolledDay(10 + d, 3) for d in range(-1, 7)}
    got = bucket_visitors(DAY0, DAY0 + timedelta(6), rolled, [])
    assert got.segments == ()
    assert got.known == sum(10 + d for d in range(7)) + 3


def test_today_alone_is_merged_less_those_of_yesterday() -> None:
    rolled = {DAY0 + timedelta(d): RolledDay(10, 4) for d in range(-1, 5)}
    today = DAY0 + timedelta(5)
    got = bucket_visitors(DAY0, today, rolled, [])
    assert got.segments == ((today, today),)
    assert got.known == 5 * 10 + 4 - 4


def test_a_day_without_its_next_day_row_is_merged_with_the_day_after() -> None:
    rolled = {DAY0 + timedelta(d): RolledDay(10, 4) for d in range(-1, 5)}
    rolled[DAY0 + timedelta(4)] = RolledDay(10, None)  # rolled up before the row existed
    today = DAY0 + timedelta(5)
    got = bucket_visitors(DAY0, today, rolled, [])
    assert got.segments == ((DAY0 + timedelta(4), today),)
    # and as the day before a range, its first day is merged
    got = bucket_visitors(DAY0 + timedelta(5), DAY0 + timedelta(5), rolled, [])
    assert got.segments == ((today, today),) and got.known == 0


def test_a_long_session_from_another_day_merges_the_bucket() -> None:
    rolled = {DAY0 + timedelta(d): RolledDay(10, 4) for d in range(-1, 7)}
    week = (DAY0, DAY0 + timedelta(6))
    late = LongSpan(DAY0 + timedelta(9), DAY0 + timedelta(6), DAY0 + timedelta(6))
    assert bucket_visitors(*week, rolled, [late]).segments == (week,)
    # one of a day of the bucket whose outside events are on rolled-up days: counted there
    inside = LongSpan(DAY0 + timedelta(1), DAY0 + timedelta(4), DAY0 + timedelta(5))
    assert bucket_visitors(*week, rolled, [inside]).segments == ()
