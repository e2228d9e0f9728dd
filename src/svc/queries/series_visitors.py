"""The exact visitors of a span of UTC days (a time series' bucket by day, week or month) from
the daily rollups, without merging every visitor id of the span: pure arithmetic over what
the rollups stored, and the spans that must still be merged from the hourly table.

Why it adds up. A stored visitor id is mixed with the UTC day of its session's start
(svc.ingestion.identity.stored_visitor_id), so every id belongs to one *session day* k, and
has an event on day k (the first event seen of its session, which set the start). A session
that is not long (storage/migrations/012: no event outside its day and the next) has its
events on days k and k + 1 alone. So the distinct visitors with an event in the days a..b are

    V(a) + ... + V(b) + N(a - 1)

where V(k) is the distinct ids of the sessions of day k (the rollups' totals, ``visitors``)
and N(k) those of them with an event on day k + 1 (the rollups' ``next_day`` row,
svc.storage.rollups): an id of a day before a - 1 has no event in the span, one of a day in
it is counted once on its day, one of day a - 1 once if it has an event on day a.

A day that is not rolled up (today, a day rolled before the ``next_day`` row existed and
needed for its N) is merged from the hourly table with its neighbours in the bucket that are
not either (a *segment*): the segment's distinct ids U, less N of the day before it when that
day is in the bucket (its ids with an event in the segment were counted on their own day).
A long session breaks the premise: a bucket with an event of one outside its day and the
next is merged whole, unless the session's day is in the bucket and every day its outside
events may fall on is rolled up (it is then counted once, on its day).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class RolledDay:
    """What the current rollup of a UTC day says of its visitor ids."""

    #: V: the distinct visitor ids of the day's sessions
    visitors: int
    #: N: how many of them have an event on the next day; None: not stored (rolled up before
    #: the ``next_day`` row existed)
    next_day: int | None


@dataclass(frozen=True, slots=True)
class LongSpan:
    """A long session: its day, and the first and last UTC days of its events outside that
    day and the next (or of all its events: either way, a span that holds them)."""

    day: date
    first: date
    last: date


@dataclass(frozen=True, slots=True)
class BucketVisitors:
    """A bucket's visitors: ``known`` (from the rollups) plus the distinct ids of each of
    ``segments`` (spans of days, first and last, merged from the hourly table)."""

    known: int
    segments: tuple[tuple[date, date], ...]

    def total(self, merged: Mapping[tuple[date, date], int]) -> int:
        """The visitors, given the merged count of each segment."""
        return self.known + sum(merged[s] for s in self.segments)


def bucket_visitors(
    first: date, last: date, rolled: Mapping[date, RolledDay], long: Sequence[LongSpan]
) -> BucketVisitors:
    """The visitors with an event in the UTC days ``first``..``last``, from the rolled-up days
    (``rolled``: the days the rollups hold, the day before ``first`` too) and the long
    sessions whose outside events may be in those days (see the module docstring)."""
    days = [first + i * _DAY for i in range((last - first).days + 1)]
    usable = {d: d in rolled for d in days}

    def n(d: date) -> int | None:
        r = rolled.get(d)
        return None if r is None else r.next_day

    changed = True
    while changed:  # a rolled day whose N is needed and not stored is merged too
        changed = False
        if usable[first] and n(first - _DAY) is None:
            usable[first] = False
            changed = True
        for d in days[1:]:
            if not usable[d] and usable[d - _DAY] and n(d - _DAY) is None:
                usable[d - _DAY] = False
                changed = True
    merged_days = [d for d in days if not usable[d]]
    for s in long:
        if s.last < first or s.first > last:
            continue
        if not first <= s.day <= last or any(s.first <= d <= s.last for d in merged_days):
            return BucketVisitors(0, ((first, last),))
    known = sum(rolled[d].visitors for d in days if usable[d])
    if usable[first]:
        known += n(first - _DAY) or 0
    segments: list[tuple[date, date]] = []
    for d in merged_days:
        if segments and segments[-1][1] == d - _DAY:
            segments[-1] = (segments[-1][0], d)
            continue
        segments.append((d, d))
        if d > first:  # the day before is rolled up, with its N (the loop above)
            known -= n(d - _DAY) or 0
    return BucketVisitors(known, tuple(segments))


__all__ = ["BucketVisitors", "LongSpan", "RolledDay", "bucket_visitors"]
