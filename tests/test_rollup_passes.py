"""Issue 19, part 2: a late event makes its day be rolled up again once, not on every pass for
ten minutes (about 460 passes at one a second, each a 1-2 s spike for the queries)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx

from tests.conftest import BROWSER_UA
from tests.support import Server, scrape


def _rolled(srv: Server) -> int:
    days: int = httpx.get(srv.url + "/health").json()["store"]["rolledUpDays"]
    return days


def _ms(day: datetime, hour: int) -> int:
    return int(day.replace(hour=hour, minute=0, second=0, microsecond=0).timestamp() * 1000)


def test_a_late_event_rolls_its_day_up_once(fresh_server: Server) -> None:
    srv = fresh_server
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.1"
    srv.start()
    project = srv.create_project("passes")
    key = project["keys"]["secret"]
    day = datetime.now(UTC) - timedelta(days=3)
    headers = {"User-Agent": BROWSER_UA}
    first = [{"event": "page_view", "url": "/a", "sessionId": "a", "ts": _ms(day, 10)}]
    assert srv.send(key, first, headers=headers).status_code == 200
    srv.wait_loaded()
    deadline = time.monotonic() + 20
    while _rolled(srv) < 1:
        assert time.monotonic() < deadline, "the day was never rolled up"
        time.sleep(0.1)
    time.sleep(1.5)  # fifteen passes: nothing more to roll up
    settled = _rolled(srv)
    # once; twice when a pass read the store while the event's segment was being inserted
    assert settled <= 2, f"a day nothing changed was rolled up {settled} times"

    late = [{"event": "page_view", "url": "/b", "sessionId": "b", "ts": _ms(day, 12)}]
    assert srv.send(key, late, headers=headers).status_code == 200
    srv.wait_loaded()
    deadline = time.monotonic() + 20  # a loaded machine's passes come later than every 0.1 s
    while _rolled(srv) == settled:
        assert time.monotonic() < deadline, "the changed day was never rolled up again"
        time.sleep(0.1)
    time.sleep(2.0)  # twenty passes more
    again = _rolled(srv) - settled
    assert 1 <= again <= 2, f"the changed day was rolled up {again} times"
    wide = (day - timedelta(days=1)).date().isoformat()
    m = srv.metrics(key, **{"from": wide, "to": (day + timedelta(days=1)).date().isoformat()})
    assert m["pageviews"] == 2 and m["sessions"] == 2
    srv.stop()


def _passes(srv: Server) -> float:
    """How many rollup passes ran (svc_rollup_duration_seconds' count)."""
    return scrape(srv, TOKEN)[("svc_rollup_duration_seconds_count", frozenset())]


TOKEN = "metrics-" + "p" * 24


def test_an_idle_store_is_not_read_by_every_pass(fresh_server: Server) -> None:
    """A pass runs only when something was written since the last one (or a minute went by):
    idle, passes every 0.1 s read nothing; an event sent makes the next pass run, and its
    day is then rolled up."""
    srv = fresh_server
    srv.env.update(SVC_ROLLUP_INTERVAL_SECONDS="0.1", SVC_INTERNAL_METRICS_TOKEN=TOKEN)
    srv.start()
    key = srv.create_project("idle")["keys"]["secret"]
    time.sleep(1.0)
    before = _passes(srv)
    time.sleep(2.0)  # twenty intervals, nothing written
    assert _passes(srv) - before <= 1, "passes ran on a store nothing was written to"
    day = datetime.now(UTC) - timedelta(days=2)
    sent = [{"event": "page_view", "url": "/a", "sessionId": "i", "ts": _ms(day, 9)}]
    assert srv.send(key, sent, headers={"User-Agent": BROWSER_UA}).status_code == 200
    srv.wait_loaded()
    deadline = time.monotonic() + 20
    while _rolled(srv) < 1:
        assert time.monotonic() < deadline, "the day sent was never rolled up"
        time.sleep(0.1)
    # The day shows as rolled up during the pass; the pass is counted when it ends.
    while _passes(srv) <= before:
        assert time.monotonic() < deadline, "the pass that rolled the day up was not counted"
        time.sleep(0.1)
