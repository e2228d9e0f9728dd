"""A ``sessionId`` sent by the client names one session (CONTRACT; docs/api.md), whatever the
gaps between its events: sent again after more than the 30 minutes of a derived session, on
the same day or days later, its events are the same session in every report.

The same events go to two projects: to one in a single batch (the session tracker sees every
event of a session together), to the other in three batches with the tracker's memory of idle
sessions swept between them (housekeeping every 0.2 s, the events days old), as a client that
comes back hours or days later sends them, the service restarted before the last. Every
report of both must be the same.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from svc.ingestion import client_sessions, identity
from tests.support import Server
from tests.test_imported_sessions import reports

TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0"


def at(days_ago: int, hour: int, minute: int = 0) -> int:
    when = TODAY - timedelta(days=days_ago) + timedelta(hours=hour, minutes=minute)
    return int(when.timestamp() * 1000)


def ev(session: str, ms: int, path: str, name: str = "page_view", **more: Any) -> dict[str, Any]:
    return {
        "event": name,
        "url": f"https://acme.test{path}",
        "ts": ms,
        "sessionId": session,
        "ip": "10.0.21.1",
        "userAgent": UA,
        **more,
    }


#: Three sends, hours and days apart.
BATCHES = [
    [
        ev("r1", at(3, 10), "/a", referrer="https://www.google.com/"),
        ev("r1", at(3, 10, 5), "/b"),
        ev("r2", at(3, 16), "/x"),
        ev("r3", at(3, 20), "/solo", referrer="https://news.ycombinator.com/"),
    ],
    [  # r1 again 4 hours later, the same day: not a new session, and /a stays its entry
        ev("r1", at(3, 14), "/c", referrer="https://www.bing.com/"),
        ev("r1", at(3, 14, 2), "/c", "signup"),
    ],
    [  # r1 and r2 again the next days; r2 had one page: with a second it is no bounce
        ev("r1", at(2, 9), "/d"),
        ev("r2", at(1, 16), "/y"),
    ],
]


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, dict[str, Any], dict[str, Any]]]:
    srv = Server(
        tmp_path_factory.mktemp("client-sessions") / "data",
        env={"SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.2", "SVC_ROLLUP_INTERVAL_SECONDS": "0.2"},
    ).start()
    together = srv.create_project("one-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    apart = srv.create_project("three-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    everything = [e for batch in BATCHES for e in batch]
    r = srv.send(together["keys"]["secret"], everything)
    assert r.status_code == 200 and r.json()["accepted"] == len(everything), r.text
    for n, batch in enumerate(BATCHES):
        time.sleep(0.6)  # the sessions idle for over 30 minutes are swept from memory
        if n == 2:  # and the service restarts before the last (svc.ingestion.client_sessions)
            srv.stop()
            srv.start()
        r = srv.send(apart["keys"]["secret"], batch)
        assert r.status_code == 200 and r.json()["accepted"] == len(batch), r.text
    srv.wait_loaded()
    time.sleep(1)  # a rollup pass or more over the changed days
    yield srv, together, apart
    srv.stop()


RANGES = [(3, 3, "UTC"), (2, 2, "UTC"), (1, 1, "UTC"), (3, 1, "UTC"), (2, 1, "Asia/Tokyo")]


@pytest.mark.parametrize(("first", "last", "tz"), RANGES)
def test_a_client_session_id_names_one_session_over_gaps_and_days(
    both: tuple[Server, dict[str, Any], dict[str, Any]], first: int, last: int, tz: str
) -> None:
    srv, together, apart = both
    want = reports(srv, together, first, last, tz)
    got = reports(srv, apart, first, last, tz)
    for ask in want:
        assert got[ask] == want[ask], ask
    if (first, last, tz) == (3, 1, "UTC"):  # by hand
        m = want["/metrics {}"]
        # r1: 4 page views and a signup over 23 hours; r2: 2 page views 48 hours apart; r3
        # a bounce; one visitor for the three (one address and browser, sessions begun on d3)
        assert (m["sessions"], m["pageviews"], m["events"], m["visitors"]) == (3, 7, 8, 1)
        assert m["bounceRate"] == "33.3%" and m["trafficSources"] == {
            "google": 1,
            "direct": 1,
            "news.ycombinator.com": 1,
        }
        assert m["avgSessionDuration"] == (23 + 48) * 3600 / 3
    if (first, last, tz) == (1, 1, "UTC"):  # r2 taken whole: its entry page and no bounce
        m = want["/metrics {}"]
        assert (m["sessions"], m["pageviews"], m["bounceRate"]) == (1, 1, "0.0%")
        entry = want["/metrics/breakdown {'by': 'entry_page', 'limit': 100}"]
        assert [r["value"] for r in entry["rows"]] == ["/x"]


def test_the_tracker_remembers_client_sessions_by_their_last_activity(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In process: a client's session keeps its start and first person over any gap while it
    is remembered: 8 days after its last event arrived, at most CLIENT_SESSIONS_MAX of them,
    the least recently active forgotten first."""
    day = identity._DAY_MS
    tracker = identity.SessionTracker(30 * 60_000)
    now = 100 * day
    assert tracker.client_session(1, now - 3 * day, "p", visitor=11, now_ms=now) == (
        now - 3 * day,
        11,
    )
    tracker.expire(now + 2 * day)  # days without an event: still remembered
    later = tracker.client_session(1, now + 2 * day, "p", visitor=22, now_ms=now + 2 * day)
    assert later == (now - 3 * day, 11)  # its start, and the person of its first event
    tracker.expire(now + 2 * day + identity.CLIENT_SESSION_MEMORY_MS + 1)
    assert tracker.client_start_of(1) is None  # 8 days after its last arrival: forgotten
    monkeypatch.setattr(identity, "CLIENT_SESSIONS_MAX", 3)
    for sid in (1, 2, 3):
        tracker.client_session(sid, now, "p", visitor=sid, now_ms=now)
    tracker.client_session(1, now + 1, "p", now_ms=now + 1)  # 1 is active again: 2 is oldest
    tracker.client_session(4, now + 2, "p", visitor=4, now_ms=now + 2)
    # kept over a restart: saved at stop, read back at start (before the seeded, more recent)
    client_sessions.save(tracker, tmp_path)
    assert oct((tmp_path / client_sessions.FILE).stat().st_mode & 0o777) == "0o600"
    again = identity.SessionTracker(30 * 60_000)
    again.seed([("p", 9, 3, now + 5, now + 5, now + 6, now + 6)])  # session 3, from the store
    assert client_sessions.load(again, tmp_path, now + 10) == 3
    assert not (tmp_path / client_sessions.FILE).exists()
    assert again.client_session(1, now + 20, "p", visitor=99) == (now, 1)
    assert again.client_session(3, now + 20, "p", visitor=99) == (now, 3)  # the saved start
    assert [tracker.client_start_of(s) is not None for s in (1, 2, 3, 4)] == [
        True,
        False,
        True,
        True,
    ]


