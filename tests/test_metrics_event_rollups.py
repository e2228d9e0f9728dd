"""GET /metrics under ``event:is:<name>`` and ``event:is_not:<name>`` over rolled-up UTC days
(svc.queries.metrics, ``_with_event_rollups`` and ``_take_rolled_dropped``): the same
answer, traffic sources included, as the session rows give before the days are rolled up,
after they are, with a day rolled up before the rollups had their ``event_source`` and
``event_only`` rows (read from the session rows), and after
:meth:`svc.storage.rollups.Rollups.fill_added_rows` wrote them.

The rows are written into a real store (chDB) as ingestion writes them (session ids and
starts from its tracker, visitor ids mixed with the day of the session's start) and read in a
process of its own (one chDB engine per process)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from svc.ingestion.identity import SessionTracker, stored_visitor_id
from tests.support import inserts_by_day, run_store_script, stored_row

PROJECT = "event-rollups"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
MINUTE = 60_000
SOURCES = ("google", "direct", "bing")
#: Ranges (first, last: days before today) and filters read.
RANGES = [(9, 1), (8, 2), (6, 4), (5, 5)]
FILTERS = [
    "event:is:signup",
    "event:is:page_view",
    "event:is:none",
    "event:is_not:signup",
    "event:is_not:click",
    "event:is_not:none",
]
#: The day whose event_source and event_only rows are deleted (as if rolled up before they
#: existed).
OLD_DAY = 5


def d(k: int, hour: int = 0, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC on the day ``k`` days before today."""
    return int((TODAY - timedelta(days=k, hours=-hour, minutes=-minute)).timestamp() * 1000)


def arrivals() -> list[tuple[int, int, str, str]]:
    """Every event (person, ts, name, source), in the order ingestion sees them: sessions on
    days 1 to 9 from three sources, a third of them with a signup (one across midnight, its
    signup on the next day), a visitor with two sessions a day, one of them a signup alone;
    visitors whose every session is a signup alone (one session, two sessions), a session of
    a signup and a click, and one of two clicks."""
    out: list[tuple[int, int, str, str]] = []
    for k in range(9, 0, -1):
        for p in range(12):
            source = SOURCES[(p + k) % 3]
            t = d(k, 6 + p)
            out += [(p, t + i * MINUTE, "page_view", source) for i in range(1 + p % 3)]
            if (p + k) % 3 != 1 or p % 2:
                out.append((p, t + 5 * MINUTE, "signup", source))
        out += [(50, d(k, 23, 50), "page_view", "bing"), (50, d(k - 1, 0, 10), "signup", "bing")]
        out += [(51, d(k, 3), "signup", "google"), (51, d(k, 5), "page_view", "direct")]
        out += [(52, d(k, 4), "signup", "bing")]
        out += [(53, d(k, 4), "signup", "direct"), (53, d(k, 6), "signup", "google")]
        out += [(54, d(k, 7), "signup", "google"), (54, d(k, 7, 1), "click", "google")]
        out += [(55, d(k, 8), "click", "direct"), (55, d(k, 8, 2), "click", "direct")]
    return out


def inserts() -> list[tuple[str, str]]:
    """One insert per UTC day of the events, in order."""
    tracker = SessionTracker(30 * MINUTE)
    rows = []
    for person, ts, name, source in arrivals():
        sid, start = tracker.assign(PROJECT, person, ts)
        visitor = stored_visitor_id(person, start)
        rows.append(
            stored_row(
                PROJECT,
                ts,
                start,
                name=name,
                session_id=sid,
                visitor_id=visitor,
                path="/",
                source=source,
                channel=source,
            )
        )
    return inserts_by_day(PROJECT, rows)


