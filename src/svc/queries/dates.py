"""Date ranges: inclusive calendar days in a time zone, turned into UTC instants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from svc.errors import InvalidRequest


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


def _minus_year(d: date) -> date:
    try:
        return d.replace(year=d.year - 1)
    except ValueError:  # 29 February
        return d.replace(year=d.year - 1, day=28)


def parse_zone(name: str, field: str = "tz") -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidRequest(f"`{field}` is not an IANA time zone: {name!r}", field=field) from exc
    return name


def parse_day(value: str, field: str) -> date:
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidRequest(
            f"`{field}` must be a date YYYY-MM-DD, got {value!r}", field=field
        ) from exc


def parse_range(first: str | None, last: str | None, tz: str) -> DateRange:
    """``from`` is required; ``to`` defaults to today in ``tz``; ``to`` before ``from`` is 400."""
    if not first:
        raise InvalidRequest("`from` is required (YYYY-MM-DD)", field="from")
    start = parse_day(first, "from")
    end = parse_day(last, "to") if last else datetime.now(ZoneInfo(tz)).date()
    if end < start:
        raise InvalidRequest("`to` is before `from`", field="to")
    return DateRange(start, end, tz)
