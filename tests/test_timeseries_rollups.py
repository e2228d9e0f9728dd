"""The time series by day, week, month and hour over rolled-up UTC days (svc.queries.timeseries,
``by_utc_days``): the same series as before the days were rolled up, as the events path gives
(a filter that keeps every event), and as the events sent say, with sessions across
midnight, of 2 and 3 days (client and derived), one with a late event from before its day, a
visitor with several sessions a day, the ranges' first days, today (not rolled up) and a
day rolled up before the rollups had their ``next_day`` and ``start_hour`` rows; and under
filters on the page and session dimensions, whose rolled days come from ``rolled_sessions``
(svc.queries.series_rolled), the same series as the events path.

The rows are written into a real store (chDB) as ingestion writes them (session ids and
starts from its tracker, visitor ids mixed with the day of the session's start), one insert
per UTC day in the order the events arrive, and the series are read in a process of their
own (one chDB engine per process): before any rollup, after one, with a day's ``next_day``
rows deleted, and after the rollups filled them in again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from svc.ingestion.identity import SessionTracker, client_session_id, stored_visitor_id
from tests.support import inserts_by_day, run_store_script, stored_row

PROJECT = "series-rollups"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
MINUTE = 60_000
INTERVALS = ("day", "week", "month")
#: The zones read by day, week and month besides UTC: whole hours east and west (their
#: sessions from the rollups' start_hour rows), and half an hour (from the session rows).
ZONES = ("Europe/Berlin", "America/New_York", "Asia/Kolkata")
#: Ranges (first, last: days before today).
RANGES = [(21, 0), (8, 1), (14, 2), (9, 8), (6, 4), (1, 0)]  # the first two read "old" too
#: The ranges read in ZONES too: through today, ending on a finished day, one day (every
#: range in every zone took 40 s of the suite's 15 minutes for no path the others miss).
ZONE_RANGES = [(21, 0), (8, 1), (9, 8)]
#: Ranges read by the hour too (the first reads "old" too).
HOUR_RANGES = [(10, 7), (6, 4), (1, 0)]
#: The day whose next_day row is deleted (as if rolled up before it existed): days ago.
OLD_DAY = 9
#: Each person's browser (by parity): the filtered series pick sessions by it.
BROWSERS = ("Chrome", "Firefox")
#: The filters of the filtered series (svc.queries.series_rolled), each asked alone: by a
#: session dimension, the sessions across midnight alone, the page, every session (the long
#: ones and the late ones too).
FILTERS = ("browser:is:Firefox", "entry_page:is:/a", "page:contains:/p", "exit_page:contains:/")
#: The filtered series (first and last day: days before today; interval; zone), each under
#: every filter: through today (its first days, its last two not rolled up), days in the
#: past, and Berlin's weeks (which begin at 23:00 UTC).
FILTERED = [
    *((21, 0, interval, "UTC") for interval in INTERVALS),
    (6, 4, "day", "UTC"),
    (21, 0, "week", "Europe/Berlin"),
]


def d(k: int, hour: int = 0, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC on the day ``k`` days before today."""
    return int((TODAY - timedelta(days=k, hours=-hour, minutes=-minute)).timestamp() * 1000)


def day(k: int) -> date:
    return (TODAY - timedelta(days=k)).date()


@dataclass(frozen=True)
class Sent:
    """An event as it arrives: its person, time, page, and the client's session id."""

    person: int
    ts: int
    path: str = "/"
    client: str = ""


def arrivals() -> list[Sent]:
    """Every event, in the order ingestion sees them."""
    out: list[Sent] = []
    # ordinary visitors: 1 to 3 sessions on days 2 to 20, some across midnight
    for p in range(40):
        for s in range(1 + p % 3):
            k = 2 + (p * 7 + s * 5) % 19
            if (p + s) % 4 == 0:  # across midnight: 23:40 and 00:20
                out += [Sent(p, d(k, 23, 40), "/a"), Sent(p, d(k - 1, 0, 20), "/b")]
            else:
                hour = 6 + (p * 3 + s * 7) % 12
                out += [Sent(p, d(k, hour, m), f"/p{m % 3}") for m in range(0, 1 + p % 4 * 5, 5)]
    # a visitor with several sessions a day, the last across midnight
    a = 100
    out += [Sent(a, d(OLD_DAY, 8)), Sent(a, d(OLD_DAY, 11)), Sent(a, d(OLD_DAY, 11, 10))]
    out += [Sent(a, d(OLD_DAY, 23, 50)), Sent(a, d(OLD_DAY - 1, 0, 10))]
    # a client session of 3 days: one page view a day
    out += [Sent(101, d(k, 20), f"/c3/{k}", client="c3") for k in (12, 11, 10)]
    # a derived session of 2 days: a page view every 25 minutes for 48 hours
    out += [Sent(102, d(7, 9) + i * 25 * MINUTE, f"/v2/{i % 4}") for i in range(116)]
    # late events from before their session's day: a client's (a day and more before) and a
    # derived one's (15 minutes before its first event, across midnight)
    out += [Sent(103, d(5, 0, 10), "/cb/first", client="cb")]
    out += [Sent(104, d(4, 0, 5), "/late/first")]
    out += [Sent(103, d(6, 23, 55), "/cb/late", client="cb")]
    out += [Sent(104, d(5, 23, 50), "/late/before")]
    # yesterday into today, and today
    out += [Sent(105, d(1, 23, 50), "/y"), Sent(105, d(0, 0, 10), "/t")]
    out += [Sent(106 + i, d(0, 1 + i), "/today") for i in range(3)]
    return out


