"""Date ranges: inclusive calendar days in a time zone, turned into UTC instants."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, available_timezones

from svc.errors import InvalidRequest

#: The days a range may name (docs/api.md): wider than any stored event can be (ingestion
#: takes events within 7 days of their time, imports none before 2000), narrow enough that
#: every day of it, and a day around it, is an instant in every time zone and a value of the
#: store's ``Date`` (1970-01-01 to 2149-06-06) and ``DateTime64`` types. Before these bounds,
#: ``from=0001-01-01&tz=Asia/Tokyo`` overflowed Python's dates (500) and
#: ``from=1000-01-02&to=9999-12-29`` built a time series of 3.3 million days.
FIRST_DAY = date(1990, 1, 1)
LAST_DAY = date(2099, 12, 31)


@dataclass(frozen=True, slots=True)
class DateRange:
    """Days ``first``..``last`` (both included) in ``tz``."""

    first: date
    last: date
    tz: str

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def start_utc(self) -> datetime:
        return datetime.combine(self.first, time(0), self.zone).astimezone(UTC)

    @property
    def end_utc(self) -> datetime:
        """The first instant after the range."""
        return datetime.combine(self.last + timedelta(days=1), time(0), self.zone).astimezone(UTC)

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    @property
    def whole_hour_offsets(self) -> bool:
        """Whether the zone's UTC offset is a whole number of hours all through the range (so
        its hours, days, weeks and months are made of whole UTC hours). An offset changes at
        most once a day, so the offsets at each midnight are all of them."""
        zone = self.zone
        for i in range(self.days + 1):
            offset = datetime.combine(self.first + timedelta(days=i), time(0), zone).utcoffset()
            if offset is None or offset % timedelta(hours=1):
                return False
        return True

    def previous_period(self) -> DateRange:
        n = self.days
        return DateRange(self.first - timedelta(days=n), self.first - timedelta(days=1), self.tz)

    def previous_year(self) -> DateRange:
        return DateRange(_minus_year(self.first), _minus_year(self.last), self.tz)

    @property
    def within_bounds(self) -> bool:
        """Whether every day of the range is between FIRST_DAY and LAST_DAY."""
        return self.first >= FIRST_DAY and self.last <= LAST_DAY


def _minus_year(d: date) -> date:
    try:
        return d.replace(year=d.year - 1)
    except ValueError:  # 29 February
        return d.replace(year=d.year - 1, day=28)


@functools.cache
def known_zones() -> frozenset[str]:
    """The time zones a range may be in: the IANA zones of the tz database, which are the
    zones ClickHouse knows (checked against chDB's ``system.time_zones``: the same 598).
    Python would also load the leap-second variants (``right/UTC``) and ``posix/...`` from
    the system's files, and ``localtime`` (this machine's zone), which ClickHouse refuses
    (a 500) or reads differently."""
    return frozenset(available_timezones() - {"localtime", "posixrules"})


def is_known_zone(name: str) -> bool:
    return name in known_zones()


def parse_zone(name: str, field: str = "tz") -> str:
    if not is_known_zone(name):
        shown = name if len(name) <= 64 else name[:61] + "..."
        raise InvalidRequest(
            f"`{field}` is not an IANA time zone name (like Europe/Berlin): {shown!r}",
            field=field,
        )
    return name


def parse_day(value: str, field: str) -> date:
    try:
        if len(value) != 10:
            raise ValueError(value)
        day = date.fromisoformat(value)
    except ValueError as exc:
        shown = value if len(value) <= 32 else value[:29] + "..."
        raise InvalidRequest(
            f"`{field}` must be a date YYYY-MM-DD, got {shown!r}", field=field
        ) from exc
    if not FIRST_DAY <= day <= LAST_DAY:
        raise InvalidRequest(
            f"`{field}` must be a day from {FIRST_DAY} to {LAST_DAY}, got {value}", field=field
        )
    return day


def parse_range(first: str | None, last: str | None, tz: str) -> DateRange:
    """``from`` is required; ``to`` defaults to today in ``tz``; ``to`` before ``from`` is 400."""
    if not first:
        raise InvalidRequest("`from` is required (YYYY-MM-DD)", field="from")
    start = parse_day(first, "from")
    end = parse_day(last, "to") if last else datetime.now(ZoneInfo(tz)).date()
    if end < start:
        raise InvalidRequest("`to` is before `from`", field="to")
    return DateRange(start, end, tz)
