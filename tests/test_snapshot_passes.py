"""The runtime snapshots today (svc.storage.snapshots) after its rollup passes: once the day
has events, again only when events changed it and the interval has passed, and GET /metrics
over today counts every event sent, before and after a snapshot (the real server, its
spool, loader and watermark)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx

from tests.conftest import BROWSER_UA
from tests.support import Server


def _taken(srv: Server) -> int:
    taken: int = httpx.get(srv.url + "/health").json()["store"]["snapshotsTaken"]
    return taken


def _wait_taken(srv: Server, at_least: int) -> int:
    deadline = time.monotonic() + 20
    while (taken := _taken(srv)) < at_least:
        assert time.monotonic() < deadline, f"{taken} snapshots, waited for {at_least}"
        time.sleep(0.1)
    return taken


def test_today_is_snapshot_once_per_change_and_read_whole(fresh_server: Server) -> None:
    srv = fresh_server
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.1"
    srv.env["SVC_SNAPSHOT_INTERVAL_SECONDS"] = "5"
    srv.start()
    key = srv.create_project("snapshot-passes")["keys"]["secret"]
    headers = {"User-Agent": BROWSER_UA}
    now = datetime.now(UTC)
    today = now.date().isoformat()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    # the last minutes, but today's (a session begun before midnight is yesterday's)
    start = int(max(now - timedelta(minutes=10), midnight).timestamp() * 1000)

    def view(session: str, url: str, ts: int) -> dict[str, object]:
        return {"event": "page_view", "url": url, "sessionId": session, "ts": ts}

    first = [view("a", "/", start), view("b", "/", start + 1000), view("b", "/x", start + 2000)]
    assert srv.send(key, first, headers=headers).status_code == 200
    srv.wait_loaded()
    taken = _wait_taken(srv, 1)
    time.sleep(1.5)  # fifteen passes: nothing changed
    assert _taken(srv) == taken
    m = srv.metrics(key, **{"from": today, "to": today})
    assert (m["pageviews"], m["sessions"], m["bounces"]) == (3, 2, 1)

    # session a goes on (no bounce any more), a new session c: read at once, from the
    # snapshot and the sessions changed since, and after the next snapshot
    later = [view("a", "/y", start + 3000), view("c", "/", start + 4000)]
    assert srv.send(key, later, headers=headers).status_code == 200
    srv.wait_loaded()
    m = srv.metrics(key, **{"from": today, "to": today})
    assert (m["pageviews"], m["sessions"], m["bounces"]) == (5, 3, 1)
    assert _taken(srv) == taken  # the snapshot is not 5 s old yet: read with the changes
    _wait_taken(srv, taken + 1)
    time.sleep(1.5)
    assert _taken(srv) == taken + 1  # once for that change
    m = srv.metrics(key, **{"from": today, "to": today})
    assert (m["pageviews"], m["sessions"], m["bounces"]) == (5, 3, 1)
    srv.stop()
