"""Breakdowns and GET /metrics under filters on the page over rolled-up UTC days from the
rollups' ``section`` rows (svc.storage.rollups; svc.queries.plan.one_section), and the page
breakdown under one value of a session dimension from its ``page|<dimension>:<value>`` rows
(svc.queries.plan.page_by): the same answer as the session rows give before the days are
rolled up, after they are (from those rows where they serve the filter, else from
``rolled_sessions``), with a day rolled up before the rollups had those rows, and once
:meth:`svc.storage.rollups.Rollups.fill_added_rows` wrote them with another day's rows
written twice (a fill interrupted and run again).

The rows are written into a real store (chDB) as ingestion writes them and read in a process
of its own (one chDB engine per process)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from svc.ingestion.identity import SessionTracker, stored_visitor_id
from tests.support import inserts_by_day, run_store_script, stored_row

PROJECT = "section-rollups"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
MINUTE = 60_000
SOURCES = ("google", "direct", "bing")
BROWSERS = ("Chrome", "Firefox")
#: Ranges (first, last: days before today).
RANGES = [(6, 2), (3, 2)]
#: Filters, and the section whose rows serve them once every day is rolled up ('' none).
FILTERS = {
    "page:contains:/blog": "/blog",  # /blog and every /blog/... path
    "page:is:/pricing": "/pricing",  # the section's one path
    "page:matches:^/docs": "/docs",
    "page:is:/blog": "",  # one path of /blog's three
    "page:contains:/p": "",  # /pricing and /blog/post-1: two sections
    "page:is:/nowhere": "",
    "page:contains:/blog|country:is:DE": "",  # a session filter too: rolled_sessions
    "country:is:DE|browser:is:Firefox": "",
}
DIMENSIONS = ("source", "entry_page")
#: Filters of one value, and the rollups' page rows that serve the page breakdown under them
#: once every day is rolled up ('' none: not a dimension of svc.schema.page_by).
PAGE_FILTERS = {
    "country:is:DE": "page|country:DE",
    "source:is:google": "page|source:google",
    "country:is:XX": "page|country:XX",  # no session of it: no rows needed
    "entry_page:is:/pricing": "",
}
#: The day whose section rows are deleted (as if rolled up before they existed), and the one
#: whose rows are written again.
OLD_DAY, TWICE_DAY = 4, 3


def d(k: int, hour: int = 0, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC on the day ``k`` days before today."""
    return int((TODAY - timedelta(days=k, hours=-hour, minutes=-minute)).timestamp() * 1000)


def arrivals() -> list[tuple[int, int, str, str, str]]:
    """Every event (person, ts, name, path, source), in the order ingestion sees them: on
    days 1 to 6, visitors whose sessions wander over the sections (one with two sessions a
    day, one across midnight into the next day, one whose blog visit is a click alone)."""
    tours = [
        ["/", "/blog", "/blog/post-1"],
        ["/pricing"],
        ["/docs/a", "/docs/b", "/pricing", "/"],
        ["/blog/post-2"],
        ["/", "/docs/a"],
        ["/blog/post-1", "/blog/post-1", "/pricing"],
    ]
    out: list[tuple[int, int, str, str, str]] = []
    for k in range(6, 0, -1):
        for p in range(12):
            tour = tours[(p + k) % len(tours)]
            t = d(k, 6 + p)
            source = SOURCES[p % 3]
            out += [(p, t + i * MINUTE, "page_view", path, source) for i, path in enumerate(tour)]
        out += [(40, d(k, 20), "page_view", "/blog", "google")]  # two sessions a day
        out += [(40, d(k, 22), "page_view", "/docs/b", "bing")]
        out += [(41, d(k, 23, 50), "page_view", "/pricing", "bing")]  # across midnight
        out += [(41, d(k - 1, 0, 10), "page_view", "/blog/post-2", "bing")]
        out += [(42, d(k, 9), "page_view", "/", "direct")]  # the blog by a click alone
        out += [(42, d(k, 9, 1), "click", "/blog/post-1", "direct")]
    return out


