"""GET /metrics/goals without filters over rolled-up UTC days (svc.queries.conversions,
``_goals_from_rollups``): the same answers as the one statement over every event (the path a
filter that keeps every event takes), before and after the days are rolled up, and as the
events sent say: in UTC and in zones whose days straddle two UTC days, with sessions across
midnight, a client session of 3 days, a derived one of 2, late events from before their
session's day, visitors with several sessions a day, page views with properties (also in
the report events), custom events and page measurements (which count nowhere). And the
funnels, as the events sent say: of custom events only (read from the report events), of
page views and events mixed, of page views only (from the events).

The rows are written into a real store (chDB) as ingestion writes them (session ids and
starts from its tracker, visitor ids mixed with the day of the session's start) and read in a
process of its own (one chDB engine per process)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from svc.ingestion.identity import SessionTracker, client_session_id, stored_visitor_id
from tests.support import inserts_by_day, run_store_script, stored_row

PROJECT = "goals-rollups"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
MINUTE = 60_000
#: (first, last: days before today, zone)
RANGES = [
    (21, 0, "UTC"),
    (12, 1, "UTC"),
    (9, 8, "UTC"),
    (14, 2, "America/New_York"),
    (10, 3, "Asia/Kolkata"),
    (1, 0, "UTC"),
]
GOALS = [
    "page:/pricing",
    "page:/a",
    "event:signup",
    "event:page_view",
    "event:download",
    "page:/nowhere",
    "event:engagement",
]
COUNTED_OUT = ("engagement", "web_vitals")
#: A day whose visitor_steps rows are taken away (as if rolled up before they existed).
OLD_DAY = 5
#: (steps, window seconds): custom events only (read from the report events), page views and
#: events mixed, page views only (from the events)
FUNNELS = [
    (["event:signup", "event:download"], 86400),
    (["event:download", "event:signup"], 86400),
    (["page:/pricing", "event:signup"], 1800),
    (["page:/a", "page:/pricing", "event:signup"], 3600),
    (["page:/", "page:/pricing"], 1800),
    (["page:/docs", "page:/", "page:/pricing"], 1800),
]


def d(k: int, hour: int = 0, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC on the day ``k`` days before today."""
    return int((TODAY - timedelta(days=k, hours=-hour, minutes=-minute)).timestamp() * 1000)


@dataclass(frozen=True)
class Sent:
    """An event as it arrives: its person, time, page, name, and the client's session id."""

    person: int
    ts: int
    path: str = "/"
    name: str = "page_view"
    client: str = ""
    props: bool = False


def arrivals() -> list[Sent]:
    out: list[Sent] = []
    for p in range(36):
        for s in range(1 + p % 3):
            k = 2 + (p * 7 + s * 5) % 19
            if (p + s) % 4 == 0:  # across midnight: 23:40, 23:50 and 00:20
                out += [Sent(p, d(k, 23, 40), "/a"), Sent(p, d(k, 23, 50), "/pricing")]
                out += [Sent(p, d(k - 1, 0, 20), "/pricing", "signup")]
            else:
                hour = 6 + (p * 3 + s * 7) % 12
                paths = ("/", "/pricing", "/a", "/docs")
                for m in range(0, 1 + p % 4 * 5, 5):
                    out.append(Sent(p, d(k, hour, m), paths[(p + m) % 4], props=p % 5 == 0))
                if p % 3 == 0:
                    out.append(Sent(p, d(k, hour, 30), "/pricing", "signup"))
                if p % 4 == 1:
                    out.append(Sent(p, d(k, hour, 31), "/docs", "download"))
                if p % 6 == 2:
                    out.append(Sent(p, d(k, hour, 32), "/docs", "engagement"))
    # a visitor with several sessions a day, the last across midnight
    a = 100
    out += [Sent(a, d(9, 8), "/pricing"), Sent(a, d(9, 11)), Sent(a, d(9, 11, 10), "/a", "signup")]
    out += [Sent(a, d(9, 23, 50), "/a"), Sent(a, d(8, 0, 10), "/pricing")]
    # a client session of 3 days, a signup on its last
    out += [Sent(101, d(k, 20), "/pricing", client="c3") for k in (12, 11, 10)]
    out += [Sent(101, d(10, 20, 5), "/pricing", "signup", client="c3")]
    # a derived session of 2 days: a page view every 25 minutes for 48 hours
    out += [Sent(102, d(7, 9) + i * 25 * MINUTE, ("/a", "/pricing")[i % 2]) for i in range(116)]
    # late events from before their session's day: a client's and a derived one's
    out += [Sent(103, d(5, 0, 10), "/a", client="cb")]
    out += [Sent(104, d(4, 0, 5), "/pricing")]
    out += [Sent(103, d(6, 23, 55), "/pricing", "signup", client="cb")]
    out += [Sent(104, d(5, 23, 50), "/pricing", "download")]
    # yesterday into today, and today
    out += [Sent(105, d(1, 23, 50), "/pricing"), Sent(105, d(0, 0, 10), "/a", "signup")]
    out += [Sent(106 + i, d(0, 1 + i), "/pricing") for i in range(3)]
    return out