def test_a_derived_session_sent_late_in_parts_is_one_session(
    both: tuple[Server, dict[str, Any], dict[str, Any]],
) -> None:
    """Without a ``sessionId``: a visitor's events of three days ago, 20 minutes apart across
    midnight, sent in two requests with a sweep of idle sessions between them (a queue
    flushed in parts), are one session, as they are sent together: the tracker forgets a
    session once the timeout passed since its last event and since one of it arrived."""
    srv = both[0]
    p = srv.create_project("late-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    first = ev("", at(4, 23, 50), "/a", referrer="https://www.bing.com/")
    second = ev("", at(3, 0, 10), "/b")
    for e in (first, second):
        derived = {k: v for k, v in e.items() if k != "sessionId"} | {"ip": "10.0.21.7"}
        r = srv.send(p["keys"]["secret"], [derived])
        assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
        time.sleep(0.6)  # housekeeping every 0.2 s: idle sessions by event time are swept
    srv.wait_loaded()

    def read(first_day: int, last_day: int) -> tuple[Any, ...]:
        params = {
            "from": (TODAY - timedelta(days=first_day)).date().isoformat(),
            "to": (TODAY - timedelta(days=last_day)).date().isoformat(),
            "tz": "UTC",
        }
        m = srv.metrics(p["keys"]["secret"], **params)
        return (m["pageviews"], m["sessions"], m["bounceRate"], m["trafficSources"])

    # A day inside a range is read from its rollup, which has a late event once the next
    # pass has rolled the day up again (docs/api.md, "Late events"): day 4's may have been
    # computed between the two requests, and on a busy host the next pass comes later.
    deadline = time.monotonic() + 20
    while read(4, 3) != (2, 1, "0.0%", {"bing": 1}) and time.monotonic() < deadline:
        time.sleep(0.2)
    for first_day, last_day, pageviews in ((4, 4, 1), (3, 3, 1), (4, 3, 2)):
        got = read(first_day, last_day)
        assert got == (pageviews, 1, "0.0%", {"bing": 1}), (first_day, last_day)


def test_the_tracker_forgets_a_late_session_by_its_events_and_its_arrivals() -> None:
    """In process: a derived session whose events are days old is kept while its events
    arrive within the timeout of each other, and forgotten once the timeout has passed since
    the last arrived."""
    minute = 60_000
    tracker = identity.SessionTracker(30 * minute)
    now = 1_000 * identity._DAY_MS
    late = now - 3 * identity._DAY_MS
    sid, start = tracker.assign("p", 7, late, now_ms=now)
    tracker.expire(now + 20 * minute)
    assert tracker.assign("p", 7, late + 20 * minute, now_ms=now + 20 * minute) == (sid, start)
    tracker.expire(now + 49 * minute)  # 29 minutes after the last arrival: kept
    assert tracker.live("p", 7) == (sid, start)
    tracker.expire(now + 51 * minute)
    assert tracker.live("p", 7) is None
    # seeded after a restart: its arrival from the store, so kept as long
    tracker.seed([("p", 7, sid, start, late, late + 20 * minute, now + 20 * minute)])
    tracker.expire(now + 49 * minute)
    assert tracker.live("p", 7) == (sid, start)
