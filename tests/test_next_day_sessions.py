"""``next_day_sessions`` (storage migrations 21 and 23): the sessions with an event on the UTC
day after their start's, the last such event, and their page views and events that day, from
which the reports of a UTC range find the sessions that cross its ends and count them
(svc.queries.sql.sessions.near_crossing, outside_statement). Written by its view as events
are inserted (in two blocks, the partial rows fold by max and sum), not by a page
measurement, a replayed block (not counted twice) or an event two days on (``long_sessions``
has that one); the same rows when the sessions are rebuilt from the events
(EventStore.rebuild_sessions, as after an import).

The rows are written into a real store (chDB) as ingestion writes them, in a process of its
own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from tests.support import REPLAYED_BLOCKS, run_store_script, stored_row

PROJECT = "next-day"
DAY = datetime(2026, 3, 10, tzinfo=UTC)
MINUTE = 60_000


def at(days: int, hour: int, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC, ``days`` after DAY."""
    return int((DAY + timedelta(days=days, hours=hour, minutes=minute)).timestamp() * 1000)


#: session id -> (start, [(ts, name)]): within its day; across midnight (its last event on the
#: next day in the second block); across midnight by a page measurement alone; two days on.
SESSIONS: dict[int, tuple[int, list[tuple[int, str]]]] = {
    1: (at(0, 12), [(at(0, 12), "page_view"), (at(0, 12, 5), "signup")]),
    2: (at(0, 23, 50), [(at(0, 23, 50), "page_view"), (at(1, 0, 5), "page_view")]),
    3: (at(0, 23, 55), [(at(0, 23, 55), "page_view"), (at(1, 0, 1), "engagement")]),
    4: (at(0, 20), [(at(0, 20), "page_view"), (at(2, 1), "page_view")]),
}
#: the second block: session 2's last event
LATE = (2, at(1, 0, 20), "click")

_SCRIPT = (
    REPLAYED_BLOCKS
    + """
rows = lambda: [[str(d), int(s), str(t), int(pv), int(ev)] for d, s, t, pv, ev in store.query(
    "SELECT session_day, session_id, max(last_ts), sum(pageviews), sum(events) "
    "FROM next_day_sessions GROUP BY session_day, session_id ORDER BY session_id")]
out = {"written": rows()}
store.rebuild_sessions(sys.argv[2])
out["rebuilt"] = rows()
store.close()
print(json.dumps(out))
"""
)


def ndjson(events: list[tuple[int, int, str]]) -> str:
    rows = []
    for sid, ts, name in events:
        start = SESSIONS[sid][0]
        path = "/" if name != "engagement" else "/a"
        rows.append(stored_row(PROJECT, ts, start, name=name, session_id=sid, visitor_id=sid,
                               path=path))  # fmt: skip
    return (b"\n".join(msgspec.json.encode(r) for r in rows) + b"\n").decode()


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    first = [(sid, ts, name) for sid, (_, events) in SESSIONS.items() for ts, name in events]
    blocks = [("next-day-1", ndjson(first)), ("next-day-2", ndjson([LATE]))]
    out: dict[str, Any] = run_store_script(
        _SCRIPT,
        str(tmp_path_factory.mktemp("next-day") / "data"),
        PROJECT,
        stdin=json.dumps(blocks),
    )
    return out


def test_the_sessions_across_midnight_have_their_last_event_of_the_next_day(
    read: dict[str, Any],
) -> None:
    # session 2 alone: 1 stays in its day, 3 crosses by a page measurement only, 4's event
    # two days on is long_sessions'; the two blocks' rows fold to the later event and add up
    # to its page view and its click that day (the replayed block counted once)
    assert read["written"] == [["2026-03-10", 2, "2026-03-11 00:20:00", 1, 2]]


def test_a_rebuild_of_the_sessions_writes_the_same_rows(read: dict[str, Any]) -> None:
    assert read["rebuilt"] == read["written"]