@dataclass(frozen=True)
class Stored:
    visitor: int
    session: int
    start: int
    sent: Sent


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
        out.append(Stored(stored_visitor_id(e.person, start), sid, start, e))
    return out


def inserts() -> list[tuple[str, str]]:
    """One insert per UTC day of arrival (the day of the event, in order)."""
    rows = (
        stored_row(
            PROJECT,
            s.sent.ts,
            s.start,
            name=s.sent.name,
            session_id=s.session,
            visitor_id=s.visitor,
            path=s.sent.path,
            properties={"plan": "pro"} if s.sent.props else {},
        )
        for s in stored()
    )
    return inserts_by_day("goals-rollups", rows)


_READ = """
import json, sys
from datetime import date
from pathlib import Path
from svc.queries.conversions import query_funnel, query_goals
from svc.queries.dates import DateRange
from svc.queries.filters import parse_filters
from svc.queries.plan import Query
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups

# every funnel over more than one visitor as over millions: visitor_steps, or passes
store = EventStore(
    Settings.from_env(data_dir=Path(sys.argv[1]), funnel_pass_visitors=1, funnel_rolled_visitors=0)
)
store.migrate()
project, cases, goals = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
funnels = json.loads(sys.argv[5])
for token, data in json.load(sys.stdin):
    store.insert_ndjson(data.encode(), token)
every = tuple(parse_filters(["event:matches:."]))

def read(tag, with_goals=True):
    out[tag] = {}
    for first, last, tz in cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), tz)
        if with_goals:  # the goals never read visitor_steps
            fast = query_goals(store, Query(project, rng), goals)
            events = query_goals(store, Query(project, rng, every), goals)
            out[tag][f"{first} {last} {tz}"] = [fast, events]
        for steps, window in funnels:
            body = query_funnel(store, Query(project, rng), steps, window)
            out.setdefault(f"funnels {tag}", {})[f"{first} {last} {tz} {steps} {window}"] = [
                s["visitors"] for s in body["steps"]
            ]

def steps_days():
    sql = "SELECT count() FROM session_rollups WHERE dimension = 'visitor_steps'"
    return store.query(sql)[0][0]

out = {}
read("before")
out["rolled_days"] = Rollups(store).refresh()
out["steps_days"] = steps_days()
# the rows of the step keys (storage/migrations/025)
out["step_visitors"] = store.query(
    "SELECT toString(session_day), version, value, visitors FROM session_rollups "
    "WHERE dimension = 'step_visitors'")
out["visitor_steps"] = store.query(
    "SELECT toString(session_day), version, keys, rank_key FROM visitor_steps")
read("rolled")
# a day rolled up before visitor_steps existed: its events are read, until its rows are filled
old = sys.argv[6]
for sql in ("DELETE FROM visitor_steps WHERE session_day = {d:Date}",
            "DELETE FROM session_rollups WHERE dimension = 'visitor_steps' "
            "AND session_day = {d:Date}"):
    store.client.command(sql, parameters={"d": old})
out["steps_days_old"] = steps_days()
read("old")
out["filled_days"] = Rollups(store).fill_added_rows()
out["steps_days_filled"] = steps_days()
read("filled")
# migration 25 once more: visitor_steps made again empty, its markers gone, until a fill
store.client.command("DELETE FROM svc_migrations WHERE version = 25")
store.migrate()
out["steps_days_migrated"] = steps_days()
out["steps_rows_migrated"] = store.query("SELECT count() FROM visitor_steps")[0][0]
out["refilled_days"] = Rollups(store).fill_added_rows()
read("refilled", with_goals=False)
store.close()
print(json.dumps(out))
"""


