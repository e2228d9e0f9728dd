"""Imported sessions are counted exactly like ingested ones, sessions across midnight included.

The same visits go to two projects of one data directory: to one through POST /analytics (a
visitor is an address and a browser; its sessions are derived), to the other through ``svcm
import`` of Umami's CSV export on the data directory (a visitor is Umami's ``session_id``, a
session its ``visit_id``). One visit runs over UTC midnight, another over midnight in
Asia/Kolkata; the same person comes back later in the day. Every report of both projects,
over ranges that cut those visits at both ends and in three time zones, must be the same.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support import ROOT, Server

TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


def at(days_ago: int, hour: int, minute: int = 0) -> int:
    when = TODAY - timedelta(days=days_ago) + timedelta(hours=hour, minutes=minute)
    return int(when.timestamp() * 1000)


def day(days_ago: int) -> str:
    return (TODAY - timedelta(days=days_ago)).date().isoformat()


# (person, visit, ms, event, path, referrer): in the order a browser sends them
VISITS: list[tuple[str, str, int, str, str, str]] = [
    # over UTC midnight, from Google, with a signup after midnight
    ("p1", "v1", at(3, 23, 40), "page_view", "/a", "https://www.google.com/"),
    ("p1", "v1", at(3, 23, 55), "page_view", "/b", ""),
    ("p1", "v1", at(2, 0, 10), "page_view", "/c", ""),
    ("p1", "v1", at(2, 0, 12), "signup", "/c", ""),
    # the same person, another session later that day: a bounce
    ("p1", "v2", at(2, 12), "page_view", "/a", ""),
    # over midnight in Asia/Kolkata (18:30 UTC)
    ("p2", "v3", at(3, 18, 20), "page_view", "/k", "https://news.ycombinator.com/"),
    ("p2", "v3", at(3, 18, 45), "page_view", "/b", ""),
    # one page on each side of UTC midnight, the second a download
    ("p3", "v4", at(2, 23, 50), "page_view", "/d", ""),
    ("p3", "v4", at(1, 0, 5), "download", "/d", ""),
    # over midnight in America/New_York (05:00 UTC)
    ("p4", "v5", at(2, 4, 50), "page_view", "/n", ""),
    ("p4", "v5", at(2, 5, 10), "page_view", "/n2", ""),
]
ADDRESS = {"p1": "10.0.20.1", "p2": "10.0.20.2", "p3": "10.0.20.3", "p4": "10.0.20.4"}
HOST = "acme.test"


def umami_csv() -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(
        [
            "event_id", "session_id", "visit_id", "created_at", "event_type", "event_name",
            "hostname", "url_path", "referrer_domain", "referrer_path", "browser", "os",
            "device", "country",
        ]
    )  # fmt: skip
    for n, (person, visit, ms, name, path, referrer) in enumerate(VISITS):
        when = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        ref = referrer.removeprefix("https://").split("/", 1)[0] if referrer else ""
        w.writerow(
            [
                f"00000000-0000-0000-0000-{n:012d}", person, visit, when,
                "1" if name == "page_view" else "2", "" if name == "page_view" else name,
                HOST, path, ref, "/" if ref else "", "chrome", "Linux", "desktop", "",
            ]
        )  # fmt: skip
    return out.getvalue()


def ingested_events() -> list[dict[str, Any]]:
    events = []
    for person, _, ms, name, path, referrer in VISITS:
        e: dict[str, Any] = {
            "event": name,
            "url": f"https://{HOST}{path}",
            "ts": ms,
            "ip": ADDRESS[person],
            "userAgent": UA,
        }
        if referrer:
            e["referrer"] = referrer
        events.append(e)
    return events


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, dict[str, Any], dict[str, Any]]]:
    """A server with an ingesting project and an importing one (the import on the stopped
    server's data directory), every finished day rolled up."""
    tmp = tmp_path_factory.mktemp("imported-sessions")
    srv = Server(tmp / "data", env={"SVC_ROLLUP_INTERVAL_SECONDS": "0.2"}).start()
    ingested = srv.create_project("ing-" + uuid.uuid4().hex[:8], domains=[HOST])
    imported = srv.create_project("imp-" + uuid.uuid4().hex[:8], domains=[HOST])
    events = ingested_events()
    r = srv.send(ingested["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    srv.wait_loaded()
    srv.stop()
    export = tmp / "umami.csv"
    export.write_text(umami_csv())
    done = subprocess.run(
        [sys.executable, "-m", "svc", "import", "-p", imported["id"], "--data-dir",
         str(srv.data_dir), "--format", "umami", str(export), "--json"],
        cwd=tmp, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    srv.start()
    deadline = time.monotonic() + 60
    while srv.health()["store"]["rolledUpDays"] < 3:  # the imported days, rolled up again
        assert time.monotonic() < deadline, "the imported days were not rolled up"
        time.sleep(0.2)
    yield srv, ingested, imported
    srv.stop()


def reports(srv: Server, p: dict[str, Any], first: int, last: int, tz: str) -> dict[str, Any]:
    span = {"from": day(first), "to": day(last), "tz": tz}
    asks: list[tuple[str, dict[str, Any]]] = [
        ("/metrics", {}),
        ("/metrics", {"filter": "event:is:signup"}),
        ("/metrics", {"filter": "page:is:/b"}),
        ("/metrics/timeseries", {"interval": "day"}),
        ("/metrics/goals", {"goal": ["event:signup", "page:/b"]}),
        ("/metrics/funnel", {"step": ["page:/a", "page:/c"], "window": 86400}),
    ]
    for by in ("page", "entry_page", "exit_page", "source", "event", "hostname", "browser"):
        asks.append(("/metrics/breakdown", {"by": by, "limit": 100}))
    asks.append(("/metrics/breakdown", {"by": "source", "filter": "page:is:/b"}))
    asks.append(("/metrics/breakdown", {"by": "page", "filter": "event:is:signup"}))
    out = {}
    for path, params in asks:
        r = httpx.get(
            srv.url + path,
            params={**span, **params},
            headers={"authorization": f"Bearer {p['keys']['secret']}"},
            timeout=30,
        )
        assert r.status_code == 200, (path, params, r.text)
        body = r.json()
        body.pop("projectId", None)
        out[f"{path} {params}"] = body
    return out


RANGES = [
    (3, 3, "UTC"),
    (2, 2, "UTC"),
    (3, 1, "UTC"),
    (2, 2, "Asia/Kolkata"),
    (3, 2, "America/New_York"),
]


@pytest.mark.parametrize(("first", "last", "tz"), RANGES)
def test_imported_sessions_are_counted_like_ingested_ones(
    both: tuple[Server, dict[str, Any], dict[str, Any]], first: int, last: int, tz: str
) -> None:
    srv, ingested, imported = both
    want = reports(srv, ingested, first, last, tz)
    got = reports(srv, imported, first, last, tz)
    for ask in want:
        assert got[ask] == want[ask], ask
    if (first, last, tz) == (3, 1, "UTC"):  # the oracle, for one range, by hand
        m = want["/metrics {}"]
        # v1 (3 page views and a signup), v2 (a bounce), v3, v4 (a page view, a download), v5;
        # p1's two sessions began on two days: two visitors
        assert (m["sessions"], m["pageviews"], m["events"], m["visitors"]) == (5, 9, 11, 5)