def inserts() -> list[tuple[str, str]]:
    """One insert per UTC day of the events, in order."""
    tracker = SessionTracker(30 * MINUTE)
    rows = []
    for person, ts, name, path, source in arrivals():
        sid, start = tracker.assign(PROJECT, person, ts)
        rows.append(
            stored_row(
                PROJECT,
                ts,
                start,
                name=name,
                session_id=sid,
                visitor_id=stored_visitor_id(person, start),
                path=path,
                source=source,
                channel=source,
                browser=BROWSERS[person % 2],
                country="DE" if person % 4 == 0 else "FR",
            )
        )
    return inserts_by_day(PROJECT, rows)


_READ = """
import dataclasses, json, os, sys
from datetime import date
from pathlib import Path
os.environ["SVC_ROLLUP_SECTION_MIN_SESSIONS"] = "0"  # every day of this small store
from svc.queries.breakdown import Page, needs, query_breakdown
from svc.queries.dates import DateRange
from svc.queries.dimensions import DIMENSIONS
from svc.queries.filters import parse_filters
from svc.queries.metrics import query_metrics
from svc.queries.plan import Query, plan
from svc.queries.run import Runner
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups, _PAGE_BY_VALUE_SQLS, _SECTION_SQLS

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
project = sys.argv[2]
old_day, twice_day = date.fromisoformat(sys.argv[3]), date.fromisoformat(sys.argv[4])
cases, dims = json.loads(sys.argv[5]), json.loads(sys.argv[6])
page_cases = json.loads(sys.argv[7])
for token, data in json.load(sys.stdin):
    store.insert_ndjson(data.encode(), token)

def read(tag):
    out[tag], out[tag + "_sections"] = {}, {}
    for first, last, flt in cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), "UTC")
        q = Query(project, rng, tuple(parse_filters(flt.split('|'))))
        for by in dims:
            dim = DIMENSIONS[by]
            answer = query_breakdown(store, q, dim, Page(order="value"))
            out[tag][f"{first} {last} {flt} {by}"] = answer["rows"]
        out[tag][f"{first} {last} {flt} metrics"] = query_metrics(store, q).to_json()
        p = plan(q)
        facts = Runner(store).facts(p, needs(p, DIMENSIONS["source"]))
        out[tag + "_sections"][f"{first} {last} {flt}"] = facts.section or ""
    for first, last, flt in page_cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), "UTC")
        q = Query(project, rng, tuple(parse_filters([flt])))
        answer = query_breakdown(store, q, DIMENSIONS["page"], Page(order="value"))
        out[tag][f"{first} {last} {flt} page"] = answer["rows"]
        p = plan(q)
        facts = Runner(store).facts(p, needs(p, DIMENSIONS["page"]))
        out[tag + "_sections"][f"{first} {last} {flt} page"] = facts.page_by or ""

def marked():
    return [store.query(f"SELECT count() FROM session_rollups WHERE dimension = '{marker}' "
                        "AND value = '' AND (session_day, version) IN (SELECT session_day, "
                        "max(version) FROM rollup_days GROUP BY session_day)")[0][0]
            for marker in ("section", "page_by")]

out = {}
read("before")
out["rolled_days"] = Rollups(store).refresh()
out["marked"] = marked()
read("rolled")
store.client.command("DELETE FROM session_rollups WHERE (dimension = 'section' "
                     "OR position(dimension, '@') > 0 OR startsWith(dimension, 'page|') "
                     "OR startsWith(dimension, 'page_by')) AND session_day = {d:Date}",
                     parameters={"d": old_day})
out["marked_old"] = marked()
read("old")
out["filled_days"] = Rollups(store).fill_added_rows()
out["marked_filled"] = marked()
version = store.query("SELECT max(version) FROM rollup_days WHERE session_day = {d:Date}",
                      {"d": twice_day})[0][0]
for sql in (_SECTION_SQLS[0], _PAGE_BY_VALUE_SQLS[0]):
    store.client.command(sql, parameters={"project": project, "day": twice_day,
                                          "version": version})
read("twice")
# a day with fewer sessions than the setting: rolled up again with the markers alone
store.settings = dataclasses.replace(store.settings, rollup_section_min_sessions=10**9)
rollups = Rollups(store)
version = rollups._next_version(0)
rollups.compute(project, old_day, version)
out["small_day_rows"] = store.query(
    "SELECT countIf(position(dimension, '@') > 0 OR startsWith(dimension, 'page|') "
    "OR startsWith(dimension, 'page_by:')), countIf(dimension IN ('section', 'page_by')) "
    "FROM session_rollups WHERE session_day = {d:Date} AND version = {v:UInt64}",
    {"d": old_day, "v": version})[0]
read("small")
store.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    day = lambda k: (TODAY - timedelta(days=k)).date().isoformat()  # noqa: E731
    cases = [(day(first), day(last), flt) for first, last in RANGES for flt in FILTERS]
    out: dict[str, Any] = run_store_script(
        _READ,
        str(tmp_path_factory.mktemp("section-rollups") / "data"),
        PROJECT,
        day(OLD_DAY),
        day(TWICE_DAY),
        json.dumps(cases),
        json.dumps(DIMENSIONS),
        json.dumps(
            [(day(first), day(last), flt) for first, last in RANGES for flt in PAGE_FILTERS]
        ),
        stdin=json.dumps(inserts()),
    )
    return out


def test_every_rolled_day_has_its_section_rows_and_an_old_one_gets_them(
    read: dict[str, Any],
) -> None:
    # days 6 to 2 before today, and yesterday too once it is over (from 01:00 UTC)
    days = read["rolled_days"]
    assert days >= 5
    assert read["marked"] == [days, days]
    assert read["marked_old"] == [days - 1, days - 1]
    assert read["filled_days"] == 1
    assert read["marked_filled"] == [days, days]
    assert read["small_day_rows"] == [0, 2]  # a day under the sessions' threshold: markers


@pytest.mark.parametrize("tag", ["rolled", "old", "twice", "small"])
def test_the_reports_are_the_same_before_and_after_the_rollups(
    read: dict[str, Any], tag: str
) -> None:
    for case, rows in read[tag].items():
        assert rows == read["before"][case], (tag, case)


def test_the_filters_rollup_rows_serve_read_them(read: dict[str, Any]) -> None:
    """A filter of one whole section, and the page breakdown under one value: where every
    rolled day of the range has the rows; with a day without them (``old``,
    in the ranges that hold it) no filter reads them; nor before the rollups, nor over one
    day (the range's last day is not read from the rollups)."""
    old = (TODAY - timedelta(days=OLD_DAY)).date().isoformat()
    for case, section in read["rolled_sections"].items():
        first, last, flt = case.split(" ", 2)
        served = PAGE_FILTERS[flt.removesuffix(" page")] if flt.endswith(" page") else FILTERS[flt]
        want = served if first != last else ""
        assert section == want, case
        assert read["twice_sections"][case] == want, case
        assert read["old_sections"][case] == ("" if first <= old <= last else want), case
        # the old day rolled up again as a small one, its markers alone: no filter reads the
        # rows there, but one with no session that day needs none
        small = want if "country:is:XX" in flt or not first <= old <= last else ""
        assert read["small_sections"][case] == small, case
        assert read["before_sections"][case] == "", case


def test_the_blog_by_hand(read: dict[str, Any]) -> None:
    """Days 6 to 2, by source, under ``page:contains:/blog``, counted from the events sent:
    the sessions with a blog event in the range (41's of day 2 has its blog page view on
    day 1, after the range: none in it), their blog page views and events in the range."""
    start, end = d(6), d(1)
    tracker = SessionTracker(30 * MINUTE)
    want: dict[str, list[int]] = {}  # source -> [sessions, page views, events]
    sessions: dict[int, tuple[str, list[int]]] = {}
    for person, ts, name, path, source in arrivals():
        sid, _ = tracker.assign(PROJECT, person, ts)
        _, counts = sessions.setdefault(sid, (source, [0, 0, 0]))
        if start <= ts < end and path.startswith("/blog"):
            counts[1] += name == "page_view"
            counts[2] += 1
    for source, (_, pv, ev) in sessions.values():
        if ev:
            w = want.setdefault(source, [0, 0, 0])
            w[0], w[1], w[2] = w[0] + 1, w[1] + pv, w[2] + ev
    day6, day2 = (TODAY - timedelta(days=6)).date(), (TODAY - timedelta(days=2)).date()
    rows = read["twice"][f"{day6} {day2} page:contains:/blog source"]
    assert read["twice_sections"][f"{day6} {day2} page:contains:/blog"] == "/blog"
    got = {r["value"]: [r["sessions"], r["pageviews"], r["events"]] for r in rows}
    assert got == want and sum(w[0] for w in want.values()) > 5 * 8