def day(k: int) -> date:
    return (TODAY - timedelta(days=k)).date()


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cases = [(day(first).isoformat(), day(last).isoformat(), tz) for first, last, tz in RANGES]
    out: dict[str, Any] = run_store_script(
        _READ,
        str(tmp_path_factory.mktemp("goals") / "data"),
        PROJECT,
        json.dumps(cases),
        json.dumps(GOALS),
        json.dumps(FUNNELS),
        day(OLD_DAY).isoformat(),
        stdin=json.dumps(inserts()),
    )
    return out


def oracle(first: date, last: date, tz: str) -> dict[str, Any]:
    """The visitors with an event in the range, and per goal its visitors and events, from
    the events sent."""
    zone = ZoneInfo(tz)
    start = datetime.combine(first, datetime.min.time(), zone).timestamp() * 1000
    end = datetime.combine(last + timedelta(1), datetime.min.time(), zone).timestamp() * 1000
    rows = [s for s in stored() if start <= s.sent.ts < end and s.sent.name not in COUNTED_OUT]

    def matches(goal: str, e: Sent) -> bool:
        kind, target = goal.split(":", 1)
        if kind == "event":
            return e.name == target
        return e.name == "page_view" and e.path == target

    goals = []
    for g in GOALS:
        hits = [s for s in rows if matches(g, s.sent)]
        goals.append((len({s.visitor for s in hits}), len(hits)))
    return {"visitors": len({s.visitor for s in rows}), "goals": goals}


def figures(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "visitors": body["visitors"],
        "goals": [(g["visitors"], g["events"]) for g in body["goals"]],
    }


def test_days_were_rolled_up(read: dict[str, Any]) -> None:
    assert read["rolled_days"] >= 18


@pytest.mark.parametrize("tag", ["before", "rolled"])
def test_the_goals_equal_the_events_path_and_what_was_sent(read: dict[str, Any], tag: str) -> None:
    for case, (fast, events) in read[tag].items():
        assert fast == events, (tag, case)
        first, last, tz = case.split()
        want = oracle(date.fromisoformat(first), date.fromisoformat(last), tz)
        assert figures(fast) == want, (tag, case)


def test_the_goals_are_the_same_before_and_after_the_rollups(read: dict[str, Any]) -> None:
    for case, (fast, _) in read["rolled"].items():
        assert fast == read["before"][case][0], case