@dataclass(frozen=True)
class Stored:
    visitor: int
    session: int
    start: int
    ts: int


def stored() -> list[Stored]:
    """The events as ingestion stores them (session ids, starts, visitor ids)."""
    tracker = SessionTracker(30 * MINUTE)
    out = []
    for e in arrivals():
        if e.client:
            sid = client_session_id(PROJECT, e.client)
            start = tracker.client_start(sid, e.ts, PROJECT)
        else:
            sid, start = tracker.assign(PROJECT, e.person, e.ts)
        out.append(Stored(stored_visitor_id(e.person, start), sid, start, e.ts))
    return out


def inserts() -> list[tuple[str, str]]:
    """One insert per UTC day of arrival (the day of the event, in order)."""
    rows = (
        stored_row(
            PROJECT,
            e.ts,
            s.start,
            name="page_view",
            session_id=s.session,
            visitor_id=s.visitor,
            path=e.path,
            browser=BROWSERS[e.person % 2],
        )
        for e, s in zip(arrivals(), stored(), strict=True)
    )
    # in the order they arrived, one insert per arrival run of a day
    return inserts_by_day("series-rollups", rows)


_READ = """
import json, sys
from datetime import date
from pathlib import Path
from svc.queries.dates import DateRange
from svc.queries.filters import parse_filters
from svc.queries.plan import Query
from svc.queries.timeseries import query_timeseries
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
project, old_day, cases = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
old_cases, filtered = json.loads(sys.argv[5]), json.loads(sys.argv[6])
for token, data in json.load(sys.stdin):
    store.insert_ndjson(data.encode(), token)
every = parse_filters(["event:matches:."])
from svc.queries.sql import series
by_hours, used = series.series_rolled_start_hours, []

def counted(plan, facts, interval):
    used.append(plan.rng.tz)
    return by_hours(plan, facts, interval)

series.series_rolled_start_hours = counted
for name in ("series_rolled_session_days", "series_next_days"):
    def rolled(plan, facts, _f=getattr(series, name), _name=name):
        used.append(_name)
        return _f(plan, facts)
    setattr(series, name, rolled)

def read(tag, events_path=False, subset=None):
    out[tag] = {}
    for first, last, interval, tz in subset or cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), tz)
        used.clear()
        fast = query_timeseries(store, Query(project, rng), interval)["points"]
        hours = out.setdefault("start_hours", {}).setdefault(tag, {})
        hours[f"{first} {last} {interval} {tz}"] = len(used)
        events = None
        if events_path:
            events = query_timeseries(store, Query(project, rng, tuple(every)), interval)
        out[tag][f"{first} {last} {interval} {tz}"] = [fast, events and events["points"]]

def next_days():
    return store.query("SELECT count() FROM session_rollups WHERE dimension = 'next_day' "
                       "AND (session_day, version) IN (SELECT session_day, max(version) "
                       "FROM rollup_days GROUP BY session_day)")[0][0]

def read_filtered():
    out["filtered"] = {}
    for first, last, interval, tz, raw in filtered:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), tz)
        filters = parse_filters([raw])
        used.clear()
        fast = query_timeseries(store, Query(project, rng, tuple(filters)), interval)
        reads = sorted(set(used))
        events = query_timeseries(store, Query(project, rng, tuple(filters + every)), interval)
        key = f"{first} {last} {interval} {tz} {raw}"
        out["filtered"][key] = [fast["points"], events["points"], reads]

out = {}
read("before")
rollups = Rollups(store)
out["rolled_days"] = rollups.refresh()
out["next_days"] = next_days()
read("rolled", True)
read_filtered()
store.client.command("DELETE FROM session_rollups WHERE dimension IN ('next_day', 'start_hour') "
                     "AND session_day = {d:Date}", parameters={"d": date.fromisoformat(old_day)})
out["next_days_old"] = next_days()
read("old", subset=old_cases)
out["filled_days"] = Rollups(store).fill_added_rows()
read("filled", subset=old_cases)
store.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cases = [
        (day(first).isoformat(), day(last).isoformat(), interval, tz)
        for first, last in RANGES
        for interval in INTERVALS
        for tz in ("UTC", *(ZONES if (first, last) in ZONE_RANGES else ()))
    ] + [
        (day(first).isoformat(), day(last).isoformat(), "hour", "UTC")
        for first, last in HOUR_RANGES
    ]
    old = [c for c in cases if c[2] == "hour"][:1] + cases[:24]
    filtered = [
        (day(first).isoformat(), day(last).isoformat(), interval, tz, raw)
        for first, last, interval, tz in FILTERED
        for raw in FILTERS
    ]
    out: dict[str, Any] = run_store_script(
        _READ,
        str(tmp_path_factory.mktemp("series") / "data"),
        PROJECT,
        day(OLD_DAY).isoformat(),
        json.dumps(cases),
        json.dumps(old),
        json.dumps(filtered),
        stdin=json.dumps(inserts()),
    )
    return out


def oracle(first: date, last: date, interval: str, tz: str) -> dict[str, dict[str, int]]:
    """Per bucket label: the distinct visitor ids, page views and sessions (by their first
    event, clamped to the range) of the events sent, in the zone ``tz``."""
    zone = ZoneInfo(tz)
    start = int(datetime.combine(first, datetime.min.time(), zone).timestamp() * 1000)
    end = int(datetime.combine(last + timedelta(1), datetime.min.time(), zone).timestamp() * 1000)

    def label(ts: int) -> str:
        t = datetime.fromtimestamp(ts / 1000, zone).date()
        if interval == "hour":
            return datetime.fromtimestamp(ts / 1000, zone).strftime("%Y-%m-%dT%H:00")
        if interval == "week":
            t -= timedelta(days=t.weekday())
        elif interval == "month":
            t = t.replace(day=1)
        return t.isoformat()

    events = [s for s in stored() if start <= s.ts < end]
    sessions: dict[tuple[int, int], int] = {}
    for s in stored():
        key = (s.session, s.start // 86_400_000)
        sessions[key] = min(sessions.get(key, s.ts), s.ts)
    in_range = {(s.session, s.start // 86_400_000) for s in events}
    out: dict[str, dict[str, Any]] = {}
    for s in events:
        b = out.setdefault(label(s.ts), {"visitors": set(), "pageviews": 0, "sessions": 0})
        b["visitors"].add(s.visitor)
        b["pageviews"] += 1
    for key in in_range:
        b = out.setdefault(
            label(max(sessions[key], start)), {"visitors": set(), "pageviews": 0, "sessions": 0}
        )
        b["sessions"] += 1
    return {k: {**v, "visitors": len(v["visitors"])} for k, v in out.items()}


def test_the_rollups_hold_every_day_and_its_next_day_row(read: dict[str, Any]) -> None:
    assert read["rolled_days"] >= 19  # (yesterday too once it is over: 01:00 UTC)
    assert read["next_days"] == read["rolled_days"]
    assert read["next_days_old"] == read["rolled_days"] - 1
    assert read["filled_days"] == 1


def test_other_zones_of_whole_hours_read_the_rolled_days_by_their_start_hours(
    read: dict[str, Any],
) -> None:
    used = read["start_hours"]["rolled"]
    for case, n in used.items():
        first, last, _, tz = case.split()
        days = (date.fromisoformat(last) - date.fromisoformat(first)).days
        if tz in ("Europe/Berlin", "America/New_York") and days >= 4:  # a day wholly inside
            assert n == 1, case
        elif tz in ("UTC", "Asia/Kolkata"):  # UTC days; half an hour: the session rows
            assert n == 0, case
    assert not any(read["start_hours"]["before"].values())  # nothing rolled up yet


def test_the_series_equals_the_events_path(read: dict[str, Any]) -> None:
    for case, (fast, events) in read["rolled"].items():
        assert fast == events, case


@pytest.mark.parametrize("tag", ["rolled", "old", "filled"])
def test_the_series_is_the_same_before_and_after_the_rollups(
    read: dict[str, Any], tag: str
) -> None:
    for case, (fast, _) in read[tag].items():
        assert fast == read["before"][case][0], (tag, case)


def test_the_series_counts_what_was_sent(read: dict[str, Any]) -> None:
    for case, (fast, _) in read["rolled"].items():
        first, last, interval, tz = case.split()
        want = oracle(date.fromisoformat(first), date.fromisoformat(last), interval, tz)
        for point in fast:
            w = want.get(point["time"], {"visitors": 0, "pageviews": 0, "sessions": 0})
            got = {k: point[k] for k in ("visitors", "pageviews", "sessions")}
            assert got == w, (case, point["time"])


def test_the_filtered_series_equals_the_events_path(read: dict[str, Any]) -> None:
    """Under filters on the page and session dimensions the rolled days come from
    ``rolled_sessions`` (svc.queries.series_rolled), the next day's share of the sessions
    across midnight into another bucket apart (every day's by day; never under a page
    filter), and the series is the events path's."""
    for case, (fast, events, reads) in read["filtered"].items():
        assert fast == events, case
        assert "series_rolled_session_days" in reads, case
        interval, raw = case.split()[2], case.split()[4]
        if raw.startswith("page:"):
            assert "series_next_days" not in reads, case
        elif interval == "day":
            assert "series_next_days" in reads, case