_READ = """
import json, sys
from datetime import date
from pathlib import Path
from svc.queries.dates import DateRange
from svc.queries.filters import parse_filters
from svc.queries.metrics import query_metrics
from svc.queries.plan import Query
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
project, old_day, cases = sys.argv[2], date.fromisoformat(sys.argv[3]), json.loads(sys.argv[4])
for token, data in json.load(sys.stdin):
    store.insert_ndjson(data.encode(), token)

def read(tag):
    out[tag] = {}
    for first, last, flt in cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), "UTC")
        q = Query(project, rng, tuple(parse_filters([flt])))
        out[tag][f"{first} {last} {flt}"] = query_metrics(store, q).to_json()

def marked():
    return [store.query(f"SELECT count() FROM session_rollups WHERE dimension = '{marker}' "
                        "AND value = '' AND (session_day, version) IN (SELECT session_day, "
                        "max(version) FROM rollup_days GROUP BY session_day)")[0][0]
            for marker in ("event_source", "event_only")]

out = {}
read("before")
out["rolled_days"] = Rollups(store).refresh()
out["marked"] = marked()
read("rolled")
store.client.command("DELETE FROM session_rollups WHERE (startsWith(dimension, 'event_source') "
                     "OR startsWith(dimension, 'event_only')) AND session_day = {d:Date}",
                     parameters={"d": old_day})
out["marked_old"] = marked()
read("old")
out["filled_days"] = Rollups(store).fill_added_rows()
out["marked_filled"] = marked()
read("filled")
store.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    day = lambda k: (TODAY - timedelta(days=k)).date().isoformat()  # noqa: E731
    cases = [(day(first), day(last), flt) for first, last in RANGES for flt in FILTERS]
    out: dict[str, Any] = run_store_script(
        _READ,
        str(tmp_path_factory.mktemp("event-rollups") / "data"),
        PROJECT,
        day(OLD_DAY),
        json.dumps(cases),
        stdin=json.dumps(inserts()),
    )
    return out


def test_every_rolled_day_has_its_event_rows_and_an_old_one_gets_them(
    read: dict[str, Any],
) -> None:
    # days 9 to 2 before today, and yesterday too once it is over (from 01:00 UTC)
    days = read["rolled_days"]
    assert days >= 8
    assert read["marked"] == [days, days]
    assert read["marked_old"] == [days - 1, days - 1]
    assert read["filled_days"] == 1
    assert read["marked_filled"] == [days, days]


@pytest.mark.parametrize("tag", ["rolled", "old", "filled"])
def test_the_metrics_are_the_same_before_and_after_the_rollups(
    read: dict[str, Any], tag: str
) -> None:
    for case, metrics in read[tag].items():
        assert metrics == read["before"][case], (tag, case)


def test_the_signups_count_what_was_sent(read: dict[str, Any]) -> None:
    """Over days 8 to 2, by hand: the sessions with a signup in the range and their
    sources (the session across midnight of day 9 has its signup on day 8)."""
    signups = read["before"][
        f"{(TODAY - timedelta(days=8)).date()} {(TODAY - timedelta(days=2)).date()} event:is:signup"
    ]
    want: dict[str, int] = {}
    for k in range(8, 1, -1):
        for p in range(12):
            if (p + k) % 3 != 1 or p % 2:
                source = SOURCES[(p + k) % 3]
                want[source] = want.get(source, 0) + 1
    want["bing"] += 7  # visitor 50's, signing up after midnight (days 9 to 3)
    want["google"] += 7 + 7 + 7  # visitor 51's, 53's second and 54's
    want["bing"] += 7  # visitor 52's
    want["direct"] += 7  # visitor 53's first
    assert signups["trafficSources"] == dict(sorted(want.items(), key=lambda kv: (-kv[1], kv[0])))
    assert signups["sessions"] == sum(want.values()) and signups["pageviews"] == 0


def test_the_sessions_of_signups_alone_are_dropped_whole(read: dict[str, Any]) -> None:
    """Over days 8 to 2, by hand: ``event:is_not:signup`` drops the signups, and whole the
    sessions of a signup alone in the range (51's first, 52's, 53's two: four a day; and 50's
    from day 9, whose page view is before the range) with their visitors but 51, who has
    another session; ``event:is_not:none`` drops nothing."""
    rng = f"{(TODAY - timedelta(days=8)).date()} {(TODAY - timedelta(days=2)).date()}"
    for tag in ("before", "rolled", "old", "filled"):
        kept = read[tag][f"{rng} event:is_not:signup"]
        every = read[tag][f"{rng} event:is_not:none"]
        signups = read[tag][f"{rng} event:is:signup"]
        assert kept["sessions"] == every["sessions"] - 4 * 7 - 1, tag
        assert kept["visitors"] == every["visitors"] - 2 * 7 - 1, tag
        assert kept["events"] == every["events"] - signups["events"], tag
        assert kept["pageviews"] == every["pageviews"], tag
        gone = {"google": 14, "bing": 8, "direct": 7}  # 51's, 53's second; 52's, 50's; 53's
        assert kept["trafficSources"] == {
            k: n - gone.get(k, 0) for k, n in every["trafficSources"].items()
        }, tag