def funnel_oracle(first: date, last: date, tz: str, steps: list[str], window_s: int) -> list[int]:
    """Per step, the visitors that reach it: their events in the range that match a step, in
    time order, completed in order within ``window_s`` of a first step (ClickHouse's
    windowFunnel over whole seconds; the events of one visitor here are at distinct seconds)."""
    zone = ZoneInfo(tz)
    start = datetime.combine(first, datetime.min.time(), zone).timestamp() * 1000
    end = datetime.combine(last + timedelta(1), datetime.min.time(), zone).timestamp() * 1000

    def matches(step: str, e: Sent) -> bool:
        kind, target = step.split(":", 1)
        return e.name == target if kind == "event" else (e.name, e.path) == ("page_view", target)

    by_visitor: dict[int, list[Sent]] = {}
    for s in stored():
        if start <= s.sent.ts < end and s.sent.name not in COUNTED_OUT:
            by_visitor.setdefault(s.visitor, []).append(s.sent)
    reached = [0] * len(steps)
    for events in by_visitor.values():
        ordered = sorted(events, key=lambda e: e.ts)
        best = 0
        for i, e in enumerate(ordered):
            if not matches(steps[0], e):
                continue
            level, t0 = 1, e.ts // 1000
            for later in ordered[i + 1 :]:
                if level == len(steps) or later.ts // 1000 - t0 > window_s:
                    break
                if matches(steps[level], later):
                    level += 1
            best = max(best, level)
        for j in range(best):
            reached[j] += 1
    return reached


def test_every_rolled_day_has_its_visitor_steps_and_an_old_one_gets_them(
    read: dict[str, Any],
) -> None:
    assert read["steps_days"] == read["rolled_days"]
    assert read["steps_days_old"] == read["rolled_days"] - 1
    assert read["filled_days"] == 1
    assert read["steps_days_filled"] == read["rolled_days"]
    # storage migration 25 makes the table again: every day's rows are written anew
    assert (read["steps_days_migrated"], read["steps_rows_migrated"]) == (0, 0)
    assert read["refilled_days"] == read["rolled_days"]


def test_the_step_rows_count_the_visitors_with_each_key_and_rank_them(
    read: dict[str, Any],
) -> None:
    """A day's ``step_visitors`` row of a key is how many of its ``visitor_steps`` rows have
    the key; a row's ``rank_key`` holds the ranks of its distinct keys among the day's, most
    visitors first (a tie by the key's text), the four smallest in ascending order, 16 bits
    each."""
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for day_, version, value, visitors in read["step_visitors"]:
        counts.setdefault((day_, version), {})[value] = visitors
    assert len(counts) == read["rolled_days"]
    seen: dict[tuple[str, int], Counter[str]] = {}
    several = 0
    for day_, version, keys, rank_key in read["visitor_steps"]:
        day_counts = counts[(day_, version)]
        order = sorted(day_counts, key=lambda v: (-day_counts[v], v))
        ranks = [*sorted({order.index(str(k)) for k in keys}), 0, 0, 0][:4]
        assert rank_key == sum(r << (16 * (3 - i)) for i, r in enumerate(ranks)), (day_, keys)
        several += len(set(keys)) > 1
        seen.setdefault((day_, version), Counter()).update({str(k) for k in keys})
    assert seen == counts
    assert several > 0


@pytest.mark.parametrize("tag", ["before", "rolled", "old", "filled", "refilled"])
def test_the_funnels_count_what_was_sent(read: dict[str, Any], tag: str) -> None:
    """Before the rollups from the events; after, the rolled days from visitor_steps (the
    day before the range, its last day, the long sessions' days, other zones: their events
    outside the range left out); with a day without those rows, it from the events."""
    funnels = read[f"funnels {tag}"]
    assert len(funnels) == len(RANGES) * len(FUNNELS)
    for first, last, tz in RANGES:
        for steps, window in FUNNELS:
            case = f"{day(first).isoformat()} {day(last).isoformat()} {tz} {steps} {window}"
            want = funnel_oracle(day(first), day(last), tz, steps, window)
            assert funnels[case] == want, (tag, case)
    # the cases test something: every funnel but the reversed one completes somewhere, and
    # the order of the steps counts (signups come before downloads here)
    completed = {str(s): any(v[-1] for k, v in funnels.items() if str(s) in k) for s, _ in FUNNELS}
    assert completed.pop(str(["event:download", "event:signup"])) is False
    assert all(completed.values()), completed
