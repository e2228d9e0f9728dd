"""Long sessions, sessions across midnight and late events with svc in server mode on the
ClickHouse double: every report of tests/test_long_sessions.py against its oracle, on days
not rolled up and on rolled-up days, for a few of its ranges (all of them take minutes)."""

from typing import Any

import pytest

from tests.support import Server
from tests.test_long_sessions import check_range, live, rolled  # noqa: F401

#: A day with a session from the day before, two days across a month of long sessions, a
#: first rolled day whose session began before it, and a zone east of UTC.
RANGES = [(3, 3, "UTC"), (7, 3, "UTC"), (3, 2, "UTC"), (4, 3, "Asia/Kolkata")]


@pytest.mark.parametrize(("first", "last", "tz"), RANGES)
def test_every_report_is_exact_on_days_not_rolled_up(
    live: tuple[Server, dict[str, Any]],  # noqa: F811
    first: int,
    last: int,
    tz: str,
) -> None:
    check_range(*live, first, last, tz)


@pytest.mark.parametrize(("first", "last", "tz"), RANGES)
def test_every_report_is_exact_on_rolled_up_days(
    rolled: tuple[Server, dict[str, Any]],  # noqa: F811
    first: int,
    last: int,
    tz: str,
) -> None:
    check_range(*rolled, first, last, tz)
